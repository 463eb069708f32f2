/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "memgov/parse-proc.h"
#include "memgov/scan.h"

/* "123456 kB" -> bytes */
static int span_to_kb_bytes(Span v, uint64_t *ret) {
        Span num, unit, extra;
        uint64_t kb;
        int r;

        if (!span_next_field(&v, " \t", &num) || !span_next_field(&v, " \t", &unit) ||
            span_next_field(&v, " \t", &extra) || !span_eq(unit, "kB"))
                return -EBADMSG;
        r = span_to_u64(num, &kb);
        if (r < 0)
                return r == -ERANGE ? -ERANGE : -EBADMSG;
        if (kb > UINT64_MAX / 1024)
                return -ERANGE;
        *ret = kb * 1024;
        return 0;
}

static int span_to_pid(Span v, pid_t *ret) {
        uint64_t u;
        int r = span_to_u64(v, &u);
        if (r < 0)
                return r == -ERANGE ? -ERANGE : -EBADMSG;
        if (u > INT32_MAX)
                return -ERANGE;
        *ret = (pid_t) u;
        return 0;
}

/* Splits "Key:\tvalue" into key and stripped value. */
static int split_colon_line(Span line, Span *ret_key, Span *ret_value) {
        const char *colon = memchr(line.p, ':', line.n);
        if (!colon || colon == line.p)
                return -EBADMSG;
        *ret_key = (Span) { line.p, (size_t) (colon - line.p) };
        *ret_value = span_strip((Span) { colon + 1, (size_t) (line.p + line.n - colon - 1) });
        return 0;
}

/* Splits "7f3a1c000000-7f3a1c021000" (sep '-') or "fe:01" (sep ':') into two hex numbers. */
static int span_to_x64_pair(Span s, char sep, uint64_t *ret_a, uint64_t *ret_b) {
        const char *at = memchr(s.p, sep, s.n);
        if (!at || span_to_x64((Span) { s.p, (size_t) (at - s.p) }, ret_a) < 0 ||
            span_to_x64((Span) { at + 1, (size_t) (s.p + s.n - at - 1) }, ret_b) < 0)
                return -EBADMSG;
        return 0;
}

enum {
        STATUS_NAME = 1 << 0,
        STATUS_STATE = 1 << 1,
        STATUS_TGID = 1 << 2,
        STATUS_PPID = 1 << 3,
        STATUS_TRACER = 1 << 4,
        STATUS_UID = 1 << 5,
        STATUS_THREADS = 1 << 6,
        STATUS_REQUIRED = (1 << 7) - 1,
};

/* /proc/PID/status, e.g.:
 *   Name:	mariadbd
 *   State:	S (sleeping)
 *   TracerPid:	0
 *   Uid:	106	106	106	106
 *   VmRSS:	  412340 kB
 *   Threads:	39
 *   x86_Thread_features:	shstk wrss
 */
static const char *const cap_keys[_CAP_SET_MAX] = {
        [CAP_SET_INHERITABLE] = "CapInh", [CAP_SET_PERMITTED] = "CapPrm", [CAP_SET_EFFECTIVE] = "CapEff",
        [CAP_SET_BOUNDING] = "CapBnd",    [CAP_SET_AMBIENT] = "CapAmb",
};

static const char *const cap_names[_CAP_SET_MAX] = {
        [CAP_SET_INHERITABLE] = "inheritable", [CAP_SET_PERMITTED] = "permitted", [CAP_SET_EFFECTIVE] = "effective",
        [CAP_SET_BOUNDING] = "bounding",       [CAP_SET_AMBIENT] = "ambient",
};

const char *cap_set_to_string(CapSet c) {
        return c >= 0 && c < _CAP_SET_MAX ? cap_names[c] : "invalid";
}

static int cap_set_of(Span key) {
        for (int c = 0; c < _CAP_SET_MAX; c++)
                if (span_eq(key, cap_keys[c]))
                        return c;
        return -1;
}

int parse_proc_status(const char *buf, size_t len, ProcStatus *ret) {
        ProcStatus s = { .seccomp = -1 };
        unsigned seen = 0;
        LineCursor c;
        Span line, key, v;
        int r, cs;

        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0) {
                if (line.n == 0)
                        continue;
                if (split_colon_line(line, &key, &v) < 0)
                        return -EBADMSG;

                if (span_eq(key, "Name")) {
                        /* The kernel truncates comm to 15 bytes but escapes some characters. */
                        if (span_copy(v, s.name, sizeof(s.name)) < 0)
                                return -EBADMSG;
                        seen |= STATUS_NAME;
                } else if (span_eq(key, "State")) {
                        if (v.n == 0)
                                return -EBADMSG;
                        s.state = v.p[0];
                        seen |= STATUS_STATE;
                } else if (span_eq(key, "Tgid")) {
                        if ((r = span_to_pid(v, &s.tgid)) < 0)
                                return r;
                        seen |= STATUS_TGID;
                } else if (span_eq(key, "PPid")) {
                        if ((r = span_to_pid(v, &s.ppid)) < 0)
                                return r;
                        seen |= STATUS_PPID;
                } else if (span_eq(key, "TracerPid")) {
                        if ((r = span_to_pid(v, &s.tracer_pid)) < 0)
                                return r;
                        seen |= STATUS_TRACER;
                } else if (span_eq(key, "Uid")) {
                        Span f;
                        pid_t id;
                        if (!span_next_field(&v, " \t", &f) || span_to_pid(f, &id) < 0)
                                return -EBADMSG;
                        s.ruid = (uid_t) id;
                        if (!span_next_field(&v, " \t", &f) || span_to_pid(f, &id) < 0)
                                return -EBADMSG;
                        s.euid = s.fsuid = (uid_t) id;
                        /* saved, then the file-system uid (absent from no kernel since 2.6, but optional here) */
                        if (span_next_field(&v, " \t", &f) && span_next_field(&v, " \t", &f)) {
                                if (span_to_pid(f, &id) < 0)
                                        return -EBADMSG;
                                s.fsuid = (uid_t) id;
                        }
                        seen |= STATUS_UID;
                } else if (span_eq(key, "Gid")) {
                        /* real, effective, saved, file system: the last is what file access checks */
                        Span f, last = {};
                        unsigned n = 0;
                        pid_t id;
                        while (span_next_field(&v, " \t", &f))
                                last = f, n++;
                        if (n == 0 || span_to_pid(last, &id) < 0)
                                return -EBADMSG;
                        s.fsgid = (gid_t) id;
                } else if (span_eq(key, "Groups")) {
                        Span f;
                        pid_t id;
                        while (span_next_field(&v, " \t", &f)) {
                                if (span_to_pid(f, &id) < 0)
                                        return -EBADMSG;
                                if (s.n_groups < PROC_GROUPS_MAX)
                                        s.groups[s.n_groups++] = (gid_t) id;
                                else
                                        s.groups_truncated = true;
                        }
                } else if (span_eq(key, "NSpid")) {
                        /* One PID per nested namespace, outermost first: keep the last. */
                        Span f;
                        while (span_next_field(&v, " \t", &f))
                                if ((r = span_to_pid(f, &s.nspid)) < 0)
                                        return r;
                } else if (span_eq(key, "VmRSS")) {
                        if ((r = span_to_kb_bytes(v, &s.vm_rss)) < 0)
                                return r;
                } else if (span_eq(key, "RssAnon")) {
                        if ((r = span_to_kb_bytes(v, &s.rss_anon)) < 0)
                                return r;
                } else if (span_eq(key, "RssFile")) {
                        if ((r = span_to_kb_bytes(v, &s.rss_file)) < 0)
                                return r;
                } else if (span_eq(key, "RssShmem")) {
                        if ((r = span_to_kb_bytes(v, &s.rss_shmem)) < 0)
                                return r;
                } else if (span_eq(key, "VmSwap")) {
                        if ((r = span_to_kb_bytes(v, &s.vm_swap)) < 0)
                                return r;
                } else if (span_eq(key, "Threads")) {
                        uint64_t t;
                        if ((r = span_to_u64(v, &t)) < 0 || t > UINT32_MAX)
                                return r == -ERANGE || t > UINT32_MAX ? -ERANGE : -EBADMSG;
                        s.threads = (unsigned) t;
                        seen |= STATUS_THREADS;
                } else if (span_eq(key, "Seccomp")) {
                        uint64_t m;
                        if (span_to_u64(v, &m) < 0 || m > 2)
                                return -EBADMSG;
                        s.seccomp = (int) m;
                } else if ((cs = cap_set_of(key)) >= 0) {
                        if (span_to_x64(v, &s.cap[cs]) < 0)
                                return -EBADMSG;
                        s.cap_seen |= 1u << cs;
                } else if (span_eq(key, "x86_Thread_features")) {
                        Span f;
                        while (span_next_field(&v, " \t", &f))
                                if (span_eq(f, "shstk"))
                                        s.shadow_stack = true;
                }
        }
        if (r < 0)
                return r;
        if ((seen & STATUS_REQUIRED) != STATUS_REQUIRED)
                return -ENODATA;
        *ret = s;
        return 0;
}

/* /proc/PID/smaps_rollup, e.g.:
 *   560d57997000-7ffcf52d6000 ---p 00000000 00:00 0                          [rollup]
 *   Rss:                1636 kB
 *   Pss_Anon:            116 kB
 *   Anonymous:           116 kB
 */
int parse_smaps_rollup(const char *buf, size_t len, SmapsRollup *ret) {
        static const struct {
                const char *name;
                size_t offset;
        } keys[] = {
                { "Rss", offsetof(SmapsRollup, rss) },
                { "Pss", offsetof(SmapsRollup, pss) },
                { "Pss_Anon", offsetof(SmapsRollup, pss_anon) },
                { "Anonymous", offsetof(SmapsRollup, anonymous) },
                { "Private_Dirty", offsetof(SmapsRollup, private_dirty) },
                { "LazyFree", offsetof(SmapsRollup, lazyfree) },
                { "Swap", offsetof(SmapsRollup, swap) },
        };
        SmapsRollup s = {};
        bool header = false, has_rss = false;
        LineCursor c;
        Span line, key, v;
        int r;

        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0) {
                if (!header) {
                        if (!span_endswith(span_strip(line), "[rollup]"))
                                return -EBADMSG;
                        header = true;
                        continue;
                }
                if (line.n == 0)
                        continue;
                if (split_colon_line(line, &key, &v) < 0)
                        return -EBADMSG;
                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                        if (!span_eq(key, keys[i].name))
                                continue;
                        r = span_to_kb_bytes(v, (uint64_t *) ((char *) &s + keys[i].offset));
                        if (r < 0)
                                return r;
                        if (i == 0)
                                has_rss = true;
                        if (i == 2)
                                s.has_pss_anon = true;
                        break;
                }
        }
        if (r < 0)
                return r;
        if (!has_rss)
                return -ENODATA;
        *ret = s;
        return 0;
}

/* /proc/PID/cgroup, e.g. on a unified host:
 *   0::/system.slice/mariadb.service
 * on a hybrid host (v1 controllers plus the v2 hierarchy):
 *   4:memory:/system.slice/mariadb.service
 *   0::/system.slice/mariadb.service
 * and inside another cgroup namespace:
 *   0::/../db-0
 */
int parse_proc_cgroup(const char *buf, size_t len, ProcCgroup *ret) {
        LineCursor c;
        Span line;
        int r;

        ret->unified[0] = ret->memory_v1[0] = '\0';
        ret->has_unified = ret->has_memory_v1 = false;

        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0) {
                if (line.n == 0)
                        continue;
                const char *c1 = memchr(line.p, ':', line.n);
                if (!c1)
                        return -EBADMSG;
                const char *c2 = memchr(c1 + 1, ':', (size_t) (line.p + line.n - c1 - 1));
                if (!c2)
                        return -EBADMSG;
                Span id = { line.p, (size_t) (c1 - line.p) };
                Span controllers = { c1 + 1, (size_t) (c2 - c1 - 1) };
                Span path = { c2 + 1, (size_t) (line.p + line.n - c2 - 1) };
                uint64_t hid;

                if (span_to_u64(id, &hid) < 0 || path.n == 0 || path.p[0] != '/')
                        return -EBADMSG;

                if (hid == 0 && controllers.n == 0) {
                        if (ret->has_unified)
                                return -EBADMSG;
                        if (span_copy(path, ret->unified, sizeof(ret->unified)) < 0)
                                return -ENAMETOOLONG;
                        ret->has_unified = true;
                        continue;
                }

                Span ctl;
                while (span_next_field(&controllers, ",", &ctl))
                        if (span_eq(ctl, "memory")) {
                                if (span_copy(path, ret->memory_v1, sizeof(ret->memory_v1)) < 0)
                                        return -ENAMETOOLONG;
                                ret->has_memory_v1 = true;
                        }
        }
        if (r < 0)
                return r;
        if (!ret->has_unified && !ret->has_memory_v1)
                return -ENODATA;
        return 0;
}

static const char *const allocator_names[_ALLOCATOR_MAX] = {
        [ALLOCATOR_UNKNOWN] = "unknown",
        [ALLOCATOR_GLIBC] = "glibc",
        [ALLOCATOR_JEMALLOC] = "jemalloc",
        [ALLOCATOR_TCMALLOC] = "tcmalloc",
};

const char *allocator_to_string(Allocator a) {
        return a >= 0 && a < _ALLOCATOR_MAX ? allocator_names[a] : "unknown";
}

int allocator_from_string(const char *s, Allocator *ret) {
        for (int i = 0; i < _ALLOCATOR_MAX; i++)
                if (streq(s, allocator_names[i])) {
                        *ret = (Allocator) i;
                        return 0;
                }
        return -EINVAL;
}

static Span path_basename(Span path) {
        for (size_t i = path.n; i > 0; i--)
                if (path.p[i - 1] == '/')
                        return (Span) { path.p + i, path.n - i };
        return path;
}

static bool is_glibc_libc(Span base) {
        /* "libc.so.6" (glibc >= 2.34) or "libc-2.31.so" (older). */
        if (span_eq(base, "libc.so.6"))
                return true;
        return span_startswith(base, "libc-2.") && span_endswith(base, ".so");
}

static bool span_contains(Span s, const char *needle) {
        size_t n = strlen(needle);
        for (size_t i = 0; i + n <= s.n; i++)
                if (memcmp(s.p + i, needle, n) == 0)
                        return true;
        return false;
}

static int record_lib(MappedLib *lib, Span path, bool deleted, bool unclear, uint64_t start, uint64_t end,
                      uint64_t offset, unsigned maj, unsigned min, uint64_t inode) {
        /* The first mapping at offset 0 is where the ELF image starts. */
        if (lib->found || offset != 0)
                return 0;
        if (span_copy(path, lib->path, sizeof(lib->path)) < 0)
                return -ENAMETOOLONG;
        lib->found = true;
        lib->base = start;
        lib->base_end = end;
        lib->dev_major = maj;
        lib->dev_minor = min;
        lib->inode = inode;
        lib->deleted = deleted;
        lib->path_unclear = unclear;
        return 0;
}

/* /proc/PID/maps, e.g.:
 *   7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0
 *   7f3a20a28000-7f3a20a4e000 r--p 00000000 fe:01 1046534                    /usr/lib/x86_64-linux-gnu/libc.so.6
 * One line at a time, so that a reader may stream the file through a fixed buffer: a server
 * may have hundreds of thousands of mappings. */
void proc_maps_init(ProcMaps *m) {
        *m = (ProcMaps) {};
}

int proc_maps_add_line(ProcMaps *m, const char *line, size_t len) {
        Span range, perms, off, dev, ino, rest = { line, len };
        uint64_t start, end, offset, inode, maj, min;

        /* Kernel text files never contain NUL; one means the input is not what we think it is. */
        if (memchr(line, '\0', len))
                return -EBADMSG;
        if (len == 0)
                return 0;
        if (!span_next_field(&rest, " ", &range) || !span_next_field(&rest, " ", &perms) ||
            !span_next_field(&rest, " ", &off) || !span_next_field(&rest, " ", &dev) ||
            !span_next_field(&rest, " ", &ino))
                return -EBADMSG;

        if (perms.n != 4 || span_to_x64_pair(range, '-', &start, &end) < 0 || span_to_x64(off, &offset) < 0 ||
            span_to_x64_pair(dev, ':', &maj, &min) < 0 || span_to_u64(ino, &inode) < 0 || end < start ||
            maj > UINT32_MAX || min > UINT32_MAX)
                return -EBADMSG;

        /* The path, after the kernel's padding, exactly as printed: a name may end in blanks, so
         * nothing is stripped at its end (the line's '\n' is not part of it). */
        Span path = rest;
        while (path.n > 0 && path.p[0] == ' ') {
                path.p++;
                path.n--;
        }
        bool unclear = span_contains(path, "\\012");
        bool deleted = false;
        if (path.n > STRLEN(" (deleted)") && span_endswith(path, " (deleted)")) {
                path.n -= STRLEN(" (deleted)");
                deleted = true;
        }

        m->mappings++;
        bool anon = path.n == 0 || span_eq(path, "[heap]") || span_startswith(path, "[anon:");
        if (anon && perms.p[0] == 'r' && perms.p[1] == 'w' && perms.p[3] == 'p') {
                m->anon_rw++;
                m->anon_rw_bytes += end - start;
        }
        /* glibc's HEAP_MAX_SIZE on 64-bit: a heap is mmapped at a multiple of it, whole. */
        const uint64_t heap_size = UINT64_C(64) << 20;
        bool plain = path.n == 0 && perms.p[3] == 'p' && (perms.p[0] == 'r' || perms.p[0] == '-');
        enum { RSS_NOWHERE, RSS_HEAP, RSS_RUN };
        if (plain && m->heap_end && start == m->heap_end && end - m->heap_start <= heap_size) {
                m->heap_end = end;
                m->rss_to = RSS_RUN;
        } else if (plain && start % heap_size == 0 && end - start <= heap_size && perms.p[0] == 'r') {
                m->heap_start = start, m->heap_end = end;
                m->run_rss = 0;
                m->rss_to = RSS_RUN;
        } else {
                m->heap_start = m->heap_end = 0;
                m->rss_to = span_eq(path, "[heap]") && perms.p[0] == 'r' ? RSS_HEAP : RSS_NOWHERE;
        }
        if (m->heap_end && m->heap_end - m->heap_start == heap_size) {
                m->arena_heaps++;
                m->heap_rss += m->run_rss;
                m->heap_start = m->heap_end = 0;
                m->rss_to = RSS_HEAP; /* this mapping's own Rss, still to come */
        }
        if (path.n == 0 || path.p[0] != '/')
                return 0;

        Span base = path_basename(path);
        MappedLib *lib = NULL;
        if (is_glibc_libc(base))
                lib = &m->libc;
        else if (span_startswith(base, "libjemalloc.so")) {
                m->allocator = ALLOCATOR_JEMALLOC;
                lib = &m->allocator_lib;
        } else if (span_startswith(base, "libtcmalloc") && span_contains(base, ".so")) {
                m->allocator = ALLOCATOR_TCMALLOC;
                lib = &m->allocator_lib;
        }
        if (lib)
                return record_lib(lib, path, deleted, unclear, start, end, offset, (unsigned) maj, (unsigned) min, inode);
        return 0;
}

int proc_smaps_add_line(ProcMaps *m, const char *line, size_t len) {
        if (len == 0 || line[0] < 'A' || line[0] > 'Z')
                return proc_maps_add_line(m, line, len);
        Span key, v, rest = { line, len };
        if (memchr(line, '\0', len) || split_colon_line(rest, &key, &v) < 0)
                return -EBADMSG;
        if (!span_eq(key, "Rss"))
                return 0;
        uint64_t bytes;
        if (span_to_kb_bytes(v, &bytes) < 0)
                return -EBADMSG;
        if (m->rss_to == 1)
                m->heap_rss += bytes;
        else if (m->rss_to == 2)
                m->run_rss += bytes;
        return 0;
}

int proc_maps_finish(ProcMaps *m) {
        if (m->mappings == 0)
                return -ENODATA;
        /* A preloaded or linked jemalloc/tcmalloc replaces malloc; otherwise glibc's is in use. */
        if (m->allocator == ALLOCATOR_UNKNOWN && m->libc.found)
                m->allocator = ALLOCATOR_GLIBC;
        return 0;
}

int parse_proc_maps(const char *buf, size_t len, ProcMaps *ret) {
        ProcMaps m;
        LineCursor c;
        Span line;
        int r;

        proc_maps_init(&m);
        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0)
                if ((r = proc_maps_add_line(&m, line.p, line.n)) < 0)
                        return r;
        if (r < 0)
                return r;
        if ((r = proc_maps_finish(&m)) < 0)
                return r;
        *ret = m;
        return 0;
}

/* /proc/PID/stat, e.g.:
 *   1234 (mariadbd) S 1 1234 1234 0 -1 4194560 53191 0 0 0 88 45 0 0 20 0 39 0 1620 ...
 */
int parse_proc_stat(const char *buf, size_t len, ProcStat *ret) {
        ProcStat s = {};
        const char *rp = NULL;

        if (memchr(buf, '\0', len))
                return -EBADMSG;
        /* comm can hold ')' itself: the last ')' ends it. */
        for (size_t i = len; i > 0; i--)
                if (buf[i - 1] == ')') {
                        rp = buf + i - 1;
                        break;
                }
        if (!rp)
                return -EBADMSG;

        Span rest = { rp + 1, (size_t) (buf + len - rp - 1) }, f;
        /* Field numbers as in proc(5): 3 state, 4 ppid, 14 utime, 15 stime, 22 starttime. */
        for (unsigned field = 3; field <= 22; field++) {
                if (!span_next_field(&rest, " \n", &f))
                        return -EBADMSG;
                uint64_t v = 0;
                if (field == 3) {
                        if (f.n != 1)
                                return -EBADMSG;
                        s.state = f.p[0];
                        continue;
                }
                if (field == 4 || field == 14 || field == 15 || field == 22) {
                        if (span_to_u64(f, &v) < 0)
                                return -EBADMSG;
                        if (field == 4) {
                                if (v > INT32_MAX)
                                        return -EBADMSG;
                                s.ppid = (pid_t) v;
                        } else if (field == 14)
                                s.utime = v;
                        else if (field == 15)
                                s.stime = v;
                        else
                                s.starttime = v;
                }
        }
        *ret = s;
        return 0;
}

/* /proc/meminfo, e.g.:
 *   MemTotal:       24570328 kB
 *   MemAvailable:   23901812 kB
 *   SwapTotal:             0 kB
 */
int parse_meminfo(const char *buf, size_t len, MemInfo *ret) {
        MemInfo m = {};
        bool total = false, avail = false;
        LineCursor c;
        Span line, key, v;
        int r;

        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0) {
                if (line.n == 0)
                        continue;
                if (split_colon_line(line, &key, &v) < 0)
                        return -EBADMSG;
                uint64_t *field = span_eq(key, "MemTotal")       ? &m.total
                                  : span_eq(key, "MemAvailable") ? &m.available
                                  : span_eq(key, "SwapTotal")    ? &m.swap_total
                                                                 : NULL;
                if (!field)
                        continue;
                if ((r = span_to_kb_bytes(v, field)) < 0)
                        return r;
                total = total || field == &m.total;
                avail = avail || field == &m.available;
        }
        if (r < 0)
                return r;
        if (!total || !avail)
                return -ENODATA;
        *ret = m;
        return 0;
}

int proc_maps_line_range(const char *line, size_t len, uint64_t *ret_start, uint64_t *ret_end,
                         char ret_perms[static 5]) {
        Span range, perms, rest = { line, len };
        uint64_t start, end;

        if (memchr(line, '\0', len))
                return -EBADMSG;
        if (len == 0)
                return -ENODATA;
        if (!span_next_field(&rest, " ", &range) || !span_next_field(&rest, " ", &perms) || perms.n != 4 ||
            span_to_x64_pair(range, '-', &start, &end) < 0)
                return -EBADMSG;
        *ret_start = start;
        *ret_end = end;
        memcpy(ret_perms, perms.p, 4);
        ret_perms[4] = '\0';
        return 0;
}

int proc_maps_find(const char *buf, size_t len, uint64_t addr, uint64_t *ret_start, uint64_t *ret_end,
                   char ret_perms[static 5]) {
        LineCursor c;
        Span line;
        int r;

        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0) {
                uint64_t start, end;
                char perms[5];
                r = proc_maps_line_range(line.p, line.n, &start, &end, perms);
                /* Blank lines are skipped, as parse_proc_maps() skips them. */
                if (r == -ENODATA)
                        continue;
                if (r < 0)
                        return r;
                if (addr >= start && addr < end) {
                        *ret_start = start;
                        *ret_end = end;
                        memcpy(ret_perms, perms, 5);
                        return 0;
                }
        }
        return r < 0 ? r : -ENOENT;
}
