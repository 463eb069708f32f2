/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "memgov/explain.h"
#include "memgov/clock.h"
#include "memgov/daemon.h"
#include "memgov/fileio.h"
#include "memgov/log.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov status [OPTIONS] [TARGET]\n"
               "\n"
               "Show what the memgov governing TARGET sees and did: level, working set, budget, ETA,\n"
               "memory.high, the last actions and what they freed, cooldowns. Without a running\n"
               "memgov for the target, a one-shot snapshot of it.\n"
               "\n"
               "  -j --json           print the status document as JSON\n"
               "  -w --watch[=TIME]   refresh every TIME (default 2s) until interrupted\n"
               "  -s --socket PATH    the daemon's control socket\n"
               "  -p --probe          a liveness probe: print nothing, exit 0 only when the daemon\n"
               "                      answers within 5s and its action thread is not wedged\n"
               "  -h --help           show this help\n"
               "\n" TARGET_OPTIONS_HELP);
}

/* The whole exchange, connect to the last byte, within this: a daemon whose loop is stuck must
 * not hold a liveness probe past its own timeout. */
#define STATUS_ANSWER_TIMEOUT (5 * USEC_PER_SEC)
/* A reply is a few KiB (64 history entries at most): beyond this it is not memgov's. */
#define STATUS_REPLY_MAX (16U << 20)

/* Waits for events on fd until deadline; -ETIMEDOUT past it. */
static int wait_fd(int fd, short events, usec_t deadline) {
        for (;;) {
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = events };
                int k = poll(&p, 1, (int) MIN((deadline - now) / USEC_PER_MSEC + 1, (usec_t) INT32_MAX));
                if (k < 0 && errno != EINTR)
                        return negative_errno();
                if (k > 0)
                        return 0;
        }
}

/* Asks the daemon on path. -ENOENT or -ECONNREFUSED: nobody there. Any other error means a
 * daemon (or something) answered wrongly or not in time, and is said here. */
static int fetch(const char *path, json_object **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        usec_t deadline = now_clock(CLOCK_MONOTONIC) + STATUS_ANSWER_TIMEOUT;
        char t[FORMAT_TIMESPAN_MAX], why[512];
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;
        int r;

        if (fd < 0)
                return negative_errno();
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = negative_errno();
                if (r == -EACCES || r == -EPERM) {
                        fprintf(stderr, "memgov status: %s: %s (the control socket answers root and memgov's own "
                                        "user only: run it with sudo)\n", path, strerror(-r));
                        return -EACCES;
                }
                /* A full backlog: the daemon does not accept. */
                if (r != -EAGAIN)
                        return r;
                r = wait_fd(fd, POLLOUT, deadline);
                if (r < 0)
                        goto timeout;
        }
        r = wait_fd(fd, POLLOUT, deadline);
        if (r < 0)
                goto timeout;
        if (send(fd, "status\n", 7, MSG_NOSIGNAL) != 7) {
                r = negative_errno();
                if (r == -EAGAIN)
                        goto timeout;
                fprintf(stderr, "memgov status: %s: cannot send the request: %s\n", path, strerror(-r));
                return r;
        }

        /* Read whole, to the daemon's end of the reply: a cut one is never taken for a reply. */
        for (;;) {
                if (len + 1 >= size) {
                        if (size >= STATUS_REPLY_MAX) {
                                fprintf(stderr, "memgov status: %s: the reply is longer than %u MiB: refused\n", path,
                                        STATUS_REPLY_MAX >> 20);
                                return -EFBIG;
                        }
                        size = size ? size * 2 : 65536;
                        char *b = realloc(buf, size);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                ssize_t n = recv(fd, buf + len, size - 1 - len, 0);
                if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                        r = wait_fd(fd, POLLIN, deadline);
                        if (r < 0)
                                goto timeout;
                        continue;
                }
                if (n < 0) {
                        r = negative_errno();
                        fprintf(stderr, "memgov status: %s: reading the reply: %s\n", path, strerror(-r));
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        r = status_reply_parse(buf, ret, why, sizeof(why));
        if (r == -EACCES)
                fprintf(stderr, "memgov status: %s: %s\n", path, why);
        else if (r < 0)
                fprintf(stderr, "memgov status: %s: the reply (%zu bytes) is not a status document\n", path, len);
        return r;
timeout:
        fprintf(stderr, "memgov status: %s: no answer within %s\n", path, format_timespan(t, STATUS_ANSWER_TIMEOUT));
        return -ETIMEDOUT;
}

int status_reply_parse(const char *buf, json_object **ret, char *error, size_t error_size) {
        json_object *doc = json_tokener_parse(buf);
        if (!doc)
                return -EBADMSG;
        json_object *err;
        if (json_object_object_get_ex(doc, "error", &err)) {
                snprintf(error, error_size, "%s", strempty(json_object_get_string(err)));
                json_object_put(doc);
                return -EACCES;
        }
        *ret = doc;
        return 0;
}

/* The only socket in /run/memgov, if there is exactly one. */
static int only_socket(char *buf, size_t size) {
        DIR *d = opendir(MEMGOV_RUN_DIR);
        struct dirent *de;
        unsigned n = 0;

        if (!d)
                return -ENOENT;
        while ((de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (l < 6 || !streq(de->d_name + l - 5, ".sock"))
                        continue;
                if (n++ == 0)
                        snprintf(buf, size, MEMGOV_RUN_DIR "/%s", de->d_name);
        }
        closedir(d);
        return n == 1 ? 0 : n == 0 ? -ENOENT : -ENOTUNIQ;
}

static const char *str(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

static bool has_num(json_object *o, const char *key, int64_t *ret) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !v || json_object_get_type(v) == json_type_string)
                return false;
        *ret = json_object_get_int64(v);
        return true;
}

static json_object *obj(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *bytes_or_max(json_object *o, const char *key, char buf[static FORMAT_BYTES_MAX]) {
        json_object *v = obj(o, key);
        if (!v)
                return "?";
        if (json_object_get_type(v) == json_type_string)
                return json_object_get_string(v);
        return format_bytes(buf, (uint64_t) json_object_get_int64(v));
}

void print_status(json_object *st, bool color, const char *note) {
        json_escape_untrusted(st);
        const char *bold = color ? "\033[1m" : "", *off = color ? "\033[0m" : "";
        const char *level = str(st, "level") ?: "?";
        const char *lvl_color = !color ? ""
                                : streq(level, "normal") ? "\033[32m"
                                : streq(level, "trim")   ? "\033[36m"
                                : streq(level, "throttle") ? "\033[33m"
                                                           : "\033[31m";
        json_object *t = obj(st, "target");
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX], d[FORMAT_BYTES_MAX];
        char ts[FORMAT_TIMESPAN_MAX], rate[FORMAT_RATE_MAX];
        int64_t v, w;

        printf("%smemgov%s  %s%s%s\n", bold, off, t && str(t, "description") ? str(t, "description") : "(no target yet)",
               json_object_get_boolean(obj(st, "dry_run")) ? "  [dry run]" : "", note ? note : "");
        if (t && str(t, "waiting"))
                printf("  waiting       %s\n", str(t, "waiting"));
        printf("  policy        %s\n", str(st, "policy") ?: "?");
        json_object *srv = obj(st, "server");
        if (srv) {
                int64_t id = 0;
                bool has_id = has_num(srv, "sql_session_id", &id);
                const char *sess = str(srv, "sql_session") ?: "off";
                printf("  database      %s%s%s, allocator %s; SQL session %s", str(srv, "flavour") ?: "version not known yet",
                       str(srv, "version") ? " " : "", str(srv, "version") ?: "", str(srv, "allocator") ?: "?",
                       streq(sess, "open") ? "kept open" : streq(sess, "failed") ? "not open: " : "not kept");
                if (has_id) /* the daemon gives an id only for a session that is open */
                        printf(", id %" PRId64, id);
                if (streq(sess, "failed"))
                        printf("%s", str(srv, "sql_error") ?: "?");
                printf("\n");
                json_object *acc = obj(srv, "accepting_clients");
                if (acc && !json_object_get_boolean(acc))
                        printf("  server        starting: it listens on no socket yet (the ladder waits until it "
                               "accepts clients)\n");
                if (str(srv, "session_memory_off"))
                        printf("  sessions      %s\n", str(srv, "session_memory_off"));
                json_object *bp = obj(srv, "buffer_pool");
                int64_t size = 0, found = 0, shrunk = 0, n = 0, min = 0, in_use = 0, free_ = 0;
                if (bp && has_num(bp, "size", &size) && has_num(bp, "found", &found)) {
                        printf("  buffer pool   %s (%s when first read)", format_bytes(a, (uint64_t) size),
                               format_bytes(b, (uint64_t) found));
                        if (has_num(bp, "in_use", &in_use) && has_num(bp, "free", &free_))
                                printf(", pages %s in use, %s free", format_bytes(a, (uint64_t) in_use),
                                       format_bytes(b, (uint64_t) free_));
                        json_object *on = obj(bp, "server_shrinks_on_pressure");
                        if (on && json_object_get_boolean(on))
                                printf("; the server shrinks it on memory pressure, down to %s",
                                       has_num(bp, "auto_min", &min) && min > 0 ? format_bytes(c, (uint64_t) min) : "nothing");
                        else if (on)
                                printf("; the server's own shrinking on memory pressure is off");
                        if (has_num(bp, "shrinks_by_server", &n) && n > 0 && has_num(bp, "shrunk_by_server", &shrunk))
                                printf("; shrunk without memgov %" PRId64 " time(s), %s", n,
                                       format_bytes(d, (uint64_t) shrunk));
                        printf("\n");
                }
        }
        printf("  cgroup        %s%s\n", str(st, "cgroup_mode") ?: "?",
               json_object_get_boolean(obj(st, "memory_controller_v2")) ? "" : ", no v2 memory controller: process only");
        printf("  level         %s%s%s%s\n", lvl_color, bold, level, off);
        if (has_num(st, "working_set", &v) && has_num(st, "budget", &w)) {
                int64_t bp = 0;
                has_num(st, "share_bp", &bp);
                printf("  working set   %s = %" PRId64 "%% of %s budget\n", format_bytes(a, (uint64_t) v), bp / 100,
                       format_bytes(b, (uint64_t) w));
        } else if (has_num(st, "working_set", &v))
                printf("  working set   %s, no budget\n", format_bytes(a, (uint64_t) v));
        if (has_num(st, "slope_bytes_per_hour", &v)) {
                int64_t eta;
                bool e = has_num(st, "eta_s", &eta);
                printf("  trend         %s %s%s%s\n", v >= 0 ? "rising" : "falling",
                       format_rate(rate, (v >= 0 ? (double) v : -(double) v) / 3600.0),
                       e ? ", OOM in " : ", no OOM in sight",
                       e ? format_timespan(ts, (usec_t) eta * USEC_PER_SEC) : "");
        } else if (obj(st, "sample"))
                printf("  trend         not known yet\n");

        json_object *s = obj(st, "sample");
        json_object *mem = s ? obj(s, "memory") : NULL;
        if (mem)
                printf("  memory        current %s, high %s, max %s, inactive file %s\n", bytes_or_max(mem, "current", a),
                       bytes_or_max(mem, "high", b), bytes_or_max(mem, "max", c), bytes_or_max(mem, "inactive_file", d));
        /* memgov explain's parts and findings, as the daemon last measured them. */
        json_object *parts_doc = obj(st, "memory");
        json_object *parts = parts_doc ? obj(parts_doc, "parts") : NULL;
        if (parts) {
                int64_t ago = 0, total = 0;
                has_num(parts_doc, "measured_s_ago", &ago);
                has_num(parts_doc, "total", &total);
                printf("  parts        ");
                for (ExplainPart part = 0; part < _PART_MAX; part++) {
                        int64_t bytes;
                        if (has_num(parts, explain_part_to_string(part), &bytes) && bytes > 0)
                                printf(" %s %s,", explain_part_label(part), format_bytes(a, (uint64_t) bytes));
                }
                printf(" of %s (the server's figures %s ago; memgov explain)\n", format_bytes(b, (uint64_t) total),
                       format_timespan(ts, (usec_t) ago * USEC_PER_SEC));
                json_object *found = obj(parts_doc, "findings");
                for (size_t i = 0; found && i < json_object_array_length(found); i++) {
                        json_object *f = json_object_array_get_idx(found, i);
                        int64_t back;
                        printf("  finding       %s", str(f, "kind") ?: "?");
                        if (has_num(f, "gives_back", &back))
                                printf(": its fix gives back %s", format_bytes(a, (uint64_t) back));
                        printf("\n");
                }
        }
        json_object *ev = s ? obj(s, "events") : NULL;
        if (ev) {
                int64_t h = 0, mx = 0, o = 0, ok = 0;
                has_num(ev, "high", &h);
                has_num(ev, "max", &mx);
                has_num(ev, "oom", &o);
                has_num(ev, "oom_kill", &ok);
                printf("  events        high %" PRId64 ", max %" PRId64 ", oom %" PRId64 ", oom_kill %" PRId64 "\n", h, mx, o, ok);
        }
        json_object *psi = s ? obj(s, "psi") : NULL;
        if (psi)
                printf("  PSI avg10     some %.2f%%, full %.2f%%\n", json_object_get_double(obj(psi, "some_avg10")),
                       obj(psi, "full_avg10") ? json_object_get_double(obj(psi, "full_avg10")) : 0.0);
        json_object *p = s ? obj(s, "process") : NULL;
        if (p) {
                int64_t pid = 0, thr = 0, up = 0, maps = 0;
                has_num(p, "pid", &pid);
                has_num(p, "threads", &thr);
                has_num(p, "anon_maps", &maps);
                bool hu = has_num(p, "uptime_s", &up);
                printf("  server        pid %" PRId64 ", RSS %s, %" PRId64 " threads, %" PRId64 " anonymous mappings%s%s\n", pid,
                       bytes_or_max(p, "rss", a), thr, maps, hu ? ", up " : "", hu ? format_timespan(ts, (usec_t) up * USEC_PER_SEC) : "");
        }
        json_object *wk = obj(st, "worker");
        if (wk && json_object_get_boolean(obj(wk, "overdue"))) {
                int64_t running = 0;
                has_num(wk, "running_s", &running);
                printf("  %sactions       WEDGED: %s running for %s, past its timeout%s\n", bold, str(wk, "action") ?: "?",
                       format_timespan(ts, (usec_t) running * USEC_PER_SEC), off);
        }
        if (obj(st, "memory_high_set"))
                printf("  memory.high   %s set by memgov\n", bytes_or_max(st, "memory_high_set", a));

        json_object *acts = obj(st, "actions");
        if (json_object_is_type(acts, json_type_object)) {
                bool first = true;
                json_object_object_foreach(acts, name, act) {
                        int64_t count = 0, ago, ready = 0, gain;
                        has_num(act, "count", &count);
                        if (count == 0)
                                continue;
                        char line[256];
                        StrBuf lb;
                        /* Bounded: the action names come from the reply. */
                        strbuf_init(&lb, line, sizeof(line));
                        strbuf_printf(&lb, "%s %" PRId64 "x", name, count);
                        if (has_num(act, "last_s_ago", &ago))
                                strbuf_printf(&lb, ", last %s ago", format_timespan(ts, (usec_t) ago * USEC_PER_SEC));
                        if (has_num(act, "last_gain", &gain))
                                strbuf_printf(&lb, ", freed %s",
                                              gain > 0 ? format_bytes(a, (uint64_t) gain) : "nothing");
                        if (has_num(act, "ready_in_s", &ready) && ready > 0)
                                strbuf_printf(&lb, ", next in %s%s", format_timespan(ts, (usec_t) ready * USEC_PER_SEC),
                                              json_object_get_boolean(obj(act, "not_helping")) ? " (not helping)" : "");
                        printf("  %-13s %s\n", first ? "actions" : "", line);
                        first = false;
                }
        }

        json_object *hist = obj(st, "history");
        size_t n = json_object_is_type(hist, json_type_array) ? json_object_array_length(hist) : 0;
        if (n > 0) {
                printf("  recent\n");
                for (size_t i = n > 12 ? n - 12 : 0; i < n; i++) {
                        json_object *h = json_object_array_get_idx(hist, i);
                        json_object *tm = obj(h, "time");
                        const char *wall = tm ? str(tm, "wall") : NULL;
                        /* The time of "2026-08-10 23:09:57". */
                        printf("    %s  %s\n", wall && strlen(wall) > 11 ? wall + 11 : "        ",
                               str(h, "line") ?: "");
                        if (str(h, "result") && !streq(str(h, "kind") ?: "", "level"))
                                printf("    %8s    -> %s%s\n", "", str(h, "result"), obj(h, "error") ? " (failed)" : "");
                }
        }
}

/* A liveness probe (Kubernetes): the daemon must answer, and its action thread must not be
 * wedged. A snapshot would say nothing about the daemon: none is taken. */
static int probe_daemon(const char *socket_path) {
        json_object *st = NULL, *w, *v;

        if (!socket_path) {
                fprintf(stderr, "memgov status: no control socket in %s: no daemon runs\n", MEMGOV_RUN_DIR);
                return EXIT_FAILURE;
        }
        int r = fetch(socket_path, &st);
        if (r == -ENOENT || r == -ECONNREFUSED)
                fprintf(stderr, "memgov status: %s: no daemon answers: %s\n", socket_path, strerror(-r));
        if (r < 0)
                return EXIT_FAILURE;
        bool overdue = json_object_object_get_ex(st, "worker", &w) && json_object_object_get_ex(w, "overdue", &v) &&
                       json_object_get_boolean(v);
        if (overdue) {
                int64_t running = 0;
                has_num(w, "running_s", &running);
                fprintf(stderr, "memgov status: %s: the action thread is wedged: %s running for %" PRId64 "s, past its "
                                "timeout\n", socket_path, str(w, "action") ?: "an action", running);
        }
        json_object_put(st);
        return overdue ? EXIT_FAILURE : 0;
}

/* No daemon: look at the target once, through the same code the daemon runs. */
static int snapshot(const TargetArgs *t, json_object **ret) {
        ManagerOptions o = { .target = t->spec, .roots = t->roots, .socket_path = "", .state_dir = "", .dry_run = true, .quiet = true };
        Manager *m = NULL;
        int saved = log_get_max_level();

        log_set_max_level(LOG_WARNING);
        int r = manager_new(&o, &m);
        if (r >= 0)
                manager_tick(m, "snapshot");
        log_set_max_level(saved);
        if (r < 0)
                return r;
        *ret = manager_status_json(m);
        manager_free(m);
        return 0;
}

int cmd_status(int argc, char **argv) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "watch", optional_argument, NULL, 'w' },
                { "socket", required_argument, NULL, 's' },
                { "probe", no_argument, NULL, 'p' },
                { "help", no_argument, NULL, 'h' },
                TARGET_OPTIONS,
                {},
        };
        const char *socket_path = NULL;
        bool json = false, probe = false;
        usec_t watch = 0;
        TargetArgs t;
        char path[300];
        int c, r;

        target_args_init(&t);
        while ((c = getopt_long(argc, argv, "jw::s:ph", options, NULL)) >= 0) {
                if ((r = target_args_parse(&t, c, optarg, "status")) != 0) {
                        if (r < 0)
                                return EXIT_USAGE;
                        continue;
                }
                switch (c) {
                case 'j':
                        json = true;
                        break;
                case 'w':
                        watch = 2 * USEC_PER_SEC;
                        if (optarg && (parse_timespan(optarg, &watch) < 0 || watch < 100 * USEC_PER_MSEC)) {
                                fprintf(stderr, "memgov status: --watch '%s' is not a duration of at least 100ms\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 's':
                        socket_path = optarg;
                        break;
                case 'p':
                        probe = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("status");
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "memgov status: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        if (probe && (json || watch)) {
                fprintf(stderr, "memgov status: --probe prints nothing: not with --json or --watch\n");
                return EXIT_USAGE;
        }

        if (!socket_path) {
                if (t.given) {
                        control_socket_path(&t.spec, path, sizeof(path));
                        socket_path = path;
                } else if ((r = only_socket(path, sizeof(path))) == 0)
                        socket_path = path;
                else if (r == -ENOTUNIQ) {
                        fprintf(stderr, "memgov status: several memgov daemons run (see %s): name the target, or "
                                        "--socket\n", MEMGOV_RUN_DIR);
                        return EXIT_USAGE;
                }
        }

        if (probe)
                return probe_daemon(socket_path);

        bool color = !json && isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
        for (;;) {
                json_object *st = NULL;
                const char *note = NULL;
                r = socket_path ? fetch(socket_path, &st) : -ENOENT;
                if (r == -EACCES)
                        return EXIT_FAILURE;
                /* Something answered, but not as a daemon does, or not in time: said, and never
                 * passed off as a snapshot. */
                if (r < 0 && r != -ENOENT && r != -ECONNREFUSED)
                        return EXIT_FAILURE;
                if (r < 0) {
                        r = snapshot(&t, &st);
                        if (r < 0) {
                                fprintf(stderr, "memgov status: no memgov daemon answers%s%s, and the target cannot be "
                                                "looked at: %s\n", socket_path ? " on " : "", socket_path ?: "", strerror(-r));
                                return EXIT_FAILURE;
                        }
                        note = "  (no daemon: a one-shot snapshot)";
                }
                if (watch && !json)
                        printf("\033[H\033[2J");
                if (json) {
                        json_escape_untrusted(st);
                        printf("%s\n", json_object_to_json_string_ext(st, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                } else
                        print_status(st, color, note);
                json_object_put(st);
                fflush(stdout);
                if (!watch)
                        return 0;
                struct timespec ts = { .tv_sec = (time_t) (watch / USEC_PER_SEC), .tv_nsec = (long) (watch % USEC_PER_SEC) * 1000 };
                nanosleep(&ts, NULL);
        }
}
