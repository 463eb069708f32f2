/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "cli.h"
#include "explain-gather.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov explain [OPTIONS] [TARGET]\n"
               "\n"
               "Where the server's memory is, in parts that add up to its cgroup's memory.current\n"
               "(or, without a cgroup, to its resident set): page cache, kernel, the buffer pool,\n"
               "what the server counts, its sessions, the memory its allocator holds free (asked of\n"
               "the allocator itself, by the same kind of call as `memgov trim`) and what is left\n"
               "unaccounted; then what would stop it growing for good, and what that gives back.\n"
               "\n"
               TARGET_OPTIONS_HELP
               "\n"
               "  -P --policy FILE    policy file ([sql] settings to reach the server)\n"
               "     --no-allocator   do not call into the server for its allocator's statistics\n"
               "  -j --json           print the explanation as JSON\n"
               "  -h --help           show this help\n");
}

enum { ARG_NO_ALLOCATOR = 0x300 };

static const char *server_name(const ExplainInput *in) {
        return in->flavor == SERVER_MARIADB ? "MariaDB" : in->flavor == SERVER_MYSQL ? "MySQL" : NULL;
}

static json_object *explanation_json(const Target *t, const ExplainInput *in, const Explanation *e,
                                     const char *notes) {
        json_object *o = json_object_new_object(), *parts = json_object_new_object(), *findings = json_object_new_array();
        json_object_object_add(o, "pid", json_object_new_int(t->pid));
        json_object_object_add(o, "process", json_object_new_string(t->comm));
        if (t->has_cgroup)
                json_object_object_add(o, "cgroup", json_object_new_string(t->cgroup));
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
        json_object_object_add(o, "overcounted", json_object_new_uint64(e->overcounted));
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
                json_object_object_add(x, "free_may_include_released",
                                       json_object_new_boolean(a->free_may_include_released));
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
                json_object_object_add(x, "fix", json_object_new_string(f->fix));
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

static void explanation_text(const Target *t, const ExplainInput *in, const Explanation *e, const char *notes) {
        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], head[1024], shown[4 * sizeof(head)];
        int n = snprintf(head, sizeof(head), "%s (pid %d)", t->comm, (int) t->pid);
        if (t->has_cgroup && n > 0 && (size_t) n < sizeof(head))
                n += snprintf(head + n, sizeof(head) - (size_t) n, ", cgroup %s", t->cgroup);
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
                } else if (p == PART_SERVER_OTHER)
                        printf("  %s%s", in->accounted_source, in->accounted_partial ? " (some instruments off)" : "");
                else if (p == PART_ALLOCATOR_FREE)
                        printf("  %s, %u call%s, a thread held at most %.1f ms%s", in->allocator.source,
                               in->allocator.calls, in->allocator.calls == 1 ? "" : "s",
                               (double) in->allocator.held_max / 1000.0,
                               in->allocator.free_may_include_released ? "; pages an earlier trim gave back count" : "");
                else if (p == PART_UNACCOUNTED && in->has_process)
                        printf("  %u anonymous mappings, %u glibc arena heaps", in->anon_maps, in->arena_heaps);
                printf("\n");
        }
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

int cmd_explain(int argc, char **argv) {
        static const struct option options[] = {
                TARGET_OPTIONS,
                { "policy", required_argument, NULL, 'P' },
                { "no-allocator", no_argument, NULL, ARG_NO_ALLOCATOR },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        TargetArgs targs;
        const char *policy_file = NULL;
        bool json = false, allocator = true;
        int c, r;

        target_args_init(&targs);
        while ((c = getopt_long(argc, argv, "P:jh", options, NULL)) >= 0) {
                r = target_args_parse(&targs, c, optarg, "explain");
                if (r < 0)
                        return EXIT_USAGE;
                if (r > 0)
                        continue;
                switch (c) {
                case 'P':
                        policy_file = optarg;
                        break;
                case ARG_NO_ALLOCATOR:
                        allocator = false;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("explain");
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "memgov explain: unexpected argument '%s'\n", argv[optind]);
                usage_hint("explain");
                return EXIT_USAGE;
        }

        _cleanup_free_ Policy *policy = malloc(sizeof(Policy));
        char origin[512];
        if (!policy)
                return EXIT_FAILURE;
        r = cli_load_policy(policy_file, policy, origin, sizeof(origin));
        if (r != 0)
                return r;
        sql_library_init();

        Roots roots;
        char why[1024];
        r = roots_open(&roots, &targs.roots, why, sizeof(why));
        if (r < 0) {
                fprintf(stderr, "memgov explain: %s\n", why);
                return EXIT_FAILURE;
        }
        sd_bus *bus = NULL;
        if (targs.spec.kind == TARGET_UNIT && (r = sd_bus_open_system(&bus)) < 0) {
                fprintf(stderr, "memgov explain: cannot connect to the system bus to find %s: %s\n", targs.spec.value,
                        strerror(-r));
                roots_close(&roots);
                return EXIT_FAILURE;
        }
        _cleanup_free_ Target *t = malloc(sizeof(Target));
        _cleanup_free_ ExplainInput *in = malloc(sizeof(ExplainInput));
        _cleanup_free_ Explanation *e = malloc(sizeof(Explanation));
        char notes[4096];
        int ret = EXIT_FAILURE;
        if (!t || !in || !e)
                goto out;
        target_init(t, &targs.spec);
        r = target_resolve(t, &roots, bus, why, sizeof(why));
        if (r < 0) {
                char shown[4 * sizeof(why)];
                fprintf(stderr, "memgov explain: %s\n", escape_untrusted(why, shown, sizeof(shown)));
                goto release;
        }
        r = explain_gather(t, &roots, policy, allocator, in, notes, sizeof(notes));
        if (r < 0) {
                char shown[4 * sizeof(notes)];
                fprintf(stderr, "memgov explain: nothing to measure for %s\n%s", t->description,
                        escape_untrusted(notes, shown, sizeof(shown)));
                goto release;
        }
        /* The unit a drop-in goes to: the one named, else the one whose cgroup the server is in. */
        const char *unit = t->spec.kind == TARGET_UNIT ? t->spec.value : NULL;
        const char *leaf = t->has_cgroup ? strrchr(t->cgroup, '/') : NULL;
        if (!unit && leaf && strlen(leaf) > STRLEN("/.service") &&
            streq(leaf + strlen(leaf) - STRLEN(".service"), ".service"))
                unit = leaf + 1;
        explain(in, unit, e);
        if (json) {
                json_object *o = explanation_json(t, in, e, notes);
                json_escape_untrusted(o);
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(o);
        } else
                explanation_text(t, in, e, notes);
        ret = 0;
release:
        target_release(t);
out:
        sd_bus_flush_close_unref(bus);
        roots_close(&roots);
        return ret;
}
