/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "explain-report.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

static const char *server_name(const ExplainInput *in) {
        return in->flavor == SERVER_MARIADB ? "MariaDB" : in->flavor == SERVER_MYSQL ? "MySQL" : NULL;
}

json_object *explanation_json(pid_t pid, const char *comm, const char *cgroup, const ExplainInput *in,
                              const Explanation *e, const char *notes) {
        json_object *o = json_object_new_object(), *parts = json_object_new_object(), *findings = json_object_new_array();
        json_object_object_add(o, "pid", json_object_new_int(pid));
        json_object_object_add(o, "process", json_object_new_string(comm));
        if (cgroup)
                json_object_object_add(o, "cgroup", json_object_new_string(cgroup));
        if (server_name(in)) {
                json_object_object_add(o, "server", json_object_new_string(server_name(in)));
                json_object_object_add(o, "version", json_object_new_string(in->version));
        }
        json_object_object_add(o, "total", json_object_new_uint64(e->total));
        json_object_object_add(o, "total_source", json_object_new_string(e->total_source));
        if (in->has_cgroup)
                json_object_object_add(o, "limit",
                                       in->limit == SIZE_UNLIMITED ? NULL : json_object_new_uint64(in->limit));
        for (ExplainPart p = 0; p < _PART_MAX; p++)
                if (e->has[p])
                        json_object_object_add(parts, explain_part_to_string(p), json_object_new_uint64(e->parts[p]));
        json_object_object_add(o, "parts", parts);
        /* What two parts are made of, from memory.stat. */
        if (in->has_cgroup) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "active_file", json_object_new_uint64(in->stat.active_file));
                json_object_object_add(d, "inactive_file", json_object_new_uint64(in->stat.inactive_file));
                json_object_object_add(o, "page_cache", d);
        }
        /* The samples' cgroup figures (the daemon's) do not have them. */
        if (in->has_cgroup && (in->stat.slab || in->stat.sock || in->stat.kernel_stack || in->stat.pagetables)) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "slab", json_object_new_uint64(in->stat.slab));
                json_object_object_add(d, "sock", json_object_new_uint64(in->stat.sock));
                json_object_object_add(d, "kernel_stack", json_object_new_uint64(in->stat.kernel_stack));
                json_object_object_add(d, "pagetables", json_object_new_uint64(in->stat.pagetables));
                json_object_object_add(o, "kernel", d);
        }
        /* MariaDB's pressure listener: can the server arm its trigger (the file as it sees it) */
        if (in->pressure_access != PRESSURE_ACCESS_UNKNOWN) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "access", json_object_new_string(pressure_access_to_string(in->pressure_access)));
                json_object_object_add(d, "server_uid", json_object_new_uint64(in->server_uid));
                if (in->pressure_access != PRESSURE_ACCESS_NO_FILE) {
                        json_object_object_add(d, "owner_uid", json_object_new_uint64(in->pressure_owner));
                        char mode[8];
                        snprintf(mode, sizeof(mode), "%04o", in->pressure_mode & 07777);
                        json_object_object_add(d, "mode", json_object_new_string(mode));
                        json_object_object_add(d, "ids_allow", json_object_new_boolean(!in->pressure_ids_deny));
                }
                if (in->pressure_path[0])
                        json_object_object_add(d, "path", json_object_new_string(in->pressure_path));
                json_object_object_add(o, "memory_pressure", d);
        }
        json_object_object_add(o, "overcounted", json_object_new_uint64(e->overcounted));
        json_object_object_add(o, "server_count_excess", json_object_new_uint64(e->server_count_excess));
        if (in->has_accounted)
                json_object_object_add(o, "accounted_source", json_object_new_string(in->accounted_source));
        if (in->has_sessions) {
                json_object *s = json_object_new_object(), *top = json_object_new_array();
                json_object_object_add(s, "count", json_object_new_int((int) in->n_sessions));
                json_object_object_add(s, "total", json_object_new_uint64(in->sessions_total));
                json_object_object_add(s, "median", json_object_new_uint64(in->sessions_median));
                for (unsigned i = 0; i < in->n_top; i++) {
                        json_object *x = json_object_new_object();
                        json_object_object_add(x, "id", json_object_new_uint64(in->top[i].id));
                        json_object_object_add(x, "user", json_object_new_string(in->top[i].user));
                        json_object_object_add(x, "host", json_object_new_string(in->top[i].host));
                        json_object_object_add(x, "command", json_object_new_string(in->top[i].command));
                        json_object_object_add(x, "memory", json_object_new_uint64(in->top[i].memory));
                        json_object_array_add(top, x);
                }
                json_object_object_add(s, "top", top);
                json_object_object_add(o, "sessions", s);
        }
        if (in->has_allocator) {
                const AllocatorStats *a = &in->allocator;
                json_object *x = json_object_new_object();
                json_object_object_add(x, "allocator", json_object_new_string(allocator_to_string(a->allocator)));
                json_object_object_add(x, "source", json_object_new_string(a->source));
                json_object_object_add(x, "in_use", json_object_new_uint64(a->in_use));
                json_object_object_add(x, "heap", json_object_new_uint64(a->heap));
                json_object_object_add(x, "free", json_object_new_uint64(a->free));
                json_object_object_add(x, "releasable", json_object_new_uint64(a->releasable));
                json_object_object_add(x, "free_listed", json_object_new_uint64(a->free_listed));
                if (a->allocator == ALLOCATOR_GLIBC)
                        json_object_object_add(x, "heap_resident", json_object_new_uint64(a->heap_resident));
                json_object_object_add(x, "calls", json_object_new_int((int) a->calls));
                json_object_object_add(x, "held_max_us", json_object_new_uint64(a->held_max));
                json_object_object_add(o, "allocator", x);
        }
        if (in->has_process) {
                json_object_object_add(o, "anon_maps", json_object_new_int((int) in->anon_maps));
                json_object_object_add(o, "arena_heaps", json_object_new_int((int) in->arena_heaps));
                json_object_object_add(o, "cpus", json_object_new_int((int) in->cpus));
        }
        for (unsigned i = 0; i < e->n_findings; i++) {
                const Finding *f = &e->findings[i];
                json_object *x = json_object_new_object();
                json_object_object_add(x, "kind", json_object_new_string(finding_kind_to_string(f->kind)));
                json_object_object_add(x, "evidence", json_object_new_string(f->evidence));
                /* Its lines apart: a drop-in's lines are taken as they are (a newline inside a
                 * string would be escaped with the rest of the server's text). */
                json_object *lines = json_object_new_array();
                for (const char *p = f->fix; *p;) {
                        const char *nl = strchr(p, '\n');
                        size_t len = nl ? (size_t) (nl - p) : strlen(p);
                        json_object_array_add(lines, json_object_new_string_len(p, (int) len));
                        p += len + (nl ? 1 : 0);
                }
                json_object_object_add(x, "fix", lines);
                json_object_object_add(x, "gives_back",
                                       f->gives_back_known ? json_object_new_uint64(f->gives_back) : NULL);
                json_object_array_add(findings, x);
        }
        json_object_object_add(o, "findings", findings);
        json_object *n = json_object_new_array();
        for (const char *p = notes; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                json_object_array_add(n, json_object_new_string_len(p, (int) len));
                p += len + (nl ? 1 : 0);
        }
        json_object_object_add(o, "not_measured", n);
        return o;
}

static void print_line(const char *text) {
        char shown[4 * FINDING_TEXT_MAX + 64];
        /* Lines of a fix are kept; each is escaped on its own. */
        for (const char *p = text; *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                char line[FINDING_TEXT_MAX + 1];
                snprintf(line, sizeof(line), "%.*s", (int) len, p);
                printf("     %s\n", escape_untrusted(line, shown, sizeof(shown)));
                p += len + (nl ? 1 : 0);
        }
}

void explanation_print(pid_t pid, const char *comm, const char *cgroup, const ExplainInput *in, const Explanation *e,
                       const char *notes) {
        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], b3[FORMAT_BYTES_MAX], b4[FORMAT_BYTES_MAX], head[1024],
                shown[4 * sizeof(head)];
        int n = snprintf(head, sizeof(head), "%s (pid %d)", comm, (int) pid);
        if (cgroup && n > 0 && (size_t) n < sizeof(head))
                n += snprintf(head + n, sizeof(head) - (size_t) n, ", cgroup %s", cgroup);
        if (server_name(in) && n > 0 && (size_t) n < sizeof(head))
                n += snprintf(head + n, sizeof(head) - (size_t) n, ": %s %s", server_name(in), in->version);
        if (in->has_allocator && n > 0 && (size_t) n < sizeof(head))
                snprintf(head + n, sizeof(head) - (size_t) n, ", %s", allocator_to_string(in->allocator.allocator));
        printf("%s\n", escape_untrusted(head, shown, sizeof(shown)));
        if (in->has_cgroup && in->limit != SIZE_UNLIMITED)
                printf("%s %s of memory.max %s\n\n", e->total_source, format_bytes(b1, e->total),
                       format_bytes(b2, in->limit));
        else
                printf("%s %s\n\n", e->total_source, format_bytes(b1, e->total));

        for (ExplainPart p = 0; p < _PART_MAX; p++) {
                if (!e->has[p])
                        continue;
                printf("  %-16s %8s %4.0f%%", explain_part_label(p), format_bytes(b1, e->parts[p]),
                       e->total ? 100.0 * (double) e->parts[p] / (double) e->total : 0.0);
                if (p == PART_SESSIONS && in->n_top > 0) {
                        char who[512];
                        snprintf(who, sizeof(who), "  %u sessions; the largest %s@%s (%s, id %llu) %s", in->n_sessions,
                                 in->top[0].user, in->top[0].host, in->top[0].command,
                                 (unsigned long long) in->top[0].id, format_bytes(b2, in->top[0].memory));
                        printf("%s", escape_untrusted(who, shown, sizeof(shown)));
                } else if (p == PART_PAGE_CACHE && in->has_cgroup)
                        printf("  active %s, inactive %s", format_bytes(b2, in->stat.active_file),
                               format_bytes(b3, in->stat.inactive_file));
                else if (p == PART_KERNEL && in->has_cgroup && (in->stat.slab || in->stat.kernel_stack))
                        printf("  slab %s, sockets %s, stacks %s, page tables %s", format_bytes(b2, in->stat.slab),
                               format_bytes(b1, in->stat.sock), format_bytes(b3, in->stat.kernel_stack),
                               format_bytes(b4, in->stat.pagetables));
                else if (p == PART_SERVER_OTHER)
                        printf("  %s%s", in->accounted_source, in->accounted_partial ? " (some instruments off)" : "");
                else if (p == PART_ALLOCATOR_FREE) {
                        printf("  %s, %u call%s, a thread held at most %.1f ms", in->allocator.source,
                               in->allocator.calls, in->allocator.calls == 1 ? "" : "s",
                               (double) in->allocator.held_max / 1000.0);
                        if (in->allocator.free_listed > in->allocator.free + (UINT64_C(1) << 20))
                                printf("; %s in free chunks, the rest given back",
                                       format_bytes(b2, in->allocator.free_listed));
                } else if (p == PART_UNACCOUNTED && in->has_process)
                        printf("  %u anonymous mappings, %u glibc arena heaps", in->anon_maps, in->arena_heaps);
                printf("\n");
        }
        if (e->server_count_excess)
                printf("  (%s counts %s more than the allocator has in use: its own bookkeeping runs ahead)\n",
                       in->accounted_source, format_bytes(b1, e->server_count_excess));
        if (e->overcounted)
                printf("  (%s measured beyond what is resident: a buffer pool not all touched, or free pages already "
                       "given back)\n",
                       format_bytes(b1, e->overcounted));

        if (e->n_findings == 0)
                printf("\nNo finding: no part calls for a change.\n");
        for (unsigned i = 0; i < e->n_findings; i++) {
                const Finding *f = &e->findings[i];
                printf("\n%u. %s", i + 1, finding_kind_to_string(f->kind));
                if (f->gives_back_known)
                        printf(" (gives back %s)", format_bytes(b1, f->gives_back));
                printf("\n");
                print_line(f->evidence);
                print_line(f->fix);
        }
        if (notes[0]) {
                printf("\nNot measured:\n");
                print_line(notes);
        }
}

