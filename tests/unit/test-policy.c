/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <sys/stat.h>

#include "memgov/fileio.h"
#include "memgov/policy.h"
#include "memgov/units.h"

typedef struct Messages {
        char text[32][512];
        unsigned n;
} Messages;

static void collect(void *userdata, const char *message) {
        Messages *m = userdata;
        if (m->n < ELEMENTSOF(m->text))
                snprintf(m->text[m->n], sizeof(m->text[0]), "%s", message);
        m->n++;
}

/* Parses text over the default; returns the problem count, messages in *m. */
static int parse(const char *text, Policy *p, Messages *m) {
        memset(m, 0, sizeof(*m));
        assert_int_equal(policy_load_default(p), 0);
        return policy_parse(p, text, strlen(text), "t.ini", collect, m);
}

static Policy *new_policy(void) {
        Policy *p = malloc(sizeof(Policy));
        assert_non_null(p);
        return p;
}

static void test_default_loads(void **state) {
        Policy *p = new_policy();

        assert_int_equal(policy_load_default(p), 0);
        assert_false(p->dry_run);
        assert_int_equal(p->settle, 15 * USEC_PER_SEC);
        assert_int_equal(p->budget_mode, BUDGET_AUTO);
        assert_true(p->step[LEVEL_TRIM].enabled);
        assert_int_equal(p->step[LEVEL_TRIM].at, 7500);
        assert_int_equal(p->step[LEVEL_RESTART].at, 9600);
        assert_int_equal(p->restart_max_per_day, 1);
        assert_int_equal(p->n_windows, 0);
        assert_int_equal(p->psi_window, 2 * USEC_PER_SEC);
        assert_int_equal(policy_validate(p, "default", NULL, NULL), 0);
        free(p);
}

static void test_default_is_shipped_file(void **state) {
        const char *root = getenv("MEMGOV_SOURCE_ROOT");
        char path[4096], *text;
        size_t len;

        assert_non_null(root);
        snprintf(path, sizeof(path), "%s/policies/default.ini", root);
        assert_int_equal(read_full_file_at(-100, path, 1 << 20, &text, &len), 0);
        /* The binary's default is the shipped file, byte for byte. */
        assert_int_equal(len, policy_default_size);
        assert_memory_equal(text, policy_default_text, len);

        /* And it sets every key: nothing is left to a value hidden in the code. */
        const char *const *names = policy_key_names();
        for (size_t i = 0; names[i]; i++) {
                const char *dot = strchr(names[i], '.');
                char section[64], key[80];
                snprintf(section, sizeof(section), "\n[%.*s]\n", (int) (dot - names[i]), names[i]);
                snprintf(key, sizeof(key), "\n%s =", dot + 1);
                const char *sec = strstr(text, section);
                if (!sec) {
                        fail_msg("default.ini has no section for %s", names[i]);
                        return; /* (fail_msg does not return; said for the optimizer's warnings) */
                }
                const char *next = strstr(sec + 1, "\n[");
                const char *k = strstr(sec, key);
                if (!k || (next && k > next))
                        fail_msg("default.ini does not set %s", names[i]);
        }
        free(text);
}

static void test_every_key_documented(void **state) {
        /* The reference in docs/ and the man page written from it by the build. */
        const char *roots[] = { getenv("MEMGOV_SOURCE_ROOT"), getenv("MEMGOV_BUILD_ROOT") };
        const char *docs[] = { "docs/policy.md", "docs/memgov.ini.5.scd" };
        for (size_t d = 0; d < ELEMENTSOF(docs); d++) {
                char path[4096], *text;
                size_t len;
                assert_non_null(roots[d]);
                snprintf(path, sizeof(path), "%s/%s", roots[d], docs[d]);
                int r = read_full_file_at(-100, path, 1 << 20, &text, &len);
                if (r < 0)
                        fail_msg("cannot read %s: %s", path, strerror(-r));
                const char *const *names = policy_key_names();
                for (size_t i = 0; names[i]; i++) {
                        const char *dot = strchr(names[i], '.');
                        char heading[96], needle[96];
                        /* Under the section's heading, before the next one: a row "| `key` |" in
                         * markdown, an entry "*key* =" in scdoc. */
                        snprintf(heading, sizeof(heading), d == 0 ? "\n## [%.*s]\n" : "\n# [%.*s]\n",
                                 (int) (dot - names[i]), names[i]);
                        snprintf(needle, sizeof(needle), d == 0 ? "| `%s` |" : "*%s* =", dot + 1);
                        const char *sec = strstr(text, heading);
                        if (!sec) {
                                fail_msg("%s has no section for %s", docs[d], names[i]);
                                return;
                        }
                        const char *next = strstr(sec + 1, d == 0 ? "\n## " : "\n# ");
                        const char *k = strstr(sec, needle);
                        if (!k || (next && k > next))
                                fail_msg("%s does not document %s", docs[d], names[i]);
                }
                free(text);
        }
}

static void test_overlay(void **state) {
        Policy *p = new_policy();
        Messages m;

        assert_int_equal(parse("[trim]\nat = 70%\n  eta = 8h   # indented, with a comment\n"
                               "[budget]\nsize = 60G ; another comment\n",
                               p, &m),
                         0);
        assert_int_equal(p->step[LEVEL_TRIM].at, 7000);
        assert_int_equal(p->step[LEVEL_TRIM].eta, 8 * USEC_PER_HOUR);
        assert_int_equal(p->budget_mode, BUDGET_SIZE);
        assert_int_equal(p->budget_size, 60ULL << 30);
        /* Untouched keys keep the default. */
        assert_int_equal(p->step[LEVEL_THROTTLE].at, 8800);
        /* budget.host-reserve: auto by default (1G, or an eighth of a smaller host's RAM), or a size. */
        assert_true(p->host_reserve == HOST_RESERVE_AUTO);
        assert_int_equal(policy_host_reserve(p, 4ULL << 30), 512ULL << 20);
        assert_int_equal(policy_host_reserve(p, 64ULL << 30), 1ULL << 30);
        assert_int_equal(parse("[budget]\nhost-reserve = 2G\n", p, &m), 0);
        assert_int_equal(policy_host_reserve(p, 4ULL << 30), 2ULL << 30);
        assert_int_equal(parse("[budget]\nhost-reserve = auto\n", p, &m), 0);
        assert_true(p->host_reserve == HOST_RESERVE_AUTO);

        assert_int_equal(parse("[budget]\nsize = 80%\n[reset]\nexempt-users = repl, backup ,monitor\n"
                               "exempt-hosts = 10.0.0.5\n[restart]\nwindows = Sat..Sun 02:00-06:00, Mon..Fri 03:00-04:00\n",
                               p, &m),
                         0);
        assert_int_equal(p->budget_mode, BUDGET_HOST_SHARE);
        assert_int_equal(p->budget_share, 8000);
        assert_int_equal(p->n_exempt_users, 3);
        assert_string_equal(p->exempt_users[1], "backup");
        assert_int_equal(p->n_exempt_hosts, 1);
        assert_int_equal(p->n_windows, 2);
        /* A BOM and CRLF line ends are fine. */
        assert_int_equal(parse("\xEF\xBB\xBF[trim]\r\nat = 71%\r\n", p, &m), 0);
        assert_int_equal(p->step[LEVEL_TRIM].at, 7100);
        free(p);
}

static void expect_one(const char *text, const char *message) {
        Policy *p = new_policy();
        Messages m;
        int r = parse(text, p, &m);
        if (r != 1 || m.n != 1)
                fail_msg("expected one problem for <<%s>>, got %d%s%s", text, r, m.n ? ": " : "", m.n ? m.text[0] : "");
        assert_string_equal(m.text[0], message);
        free(p);
}

static void test_errors(void **state) {
        expect_one("[restart]\nmax-per-dya = 3\n", "t.ini:2: restart.max-per-dya: unknown key (did you mean max-per-day?)");
        expect_one("[trim]\nwindows = Sat 01:00-02:00\n", "t.ini:2: trim.windows: unknown key (did you mean windows in [restart]?)");
        expect_one("[trim]\nzzz = 1\n", "t.ini:2: trim.zzz: unknown key (expected one of the keys of [trim], see memgov.ini(5))");
        expect_one("[trimm]\nat = 5%\n", "t.ini:1: [trimm]: unknown section (did you mean [trim]?)");
        /* Far from every name: all of them, every rung's among them. */
        Policy *q = new_policy();
        Messages mq;
        assert_int_equal(parse("[nosuchsectionxyzzy]\n", q, &mq), 1);
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++) {
                char name[32];
                snprintf(name, sizeof(name), "[%s]", level_to_string(l));
                if (!strstr(mq.text[0], name))
                        fail_msg("%s not among the sections of: %s", name, mq.text[0]);
        }
        assert_non_null(strstr(mq.text[0], "expected one of [governor], [budget]"));
        free(q);
        expect_one("[trim]\nat = 70%\nat = 71%\n", "t.ini:3: trim.at: set twice (first on line 2; expected each key once)");
        expect_one("[trim]\nat = 85\n", "t.ini:2: trim.at: '85' is not valid (expected a share of the budget from 1% to 100% like 75%, or off)");
        expect_one("[trim]\nat = 0.5%\n", "t.ini:2: trim.at: '0.5%' is out of range (expected a share of the budget from 1% to 100% like 75%, or off)");
        expect_one("[trim]\neta = 15\n", "t.ini:2: trim.eta: '15' is not valid (expected a duration from 1s to 30d like 6h, or off)");
        expect_one("[trim]\nmethod = gdb\n", "t.ini:2: trim.method: 'gdb' is not valid (expected auto, ptrace or sql)");
        expect_one("[budget]\nsize = 1M\n", "t.ini:2: budget.size: '1M' is below 16M (expected auto, a size like 60G, or a share of host RAM from 1% to 100% like 80%)");
        expect_one("[budget]\nhost-reserve = lots\n", "t.ini:2: budget.host-reserve: 'lots' is not valid (expected auto or a size like 1G)");
        expect_one("at = 5%\n", "t.ini:1: 'at': setting outside any section (expected a [section] line first)");
        expect_one("[trim]\njust words\n", "t.ini:2: 'just words': not a setting (expected 'key = value' or '[section]')");
        expect_one("[trim\nat = 5%\n", "t.ini:1: malformed section header (expected [section])");
        expect_one("[restart]\nwindows = Sta 02:00-03:00\n",
                   "t.ini:2: restart.windows: 'Sta 02:00-03:00' is not valid (expected a comma-separated list of up to 16 windows like Sat..Sun 02:00-06:00, or nothing)");

        char long_line[400];
        snprintf(long_line, sizeof(long_line), "[reset]\nexempt-users = %0300d\n", 0);
        expect_one(long_line, "t.ini:2: line is longer than 198 characters (expected a shorter line)");

        Policy *p = new_policy();
        Messages m;
        const char nul[] = "[trim]\nat = 7\0%\n";
        assert_int_equal(policy_load_default(p), 0);
        memset(&m, 0, sizeof(m));
        assert_int_equal(policy_parse(p, nul, sizeof(nul) - 1, "t.ini", collect, &m), 1);
        assert_string_equal(m.text[0], "t.ini:2: line contains a NUL byte (expected text)");

        /* Several problems are all reported, and a failed parse leaves the policy as it was. */
        assert_int_equal(parse("[trim]\nat = x\neta = y\n[bogus]\n", p, &m), 3);
        assert_int_equal(p->step[LEVEL_TRIM].at, 7500);
        free(p);
}

/* The ladder's rungs in order, joined by sep, from the level names (no list of them here). */
static const char *ladder(const char *sep, char *buf, size_t size) {
        size_t n = 0;
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++)
                n += (size_t) snprintf(buf + n, size - n, "%s%s", l > LEVEL_TRIM ? sep : "", level_to_string(l));
        return buf;
}

static void test_contradictions(void **state) {
        char up[128], down[128], msg[512];
        ladder(" <= ", up, sizeof(up));
        ladder(" >= ", down, sizeof(down));
        assert_string_equal(up, "trim <= throttle <= admit <= reset <= pool <= restart");
        snprintf(msg, sizeof(msg), "t.ini:2: trim.at: 97%% is above throttle.at = 88%% (expected the thresholds to rise with the ladder: %s)", up);
        expect_one("[trim]\nat = 97%\n", msg);
        snprintf(msg, sizeof(msg), "t.ini:2: restart.at: 50%% is below reset.at = 92%% (expected the thresholds to rise with the ladder: %s)", up);
        expect_one("[restart]\nat = 50%\n", msg);
        snprintf(msg, sizeof(msg), "t.ini:2: restart.eta: 2h is longer than reset.eta = 20m (expected the ETA thresholds to shrink up the ladder: %s)", down);
        expect_one("[restart]\neta = 2h\nemergency-eta = 10m\n", msg);
        /* A disabled rung does not take part. */
        Policy *p = new_policy();
        Messages m;
        assert_int_equal(parse("[reset]\nenabled = no\nat = 99%\n", p, &m), 0);
        free(p);
        expect_one("[governor]\nhysteresis = 50%\n[trim]\nat = 40%\n",
                   "t.ini:2: governor.hysteresis: 50% is not below trim.at = 40% (expected a hysteresis smaller than every threshold, or no step could ever be left)");
        expect_one("[trend]\nmin-points = 40\n",
                   "t.ini:2: trend.min-points: 40 is more than trend.points = 30 (expected at most trend.points)");
        expect_one("[sampling]\nfast-interval = 10s\n",
                   "t.ini:2: sampling.fast-interval: 10s is longer than sampling.interval = 5s (expected at most the normal interval)");
        expect_one("[psi]\ntrigger-stall = 2s\n",
                   "t.ini:2: psi.trigger-stall: 2s is not shorter than psi.trigger-window = 2s (expected a stall shorter than its window)");
        expect_one("[throttle]\nfloor = 99%\n",
                   "t.ini:2: throttle.floor: 99% is above the calm memory.high (100% minus throttle.calm-headroom = 3%) (expected a floor below the calm value)");
        expect_one("[restart]\nemergency-eta = 1h\n",
                   "t.ini:2: restart.emergency-eta: 1h is longer than restart.eta = 15m (expected an emergency ETA at or below the restart ETA)");
        expect_one("[restart]\nemergency-eta = off\n[reset]\nin-transaction = emergency\n",
                   "t.ini:4: reset.in-transaction: emergency needs restart.emergency-eta to define an emergency (expected restart.emergency-eta to be set, or never)");
        expect_one("[throttle]\nat = off\neta = off\n",
                   "t.ini:3: throttle.eta: off, and so is throttle.at: the enabled step never triggers (expected one of them set, or throttle.enabled = no)");
}

static void test_windows(void **state) {
        MaintenanceWindow w[4];
        unsigned n;

        assert_int_equal(parse_windows("Sat..Sun 02:00-06:00, Mon..Fri 23:00-01:00", w, 4, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(w[0].days, (1 << 5) | (1 << 6));
        assert_int_equal(w[1].days, 0x1f);
        /* Monday 00:00 is minute 0 of the week. */
        assert_true(windows_contain(w, n, 5 * 1440 + 3 * 60));       /* Sat 03:00 */
        assert_false(windows_contain(w, n, 5 * 1440 + 7 * 60));      /* Sat 07:00 */
        assert_true(windows_contain(w, n, 0 * 1440 + 23 * 60 + 30)); /* Mon 23:30 */
        assert_true(windows_contain(w, n, 1 * 1440 + 30));           /* Tue 00:30, the window from Mon */
        assert_true(windows_contain(w, n, 5 * 1440 + 30));           /* Sat 00:30, the window from Fri */
        assert_false(windows_contain(w, n, 0 * 1440 + 30));          /* Mon 00:30: Sunday has no night window */
        /* A range may wrap around the week; 24:00 ends a day. */
        assert_int_equal(parse_windows("Fri..Mon 22:00-24:00", w, 4, &n), 0);
        assert_int_equal(w[0].days, (1 << 4) | (1 << 5) | (1 << 6) | (1 << 0));
        assert_true(windows_contain(w, n, 6 * 1440 + 23 * 60)); /* Sun 23:00 */
        assert_false(windows_contain(w, n, 2 * 1440 + 23 * 60)); /* Wed 23:00 */
        assert_int_equal(parse_windows("03:00-04:00", w, 4, &n), 0);
        assert_int_equal(w[0].days, 0x7f);
        assert_int_equal(parse_windows("", w, 4, &n), 0);
        assert_int_equal(n, 0);
        assert_true(windows_contain(w, 0, 1234)); /* no windows: any time */

        const char *bad[] = { "Sat 2:00-06:00", "Sat 02:00-02:00", "Sat 25:00-26:00", "Xyz 01:00-02:00",
                              "Sat..Xyz 01:00-02:00", "Sat 01:00-02:60", "Sat 24:00-01:00", "Sat01:00-02:00" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_windows(bad[i], w, 4, &n) == 0)
                        fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(parse_windows("01:00-02:00,01:00-02:00,01:00-02:00", w, 2, &n), -E2BIG);

        /* 2026-08-10 was a Monday; 1786403397 is 23:09:57 UTC that day. */
        assert_int_equal(minute_of_week(1786403397ULL * USEC_PER_SEC, 0), 23 * 60 + 9);
        /* Two hours east it is already Tuesday 01:09. */
        assert_int_equal(minute_of_week(1786403397ULL * USEC_PER_SEC, 7200), 1440 + 69);
}

static void test_trusted_file(void **state) {
        struct stat st = { .st_mode = S_IFREG | 0644, .st_uid = 0 };
        char why[256];

        assert_int_equal(check_trusted_file(&st, 0, why, sizeof(why)), 0);
        st.st_mode = S_IFREG | 0664;
        assert_int_equal(check_trusted_file(&st, 0, why, sizeof(why)), -EPERM);
        assert_string_equal(why, "writable by its group (mode 0664; expected chmod go-w)");
        st.st_mode = S_IFREG | 0646;
        assert_int_equal(check_trusted_file(&st, 0, why, sizeof(why)), -EPERM);
        assert_string_equal(why, "writable by everyone (mode 0646; expected chmod go-w)");
        st.st_mode = S_IFREG | 0644;
        st.st_uid = 1000;
        assert_int_equal(check_trusted_file(&st, 0, why, sizeof(why)), -EPERM);
        assert_string_equal(why, "owned by uid 1000, not root (expected root:root, chown root)");
        /* A governor that is not root only reads what it can anyway. */
        assert_int_equal(check_trusted_file(&st, 1000, why, sizeof(why)), 0);
        st.st_mode = S_IFDIR | 0755;
        st.st_uid = 0;
        assert_int_equal(check_trusted_file(&st, 0, why, sizeof(why)), -EPERM);
}

static void test_level_names(void **state) {
        Level l;
        for (int i = 0; i < _LEVEL_MAX; i++) {
                assert_int_equal(level_from_string(level_to_string((Level) i), &l), 0);
                assert_int_equal(l, i);
        }
        assert_int_equal(level_from_string("panic", &l), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_default_loads),   cmocka_unit_test(test_default_is_shipped_file),
                cmocka_unit_test(test_every_key_documented), cmocka_unit_test(test_overlay),
                cmocka_unit_test(test_errors),          cmocka_unit_test(test_contradictions),
                cmocka_unit_test(test_windows),         cmocka_unit_test(test_trusted_file),
                cmocka_unit_test(test_level_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
