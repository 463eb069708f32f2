/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "allocator-stats.h"
#include "explain-gather.h"
#include "memgov/fileio.h"
#include "memgov/maps-reader.h"
#include "memgov/proc-access.h"
#include "memgov/session-memory.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/target.h"
#include "memgov/units.h"
#include "session-end.h"

_printf_(3, 4) static void note(char *notes, size_t size, const char *fmt, ...) {
        size_t used = strlen(notes);
        if (used + 1 >= size)
                return;
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(notes + used, size - used, fmt, ap);
        va_end(ap);
        used = strlen(notes);
        if (used + 1 < size)
                strcpy(notes + used, "\n");
}

static int read_value(int dirfd, const char *name, uint64_t *ret) {
        char buf[64];
        ssize_t n = read_small_file_at(dirfd, name, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        return parse_cgroup_value(buf, (size_t) n, ret);
}

static void gather_cgroup(const ExplainTarget *t, ExplainInput *in, char *notes, size_t size) {
        char buf[8192];
        if (t->cgroup_fd < 0) {
                note(notes, size, "no cgroup v2 memory controller for the target: the parts are of the process's RSS");
                return;
        }
        ssize_t n = read_small_file_at(t->cgroup_fd, "memory.stat", buf, sizeof(buf));
        int r = n < 0 ? (int) n : parse_memory_stat(buf, (size_t) n, &in->stat);
        if (r < 0 || (r = read_value(t->cgroup_fd, "memory.current", &in->current)) < 0) {
                note(notes, size, "cgroup %s: %s", t->cgroup, strerror(-r));
                return;
        }
        if (read_value(t->cgroup_fd, "memory.max", &in->limit) < 0)
                in->limit = SIZE_UNLIMITED;
        in->has_cgroup = true;
}

/* Also gives back the process's status (its ids, for gather_pressure). */
static void gather_process(const ExplainTarget *t, ProcStatus *st, ExplainInput *in, char *notes, size_t size) {
        ProcMaps m;
        int r;
        if (t->pid <= 0)
                return;
        if ((r = proc_read_status(t->proc_fd, t->pid, st)) < 0 ||
            (r = maps_read_summary(t->proc_fd, t->pid, &m)) < 0) {
                note(notes, size, "process %d: %s", (int) t->pid, strerror(-r));
                return;
        }
        in->has_process = true;
        in->rss_anon = st->rss_anon;
        in->rss_file = st->rss_file;
        in->rss_shmem = st->rss_shmem;
        in->anon_maps = m.anon_rw;
        in->arena_heaps = m.arena_heaps;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        in->cpus = cpus > 0 ? (unsigned) cpus : 1;
        MemInfo mi;
        char buf[4096];
        ssize_t n = read_small_file_at(t->proc_fd, "meminfo", buf, sizeof(buf));
        if (n > 0 && parse_meminfo(buf, (size_t) n, &mi) == 0)
                in->host_ram = mi.total;
}

typedef struct Values {
        ExplainInput *in;
        uint64_t page_size, pages_total, pages_free, pool_size, chunk, memory_used, connected;
        uint64_t buffers; /* the per-connection buffers summed */
        bool has_pages, has_memory_used, tracking;
        uint64_t connection_limit;
} Values;

static int read_pair(void *userdata, unsigned n, char **row) {
        Values *v = userdata;
        uint64_t x;
        if (n < 2 || !row[0] || !row[1])
                return 0;
        const char *name = row[0];
        if (!parse_decimal_u64(row[1], &x)) {
                if (!strcasecmp(name, "global_connection_memory_tracking"))
                        v->tracking = !strcasecmp(row[1], "ON") || streq(row[1], "1");
                return 0;
        }
        if (!strcasecmp(name, "innodb_page_size"))
                v->page_size = x;
        else if (!strcasecmp(name, "Innodb_buffer_pool_pages_total"))
                v->pages_total = x, v->has_pages = true;
        else if (!strcasecmp(name, "Innodb_buffer_pool_pages_free"))
                v->pages_free = x;
        else if (!strcasecmp(name, "innodb_buffer_pool_size"))
                v->pool_size = x;
        else if (!strcasecmp(name, "innodb_buffer_pool_chunk_size"))
                v->chunk = x;
        else if (!strcasecmp(name, "innodb_buffer_pool_size_auto_min"))
                v->in->auto_min = x, v->in->has_auto_min = true;
        else if (!strcasecmp(name, "Memory_used"))
                v->memory_used = x, v->has_memory_used = true;
        else if (!strcasecmp(name, "Threads_connected"))
                v->connected = x;
        else if (!strcasecmp(name, "max_connections"))
                v->in->max_connections = x;
        else if (!strcasecmp(name, "max_session_mem_used"))
                v->in->session_limit = x;
        else if (!strcasecmp(name, "connection_memory_limit"))
                v->connection_limit = x;
        else if (!strcasecmp(name, "global_connection_memory_tracking"))
                v->tracking = x != 0;
        else
                /* sort, join, read, read_rnd buffers, thread_stack, net_buffer_length: what one
                 * connection may allocate at once, at most */
                v->buffers += x;
        return 0;
}

static int read_accounted(void *userdata, unsigned n, char **row) {
        uint64_t *v = userdata;
        if (n >= 2 && row[0] && row[1]) {
                (void) parse_decimal_u64(row[0], &v[0]);
                (void) parse_decimal_u64(row[1], &v[1]);
        }
        return 0;
}

static int by_memory_desc(const void *a, const void *b) {
        const Session *x = a, *y = b;
        return x->memory < y->memory ? 1 : x->memory > y->memory ? -1 : 0;
}

static void gather_sessions(SqlConn *c, ExplainInput *in, char *notes, size_t size) {
        char why[512];
        _cleanup_free_ Session *s = calloc(SESSIONS_MAX, sizeof(Session));
        unsigned n = 0;
        if (!s)
                return;
        SessionMemory measured;
        if (session_memory_check(c, &measured, why, sizeof(why)) == 0 && measured != SESSION_MEMORY_MEASURED) {
                note(notes, size, "%s", why);
                if (measured == SESSION_MEMORY_OFF)
                        return;
                in->accounted_partial = true;
        }
        if (sessions_list(c, true, s, &n, why, sizeof(why)) < 0) {
                note(notes, size, "the server's sessions: %s", why);
                return;
        }
        /* memgov's own session is not the server's load. */
        unsigned k = 0;
        for (unsigned i = 0; i < n; i++)
                if (s[i].id != c->own_id)
                        s[k++] = s[i];
        qsort(s, k, sizeof(Session), by_memory_desc);
        in->has_sessions = true;
        in->n_sessions = k;
        for (unsigned i = 0; i < k; i++)
                in->sessions_total += s[i].memory;
        in->sessions_median = k ? s[k / 2].memory : 0;
        in->n_top = MIN(k, (unsigned) EXPLAIN_TOP_SESSIONS);
        memcpy(in->top, s, in->n_top * sizeof(Session));
}

static void gather_sql(const ExplainTarget *t, const Policy *p, ExplainInput *in, char *notes, size_t size) {
        _cleanup_sql_ SqlConn c = {};
        char why[512];
        int r;
        if (t->pid <= 0 || sql_server_listens(t->pid) <= 0)
                return;
        if ((r = sql_connect(p, t->pid, &c, why, sizeof(why))) < 0) {
                note(notes, size, "the server's own figures are left out: %s", why);
                return;
        }
        in->flavor = c.mariadb ? SERVER_MARIADB : SERVER_MYSQL;
        snprintf(in->version, sizeof(in->version), "%s", c.version);

        Values v = { .in = in };
        static const char variables[] =
                "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_page_size', 'innodb_buffer_pool_size', "
                "'innodb_buffer_pool_chunk_size', 'innodb_buffer_pool_size_auto_min', 'max_connections', "
                "'max_session_mem_used', 'connection_memory_limit', 'global_connection_memory_tracking', "
                "'sort_buffer_size', 'join_buffer_size', 'read_buffer_size', 'read_rnd_buffer_size', "
                "'thread_stack', 'net_buffer_length')";
        static const char status[] =
                "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_pages_total', "
                "'Innodb_buffer_pool_pages_free', 'Memory_used', "
                "'Threads_connected')";
        if (sql_run(&c, variables, read_pair, &v, why, sizeof(why)) < 0 ||
            sql_run(&c, status, read_pair, &v, why, sizeof(why)) < 0) {
                note(notes, size, "the server's variables: %s", why);
                return;
        }
        /* The pool's pages in use: a free page was never touched, or not since the pool grew (seen:
         * a 128M pool with a small data set, 34M of the allocator's free memory crowded out). */
        if (v.has_pages && v.page_size) {
                in->has_pool = true;
                in->pool = SUB_CLAMP(v.pages_total, v.pages_free) * v.page_size;
        } else if (v.pool_size) {
                in->has_pool = true;
                in->pool = v.pool_size;
        }
        in->pool_size = v.pool_size;
        in->pool_unit = v.chunk;
        in->has_connections = in->max_connections > 0;
        in->connected = v.connected;
        in->per_connection = v.buffers;
        if (in->session_limit || (v.tracking && v.connection_limit)) {
                in->has_limits = true;
                if (!in->session_limit)
                        in->session_limit = v.connection_limit;
        }

        if (c.mariadb && v.has_memory_used) {
                in->has_accounted = true;
                in->accounted = v.memory_used;
                in->accounted_source = "Memory_used";
        } else if (!c.mariadb) {
                /* Everything performance_schema counts, the pool aside (it is a part of its own). */
                uint64_t a[2] = {};
                r = sql_run(&c,
                            "SELECT COALESCE(SUM(IF(EVENT_NAME = 'memory/innodb/buf_buf_pool', 0, "
                            "CURRENT_NUMBER_OF_BYTES_USED)), 0), COALESCE(SUM(IF(EVENT_NAME = "
                            "'memory/innodb/buf_buf_pool', CURRENT_NUMBER_OF_BYTES_USED, 0)), 0) FROM "
                            "performance_schema.memory_summary_global_by_event_name",
                            read_accounted, a, why, sizeof(why));
                if (r < 0)
                        note(notes, size, "performance_schema's memory: %s", why);
                else {
                        in->has_accounted = true;
                        in->accounted = a[0];
                        in->accounted_source = "performance_schema";
                }
        }
        gather_sessions(&c, in, notes, size);
}

/* Can the server arm a trigger on its cgroup's memory.pressure, as MariaDB's listener does at
 * startup: the file where the server looks (its /sys/fs/cgroup, at its cgroup as its own
 * namespace names it: "/" in a cgroup namespace of its own), by its ids and capabilities, on
 * the mount it sees. Only metadata is read (O_PATH), resolved inside the server's root. */
static void gather_pressure(const ExplainTarget *t, const ProcStatus *st, ExplainInput *in, char *notes,
                            size_t size) {
        char pid[16], a[64], b[64], ns_self[64], ns_server[64], path[PATH_MAX + 32];
        ProcCgroup *pc = malloc(sizeof(ProcCgroup));
        int r;
        if (!pc)
                return;
        snprintf(pid, sizeof(pid), "%d", (int) t->pid);
        if ((r = proc_read_cgroup(t->proc_fd, t->pid, pc)) < 0) {
                note(notes, size, "memory.pressure: process %d: %s", (int) t->pid, strerror(-r));
                goto out;
        }
        in->server_uid = st->fsuid;
        if (!pc->has_unified) {
                in->pressure_access = PRESSURE_ACCESS_NO_FILE;
                goto out;
        }
        proc_entry_path(t->proc_fd, "self", "ns/cgroup", a, sizeof(a));
        proc_entry_path(t->proc_fd, pid, "ns/cgroup", b, sizeof(b));
        ssize_t n1 = readlinkat(t->proc_fd, a, ns_self, sizeof(ns_self) - 1);
        ssize_t n2 = readlinkat(t->proc_fd, b, ns_server, sizeof(ns_server) - 1);
        if (n1 < 0 || n2 < 0) {
                note(notes, size, "memory.pressure: the cgroup namespaces: %s", strerror(errno));
                goto out;
        }
        ns_self[n1] = ns_server[n2] = '\0';
        const bool own_ns = !streq(ns_self, ns_server);
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.pressure",
                 own_ns || streq(pc->unified, "/") ? "" : pc->unified);
        proc_entry_path(t->proc_fd, pid, "root", a, sizeof(a));
        int root = openat(t->proc_fd, a, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) {
                note(notes, size, "memory.pressure: the server's root: %s", strerror(errno));
                goto out;
        }
        int fd = open_in_root(root, path, O_PATH, false);
        close(root);
        if (fd == -ENOENT || fd == -ENOTDIR) {
                in->pressure_access = PRESSURE_ACCESS_NO_FILE;
                goto out;
        }
        if (fd < 0) {
                note(notes, size, "memory.pressure: %s: %s", path, strerror(-fd));
                goto out;
        }
        struct stat fs;
        struct statfs sfs;
        if (fstat(fd, &fs) < 0 || fstatfs(fd, &sfs) < 0) {
                note(notes, size, "memory.pressure: %s: %s", path, strerror(errno));
                close(fd);
                goto out;
        }
        close(fd);
        in->pressure_owner = fs.st_uid;
        in->pressure_mode = fs.st_mode & 07777;
        if (!own_ns && t->cgroup && t->cgroup[0] == '/')
                snprintf(in->pressure_path, sizeof(in->pressure_path), "/sys/fs/cgroup%s/memory.pressure",
                         streq(t->cgroup, "/") ? "" : t->cgroup);
        in->pressure_ids_deny = !proc_may_write(st, fs.st_uid, fs.st_gid, fs.st_mode);
        if (sfs.f_flags & ST_RDONLY)
                in->pressure_access = PRESSURE_ACCESS_READ_ONLY;
        else if (in->pressure_ids_deny)
                in->pressure_access = PRESSURE_ACCESS_DENIED;
        else
                in->pressure_access = PRESSURE_ACCESS_WRITABLE;
out:
        free(pc);
}

static void gather_allocator(const ExplainTarget *t, ExplainInput *in, char *notes, size_t size) {
        char why[512];
        if (t->pid <= 0)
                return;
        int r = allocator_stats_read(t->pid, t->starttime, &in->allocator, why, sizeof(why));
        if (r < 0) {
                note(notes, size, "the allocator's statistics: %s", why);
                return;
        }
        in->has_allocator = true;
}

int explain_gather(const ExplainTarget *t, const Policy *p, bool allocator, ExplainInput *ret, char *notes,
                   size_t notes_size) {
        assert(t);
        assert(ret);
        *ret = (ExplainInput) {};
        notes[0] = '\0';
        gather_cgroup(t, ret, notes, notes_size);
        ProcStatus st;
        gather_process(t, &st, ret, notes, notes_size);
        if (!ret->has_cgroup && !ret->has_process)
                return -ENODATA;
        gather_sql(t, p, ret, notes, notes_size);
        if (ret->flavor == SERVER_MARIADB && ret->has_auto_min && ret->has_process)
                gather_pressure(t, &st, ret, notes, notes_size);
        if (allocator)
                gather_allocator(t, ret, notes, notes_size);
        return 0;
}
