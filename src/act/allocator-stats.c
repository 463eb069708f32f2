/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "allocator-stats.h"
#include "inject-site.h"
#include "memgov/macro.h"
#include "memgov/maps-reader.h"
#include "trim.h"

typedef struct Caller {
        const InjectSite *site;
        uint64_t starttime;
        uint64_t fn;
        AllocatorStats *stats;
        char *why;
        size_t why_size;
} Caller;

static int call(Caller *c, InjectRequest *q, InjectReport *rep) {
        q->pid = c->site->pid;
        q->starttime = c->starttime;
        q->fn = c->fn;
        q->stub_addr = c->site->stub_addr;
        q->mailbox_addr = c->site->mailbox_addr;
        q->mailbox_room = c->site->mailbox_room;
        int r = inject_call_retrying(q, rep, c->why, c->why_size);
        if (r < 0)
                return r;
        if (!rep->completed) {
                snprintf(c->why, c->why_size, "the call did not complete");
                return -EPROTO;
        }
        c->stats->calls++;
        c->stats->held_max = MAX(c->stats->held_max, rep->held);
        c->stats->call_total += rep->call;
        return 0;
}

/* struct mallinfo2: ten size_t, returned through a pointer the caller passes first. */
enum { MI_ARENA, MI_ORDBLKS, MI_SMBLKS, MI_HBLKS, MI_HBLKHD, MI_USMBLKS, MI_FSMBLKS, MI_UORDBLKS, MI_FORDBLKS,
       MI_KEEPCOST, _MI_MAX };

static int read_glibc(Caller *c) {
        InjectRequest q = { .args_in_result = 1U << 0, .result_size = _MI_MAX * 8 };
        InjectReport rep;
        int r = call(c, &q, &rep);
        if (r < 0)
                return r;
        uint64_t mi[_MI_MAX];
        memcpy(mi, rep.result, sizeof(mi));
        /* arena: the main heap and the arenas' heaps from the system; hblkhd: chunks mmapped on
         * their own (in use until freed, then unmapped). fordblks: free chunks, the top ones
         * included, whether their pages are resident or a trim gave them back. */
        c->stats->in_use = mi[MI_UORDBLKS] + mi[MI_HBLKHD];
        c->stats->heap = mi[MI_ARENA] + mi[MI_HBLKHD];
        c->stats->free_listed = mi[MI_FORDBLKS];
        /* The resident part: what the heaps hold resident less what is in use in them.
         * Seen: after a trim that gave back 204M, fordblks still said 212M free. */
        ProcMaps m;
        r = smaps_read_summary(AT_FDCWD, c->site->pid, &m);
        if (r < 0) {
                snprintf(c->why, c->why_size, "/proc/%d/smaps: %s", (int) c->site->pid, strerror(-r));
                return r;
        }
        c->stats->heap_resident = m.heap_rss;
        c->stats->free = MIN(SUB_CLAMP(m.heap_rss, mi[MI_UORDBLKS]), mi[MI_FORDBLKS]);
        c->stats->releasable = c->stats->free;
        return 0;
}

static int tcmalloc_property(Caller *c, const char *name, uint64_t *ret) {
        char data[64];
        size_t n = strlen(name) + 1;
        assert(n <= sizeof(data));
        memcpy(data, name, n);
        InjectRequest q = {
                .data = data,
                .data_size = n,
                .args_in_data = 1U << 0,
                .args_in_result = 1U << 1,
                .result_size = 8,
        };
        InjectReport rep;
        int r = call(c, &q, &rep);
        if (r < 0)
                return r;
        if ((rep.ret & 0xff) == 0) {
                snprintf(c->why, c->why_size, "tcmalloc knows no property %s", name);
                return -ENOENT;
        }
        memcpy(ret, rep.result, 8);
        return 0;
}

static int read_tcmalloc(Caller *c) {
        uint64_t allocated, heap, unmapped, pageheap_free;
        int r;
        if ((r = tcmalloc_property(c, "generic.current_allocated_bytes", &allocated)) < 0 ||
            (r = tcmalloc_property(c, "generic.heap_size", &heap)) < 0 ||
            (r = tcmalloc_property(c, "tcmalloc.pageheap_unmapped_bytes", &unmapped)) < 0 ||
            (r = tcmalloc_property(c, "tcmalloc.pageheap_free_bytes", &pageheap_free)) < 0)
                return r;
        /* heap_size counts the pages given back (unmapped) too. The free rest: the page heap's free
         * pages (what ReleaseFreeMemory gives back) and the caches' free objects. */
        c->stats->in_use = allocated;
        c->stats->heap = SUB_CLAMP(heap, unmapped);
        c->stats->free = SUB_CLAMP(c->stats->heap, allocated);
        c->stats->free_listed = c->stats->free;
        c->stats->releasable = pageheap_free;
        return 0;
}

/* mallctl(name, oldp, oldlenp, newp, newlen). */
static int jemalloc_read(Caller *c, const char *name, uint64_t *ret) {
        struct {
                uint64_t len;
                char name[56];
        } data = { .len = 8 };
        size_t n = strlen(name) + 1;
        assert(n <= sizeof(data.name));
        memcpy(data.name, name, n);
        InjectRequest q = {
                .args = { offsetof(typeof(data), name), 0, 0 },
                .data = &data,
                .data_size = sizeof(data),
                .args_in_data = 1U << 0 | 1U << 2,
                .args_in_result = 1U << 1,
                .result_size = 8,
        };
        InjectReport rep;
        int r = call(c, &q, &rep);
        if (r < 0)
                return r;
        if ((int) rep.ret != 0) {
                snprintf(c->why, c->why_size, "mallctl(\"%s\") failed: %s", name, strerror((int) rep.ret));
                return -(int) rep.ret;
        }
        memcpy(ret, rep.result, 8);
        return 0;
}

static int read_jemalloc(Caller *c) {
        /* The statistics are a snapshot taken at the last "epoch" write. */
        InjectRequest q = {
                .args = { 0, 0, 0, 8, 8 },
                .data = "epoch\0\0\0\1\0\0\0\0\0\0\0",
                .data_size = 16,
                .args_in_data = 1U << 0 | 1U << 3,
        };
        InjectReport rep;
        int r = call(c, &q, &rep);
        if (r < 0)
                return r;
        if ((int) rep.ret != 0) {
                snprintf(c->why, c->why_size, "mallctl(\"epoch\") failed: %s", strerror((int) rep.ret));
                return -(int) rep.ret;
        }
        uint64_t allocated, resident, metadata, pdirty, pmuzzy, page;
        if ((r = jemalloc_read(c, "stats.allocated", &allocated)) < 0 ||
            (r = jemalloc_read(c, "stats.resident", &resident)) < 0 ||
            (r = jemalloc_read(c, "stats.metadata", &metadata)) < 0 ||
            (r = jemalloc_read(c, "stats.arenas.4096.pdirty", &pdirty)) < 0 || /* MALLCTL_ARENAS_ALL */
            (r = jemalloc_read(c, "stats.arenas.4096.pmuzzy", &pmuzzy)) < 0 ||
            (r = jemalloc_read(c, "arenas.page", &page)) < 0)
                return r;
        c->stats->in_use = allocated;
        c->stats->heap = resident;
        c->stats->free = SUB_CLAMP(resident, allocated + metadata);
        c->stats->free_listed = c->stats->free;
        c->stats->releasable = (pdirty + pmuzzy) * page;
        return 0;
}

int allocator_stats_read(pid_t pid, uint64_t starttime, AllocatorStats *ret, char *why, size_t why_size) {
        assert(ret);
        assert(why);
        _cleanup_(inject_site_done) InjectSite site = {};
        static const char *const functions[_ALLOCATOR_MAX] = {
                [ALLOCATOR_GLIBC] = "mallinfo2",
                [ALLOCATOR_JEMALLOC] = "mallctl",
                [ALLOCATOR_TCMALLOC] = "MallocExtension_GetNumericProperty",
        };
        int r;

        *ret = (AllocatorStats) {};
        if ((r = trim_ptrace_preflight(pid, why, why_size)) < 0)
                return r;
        if ((r = inject_site_open(pid, &site, why, why_size)) < 0)
                return r;
        ret->allocator = site.allocator;
        ret->source = functions[site.allocator];
        if (!ret->source) {
                snprintf(why, why_size, "process %d: unknown allocator", (int) pid);
                return -EOPNOTSUPP;
        }
        Caller c = { .site = &site, .starttime = starttime, .stats = ret, .why = why, .why_size = why_size };
        r = inject_site_symbol(&site, ret->source, &c.fn, NULL, why, why_size);
        if (r == -ENOENT && site.allocator == ALLOCATOR_GLIBC) {
                snprintf(why, why_size, "the glibc of process %d has no mallinfo2 (older than 2.33)", (int) pid);
                return -EOPNOTSUPP;
        }
        if (r < 0)
                return r;
        switch (site.allocator) {
        case ALLOCATOR_GLIBC:
                return read_glibc(&c);
        case ALLOCATOR_TCMALLOC:
                return read_tcmalloc(&c);
        case ALLOCATOR_JEMALLOC:
                return read_jemalloc(&c);
        default:
                return -EOPNOTSUPP;
        }
}
