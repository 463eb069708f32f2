/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ladder, the situation of a tick and the bookkeeping of the actions, whatever the rung. */
#include "engine-sim.h"

static void test_calm(void **state) {
        Sim *sim = sim_new(false);
        set_ws(sim, 5 * GB);
        sim_run(sim, 600 * SEC, 5 * SEC);
        /* The only decision: memory.high to its calm value, the budget minus 3 %. */
        expect(sim->n == 1);
        expect(decision_class(&sim->log[0]) == T_SET_HIGH);
        expect(sim->log[0].value == CALM);
        expect(sim->log[0].value % 4096 == 0);
        expect(sim->log[0].old_value == SIZE_UNLIMITED);
        expect(sim->e->level == LEVEL_NORMAL);
        expect(sim->out.next_sample == 5 * SEC);
        expect(sim->out.n_decisions == 0); /* and nothing more on the ticks after it */
        check_invariants(sim);
        sim_free(sim);
}

/* A recorded trace's clock may start at 0 (a replay of one that does): an action at time 0 is
 * an action all the same, and its cooldown and settle hold. */
static void test_action_at_time_zero(void **state) {
        Sim *sim = sim_new(false);
        sim->now = 0;
        set_ws(sim, BUDGET / 100 * 80);
        sim_tick(sim, 0);
        assert_int_equal(count(sim, T_TRIM, 0), 1);
        sim_run(sim, 5 * USEC_PER_MINUTE, 5 * SEC);
        assert_int_equal(count(sim, T_TRIM, 0), 1);
        sim_free(sim);
}

static void test_effect_from_working_set(void **state) {
        Sim *sim = sim_new(true);
        /* A minute just under 75 % (a rise there would be a trend: it would bring the trim
         * sooner), one step over it (a trim), then the working set falls by about 500M. */
        for (unsigned i = 0; i < 60; i++) {
                set_ws(sim, 7 * GB + (uint64_t) (i % 2) * (GB / 100) + 480 * MB);
                sim_tick(sim, SEC);
        }
        unsigned mark = sim->n;
        set_ws(sim, 7 * GB + 600 * MB);
        sim_tick(sim, SEC);
        expect(find(sim, T_TRIM, mark));
        set_ws(sim, 7 * GB);
        sim_run(sim, 20 * SEC, SEC);
        const Decision *eff = find(sim, T_EFFECT, mark);
        /* Measured on medians: the level before was 7.49G (not the 7.6G of the last sample). */
        expect(eff && eff->value > 450 * MB && eff->value < 550 * MB);
        expect(eff->code == EFFECT_FREED && eff->action == ACTION_TRIM);

        /* A spike at the decision is not mistaken for the level: no phantom gain. */
        check_invariants(sim);
        sim_free(sim);
        sim = sim_new(true);
        set_ws(sim, 7 * GB);
        sim_run(sim, 30 * SEC, SEC);
        set_ws(sim, 7 * GB + 700 * MB);
        sim_tick(sim, SEC); /* one sample at 77 %: trim */
        expect(find(sim, T_TRIM, 0));
        set_ws(sim, 7 * GB);
        sim_run(sim, 20 * SEC, SEC);
        eff = find(sim, T_EFFECT, 0);
        /* A dry run measures nothing: the effect is said to be an assumption. */
        expect(eff && eff->value == 0 && eff->code == EFFECT_TOO_LITTLE && eff->action == ACTION_TRIM);
        check_invariants(sim);
        sim_free(sim);
}

static void test_hysteresis(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 8 * GB);
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->e->level == LEVEL_TRIM);
        /* 72 %: below trim.at but within the 5 % hysteresis: stays. */
        set_ws(sim, 7 * GB + 200 * MB);
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->e->level == LEVEL_TRIM);
        /* 69 %: leaves. */
        set_ws(sim, 6 * GB + 900 * MB);
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL);
        expect(find_level(sim, LEVEL_TRIM, LEVEL_NORMAL, LEVEL_DOWN_CALM, 0));
        check_invariants(sim);
        sim_free(sim);
}

/* A spent rung holds the ladder above it only while the working set rises: trim spent (for its
 * hour) at 89%, the ladder at throttle; the working set then falls to 72% and stays, with no
 * OOM ahead: the ladder comes down to trim (spent still), and throttle's memory.high goes back to
 * calm. Seen: the ladder held at throttle for 10 minutes at 72% and a flat working set, with no
 * calm for the buffer pool to grow back. */
static void test_spent_rung_holds_nothing_once_flat(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 9 * GB + 100 * MB); /* 89%: over throttle.at 88% */
        sim_run(sim, 60 * SEC, SEC);
        expect(sim->e->act[ACTION_TRIM].spent);
        expect(sim->e->level == LEVEL_THROTTLE);
        unsigned mark = sim->n;
        /* The workload gone: 72%, within trim's hysteresis, and flat. */
        set_ws(sim, 7 * GB + 400 * MB);
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->e->act[ACTION_TRIM].spent);
        expect(sim->e->level == LEVEL_TRIM);
        const Decision *down = find_level(sim, LEVEL_THROTTLE, LEVEL_TRIM, LEVEL_DOWN_CALM, mark);
        expect(down && strstr(down->reason, "throttle no longer called for"));
        const Decision *h = find_text(sim, T_SET_HIGH, "calm", mark);
        expect(h && h->value == CALM);
        check_invariants(sim);
        sim_free(sim);
}

/* ... and holds it while the working set hovers where the ladder climbed to, its slope's sign
 * flipping with the noise: the ladder does not go up and down with it. Trim spent by a rise of
 * 3G/h from 70%, the ladder at throttle on the ETA; then 40 minutes at the same level, +-20M. */
static void test_spent_rung_holds_while_hovering(void **state) {
        Sim *sim = sim_new(true);
        uint64_t ws = 7 * GB;
        for (unsigned i = 0; i < 900; i++)
                set_ws(sim, ws + (uint64_t) i * (3 * GB / 3600)), sim_tick(sim, SEC);
        expect(sim->e->act[ACTION_TRIM].spent);
        expect(sim->e->level == LEVEL_THROTTLE);
        unsigned mark = sim->n;
        uint64_t top = sim->s.memory_current;
        srand(7);
        for (unsigned i = 0; i < 2400; i++)
                set_ws(sim, top - 20 * MB + (uint64_t) (rand() % 41) * MB), sim_tick(sim, SEC);
        expect(count(sim, T_LEVEL, mark) == 0);
        expect(sim->e->level == LEVEL_THROTTLE);
        check_invariants(sim);
        sim_free(sim);
}

static void test_eta_trigger(void **state) {
        Sim *sim = sim_new(true);
        /* 50 % and rising 1G/h: 5h to the budget, under trim.eta 6h, while far below trim.at. */
        uint64_t ws = 4 * GB;
        for (unsigned i = 0; i < 3600; i++) {
                set_ws(sim, ws + (uint64_t) i * (GB / 3600));
                sim_tick(sim, SEC);
        }
        const Decision *l = find(sim, T_LEVEL, 0);
        expect(l && l->level == LEVEL_TRIM);
        expect(l && l->code == LEVEL_UP_ETA);
        expect(strstr(l->reason, "rising 1G/h"));
        expect(find(sim, T_TRIM, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_one_rung_per_tick_and_settle(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 5 * GB);
        sim_run(sim, 10 * SEC, SEC);
        unsigned mark = sim->n;

        /* 93 % at once, flat: trim first, then each rung only once the last action settled. */
        set_ws(sim, 9 * GB + 300 * MB);
        sim_tick(sim, SEC);
        usec_t t0 = sim->now;
        sim_run(sim, 120 * SEC, SEC);
        Level seen[8];
        usec_t when[8];
        unsigned n = 0;
        for (unsigned i = mark; i < sim->n && n < 8; i++)
                if (sim->log[i].kind == DECISION_LEVEL && sim->log[i].level > sim->log[i].from) {
                        seen[n] = sim->log[i].level;
                        when[n++] = sim->at[i];
                }
        expect(n == 3);
        expect(seen[0] == LEVEL_TRIM && when[0] == t0);
        expect(seen[1] == LEVEL_THROTTLE && when[1] >= t0 + 15 * SEC);
        expect(seen[2] == LEVEL_RESET);
        expect(find(sim, T_RESET, mark));
        /* Flat: nothing rises, so a reset that frees nothing does not bring the buffer pool. */
        expect(!find(sim, T_POOL, mark));
        /* memory.high came down toward working set + 2 %, from the calm value, 1 % per 5s. */
        const Decision *h = find_text(sim, T_SET_HIGH, "throttle", mark);
        expect(h && h->value < h->old_value);
        check_invariants(sim);
        sim_free(sim);
}

/* Leaving: memory.high back as found, a raised memory.max restored; nothing in a dry run. */
static void test_leave(void **state) {
        Decision d[2];
        Sim *sim = sim_new(false);
        sim_tick(sim, SEC);
        /* The calm memory.high was written from "max". */
        expect(sim->s.memory_high == CALM);
        expect(engine_leave(sim->e, "memgov stops", d, 2) == 1 && decision_class(&d[0]) == T_SET_HIGH && d[0].value == SIZE_UNLIMITED &&
               strstr(d[0].reason, "as it was found"));
        ramp_to_restart(sim);
        expect(sim->e->limits.max_raised);
        /* While the server stops, memory.high is out of the way at max (as it was found): only
         * memory.max to put back. */
        expect(sim->s.memory_high == SIZE_UNLIMITED);
        expect(engine_leave(sim->e, "memgov stops", d, 2) == 1 && decision_class(&d[0]) == T_SET_MAX && d[0].value == BUDGET);
        sim_free(sim);

        sim = sim_new(true);
        ramp_to_restart(sim);
        expect(engine_leave(sim->e, "memgov stops", d, 2) == 0);
        sim_free(sim);
}

/* A young server rising 60M/s, each action that gives memory back (the trim, the resets, the pool
 * step) giving back 4% of the budget, the rise going on after it: memgov's own drops do not make
 * the trend read "falling" (see trend.h) while the server climbs. */
static void test_own_drops_keep_the_trend(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        set_ws(sim, 4 * GB);
        unsigned drops = 0, blind = 0;
        for (unsigned i = 0; i < 120 && !find(sim, T_RESTART, 0); i++) {
                uint64_t ws = sim->s.memory_current + 60 * MB;
                for (unsigned j = 0; j < sim->out.n_decisions; j++) {
                        const Decision *d = &sim->out.decisions[j];
                        unsigned c = decision_class(d);
                        if (c != T_TRIM && c != T_RESET && c != T_POOL)
                                continue;
                        ActionResult r = { .error = 0, .has_freed = true, .freed = apply_bp(BUDGET, 400) };
                        action_feedback_add(&sim->fb, d, &r);
                        ws -= apply_bp(BUDGET, 400);
                        drops++;
                }
                set_ws(sim, MIN(ws, sim->s.memory_high));
                sim_tick(sim, SEC);
                /* After the first drop, rising: the trend says so. */
                if (drops > 0 && sim->out.trend_valid && !(sim->out.slope > 0))
                        blind++;
        }
        if (drops < 2 || blind > 0)
                fail_msg("%u drops of memgov's own; %u ticks after them read as not rising", drops, blind);
        sim_free(sim);
}

static void test_starting_server(void **state) {
        Sim *sim = sim_new(false);
        start_ramp(sim, true);
        expect(sim->e->level == LEVEL_NORMAL && count(sim, T_LEVEL, 0) == 0);
        expect(count(sim, T_TRIM, 0) == 0 && count(sim, T_RESTART, 0) == 0 && count(sim, T_RESET, 0) == 0 &&
               count(sim, T_POOL, 0) == 0 && count(sim, T_ADMIT, 0) == 0);
        for (unsigned i = 0; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == T_SET_HIGH)
                        expect(sim->log[i].value >= CALM);
        unsigned holds = 0;
        for (unsigned i = 0; i < sim->n; i++)
                holds += decision_class(&sim->log[i]) == T_HOLD && sim->log[i].code == HOLD_STARTING;
        expect(holds == 1);
        expect(!find_code(sim, T_EVENT, EVENT_SERVER_READY, 0));

        /* It accepts clients: said, and the trend is new (no ETA from the startup's rise). */
        unsigned mark = sim->n;
        sim->s.accepting = 1;
        sim_tick(sim, SEC);
        const Decision *ready = find_code(sim, T_EVENT, EVENT_SERVER_READY, mark);
        expect(ready && strstr(ready->reason, "2G") && strstr(ready->reason, "9.5G"));
        expect(!sim->out.trend_valid && sim->out.eta == USEC_INFINITY);
        /* At 97 %, the rungs come back on their thresholds. */
        sim_run(sim, 60 * SEC, SEC);
        expect(sim->e->level > LEVEL_TRIM);
        expect(find_level(sim, LEVEL_NORMAL, LEVEL_TRIM, LEVEL_UP_AT, mark) &&
               find_level(sim, LEVEL_TRIM, LEVEL_THROTTLE, LEVEL_UP_AT, mark));
        check_invariants(sim);
        sim_free(sim);

        /* The same rise with nothing known of the server's sockets: the ladder climbs. */
        sim = sim_new(false);
        start_ramp(sim, false);
        expect(sim->e->level > LEVEL_TRIM);
        expect(!find_code(sim, T_HOLD, HOLD_STARTING, 0));
        sim_free(sim);
}

/* A new server process, where the signal exists, starts by starting: the first samples of it,
 * before the kept session has a word on it, hold the ladder too, for a bounded time. */
static void test_new_process_starting(void **state) {
        Sim *sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 1;
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL);

        /* pid 555 at 97 %, nothing known of it yet: nothing above normal. */
        unsigned mark = sim->n;
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        sim->s.has &= ~SAMPLE_HAS_ACCEPTING;
        set_ws(sim, 9 * GB + 700 * MB);
        sim_run(sim, 25 * SEC, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, mark));
        expect(sim->e->level == LEVEL_NORMAL && count(sim, T_TRIM, mark) == 0 && count(sim, T_LEVEL, mark) == 0);
        expect(find_code(sim, T_HOLD, HOLD_STARTING, mark));

        /* Then it says it listens on nothing: still starting, the hold not said twice. */
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 0;
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL && count(sim, T_LEVEL, mark) == 0);
        unsigned holds = 0;
        for (unsigned i = mark; i < sim->n; i++)
                holds += decision_class(&sim->log[i]) == T_HOLD && sim->log[i].code == HOLD_STARTING;
        expect(holds == 1);
        sim->s.accepting = 1;
        sim_run(sim, 60 * SEC, SEC);
        expect(find_code(sim, T_EVENT, EVENT_SERVER_READY, mark));
        expect(sim->e->level > LEVEL_TRIM);
        sim_free(sim);

        /* A new process on which the signal never has a word: the ladder waits 30 s, no longer. */
        sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 1;
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        mark = sim->n;
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        sim->s.has &= ~SAMPLE_HAS_ACCEPTING;
        set_ws(sim, 9 * GB + 700 * MB);
        sim_run(sim, 20 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL);
        sim_run(sim, 60 * SEC, SEC);
        expect(sim->e->level > LEVEL_TRIM && !find_code(sim, T_EVENT, EVENT_SERVER_READY, mark));
        check_invariants(sim);
        sim_free(sim);

        /* Where the signal never existed, a new process is not held at all. */
        sim = sim_new(false);
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        set_ws(sim, 9 * GB + 700 * MB);
        sim_run(sim, 20 * SEC, SEC);
        expect(sim->e->level > LEVEL_NORMAL && !find_code(sim, T_HOLD, HOLD_STARTING, 0));
        sim_free(sim);
}

static void test_failures(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 8 * GB);
        sim_tick(sim, SEC);
        expect(find(sim, T_TRIM, 0));
        /* The actuator reports through the next sample that the trim failed. */
        sim->s.failed = 1u << ACTION_TRIM;
        sim_tick(sim, SEC);
        const Decision *e = find_code(sim, T_EFFECT, EFFECT_FAILED, 0);
        expect(e && e->action == ACTION_TRIM);
        expect(sim->e->act[ACTION_TRIM].spent);
        /* The backoff (1h) outlasts the cooldown (10m): it is what "next in" shows. */
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_TRIM) == sim->now + 60 * 60 * SEC);
        /* No measurement of an action that failed. */
        sim_run(sim, 60 * SEC, SEC);
        expect(!find_code(sim, T_EFFECT, EFFECT_FREED, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_oom_kill_event(void **state) {
        Sim *sim = sim_new(true);
        sim_tick(sim, SEC);
        sim->s.events.oom_kill = 1;
        sim->s.events.oom = 1;
        sim_tick(sim, SEC);
        const Decision *e = find(sim, T_EVENT, 0);
        expect(e && e->code == EVENT_OOM_KILL && e->oom_kill);
        check_invariants(sim);
        sim_free(sim);
}

static void test_server_restart_not_by_us(void **state) {
        Sim *sim = sim_new(true);
        sim_tick(sim, SEC);
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        sim_tick(sim, SEC);
        const Decision *e = find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, 0);
        expect(e && !e->oom_kill);
        check_invariants(sim);
        sim_free(sim);
}

static void test_no_cgroup(void **state) {
        Sim *sim = sim_new(true);
        sim->s.has = SAMPLE_HAS_PROCESS | SAMPLE_HAS_HOST;
        sim->s.host_total = 16 * GB;
        sim->s.rss = 14 * GB; /* budget = host RAM - 1G = 15G: 93 % */
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->out.budget == 15 * GB);
        expect(count(sim, T_SET_HIGH, 0) == 0);
        expect(find_code(sim, T_HOLD, HOLD_THROTTLE_NO_CGROUP, 0));
        /* Throttle is skipped: trim, then reset on its own threshold. */
        expect(find_level(sim, LEVEL_TRIM, LEVEL_RESET, LEVEL_UP_AT, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_no_budget(void **state) {
        Sim *sim = sim_new(true);
        sim->s.has = SAMPLE_HAS_WS;
        sim->s.ws = 5 * GB;
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->out.budget == SIZE_UNKNOWN);
        expect(count(sim, T_HOLD, 0) == 1);
        expect(sim->log[0].code == HOLD_NO_BUDGET);
        /* A budget from the policy makes it work. */
        sim->p.budget_mode = BUDGET_SIZE;
        sim->p.budget_size = 6 * GB;
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->out.budget == 6 * GB);
        expect(find(sim, T_TRIM, 0)); /* 5G of 6G = 83 % */
        check_invariants(sim);
        sim_free(sim);
}

static void test_deterministic(void **state) {
        Sim *a = sim_new(true), *b = sim_new(true);
        for (unsigned i = 0; i < 3000; i++) {
                uint64_t ws = 4 * GB + (uint64_t) i * 2 * MB + (i % 37) * 3 * MB;
                set_ws(a, ws);
                set_ws(b, ws);
                sim_tick(a, SEC);
                sim_tick(b, SEC);
        }
        assert_int_equal(a->n, b->n);
        assert_true(a->n > 5);
        for (unsigned i = 0; i < a->n; i++)
                assert_string_equal(a->log[i].reason, b->log[i].reason);
        sim_free(a);
        sim_free(b);
}

static void test_reload_disables_level(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 9 * GB + 300 * MB);
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->e->level == LEVEL_RESET);
        Policy old = sim->p;
        sim->p.step[LEVEL_RESET].enabled = false;
        sim->p.step[LEVEL_RESTART].enabled = false;
        engine_set_policy(sim->e, &old, &sim->p);
        expect(sim->e->level == LEVEL_THROTTLE);
        unsigned mark = sim->n;
        sim_run(sim, 120 * SEC, SEC);
        expect(count(sim, T_RESET, mark) == 0);
        check_invariants(sim);
        sim_free(sim);
}

/* The trend at every sample spacing, from a 1 s fast interval to an RSS log every 15 minutes,
 * with the default trend (30m window, 30 points, min-points 6): a steady rise of 1G/h is known
 * within a few spacings, at its rate. */
static void test_trend_at_every_spacing(void **state) {
        static const struct {
                usec_t spacing, known_by;
        } cases[] = {
                { 1 * SEC, 30 * SEC },      /* the short scale: 2 s points over the last minute */
                { 10 * SEC, 2 * 60 * SEC }, /* still the short scale */
                { 60 * SEC, 8 * 60 * SEC }, /* the window's own points */
                { 600 * SEC, 70 * 60 * SEC },   /* a 10-minute log: the window stretched */
                { 900 * SEC, 105 * 60 * SEC },  /* a 15-minute log */
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                Sim *sim = sim_new(true);
                usec_t elapsed = 0, known = 0;
                double slope = 0;
                for (; elapsed <= 4 * 3600 * SEC && !known; elapsed += cases[c].spacing) {
                        set_ws(sim, 2 * GB + (uint64_t) ((double) GB * (double) elapsed / (3600.0 * SEC)));
                        sim_tick(sim, cases[c].spacing);
                        if (sim->out.trend_valid) {
                                known = elapsed;
                                slope = sim->out.slope * 3600.0;
                        }
                }
                if (!known || known > cases[c].known_by || slope < 0.9 * (double) GB || slope > 1.1 * (double) GB)
                        fail_msg("spacing %llus: trend known after %llus (expected by %llus), %.0f M/h",
                                 (unsigned long long) (cases[c].spacing / SEC), (unsigned long long) (known / SEC),
                                 (unsigned long long) (cases[c].known_by / SEC), slope / (double) MB);
                sim_free(sim);
        }

        /* Hourly samples: too sparse even stretched; the context says which key to change. */
        Sim *sim = sim_new(true);
        for (unsigned i = 0; i < 12; i++) {
                set_ws(sim, 2 * GB + i * (GB / 4));
                sim_tick(sim, 3600 * SEC);
        }
        expect(!sim->out.trend_valid && sim->out.eta == USEC_INFINITY);
        set_ws(sim, 8 * GB); /* 80 %: a trim, whose reason carries the context */
        sim_tick(sim, 3600 * SEC);
        expect(find_text(sim, T_TRIM, "samples too sparse for trend.window 30m (set it to 5h or more)", 0));
        sim_free(sim);
}

/* A fast event has an ETA before the window's trend exists, believed only four times as far ahead
 * as the last minute's trend looked back; a step does not pass for a rise. */
static void test_trend_short_scale(void **state) {
        /* A storm: +100M a second from 3G, sampled every second: the OOM a minute away. */
        Sim *sim = sim_new(true);
        usec_t first_eta = 0;
        for (unsigned i = 0; i < 60 && !first_eta; i++) {
                set_ws(sim, 3 * GB + (uint64_t) i * 100 * MB);
                sim_tick(sim, SEC);
                if (sim->out.eta != USEC_INFINITY)
                        first_eta = (usec_t) i * SEC;
        }
        expect(first_eta > 0 && first_eta <= 20 * SEC);
        sim_free(sim);

        /* +1G a minute from 3G: the OOM 7 minutes away is not believed from a rise seen for
         * seconds; the first ETA believed is at most 4 minutes ahead, and it comes while the
         * working set is still under trim.at (75%). The trend says it rises all along. */
        sim = sim_new(true);
        first_eta = 0;
        usec_t eta = 0;
        for (unsigned i = 0; i < 300 && !first_eta; i++) {
                set_ws(sim, 3 * GB + (uint64_t) i * (GB / 60));
                sim_tick(sim, SEC);
                if (sim->out.eta != USEC_INFINITY) {
                        first_eta = (usec_t) i * SEC;
                        eta = sim->out.eta;
                } else if (i > 20)
                        expect(sim->out.trend_valid && sim->out.slope > 0);
        }
        expect(first_eta > 60 * SEC && eta <= 4 * USEC_PER_MINUTE && sim->s.memory_current < apply_bp(BUDGET, 7500));
        sim_free(sim);

        /* A step: a buffer pool allocated at once, then flat. Never a rise, never an ETA. */
        sim = sim_new(true);
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        set_ws(sim, 7 * GB);
        for (unsigned i = 0; i < 120; i++) {
                sim_tick(sim, SEC);
                expect(sim->out.eta == USEC_INFINITY);
        }
        sim_free(sim);
}

/* The buffer pool filling: a rise that ends at the pool's size is no OOM coming. The shell reads
 * the pool's pages in use every 2 s while it fills (a little before the sample that carries
 * them); `other` is growth besides the pool, per second. Returns the number of actions. */
static unsigned pool_fill_run(Sim *sim, bool readings, uint64_t pool_rate, uint64_t other, uint64_t room,
                              usec_t *ret_eta) {
        uint64_t ws = 4400 * MB, in_use = 100 * MB;
        unsigned mark = 0;
        *ret_eta = USEC_INFINITY;
        for (unsigned i = 0; i < 140; i++) {
                if (i == 30)
                        mark = sim->n; /* after memory.high's first write, to its calm value */
                if (i >= 30 && i < 80) {
                        uint64_t fill = MIN(pool_rate, room);
                        ws += fill + other;
                        in_use += fill;
                        room -= fill;
                }
                set_ws(sim, ws);
                if (readings && i % 2 == 0)
                        pool_reading(sim, in_use, room);
                sim_tick(sim, SEC);
                if (i == 79)
                        *ret_eta = sim->out.eta;
        }
        unsigned n = 0;
        for (unsigned a = 0; a < _ACTION_KIND_MAX; a++)
                n += count(sim, DECISION_ACTION + a, mark);
        return n;
}

static void test_pool_filling(void **state) {
        usec_t eta, eta_blind;

        /* After a start, half the data set read: 44% -> 59% of the budget at 30M/s, the pool's
         * room 2G. Without the pool's readings it reads as an OOM three minutes away, and the
         * ladder acts (the control: the test can fail). */
        Sim *sim = sim_new(true);
        expect(pool_fill_run(sim, false, 30 * MB, 0, 2 * GB, &eta_blind) > 0);
        expect(eta_blind < 4 * USEC_PER_MINUTE);
        sim_free(sim);

        /* With them: the rise is seen, no ETA comes of it, nothing is done. */
        sim = sim_new(true);
        expect(pool_fill_run(sim, true, 30 * MB, 0, 2 * GB, &eta) == 0);
        expect(eta == USEC_INFINITY);
        for (unsigned i = 0; i < sim->n; i++)
                expect(decision_class(&sim->log[i]) != T_LEVEL || sim->log[i].level == LEVEL_NORMAL);
        sim_free(sim);

        /* Growth besides the pool: 40M/s, 10M/s of it the pool with 1.2G to fill. The ETA
         * stands, the pool's part counted until it is full: later than without the readings,
         * and the reasons say the pool's part. */
        sim = sim_new(true);
        pool_fill_run(sim, true, 10 * MB, 30 * MB, 1200 * MB, &eta);
        Sim *blind = sim_new(true);
        pool_fill_run(blind, false, 10 * MB, 30 * MB, 1200 * MB, &eta_blind);
        expect(eta != USEC_INFINITY && eta > eta_blind && eta < eta_blind + 30 * SEC);
        bool said = false;
        for (unsigned i = 0; i < sim->n; i++)
                said = said || strstr(sim->log[i].reason, "(the buffer pool ");
        expect(said);
        sim_free(blind);
        sim_free(sim);

        /* A pool that fills past the budget: the limit comes first, the ETA is the whole slope's. */
        sim = sim_new(true);
        pool_fill_run(sim, true, 30 * MB, 0, 8 * GB, &eta);
        blind = sim_new(true);
        pool_fill_run(blind, false, 30 * MB, 0, 8 * GB, &eta_blind);
        expect(eta != USEC_INFINITY && eta == eta_blind);
        sim_free(blind);
        sim_free(sim);
}

/* A reset aimed at a server process that is gone: with the limits and the restart on an action
 * thread of their own, a reset can still be running when the restart stops the server, and
 * fails there. Its failure comes after the new process was seen (late), or before it, while the
 * old one stops: either way it holds no rung of the new process. A trim that freed too little on
 * the old process keeps its backoff. */
static void test_failure_against_the_old_process(void **state) {
        for (int late = 0; late < 2; late++) {
                Sim *sim = young_server_to_reset();
                const Decision *r = find(sim, T_RESET, 0);
                expect(r && sim->e->act[ACTION_TRIM].spent);
                Decision reset = *r;
                ActionResult res = { .error = -ECONNRESET };
                if (!late)
                        action_feedback_add(&sim->fb, &reset, &res);
                sim_tick(sim, SEC);
                expect(late || (sim->e->act[ACTION_RESET].spent && sim->e->act[ACTION_RESET].failed));

                unsigned mark = sim->n;
                sim->s.pid = 200;
                sim->s.uptime = 5 * SEC;
                set_ws(sim, 2 * GB);
                sim_tick(sim, SEC);
                expect(find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, mark));
                if (late) {
                        action_feedback_add(&sim->fb, &reset, &res);
                        sim_tick(sim, SEC);
                        const Decision *gone = find_code(sim, T_EFFECT, EFFECT_FAILED_GONE, mark);
                        expect(gone && gone->action == ACTION_RESET &&
                               strstr(gone->reason, "reset failed against the server process that is gone"));
                        expect(!find_code(sim, T_EFFECT, EFFECT_FAILED, mark));
                }
                expect(!sim->e->act[ACTION_RESET].spent && !sim->e->act[ACTION_RESET].pending);
                expect(sim->e->act[ACTION_TRIM].spent);

                /* The new server climbs as the old one did: its reset comes within the backoff
                 * the failure would have set, and no trim within the trim's. */
                usec_t failed_at = sim->at[mark - 1];
                mark = sim->n;
                for (unsigned i = 0; i < 1800 && !find(sim, T_RESET, mark); i++) {
                        set_ws(sim, sim->s.memory_current + 10 * MB);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                }
                const Decision *again = find(sim, T_RESET, mark);
                expect(again && sim->at[again - sim->log] - failed_at < sim->p.step[LEVEL_RESET].backoff);
                expect(!find(sim, T_TRIM, mark));
                check_invariants(sim);
                sim_free(sim);
        }
}

/* A reset that ended sessions on a server process that is gone by the time its result comes (a
 * restart that did not wait for it): what it measured is the old process's, and is counted
 * neither as a gain nor as too little for the new one. */
static void test_success_against_the_old_process(void **state) {
        Sim *sim = young_server_to_reset();
        const Decision *r = find(sim, T_RESET, 0);
        if (!r) {
                sim_free(sim);
                fail_msg("no reset decided");
                return;
        }
        Decision reset = *r;
        sim->s.pending = 1u << ACTION_RESET;
        unsigned mark = sim->n;
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_tick(sim, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, mark) && sim->e->act[ACTION_RESET].pending);
        sim->s.pending = 0;
        ActionResult res = { .error = 0, .has_freed = true, .freed = 9 * GB };
        action_feedback_add(&sim->fb, &reset, &res);
        sim_tick(sim, SEC);
        const Decision *gone = find_code(sim, T_EFFECT, EFFECT_DONE_GONE, mark);
        expect(gone && gone->action == ACTION_RESET);
        expect(!find_code(sim, T_EFFECT, EFFECT_FREED, mark) && !find_code(sim, T_EFFECT, EFFECT_TOO_LITTLE, mark));
        expect(!sim->e->act[ACTION_RESET].pending && !sim->e->act[ACTION_RESET].spent &&
               !sim->e->act[ACTION_RESET].gain_measured);
        check_invariants(sim);
        sim_free(sim);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_calm),
                cmocka_unit_test(test_action_at_time_zero),
                cmocka_unit_test(test_effect_from_working_set),
                cmocka_unit_test(test_hysteresis),
                cmocka_unit_test(test_eta_trigger),
                cmocka_unit_test(test_spent_rung_holds_nothing_once_flat),
                cmocka_unit_test(test_spent_rung_holds_while_hovering),
                cmocka_unit_test(test_one_rung_per_tick_and_settle),
                cmocka_unit_test(test_leave),
                cmocka_unit_test(test_own_drops_keep_the_trend),
                cmocka_unit_test(test_starting_server),
                cmocka_unit_test(test_new_process_starting),
                cmocka_unit_test(test_failures),
                cmocka_unit_test(test_oom_kill_event),
                cmocka_unit_test(test_server_restart_not_by_us),
                cmocka_unit_test(test_no_cgroup),
                cmocka_unit_test(test_no_budget),
                cmocka_unit_test(test_deterministic),
                cmocka_unit_test(test_reload_disables_level),
                cmocka_unit_test(test_trend_at_every_spacing),
                cmocka_unit_test(test_trend_short_scale),
                cmocka_unit_test(test_pool_filling),
                cmocka_unit_test(test_failure_against_the_old_process),
                cmocka_unit_test(test_success_against_the_old_process),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
