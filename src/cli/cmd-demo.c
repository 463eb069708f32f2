/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "memgov/explain.h"
#include "memgov/clock.h"
#include "memgov/fileio.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

/* memgov demo: the guest script (scripts/demo/guest.sh) starts MariaDB, memgov and the growth,
 * and writes what is happening to a directory; this side runs it (directly on a cgroup v2 host,
 * in the test VM elsewhere), shows the live status from that directory, then sums up and draws
 * the chart of the recorded trace. It runs from the source tree memgov was built from. */

#ifndef MEMGOV_SOURCE_ROOT
#define MEMGOV_SOURCE_ROOT ""
#endif

extern char **environ;

static void help(void) {
        printf("Usage: memgov demo [OPTIONS]\n"
               "\n"
               "Show memgov governing a real database server whose memory grows: a fragmented heap,\n"
               "then sessions that pile up memory. On a host with a cgroup v2 memory controller it runs\n"
               "there; elsewhere in a small VM with a Debian kernel. Installs what it needs (Debian),\n"
               "shows the live status, then a summary and a chart. Needs root; takes a few minutes.\n"
               "\n"
               "  -s --server NAME  mariadb (the host's, from Debian's packages: the default),\n"
               "                    mysql (Oracle MySQL 9.7, Debian unstable's) or mariadb-11.8\n"
               "                    (Debian 13's), each in a chroot built from Debian's packages and\n"
               "                    cached in /var/cache/memgov-servers\n"
               "  -o --output DIR   where the logs, the trace and the chart go (default ./memgov-demo)\n"
               "     --vm           use the VM even on a cgroup v2 host\n"
               "  -h --help         show this help\n");
}

/* --server: the name a user gives, the flavour the test library and the chroots know it by. */
typedef struct DemoServer {
        const char *name, *flavour, *what;
} DemoServer;

static const DemoServer demo_servers[] = {
        { "mariadb", "mariadb", "a MariaDB server from Debian" },
        { "mysql", "mysql-9.7", "Oracle MySQL 9.7 from Debian unstable, in a chroot" },
        { "mariadb-11.8", "mariadb-11.8", "MariaDB 11.8 from Debian 13, in a chroot" },
};

static const DemoServer *demo_server(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(demo_servers); i++)
                if (streq(demo_servers[i].name, name))
                        return &demo_servers[i];
        return NULL;
}

typedef struct Demo {
        char src[PATH_MAX], build[PATH_MAX], out[PATH_MAX];
        const DemoServer *server;
        bool vm, tty;
        usec_t started;
} Demo;

static bool host_has_memory_v2(void) {
        struct statfs sfs;
        char buf[512];
        if (statfs("/sys/fs/cgroup", &sfs) < 0 || (long) sfs.f_type != CGROUP2_SUPER_MAGIC)
                return false;
        ssize_t n = read_small_file_at(AT_FDCWD, "/sys/fs/cgroup/cgroup.subtree_control", buf, sizeof(buf));
        return n > 0 && strstr(buf, "memory");
}

/* Runs argv with stdout and stderr to log (appended); returns its exit status, or -errno. */
static int run_logged(char *const argv[], const char *log, pid_t *ret_pid) {
        posix_spawn_file_actions_t fa;
        pid_t pid;
        int r;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
        r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                return -r;
        if (ret_pid) {
                *ret_pid = pid;
                return 0;
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void step(Demo *d, unsigned n, unsigned of, const char *what) {
        printf("%s[%u/%u]%s %s\n", d->tty ? "\033[1m" : "", n, of, d->tty ? "\033[0m" : "", what);
        fflush(stdout);
}

static int prepare(Demo *d) {
        char path[PATH_MAX + 64], log[PATH_MAX + 32];
        unsigned of = d->vm ? 4 : 3;
        char what[160];

        snprintf(log, sizeof(log), "%s/setup.log", d->out);
        snprintf(what, sizeof(what), "installing what the demo needs (%s)", d->server->what);
        step(d, 1, of, what);
        snprintf(path, sizeof(path), "%s/scripts/setup-deps.sh", d->src);
        char *deps[] = { path, (char *) "--demo", NULL };
        int r = run_logged(deps, log, NULL);
        if (r != 0) {
                fprintf(stderr, "memgov demo: installing the packages failed (%s); see %s\n",
                        r < 0 ? strerror(-r) : "exit status", log);
                return EXIT_FAILURE;
        }
        if (!streq(d->server->flavour, "mariadb")) {
                /* On the host, before any VM: the VM verifies a chroot, it never builds one. */
                snprintf(path, sizeof(path), "%s/scripts/provision-servers.sh", d->src);
                char *prov[] = { path, (char *) d->server->flavour, NULL };
                r = run_logged(prov, log, NULL);
                if (r != 0) {
                        fprintf(stderr, "memgov demo: the %s chroot cannot be built or verified (%s); see %s\n",
                                d->server->flavour, r < 0 ? strerror(-r) : "exit status", log);
                        return EXIT_FAILURE;
                }
        }
        if (d->vm) {
                step(d, 2, of, "preparing the VM: this host's cgroup setup has no cgroup v2 memory controller, "
                               "so the demo runs under a Debian kernel in QEMU (the first time downloads it)");
                snprintf(path, sizeof(path), "%s/tests/vm/vm-setup.sh", d->src);
                char *vm[] = { path, NULL };
                r = run_logged(vm, log, NULL);
                if (r != 0) {
                        fprintf(stderr, "memgov demo: the VM cannot be set up here (%s); see %s\n",
                                r == 77 ? "QEMU or the kernel is not available" : "it failed", log);
                        return EXIT_FAILURE;
                }
        }
        return 0;
}

static int start_guest(Demo *d, pid_t *ret) {
        char guest[PATH_MAX + 64], log[PATH_MAX + 32], runvm[PATH_MAX + 64];
        char env_build[PATH_MAX + 32], env_server[64];

        snprintf(guest, sizeof(guest), "%s/scripts/demo/guest.sh", d->src);
        snprintf(log, sizeof(log), "%s/run.log", d->out);
        snprintf(env_build, sizeof(env_build), "MEMGOV_BUILD=%s", d->build);
        snprintf(env_server, sizeof(env_server), "MEMGOV_DEMO_SERVER=%s", d->server->flavour);
        if (d->vm) {
                snprintf(runvm, sizeof(runvm), "%s/tests/vm/run-vm.sh", d->src);
                char *argv[] = { runvm,    (char *) "-q",      (char *) "--disk",    (char *) "2G",
                                 (char *) "--mem", (char *) "1536M", (char *) "--timeout", (char *) "900",
                                 (char *) "--results", d->out, (char *) "--env", env_build,
                                 (char *) "--env", env_server, guest, NULL };
                return run_logged(argv, log, ret);
        }
        /* On this host: the same variables the VM would give. */
        setenv("MEMGOV_DEMO_SERVER", d->server->flavour, 1);
        setenv("MEMGOV_BUILD", d->build, 1);
        setenv("MEMGOV_RESULTS", d->out, 1);
        setenv("MEMGOV_CGROUP", "/sys/fs/cgroup", 1);
        char *argv[] = { guest, NULL };
        return run_logged(argv, log, ret);
}

static json_object *read_json(const char *dir, const char *name) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return json_object_from_file(path);
}

static void read_phase(const Demo *d, char *buf, size_t size) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/phase", d->out);
        ssize_t n = read_small_file_at(AT_FDCWD, path, buf, size);
        if (n <= 0) {
                snprintf(buf, size, "%s", d->vm ? "booting the VM" : "starting");
                return;
        }
        buf[strcspn(buf, "\n")] = '\0';
}

/* Until the guest is done: the phase, and memgov status as it sees it. */
static int watch(Demo *d, pid_t pid) {
        char phase[512], last[512] = "";
        usec_t last_line = 0;
        int status;

        for (;;) {
                pid_t w = waitpid(pid, &status, WNOHANG);
                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR)
                        return negative_errno();
                read_phase(d, phase, sizeof(phase));
                usec_t el = now_clock(CLOCK_MONOTONIC) - d->started;
                char t[FORMAT_TIMESPAN_MAX];
                format_timespan(t, el - el % USEC_PER_SEC);
                json_object *st = read_json(d->out, "status.json");
                if (d->tty) {
                        printf("\033[H\033[J\033[1mmemgov demo\033[0m  %s  (%s; logs in %s)\n\n", phase, t, d->out);
                        if (st)
                                print_status(st, true, NULL);
                        fflush(stdout);
                } else if (!streq(phase, last) || el - last_line >= 15 * USEC_PER_SEC) {
                        json_object *lvl = NULL;
                        bool has_level = st && json_object_object_get_ex(st, "level", &lvl) &&
                                         json_object_is_type(lvl, json_type_string);
                        printf("+%s %s%s%s\n", t, phase, has_level ? ", level " : "",
                               has_level ? json_object_get_string(lvl) : "");
                        fflush(stdout);
                        snprintf(last, sizeof(last), "%s", phase);
                        last_line = el;
                }
                json_object_put(st);
                struct timespec ts = { 0, 500 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A sample of metrics.prom: name{labels} value, the labels given as a substring to match. */
static double metric(const char *text, const char *name, const char *labels) {
        size_t nl = strlen(name);
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                if (strncmp(p, name, nl) != 0 || (p[nl] != '{' && p[nl] != ' '))
                        continue;
                const char *end = strchr(p, '\n');
                size_t len = end ? (size_t) (end - p) : strlen(p);
                char line[512];
                snprintf(line, sizeof(line), "%.*s", (int) MIN(len, sizeof(line) - 1), p);
                if (labels && !strstr(line, labels))
                        continue;
                const char *sp = strrchr(line, ' ');
                return sp ? strtod(sp + 1, NULL) : 0;
        }
        return 0;
}

/* memgov explain, as the guest took it with the heap fragmented: "of 600M: buffer pool 16M,
 * sessions 150M, allocator free 154M, ...", then each finding and what its fix gives back. */
static void explained(const Demo *d) {
        json_object *e = read_json(d->out, "explain.json"), *parts, *findings, *v;
        char a[FORMAT_BYTES_MAX], line[1024];
        if (!e || !json_object_object_get_ex(e, "parts", &parts) || !json_object_object_get_ex(e, "total", &v)) {
                json_object_put(e);
                return;
        }
        StrBuf b;
        strbuf_init(&b, line, sizeof(line));
        strbuf_printf(&b, "of %s:", format_bytes(a, (uint64_t) json_object_get_int64(v)));
        bool first = true;
        for (ExplainPart p = 0; p < _PART_MAX; p++)
                if (json_object_object_get_ex(parts, explain_part_to_string(p), &v) && json_object_get_int64(v) > 0) {
                        strbuf_printf(&b, "%s %s %s", first ? "" : ",", explain_part_label(p),
                                      format_bytes(a, (uint64_t) json_object_get_int64(v)));
                        first = false;
                }
        printf("  %-12s %s\n", "memory", line);
        for (size_t i = 0; json_object_object_get_ex(e, "findings", &findings) && i < json_object_array_length(findings);
             i++) {
                json_object *f = json_object_array_get_idx(findings, i), *k, *g;
                if (!json_object_object_get_ex(f, "kind", &k))
                        continue;
                printf("  %-12s %s", "finding", json_object_get_string(k));
                if (json_object_object_get_ex(f, "gives_back", &g) && json_object_get_type(g) == json_type_int)
                        printf(": its fix gives back %s", format_bytes(a, (uint64_t) json_object_get_int64(g)));
                printf(" (memgov explain, with the heap fragmented)\n");
        }
        json_object_put(e);
}

static int summarize(Demo *d) {
        char path[PATH_MAX + 64], chart[PATH_MAX + 32], policy[PATH_MAX + 32], trace[PATH_MAX + 32];
        _cleanup_free_ char *prom = NULL;
        size_t len;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        json_object *sum = read_json(d->out, "summary.json"), *v;
        snprintf(path, sizeof(path), "%s/metrics.prom", d->out);
        if (!sum || read_full_file_at(AT_FDCWD, path, 1 << 20, &prom, &len) < 0) {
                fprintf(stderr, "memgov demo: the demo did not finish: see %s/run.log and %s/memgov.log\n", d->out,
                        d->out);
                json_object_put(sum);
                return EXIT_FAILURE;
        }
        const char *server = json_object_object_get_ex(sum, "server", &v) ? json_object_get_string(v) : "MariaDB";
        uint64_t max = json_object_object_get_ex(sum, "memory_max", &v) ? (uint64_t) json_object_get_int64(v) : 0;
        int64_t oom = json_object_object_get_ex(sum, "oom_kills", &v) ? json_object_get_int64(v) : -1;
        int64_t secs = json_object_object_get_ex(sum, "seconds", &v) ? json_object_get_int64(v) : 0;

        /* The chart: the recorded trace replayed with the same policy reproduces the decisions. */
        snprintf(chart, sizeof(chart), "%s/memgov-demo.png", d->out);
        snprintf(policy, sizeof(policy), "%s/policy.ini", d->out);
        snprintf(trace, sizeof(trace), "%s/trace.csv", d->out);
        ReplayArgs ra = { .trace = trace, .policy_file = policy, .quiet = true, .plot = chart };
        int pr = replay_run(&ra, "demo");

        const char *bold = d->tty ? "\033[1m" : "", *off = d->tty ? "\033[0m" : "";
        const char *green = d->tty ? "\033[32m" : "", *red = d->tty ? "\033[31m" : "";
        printf("\n%smemgov demo: %s under memory.max %s, %s%s\n", bold, server, format_bytes(a, max),
               format_timespan(t, (usec_t) secs * USEC_PER_SEC), off);
        static const struct {
                const char *action, *label;
        } rows[] = { { "trim", "trim" }, { "memory.high", "memory.high" }, { "reset", "reset" }, { "restart", "restart" } };
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                char lab[96];
                snprintf(lab, sizeof(lab), "action=\"%s\",result=\"done\"", rows[i].action);
                double done = metric(prom, "memgov_actions_total", lab);
                snprintf(lab, sizeof(lab), "action=\"%s\",result=\"failed\"", rows[i].action);
                double failed = metric(prom, "memgov_actions_total", lab);
                snprintf(lab, sizeof(lab), "action=\"%s\"", rows[i].action);
                double freed = metric(prom, "memgov_reclaimed_bytes_total", lab);
                printf("  %-12s %3.0f done", rows[i].label, done);
                if (failed > 0)
                        printf(", %.0f failed", failed);
                if (freed > 0)
                        printf(", %s given back", format_bytes(b, (uint64_t) freed));
                if (streq(rows[i].action, "trim") && metric(prom, "memgov_injection_stop_seconds_count", NULL) > 0)
                        printf(" (a server thread stopped %.2f ms per trim on average)",
                               1000.0 * metric(prom, "memgov_injection_stop_seconds_sum", NULL) /
                                       metric(prom, "memgov_injection_stop_seconds_count", NULL));
                printf("\n");
        }
        printf("  %-12s %s%" PRId64 "%s\n", "OOM kills", oom == 0 ? green : red, oom, off);
        explained(d);
        if (pr == 0)
                printf("  %-12s %s\n", "chart", chart);
        printf("  %-12s %s/memgov.log (decisions), %s (replay it: memgov replay --policy %s %s)\n", "logs", d->out, trace,
               policy, trace);
        json_object_put(sum);
        return oom == 0 && pr == 0 ? 0 : EXIT_FAILURE;
}

int cmd_demo(int argc, char **argv) {
        static const struct option options[] = {
                { "output", required_argument, NULL, 'o' },
                { "server", required_argument, NULL, 's' },
                { "vm", no_argument, NULL, 'V' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        Demo d = { .tty = isatty(STDOUT_FILENO) && !getenv("NO_COLOR"), .server = &demo_servers[0] };
        const char *out = "memgov-demo";
        bool force_vm = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "o:s:h", options, NULL)) >= 0)
                switch (c) {
                case 'o':
                        out = optarg;
                        break;
                case 's':
                        d.server = demo_server(optarg);
                        if (!d.server) {
                                fprintf(stderr, "memgov demo: unknown server '%s' (expected mariadb, mysql or mariadb-11.8)\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'V':
                        force_vm = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("demo");
                        return EXIT_USAGE;
                }
        if (optind < argc) {
                fprintf(stderr, "memgov demo: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "memgov demo: needs root: it installs packages, creates a cgroup and starts a database "
                                "server (and a VM where the host has no cgroup v2)\n");
                return EXIT_FAILURE;
        }

        snprintf(d.src, sizeof(d.src), "%s", MEMGOV_SOURCE_ROOT);
        char probe[PATH_MAX + 64];
        snprintf(probe, sizeof(probe), "%s/scripts/demo/guest.sh", d.src);
        if (!d.src[0] || access(probe, X_OK) < 0) {
                fprintf(stderr, "memgov demo: runs from the source tree memgov was built from, and %s is not there\n",
                        probe);
                return EXIT_FAILURE;
        }
        ssize_t n = readlink("/proc/self/exe", d.build, sizeof(d.build) - 1);
        if (n <= 0)
                return EXIT_FAILURE;
        d.build[n] = '\0';
        *strrchr(d.build, '/') = '\0';
        if (mkdir(out, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "memgov demo: cannot create %s: %m\n", out);
                return EXIT_FAILURE;
        }
        if (!realpath(out, d.out))
                return EXIT_FAILURE;
        static const char *const stale[] = { "phase", "status.json", "summary.json", "metrics.prom", "trace.csv",
                                             "memgov.log", "memgov-demo.png", "run.log", "setup.log" };
        for (size_t i = 0; i < ELEMENTSOF(stale); i++) {
                snprintf(probe, sizeof(probe), "%s/%s", d.out, stale[i]);
                (void) unlink(probe);
        }
        d.vm = force_vm || !host_has_memory_v2();
        d.started = now_clock(CLOCK_MONOTONIC);

        if ((r = prepare(&d)) != 0)
                return r;
        step(&d, d.vm ? 3 : 2, d.vm ? 4 : 3,
             d.vm ? "booting the VM and starting the server, memgov and the growth"
                  : "starting the server, memgov and the growth");
        if (d.tty) {
                struct timespec ts = { 1, 0 };
                nanosleep(&ts, NULL);
        }
        pid_t pid;
        r = start_guest(&d, &pid);
        if (r < 0) {
                fprintf(stderr, "memgov demo: cannot start the demo: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        r = watch(&d, pid);
        if (r != 0)
                fprintf(stderr, "memgov demo: the demo ended with status %d; see %s/run.log%s\n", r, d.out,
                        d.vm ? ", console.log and stderr.log" : "");
        step(&d, d.vm ? 4 : 3, d.vm ? 4 : 3, "summary");
        int s = summarize(&d);
        return r != 0 ? EXIT_FAILURE : s;
}
