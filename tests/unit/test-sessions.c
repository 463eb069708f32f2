/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include "memgov/argv.h"
#include "memgov/sessions.h"

#define MB (1ULL << 20)

static Session S(uint64_t id, const char *user, const char *host, const char *cmd, uint64_t time_s, uint64_t mb,
                 bool trx) {
        Session s = { .id = id, .time_s = time_s, .memory = mb * MB, .in_write_trx = trx };
        snprintf(s.user, sizeof(s.user), "%s", user);
        snprintf(s.host, sizeof(s.host), "%s", host);
        snprintf(s.command, sizeof(s.command), "%s", cmd);
        return s;
}

static void test_select(void **state) {
        Policy *p = calloc(1, sizeof(Policy));
        assert_int_equal(policy_load_default(p), 0);
        snprintf(p->exempt_users[0], sizeof(p->exempt_users[0]), "backup");
        p->n_exempt_users = 1;
        snprintf(p->exempt_hosts[0], sizeof(p->exempt_hosts[0]), "10.0.0.9");
        p->n_exempt_hosts = 1;

        Session s[] = {
                S(1, "system user", "", "Slave_SQL", 100, 500, false),   /* replication: never */
                S(2, "event_scheduler", "localhost", "Daemon", 100, 500, false),
                S(3, "app", "10.0.0.5:4000", "Sleep", 120, 200, false),  /* idle, 200M */
                S(4, "app", "10.0.0.5:4001", "Sleep", 300, 80, false),   /* idle, 80M */
                S(5, "app", "10.0.0.6:4002", "Query", 2, 900, false),    /* busy, 900M */
                S(6, "app", "10.0.0.6:4003", "Sleep", 10, 400, false),   /* asleep 10s < min-idle: busy pass */
                S(7, "backup", "10.0.0.7:4004", "Sleep", 999, 900, false), /* exempt user */
                S(8, "app", "10.0.0.9:4005", "Sleep", 999, 900, false),  /* exempt host */
                S(9, "app", "10.0.0.5:4006", "Sleep", 999, 10, false),   /* too small */
                S(10, "app", "10.0.0.5:4007", "Sleep", 999, 700, true),  /* write transaction */
                S(11, "root", "localhost", "Sleep", 999, 999, false),    /* memgov itself */
                S(12, "app", "10.0.0.5:4008", "Binlog Dump GTID", 999, 999, false),
        };
        SessionSelect q = { .max = 4, .min_memory = 64 * MB, .min_idle = 30 * USEC_PER_SEC, .own_id = 11, .policy = p };
        unsigned chosen[8];
        unsigned k = sessions_select(s, ELEMENTSOF(s), &q, chosen);
        /* Idle ones first by memory (3: 200M, 4: 80M), then the others by memory (5: 900M, 6: 400M). */
        assert_int_equal(k, 4);
        assert_int_equal(s[chosen[0]].id, 3);
        assert_int_equal(s[chosen[1]].id, 4);
        assert_int_equal(s[chosen[2]].id, 5);
        assert_int_equal(s[chosen[3]].id, 6);

        assert_string_equal(session_exempt(&s[0], &q), "a replication or server thread");
        assert_string_equal(session_exempt(&s[1], &q), "a replication or server thread");
        assert_string_equal(session_exempt(&s[6], &q), "an exempt user");
        assert_string_equal(session_exempt(&s[7], &q), "an exempt host");
        assert_string_equal(session_exempt(&s[9], &q), "inside a write transaction");
        assert_string_equal(session_exempt(&s[10], &q), "memgov's own session");
        assert_null(session_exempt(&s[2], &q));
        /* A client of an anonymous account shows the name it logged in with: a system thread's
         * name with a client host is a client. */
        Session posing = S(20, "system user", "localhost", "Sleep", 999, 900, false);
        assert_null(session_exempt(&posing, &q));
        posing = S(21, "event_scheduler", "10.0.0.5:4100", "Query", 1, 900, false);
        assert_null(session_exempt(&posing, &q));
        posing = S(23, "unauthenticated user", "localhost", "Sleep", 999, 900, false);
        assert_null(session_exempt(&posing, &q));
        posing = S(24, "unauthenticated user", "10.0.0.5:4101", "Connect", 0, 0, false);
        assert_string_equal(session_exempt(&posing, &q), "a replication or server thread");
        Session thread = S(22, "system user", "", "Sleep", 999, 900, false);
        assert_string_equal(session_exempt(&thread, &q), "a system thread");

        /* An emergency allows the write transaction; a budget of two keeps the two largest idle. */
        q.allow_write_trx = true;
        q.max = 2;
        k = sessions_select(s, ELEMENTSOF(s), &q, chosen);
        assert_int_equal(k, 2);
        assert_int_equal(s[chosen[0]].id, 10);
        assert_int_equal(s[chosen[1]].id, 3);

        /* Nothing big enough: nothing chosen; the largest that may be reset is the 900M one (the
         * exempt user's and the replication thread's do not count). */
        q.min_memory = 2000 * MB;
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 0);
        assert_int_equal(sessions_largest(s, ELEMENTSOF(s), &q), 900 * MB);
        free(p);
}

static void test_select_many(void **state) {
        /* More candidates than the limit: the largest survive, in order. */
        Session s[50];
        for (unsigned i = 0; i < 50; i++)
                s[i] = S(i + 1, "app", "h", "Sleep", 100, 100 + (i * 37) % 50, false);
        SessionSelect q = { .max = 5, .min_memory = 0, .min_idle = 0, .own_id = 999 };
        unsigned chosen[5];
        assert_int_equal(sessions_select(s, 50, &q, chosen), 5);
        for (unsigned i = 1; i < 5; i++)
                assert_true(s[chosen[i - 1]].memory >= s[chosen[i]].memory);
        assert_int_equal(s[chosen[0]].memory, 149 * MB);
}

/* In a connection storm (admission judged one): the newest first, idle or not, whatever they
 * hold over the floor; the exemptions and the floor as always. */
static void test_select_newest(void **state) {
        Policy *p = calloc(1, sizeof(Policy));
        assert_int_equal(policy_load_default(p), 0);
        Session s[] = {
                S(5, "app", "10.0.0.5:4000", "Execute", 1, 33, false),  /* the application's, largest */
                S(7, "app", "10.0.0.5:4001", "Sleep", 300, 20, false),  /* the application's, idle */
                S(40, "app", "10.0.0.5:5000", "Query", 20, 16, false),
                S(41, "app", "10.0.0.5:5001", "Query", 20, 4, false),   /* under the floor */
                S(42, "app", "10.0.0.5:5002", "Sleep", 40, 16, false),  /* idle */
                S(43, "app", "10.0.0.5:5003", "Query", 20, 16, true),   /* write transaction */
                S(44, "app", "10.0.0.5:5004", "Query", 20, 9, false),
                S(9, "root", "localhost", "Sleep", 999, 1, false),      /* memgov itself */
        };
        SessionSelect q = { .max = 3, .min_memory = 8 * MB, .min_idle = 30 * USEC_PER_SEC, .own_id = 9, .policy = p,
                            .newest_first = true };
        unsigned chosen[8];
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 3);
        assert_int_equal(s[chosen[0]].id, 44);
        assert_int_equal(s[chosen[1]].id, 42);
        assert_int_equal(s[chosen[2]].id, 40);
        /* Room for all: the older ones after the newcomers, newest first still. */
        q.max = 8;
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 5);
        assert_int_equal(s[chosen[3]].id, 7);
        assert_int_equal(s[chosen[4]].id, 5);
        /* The same sessions by the ordinary rule: the idle ones, then the largest. */
        q.newest_first = false;
        q.max = 3;
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 3);
        assert_int_equal(s[chosen[0]].id, 7);
        assert_int_equal(s[chosen[1]].id, 42);
        assert_int_equal(s[chosen[2]].id, 5);
        free(p);
}

/* The emergency reset ends what grows: a session the last listing saw holding as much (a hundredth
 * of slack) is passed over, in either order; one that grew, or that is new, is not. */
static void test_select_growing_only(void **state) {
        Policy *p = calloc(1, sizeof(Policy));
        assert_int_equal(policy_load_default(p), 0);
        Session s[] = {
                S(5, "sb", "10.0.2.2:4000", "Sleep", 0, 33, false),    /* a client's, as it was */
                S(6, "sb", "10.0.2.2:4001", "Sleep", 90, 20, false),   /* idle, grew by 2M */
                S(7, "app", "10.0.2.2:4002", "Query", 1, 12, false),   /* grew by a hundredth exactly */
                S(8, "app", "10.0.2.2:4003", "Query", 1, 10, false),   /* shrank */
                S(40, "app", "10.0.2.2:5000", "Query", 3, 16, false),  /* not there then */
                S(9, "root", "localhost", "Sleep", 999, 1, false),     /* memgov itself */
        };
        SessionSeen seen[] = {
                { 5, 33 * MB }, { 6, 18 * MB }, { 7, 12 * MB - 12 * MB / 101 }, { 8, 11 * MB }, { 99, 50 * MB },
        };
        SessionSelect q = { .max = 8, .min_memory = 8 * MB, .min_idle = 30 * USEC_PER_SEC, .own_id = 9, .policy = p,
                            .seen = seen, .n_seen = ELEMENTSOF(seen) };
        unsigned chosen[8];
        /* Without growing_only the list is the ordinary one, whatever was seen and holds. */
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 5);
        assert_int_equal(sessions_passed_over(s, ELEMENTSOF(s), &q), 0);
        assert_int_equal(sessions_largest(s, ELEMENTSOF(s), &q), 33 * MB);

        q.growing_only = true;
        q.still_enough = UINT64_MAX;
        assert_true(session_not_growing(&s[0], &q));
        assert_false(session_not_growing(&s[1], &q));
        assert_true(session_not_growing(&s[2], &q));
        assert_true(session_not_growing(&s[3], &q));
        assert_false(session_not_growing(&s[4], &q));
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 2);
        assert_int_equal(s[chosen[0]].id, 6); /* idle first */
        assert_int_equal(s[chosen[1]].id, 40);
        q.newest_first = true;
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 2);
        assert_int_equal(s[chosen[0]].id, 40);
        assert_int_equal(s[chosen[1]].id, 6);
        assert_int_equal(sessions_passed_over(s, ELEMENTSOF(s), &q), 3);
        /* The largest that may, for the floor to be judged: growing or not. */
        assert_int_equal(sessions_largest(s, ELEMENTSOF(s), &q), 33 * MB);

        /* One that does not grow but holds more than the growth until the emergency is over: it
         * goes, as what it frees ends the emergency. */
        q.still_enough = 33 * MB;
        assert_false(session_not_growing(&s[0], &q));
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 3);
        assert_int_equal(sessions_passed_over(s, ELEMENTSOF(s), &q), 2);
        assert_int_equal(sessions_largest(s, ELEMENTSOF(s), &q), 33 * MB);
        q.still_enough = UINT64_MAX;

        /* Nothing seen (the first listing of this process): nothing passed over. */
        q.n_seen = 0;
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 5);
        free(p);
}

/* In a storm, its newcomers still in the statement they ran at the last listing go whether or
 * not they still grow: what that statement took stays held until it ends. Not one that is idle,
 * or in a statement begun since (it holds what it holds across statements, as any session), nor
 * a client there before the storm. */
static void test_select_storm_newcomers(void **state) {
        Policy *p = calloc(1, sizeof(Policy));
        assert_int_equal(policy_load_default(p), 0);
        Session s[] = {
                S(5, "sb", "10.0.2.2:4000", "Execute", 0, 33, false),  /* there before the storm */
                S(30, "sb", "10.0.2.2:4100", "Execute", 0, 32, false), /* came with it, between statements */
                S(41, "sb", "10.0.2.2:5001", "Query", 37, 16, false),  /* the storm's, in its query */
                S(42, "sb", "10.0.2.2:5002", "Query", 37, 16, false),
                S(43, "sb", "10.0.2.2:5003", "Sleep", 37, 16, false),  /* the storm's, idle */
                S(44, "sb", "10.0.2.2:5004", "Query", 1, 16, false),   /* a statement begun since */
                S(45, "sb", "10.0.2.2:5005", "Query", 2, 12, false),   /* grew */
                S(9, "root", "localhost", "Sleep", 999, 1, false),     /* memgov itself */
        };
        SessionSeen seen[] = {
                { 5, 33 * MB }, { 30, 32 * MB }, { 41, 16 * MB }, { 42, 16 * MB }, { 43, 16 * MB }, { 44, 16 * MB },
                { 45, 10 * MB },
        };
        SessionSelect q = { .max = 16, .min_memory = 8 * MB, .min_idle = 30 * USEC_PER_SEC, .own_id = 9, .policy = p,
                            .newest_first = true, .growing_only = true, .still_enough = UINT64_MAX, .seen = seen,
                            .n_seen = ELEMENTSOF(seen), .seen_ago = 3600 * USEC_PER_MSEC };
        unsigned chosen[16];
        /* No newcomers: what grows only. */
        assert_int_equal(sessions_newcomers_from(s, ELEMENTSOF(s), &q, 0), 0);
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 1);
        assert_int_equal(s[chosen[0]].id, 45);
        assert_int_equal(sessions_passed_over(s, ELEMENTSOF(s), &q), 6);

        /* Six newcomers (memgov's own session is none): from 30 up. */
        q.newcomers_from = sessions_newcomers_from(s, ELEMENTSOF(s), &q, 6);
        assert_int_equal(q.newcomers_from, 30);
        assert_false(session_not_growing(&s[2], &q));
        assert_true(session_not_growing(&s[1], &q));
        assert_true(session_not_growing(&s[4], &q));
        assert_true(session_not_growing(&s[5], &q));
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 3);
        assert_int_equal(s[chosen[0]].id, 45);
        assert_int_equal(s[chosen[1]].id, 42);
        assert_int_equal(s[chosen[2]].id, 41);
        assert_int_equal(sessions_passed_over(s, ELEMENTSOF(s), &q), 4);

        /* Four: 41 is not one of them. */
        q.newcomers_from = sessions_newcomers_from(s, ELEMENTSOF(s), &q, 4);
        assert_int_equal(q.newcomers_from, 42);
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 2);
        assert_int_equal(s[chosen[1]].id, 42);

        /* More than there are clients: every client, the oldest's ID. */
        assert_int_equal(sessions_newcomers_from(s, ELEMENTSOF(s), &q, 50), 5);

        /* Listed longer ago than the storm's queries ran: none of them held it in that statement. */
        q.newcomers_from = 30;
        q.seen_ago = 40 * USEC_PER_SEC;
        assert_int_equal(sessions_select(s, ELEMENTSOF(s), &q, chosen), 1);
        free(p);
}

/* An admission carried to a new server process, lowered below the clients already in: the newest
 * go, down to the count kept; the ones that may not be ended still count against it. */
static void test_excess(void **state) {
        Policy *p = calloc(1, sizeof(Policy));
        assert_int_equal(policy_load_default(p), 0);
        snprintf(p->exempt_users[0], sizeof(p->exempt_users[0]), "backup");
        p->n_exempt_users = 1;

        Session s[] = {
                S(1, "system user", "", "Daemon", 100, 0, false),      /* not a client */
                S(4, "app", "h:1", "Query", 1, 5, false),              /* in a statement for 1 s */
                S(9, "app", "h:2", "Sleep", 1, 5, false),
                S(7, "backup", "h:3", "Sleep", 1, 5, false),           /* a client, never ended */
                S(12, "app", "h:4", "Query", 0, 40, true),             /* in a write transaction */
                S(15, "root", "localhost", "Sleep", 0, 0, false),      /* memgov's own */
                S(11, "app", "h:5", "Query", 0, 40, false),
                S(13, "app", "h:6", "Query", 0, 1, false),
        };
        SessionSelect q = { .max = 100, .min_memory = 64 * MB, .min_idle = USEC_PER_HOUR, .own_id = 15, .policy = p };
        unsigned chosen[8], clients = 0;

        /* 6 clients (4, 7, 9, 11, 12, 13), 2 kept: 4 go, the one in a statement for a second (4)
         * first, then the newest (13, 12, 11), but the write transaction (12), which does not
         * send another client in its place (min-memory and min-idle do not apply); the idle 9
         * and the exempt 7 stay. */
        unsigned k = sessions_excess(s, ELEMENTSOF(s), &q, 2, chosen, &clients);
        assert_int_equal(clients, 6);
        assert_int_equal(k, 3);
        assert_int_equal(s[chosen[0]].id, 4);
        assert_int_equal(s[chosen[1]].id, 13);
        assert_int_equal(s[chosen[2]].id, 11);

        /* 1 kept: the exempt user (7) is over it and stays all the same. */
        k = sessions_excess(s, ELEMENTSOF(s), &q, 1, chosen, NULL);
        assert_int_equal(k, 4);
        assert_int_equal(s[chosen[3]].id, 9);

        assert_int_equal(sessions_replicas(s, ELEMENTSOF(s)), 0);
        Session r[] = {
                S(2, "repl", "replica1:3306", "Binlog Dump GTID", 0, 0, false),
                S(3, "repl", "replica2:3306", "Binlog Dump", 0, 0, false),
                S(5, "system user", "", "Slave_IO", 0, 0, false), /* this server's own replication thread */
                S(6, "app", "h:1", "Sleep", 1, 5, false),
        };
        assert_int_equal(sessions_replicas(r, ELEMENTSOF(r)), 2);

        /* Within the count kept: none; q->max bounds the rest. */
        assert_int_equal(sessions_excess(s, ELEMENTSOF(s), &q, 6, chosen, NULL), 0);
        q.max = 1;
        k = sessions_excess(s, ELEMENTSOF(s), &q, 0, chosen, NULL);
        assert_int_equal(k, 1);
        assert_int_equal(s[chosen[0]].id, 4);

        /* With the write transaction allowed, it goes too; the exempt user never does. */
        q.max = 100;
        q.allow_write_trx = true;
        k = sessions_excess(s, ELEMENTSOF(s), &q, 0, chosen, NULL);
        assert_int_equal(k, 5);
        assert_int_equal(s[chosen[2]].id, 12);
        assert_int_equal(s[chosen[4]].id, 9);

        /* A new server process, its storm's clients back: the application's read-write clients
         * reconnected among them (IDs 21, 24, 27, 30), in and out of short transactions; the
         * storm's sit in the query they came for. With room for 5, the 8 in a query go, the
         * longest first, and the application's 4 stay with the one storm client that came last
         * and has not begun its query yet. By the order they came in, two of the application's would
         * have gone. */
        Session b[] = {
                S(20, "sb", "10.0.2.2:1", "Query", 31, 16, false),
                S(21, "sb", "10.0.2.2:2", "Sleep", 0, 33, false),
                S(22, "sb", "10.0.2.2:3", "Query", 30, 16, false),
                S(23, "sb", "10.0.2.2:4", "Query", 30, 16, false),
                S(24, "sb", "10.0.2.2:5", "Query", 0, 33, false),
                S(25, "sb", "10.0.2.2:6", "Query", 29, 16, false),
                S(26, "sb", "10.0.2.2:7", "Query", 28, 16, false),
                S(27, "sb", "10.0.2.2:8", "Sleep", 0, 33, false),
                S(28, "sb", "10.0.2.2:9", "Query", 12, 16, false),
                S(29, "sb", "10.0.2.2:10", "Query", 12, 16, false),
                S(30, "sb", "10.0.2.2:11", "Query", 0, 33, false),
                S(31, "sb", "10.0.2.2:12", "Query", 2, 9, false),
                S(32, "sb", "10.0.2.2:13", "Sleep", 0, 1, false),
                S(2, "root", "localhost", "Sleep", 0, 0, false), /* memgov's own */
        };
        SessionSelect qb = { .max = 100, .own_id = 2, .policy = p };
        k = sessions_excess(b, ELEMENTSOF(b), &qb, 5, chosen, &clients);
        assert_int_equal(clients, 13);
        assert_int_equal(k, 8);
        static const uint64_t want[] = { 20, 23, 22, 25, 26, 29, 28, 31 };
        for (unsigned i = 0; i < ELEMENTSOF(want); i++)
                assert_int_equal(b[chosen[i]].id, want[i]);
        free(p);
}

static void test_argv(void **state) {
        char buf[256], *av[ARGV_MAX + 1];
        unsigned n;

        assert_int_equal(argv_split("/usr/bin/pool-reset --cluster db1  \"a b\" x\"y z\"", buf, sizeof(buf), av, &n), 0);
        assert_int_equal(n, 5);
        assert_string_equal(av[0], "/usr/bin/pool-reset");
        assert_string_equal(av[2], "db1");
        assert_string_equal(av[3], "a b");
        assert_string_equal(av[4], "xy z"); /* quotes join, as in a shell word */
        assert_null(av[5]);
        assert_int_equal(argv_split("/bin/echo \"say \\\"hi\\\"\"", buf, sizeof(buf), av, &n), 0);
        assert_string_equal(av[1], "say \"hi\"");
        assert_int_equal(argv_split("", buf, sizeof(buf), av, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(argv_split("echo hi", buf, sizeof(buf), av, &n), -EINVAL); /* no PATH lookup */
        assert_int_equal(argv_split("/bin/echo \"unclosed", buf, sizeof(buf), av, &n), -EINVAL);
        assert_int_equal(argv_split("/bin/echo $(rm -rf /)", buf, sizeof(buf), av, &n), 0);
        assert_string_equal(av[1], "$(rm"); /* just a word: no shell ever sees it */
        char many[400] = "/bin/true";
        for (int i = 0; i < 40; i++)
                strcat(many, " x");
        assert_int_equal(argv_split(many, buf, sizeof(buf), av, &n), -E2BIG);
        assert_int_equal(argv_split("/bin/echo 0123456789", buf, 12, av, &n), -E2BIG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_select),
                cmocka_unit_test(test_select_many),
                cmocka_unit_test(test_select_newest),
                cmocka_unit_test(test_select_growing_only),
                cmocka_unit_test(test_select_storm_newcomers),
                cmocka_unit_test(test_excess),
                cmocka_unit_test(test_argv),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
