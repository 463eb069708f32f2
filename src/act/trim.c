/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "elf-symbols.h"
#include "memgov/clock.h"
#include "memgov/maps-reader.h"
#include "memgov/fileio.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/target.h"
#include "memgov/units.h"
#include "trim.h"

#define CAP_SYS_PTRACE_BIT 19


int process_rss(pid_t pid, uint64_t *ret) {
        assert(ret);
        ProcStatus st;
        int r = proc_read_status(AT_FDCWD, pid, &st);
        if (r < 0)
                return r;
        *ret = st.vm_rss;
        return 0;
}

int trim_ptrace_preflight(pid_t pid, char *why, size_t why_size) {
        assert(why);
        ProcStatus target, self;
        char buf[16];
        int r;

        if ((r = proc_read_status(AT_FDCWD, pid, &target)) < 0) {
                snprintf(why, why_size, "process %d: %s", (int) pid, strerror(-r));
                return r == -ENOENT ? -ESRCH : r;
        }
        if ((r = proc_read_status(AT_FDCWD, getpid(), &self)) < 0)
                return r;
        bool cap = self.cap[CAP_SET_EFFECTIVE] & (1ULL << CAP_SYS_PTRACE_BIT);

        long scope = 0;
        if (read_small_file_at(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) > 0)
                scope = strtol(buf, NULL, 10);
        if (scope >= 3) {
                snprintf(why, why_size, "Yama ptrace_scope is 3: no process may be traced on this host "
                                        "(use trim method sql)");
                return -EPERM;
        }
        if (scope >= 1 && !cap) {
                snprintf(why, why_size, "Yama ptrace_scope is %ld and memgov lacks CAP_SYS_PTRACE", scope);
                return -EPERM;
        }
        if (!cap && self.euid != target.ruid) {
                snprintf(why, why_size, "process %d belongs to uid %u and memgov lacks CAP_SYS_PTRACE", (int) pid,
                         (unsigned) target.ruid);
                return -EPERM;
        }
        if (target.tracer_pid != 0) {
                snprintf(why, why_size, "process %d is already traced by process %d (a debugger?)", (int) pid,
                         (int) target.tracer_pid);
                return -EBUSY;
        }
        if (target.shadow_stack) {
                snprintf(why, why_size, "process %d runs with a CET shadow stack: injection is not attempted", (int) pid);
                return -EOPNOTSUPP;
        }
        return 0;
}

/* Whether a copy of a file holds what the target has mapped at lib->base: the mapping at file
 * offset 0 is read-only and never relocated, so the bytes in the target's memory are the file's.
 * Needed where /proc/PID/maps and stat(2) disagree on the inode (an overlayfs root, as in most
 * containers). */
static bool same_content(pid_t pid, const uint8_t *image, size_t size, const MappedLib *lib) {
        static uint8_t theirs[65536];
        uint64_t len = MIN(lib->base_end - lib->base, (uint64_t) 2 << 20);

        if (len == 0 || len > size)
                return false;
        for (uint64_t off = 0; off < len; off += sizeof(theirs)) {
                size_t n = (size_t) MIN(len - off, (uint64_t) sizeof(theirs));
                struct iovec local = { theirs, n }, remote = { (void *) (uintptr_t) (lib->base + off), n };
                if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t) n || memcmp(image + off, theirs, n) != 0)
                        return false;
        }
        return true;
}


/* The whole file, read into memory: libelf then parses a private copy that the target cannot
 * change or truncate under memgov (a mapped file truncated meanwhile would be SIGBUS). O_NONBLOCK
 * and the S_ISREG check keep a FIFO or a device from blocking memgov's worker. */
static int read_image(int fd, const char *name, uint8_t **ret, size_t *ret_size, struct stat *ret_st, char *why,
                      size_t why_size) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                snprintf(why, why_size, "%s: %s", name, strerror(-r));
                return r;
        }
        if (!S_ISREG(st.st_mode)) {
                snprintf(why, why_size, "%s is not a regular file: not read", name);
                return -ENOEXEC;
        }
        if (st.st_size <= 0 || (uint64_t) st.st_size > ELF_IMAGE_MAX) {
                snprintf(why, why_size, "%s: size %lld is not that of a shared library (at most %zu MiB)", name,
                         (long long) st.st_size, ELF_IMAGE_MAX >> 20);
                return -EFBIG;
        }
        size_t size = (size_t) st.st_size, got = 0;
        _cleanup_free_ uint8_t *image = malloc(size);
        if (!image)
                return -ENOMEM;
        while (got < size) {
                ssize_t k = pread(fd, image + got, size - got, (off_t) got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int r = negative_errno();
                        snprintf(why, why_size, "cannot read %s: %s", name, strerror(-r));
                        return r;
                }
                if (k == 0) {
                        snprintf(why, why_size, "%s shrank while it was read", name);
                        return -ESTALE;
                }
                got += (size_t) k;
        }
        *ret = TAKE_PTR(image);
        *ret_size = size;
        *ret_st = st;
        return 0;
}

/* /proc/PID/maps names a file from the reader's root. Where the target's root is a directory
 * below memgov's (a chroot, a unit's RootDirectory=), the names start with that directory (what
 * /proc/PID/root reads as): they are made names within the target's root again. Where the root
 * is memgov's, or one memgov cannot reach (a container's own), /proc/PID/root reads as "/" and
 * the names are the target's own. */
static const char *path_in_root(pid_t pid, const char *path, char *buf, size_t size) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/%d/root", (int) pid);
        ssize_t k = readlink(link, buf, size - 1);
        if (k <= 0)
                return path;
        buf[k] = '\0';
        const char *below = path_below(buf, path);
        return below ? below : path;
}

/* Opens a file for reading only once it is known to be a regular file: an O_PATH descriptor
 * first (opening nothing), then the very inode it pins. A device node put where the target maps
 * its library is never opened (a device's open has effects: /dev/watchdog opened and closed
 * without its magic close arms a reboot), a FIFO never blocks. -ENOEXEC for a file that is not a
 * regular one: something is being played on memgov. */
static int open_regular(int pathfd, const char *name, char *why, size_t why_size) {
        int fd = reopen_regular(pathfd, O_RDONLY | O_NONBLOCK, NULL);
        if (fd == -EBADFD) {
                snprintf(why, why_size, "%s is not a regular file: not opened", name);
                return -ENOEXEC;
        }
        if (fd < 0)
                snprintf(why, why_size, "cannot open %s: %s", name, strerror(-fd));
        return fd;
}

/* Reads the target's own copy of a library: by path within its root (the very file mapped:
 * same inode, else same content), else through map_files (a library replaced on disk since it
 * was mapped, or whose path the maps cannot give exactly; that needs CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE). */
static int load_lib(pid_t pid, const MappedLib *lib, uint8_t **ret, size_t *ret_size, char *why, size_t why_size) {
        char path[PATH_MAX + 64], root[PATH_MAX];
        struct stat st;
        int r;

        if (!lib->deleted && !lib->path_unclear) {
                const char *inside = path_in_root(pid, lib->path, root, sizeof(root));
                snprintf(path, sizeof(path), "%s in the root of process %d", inside, (int) pid);
                _cleanup_close_ int pathfd = open_in_process_root(pid, inside, O_PATH);
                _cleanup_close_ int fd = pathfd >= 0 ? open_regular(pathfd, path, why, why_size) : -1;
                /* Not a regular file where the target maps its libc: stop here rather than look
                 * elsewhere. */
                if (fd == -ENOEXEC)
                        return fd;
                if (fd >= 0) {
                        _cleanup_free_ uint8_t *image = NULL;
                        size_t size;
                        r = read_image(fd, path, &image, &size, &st, why, why_size);
                        if (r == -ENOEXEC)
                                return r;
                        if (r >= 0 && ((st.st_ino == lib->inode && major(st.st_dev) == lib->dev_major &&
                                        minor(st.st_dev) == lib->dev_minor) ||
                                       same_content(pid, image, size, lib))) {
                                *ret = TAKE_PTR(image);
                                *ret_size = size;
                                return 0;
                        }
                }
        }
        snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int) pid, (unsigned long long) lib->base,
                 (unsigned long long) lib->base_end);
        _cleanup_close_ int pathfd = open(path, O_PATH | O_CLOEXEC);
        if (pathfd < 0) {
                r = negative_errno();
                snprintf(why, why_size, "cannot open the target's own %s: %s%s", lib->path, strerror(-r),
                         r != -EPERM              ? ""
                         : lib->path_unclear      ? " (its path in /proc/PID/maps holds \"\\012\", a newline or those "
                                                    "characters: the file is reached only through map_files, which "
                                                    "needs CAP_CHECKPOINT_RESTORE)"
                         : lib->deleted           ? " (the library was replaced on disk since the server started: "
                                                    "restart the server, or give memgov CAP_CHECKPOINT_RESTORE)"
                                                  : "");
                return r;
        }
        _cleanup_close_ int fd = open_regular(pathfd, path, why, why_size);
        if (fd < 0)
                return fd;
        return read_image(fd, path, ret, ret_size, &st, why, why_size);
}

static uint64_t load_bias(const MappedLib *lib, const ElfInfo *info) {
        return lib->base - (info->first_load_vaddr & ~(uint64_t) 4095);
}

int trim_plan(pid_t pid, TrimPlan *ret, char *why, size_t why_size) {
        assert(ret);
        assert(why);
        _cleanup_free_ uint8_t *libc = NULL, *other = NULL;
        size_t libc_size, other_size;
        ProcMaps m;
        ElfInfo libc_info, lib_info;
        int r;

        *ret = (TrimPlan) { .pid = pid };
        r = maps_read_summary(AT_FDCWD, pid, &m);
        if (r < 0) {
                snprintf(why, why_size, "/proc/%d/maps: %s", (int) pid,
                         r == -E2BIG ? "a line longer than memgov reads" : r == -EBADMSG || r == -ENODATA ?
                         "unexpected contents" : strerror(-r));
                return r == -ENOENT ? -ESRCH : r;
        }
        if (!m.libc.found) {
                snprintf(why, why_size, "process %d has no glibc mapped (a static or musl build?): no known allocator",
                         (int) pid);
                return -EOPNOTSUPP;
        }
        ret->allocator = m.allocator;

        if ((r = load_lib(pid, &m.libc, &libc, &libc_size, why, why_size)) < 0)
                return r;
        if ((r = elf_read_info(libc, libc_size, &libc_info)) < 0) {
                snprintf(why, why_size, "%s: not a readable x86-64 ELF file", m.libc.path);
                return r;
        }

        /* The stub goes in the unused tail of libc's executable segment. Sums that wrap are
         * refused: the file's figures are the target's. */
        size_t stub_size;
        (void) inject_stub(&stub_size);
        uint64_t bias = load_bias(&m.libc, &libc_info);
        uint64_t stub = bias + ((libc_info.exec_end + 63) & ~(uint64_t) 63);
        uint64_t start, end;
        char perms[5];
        if (libc_info.exec_end > UINT64_MAX - 63 || stub < bias || stub + stub_size < stub ||
            stub + stub_size > bias + libc_info.exec_page_end ||
            maps_read_find(AT_FDCWD, pid, stub, &start, &end, perms) < 0 || perms[2] != 'x' || stub + stub_size > end) {
                snprintf(why, why_size, "no room for the call stub after libc's code in process %d", (int) pid);
                return -ENOSPC;
        }
        ret->stub_addr = stub;

        /* The mailbox: the unused tail of libc's last writable page (after its .bss). */
        uint64_t box = bias + ((libc_info.rw_end + 15) & ~(uint64_t) 15);
        if (libc_info.rw_end && libc_info.rw_end <= UINT64_MAX - 15 && box >= bias && box + 16 > box &&
            box + 16 <= bias + libc_info.rw_page_end && maps_read_find(AT_FDCWD, pid, box, &start, &end, perms) == 0 &&
            perms[0] == 'r' && perms[1] == 'w' && box + 16 <= end)
                ret->mailbox_addr = box;

        const MappedLib *lib = &m.libc;
        const ElfInfo *info = &libc_info;
        uint8_t *image = libc;
        size_t image_size = libc_size;
        switch (m.allocator) {
        case ALLOCATOR_GLIBC:
                ret->function = "malloc_trim";
                break;
        case ALLOCATOR_JEMALLOC:
                ret->function = "mallctl";
                ret->arg_string = "arena.4096.purge"; /* MALLCTL_ARENAS_ALL */
                break;
        case ALLOCATOR_TCMALLOC:
                ret->function = "MallocExtension_ReleaseFreeMemory";
                break;
        default:
                snprintf(why, why_size, "process %d: unknown allocator", (int) pid);
                return -EOPNOTSUPP;
        }
        if (m.allocator != ALLOCATOR_GLIBC) {
                if ((r = load_lib(pid, &m.allocator_lib, &other, &other_size, why, why_size)) < 0)
                        return r;
                if ((r = elf_read_info(other, other_size, &lib_info)) < 0) {
                        snprintf(why, why_size, "%s: not a readable x86-64 ELF file", m.allocator_lib.path);
                        return r;
                }
                lib = &m.allocator_lib;
                info = &lib_info;
                image = other;
                image_size = other_size;
        }
        uint64_t off;
        r = elf_find_symbol(image, image_size, ret->function, &off);
        if (r < 0) {
                snprintf(why, why_size, "%s has no %s", lib->path, ret->function);
                return r;
        }
        ret->fn_addr = load_bias(lib, info) + off;
        snprintf(ret->library, sizeof(ret->library), "%s", lib->path);
        return 0;
}

int trim_by_ptrace(pid_t pid, uint64_t starttime, pid_t tid, bool dry_run, int phase_fd, TrimReport *ret, char *why,
                   size_t why_size) {
        assert(ret);
        assert(why);
        TrimPlan plan;
        int r;

        *ret = (TrimReport) { .method = TRIM_PTRACE };
        /* The process the plan is made for (the caller's, when it knows it): the injection checks,
         * once it holds a thread, that the pid still names it. */
        ProcStat st;
        if ((r = proc_read_stat(AT_FDCWD, pid, &st)) < 0) {
                snprintf(why, why_size, "process %d: %s", (int) pid, strerror(-r));
                return r;
        }
        if (starttime && st.starttime != starttime) {
                snprintf(why, why_size, "process %d is not the server any more (pid reused)", (int) pid);
                return -ESRCH;
        }
        if ((r = trim_ptrace_preflight(pid, why, why_size)) < 0)
                return r;
        if ((r = trim_plan(pid, &plan, why, why_size)) < 0)
                return r;
        ret->allocator = plan.allocator;
        ret->function = plan.function;

        InjectRequest q = {
                .pid = pid,
                .tid = tid,
                .starttime = st.starttime,
                .fn = plan.fn_addr,
                .arg0_string = plan.arg_string,
                .stub_addr = plan.stub_addr,
                .mailbox_addr = plan.mailbox_addr,
                .dry_run = dry_run,
                .phase_fd = phase_fd,
        };
        (void) process_rss(pid, &ret->rss_before);
        /* A thread may leave its system call just as we stop it, or none may be blocked at this
         * very moment: try again a few times, a few milliseconds apart. */
        for (unsigned attempt = 0;; attempt++) {
                r = inject_call(&q, &ret->inject, why, why_size);
                if (r != -EAGAIN || tid > 0 || attempt >= 9)
                        break;
                struct timespec ts = { .tv_nsec = 3 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        if (r < 0 || dry_run)
                return r;
        ret->duration = ret->inject.call;
        if (process_rss(pid, &ret->rss_after) == 0 && ret->rss_before > 0) {
                ret->has_freed = true;
                ret->freed = ret->rss_before > ret->rss_after ? ret->rss_before - ret->rss_after : 0;
        }
        return 0;
}

typedef struct TrimAnswer {
        bool null; /* NULL: another trim within the function's interval, nothing trimmed now */
        uint64_t freed;
} TrimAnswer;

static int parse_freed(void *userdata, unsigned n, char **row) {
        TrimAnswer *a = userdata;
        if (n >= 1 && row[0])
                a->freed = strtoull(row[0], NULL, 10);
        else
                a->null = true;
        return 0;
}

/* How the function is installed: memgov(8), TRIM OVER SQL. */
#define TRIM_UDF_HINT                                                                                    \
        "copy memgov_udf.so into the server's plugin_dir, then CREATE FUNCTION memgov_trim RETURNS "     \
        "INTEGER SONAME 'memgov_udf.so'; see memgov(8)"

static int count_row(void *userdata, unsigned n, char **row) {
        (*(unsigned *) userdata)++;
        return 0;
}

static Allocator detect_allocator(pid_t pid) {
        ProcMaps m;
        if (maps_read_summary(AT_FDCWD, pid, &m) < 0)
                return ALLOCATOR_UNKNOWN;
        return m.allocator;
}

int trim_by_sql(const Policy *p, pid_t pid, bool dry_run, TrimReport *ret, char *why, size_t why_size) {
        assert(p);
        assert(ret);
        assert(why);
        _cleanup_sql_ SqlConn c = {};
        int r;

        *ret = (TrimReport) { .method = TRIM_SQL, .function = "memgov_trim()", .allocator = detect_allocator(pid) };
        r = sql_connect(p, pid, &c, why, why_size);
        if (r < 0)
                return r;
        if (dry_run) {
                /* Everything but the call: is the function there? */
                unsigned rows = 0;
                r = sql_run(&c, "SELECT 1 FROM mysql.func WHERE name = 'memgov_trim'", count_row, &rows, why, why_size);
                if (r >= 0 && rows == 0) {
                        snprintf(why, why_size, "memgov_trim() is not installed in the server (" TRIM_UDF_HINT ")");
                        return -ENOENT;
                }
                return r;
        }
        TrimAnswer answer = {};
        (void) process_rss(pid, &ret->rss_before);
        usec_t t0 = now_clock(CLOCK_MONOTONIC);
        r = sql_run(&c, "SELECT memgov_trim()", parse_freed, &answer, why, why_size);
        ret->duration = now_clock(CLOCK_MONOTONIC) - t0;
        if (r == -ENOENT) {
                snprintf(why, why_size, "memgov_trim() is not installed in the server (" TRIM_UDF_HINT ")");
                return r;
        }
        if (r < 0)
                return r;
        /* Not a trim that freed nothing, which would mark the rung as not helping: an account
         * calling the function every 10 s would keep memgov's trim from ever counting. */
        if (answer.null) {
                ret->not_done = true;
                return 0;
        }
        (void) process_rss(pid, &ret->rss_after);
        ret->has_freed = true;
        ret->freed = ret->rss_after && ret->rss_before > ret->rss_after ? ret->rss_before - ret->rss_after : answer.freed;
        return 0;
}

int trim_run(const Policy *p, pid_t pid, uint64_t starttime, pid_t tid, TrimMethod method, bool dry_run, int phase_fd,
             TrimReport *ret, char *why, size_t why_size) {
        assert(ret);
        assert(why);
        int r;

        if (method == TRIM_SQL)
                return trim_by_sql(p, pid, dry_run, ret, why, why_size);
        r = trim_by_ptrace(pid, starttime, tid, dry_run, phase_fd, ret, why, why_size);
        if (r < 0 && method == TRIM_AUTO && (r == -EPERM || r == -EOPNOTSUPP || r == -EBUSY || r == -EAGAIN)) {
                /* ptrace refused: say so, then the next method. */
                char first[512];
                snprintf(first, sizeof(first), "%s", why);
                TrimReport sql;
                int s = trim_by_sql(p, pid, dry_run, &sql, why, why_size);
                if (s >= 0) {
                        *ret = sql;
                        return 0;
                }
                char second[512];
                snprintf(second, sizeof(second), "%s", why);
                snprintf(why, why_size, "ptrace: %s; sql: %s", first, second);
        }
        return r;
}

void trim_report_text(pid_t pid, const TrimReport *r, int error, const char *why, bool dry_run, char *buf, size_t size) {
        assert(r);
        assert(buf);
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX], t1[FORMAT_TIMESPAN_MAX], t2[FORMAT_TIMESPAN_MAX];

        if (error < 0) {
                snprintf(buf, size, "trim of %d failed (%s): %s", (int) pid, trim_method_to_string(r->method),
                         why && why[0] ? why : strerror(-error));
                return;
        }
        if (dry_run && r->method == TRIM_SQL) {
                snprintf(buf, size, "would call memgov_trim() over SQL in process %d", (int) pid);
                return;
        }
        if (r->method == TRIM_SQL && r->not_done) {
                snprintf(buf, size, "memgov_trim() over SQL in %d trimmed nothing: another trim ran in the server "
                                    "within its last 10 s (any account may call the function); not counted",
                         (int) pid);
                return;
        }
        if (r->method == TRIM_SQL) {
                snprintf(buf, size, "%s memgov_trim() over SQL in %d: call %s, RSS %s -> %s, freed %s",
                         allocator_to_string(r->allocator), (int) pid,
                         format_timespan(t2, r->duration), format_bytes(a, r->rss_before), format_bytes(b, r->rss_after),
                         format_bytes(c, r->freed));
                return;
        }
        if (dry_run) {
                snprintf(buf, size, "would call %s %s in thread %d of %d (blocked in %s)",
                         allocator_to_string(r->allocator), r->function, (int) r->inject.tid, (int) pid,
                         r->inject.syscall_name);
                return;
        }
        snprintf(buf, size, "%s %s in thread %d of %d (blocked in %s): held %s, call %s, RSS %s -> %s, freed %s",
                 allocator_to_string(r->allocator), r->function, (int) r->inject.tid, (int) pid, r->inject.syscall_name,
                 format_timespan(t1, r->inject.held), format_timespan(t2, r->duration), format_bytes(a, r->rss_before),
                 format_bytes(b, r->rss_after), format_bytes(c, r->freed));
}

json_object *trim_report_json(pid_t pid, const TrimReport *r, int error, const char *why, bool dry_run) {
        assert(r);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "pid", json_object_new_int(pid));
        json_object_object_add(o, "ok", json_object_new_boolean(error >= 0));
        json_object_object_add(o, "error", error < 0 ? json_object_new_string(why && why[0] ? why : strerror(-error)) : NULL);
        json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run));
        json_object_object_add(o, "method", json_object_new_string(trim_method_to_string(r->method)));
        json_object_object_add(o, "allocator", json_object_new_string(allocator_to_string(r->allocator)));
        json_object_object_add(o, "function", r->function ? json_object_new_string(r->function) : NULL);
        json_object_object_add(o, "thread", r->inject.tid ? json_object_new_int(r->inject.tid) : NULL);
        json_object_object_add(o, "syscall", r->inject.syscall_name ? json_object_new_string(r->inject.syscall_name) : NULL);
        json_object_object_add(o, "held_us", json_object_new_uint64(r->inject.held));
        json_object_object_add(o, "call_us", json_object_new_uint64(r->duration));
        json_object_object_add(o, "completed", json_object_new_boolean(r->inject.completed));
        json_object_object_add(o, "returned", json_object_new_uint64(r->inject.ret));
        json_object_object_add(o, "rss_before", json_object_new_uint64(r->rss_before));
        json_object_object_add(o, "rss_after", json_object_new_uint64(r->rss_after));
        json_object_object_add(o, "freed", json_object_new_uint64(r->freed));
        /* sql: the function trimmed nothing, another trim having run within its interval */
        json_object_object_add(o, "not_done", json_object_new_boolean(r->not_done));
        return o;
}

/* The trim rung's actuator. */
int trim_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        const ActionTarget *t = c->target;
        char why[512];
        TrimReport rep;

        if (t->pid <= 0)
                return action_fail(ret, -ESRCH, "trim: no server process in %s", t->description);
        if (action_target_check(t) < 0)
                return action_fail(ret, -ESRCH, "trim: process %d is not the server any more", (int) t->pid);
        int r = trim_run(c->policy, t->pid, t->starttime, 0, d->trim.method, c->dry_run, -1, &rep, why, sizeof(why));
        trim_report_text(t->pid, &rep, r, why, c->dry_run, ret->detail, sizeof(ret->detail));
        if (r < 0) {
                ret->explained = why[0] != '\0'; /* the injection's or the server's own words */
                return r;
        }
        ret->not_done = rep.not_done;
        if (rep.has_freed && !c->dry_run) {
                ret->has_freed = true;
                ret->freed = rep.freed;
        }
        if (!c->dry_run && rep.method == TRIM_PTRACE)
                ret->held = rep.inject.held;
        return 0;
}
