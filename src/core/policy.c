/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memgov/argv.h"
#include "memgov/policy.h"
#include "memgov/scan.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

static const char *const level_names[_LEVEL_MAX] = {
        [LEVEL_NORMAL] = "normal",
        [LEVEL_TRIM] = "trim",
        [LEVEL_THROTTLE] = "throttle",
        [LEVEL_ADMIT] = "admit",
        [LEVEL_RESET] = "reset",
        [LEVEL_POOL] = "pool",
        [LEVEL_RESTART] = "restart",
};

const char *level_to_string(Level l) {
        return l >= 0 && l < _LEVEL_MAX ? level_names[l] : "invalid";
}

int level_from_string(const char *s, Level *ret) {
        for (int i = 0; i < _LEVEL_MAX; i++)
                if (streq(s, level_names[i])) {
                        *ret = (Level) i;
                        return 0;
                }
        return -EINVAL;
}

static const char *const trim_method_names[_TRIM_METHOD_MAX] = {
        [TRIM_AUTO] = "auto",
        [TRIM_PTRACE] = "ptrace",
        [TRIM_SQL] = "sql",
};

static const char *const reset_method_names[_RESET_METHOD_MAX] = {
        [RESET_SQL] = "sql",
        [RESET_EXEC] = "exec",
        [RESET_SIGNAL] = "signal",
};

const char *reset_method_to_string(ResetMethod m) {
        return m >= 0 && m < _RESET_METHOD_MAX ? reset_method_names[m] : "invalid";
}

const char *trim_method_to_string(TrimMethod m) {
        return m >= 0 && m < _TRIM_METHOD_MAX ? trim_method_names[m] : "invalid";
}

typedef enum KeyType {
        KT_BOOL,
        KT_SIZE,
        KT_TIMESPAN,
        KT_TIMESPAN_OFF,
        KT_PERCENT,
        KT_PERCENT_OFF,
        KT_UINT,
        KT_BUDGET,
        KT_RESERVE,
        KT_TRIM_METHOD,
        KT_PSI_TYPE,
        KT_IN_TRX,
        KT_USERS,
        KT_HOSTS,
        KT_WINDOWS,
        KT_STRING,
        KT_PATH,
        KT_ARGV,
        KT_RESET_METHOD,
        KT_SIGNAL,
        KT_LISTEN,
} KeyType;

typedef struct PolicyKey {
        const char *section;
        const char *name;
        const char *full; /* "section.name", how messages and docs refer to it */
        KeyType type;
        size_t offset;
        uint64_t min, max; /* in the key's unit: bytes, usec, basis points, count */
        const char *expected;
} PolicyKey;

#define STEP(l, field) offsetof(Policy, step[l].field)
#define K(sec, nm, t, off, lo, hi, exp) { sec, nm, sec "." nm, t, off, lo, hi, exp }
#define PCT(x) ((uint64_t) (x) * 100)

static const PolicyKey keys[] = {
        K("governor", "dry-run", KT_BOOL, offsetof(Policy, dry_run), 0, 0, "yes or no"),
        K("governor", "settle", KT_TIMESPAN, offsetof(Policy, settle), USEC_PER_SEC, USEC_PER_HOUR,
          "a duration from 1s to 1h, like 15s"),
        K("governor", "hysteresis", KT_PERCENT, offsetof(Policy, hysteresis), 0, PCT(50),
          "a share of the budget from 0% to 50%, like 5%"),
        K("governor", "eta-hysteresis", KT_PERCENT, offsetof(Policy, eta_hysteresis), 0, PCT(1000),
          "a share from 0% to 1000%, like 50%"),
        K("governor", "lock-memory", KT_BOOL, offsetof(Policy, lock_memory), 0, 0, "yes or no"),

        K("budget", "size", KT_BUDGET, 0, 0, 0,
          "auto, a size like 60G, or a share of host RAM from 1% to 100% like 80%"),
        K("budget", "host-reserve", KT_RESERVE, offsetof(Policy, host_reserve), 0, UINT64_MAX / 2,
          "auto or a size like 1G"),

        K("sampling", "interval", KT_TIMESPAN, offsetof(Policy, interval), 100 * USEC_PER_MSEC,
          USEC_PER_HOUR, "a duration from 100ms to 1h, like 5s"),
        K("sampling", "fast-interval", KT_TIMESPAN, offsetof(Policy, fast_interval), 100 * USEC_PER_MSEC,
          USEC_PER_HOUR, "a duration from 100ms to 1h, like 1s"),
        K("sampling", "fast-above", KT_PERCENT, offsetof(Policy, fast_above), 0, PCT(100),
          "a share of the budget from 0% to 100%, like 70%"),

        K("trend", "window", KT_TIMESPAN, offsetof(Policy, trend_window), 10 * USEC_PER_SEC,
          30 * USEC_PER_DAY, "a duration from 10s to 30d, like 30m"),
        K("trend", "points", KT_UINT, offsetof(Policy, trend_points), 4, 64, "a whole number from 4 to 64"),
        K("trend", "min-points", KT_UINT, offsetof(Policy, trend_min_points), 3, 64,
          "a whole number from 3 to 64, at most trend.points"),
        K("trend", "drop", KT_PERCENT, offsetof(Policy, trend_drop), 1, PCT(100),
          "a share of the budget from 0.01% to 100%, like 2%"),

        K("psi", "trigger-type", KT_PSI_TYPE, offsetof(Policy, psi_type), 0, 0, "some or full"),
        K("psi", "trigger-stall", KT_TIMESPAN, offsetof(Policy, psi_stall), USEC_PER_MSEC,
          10 * USEC_PER_SEC, "a duration from 1ms to 10s, like 150ms"),
        K("psi", "trigger-window", KT_TIMESPAN, offsetof(Policy, psi_window), 500 * USEC_PER_MSEC,
          10 * USEC_PER_SEC, "a duration from 500ms to 10s, like 2s"),

        K("trim", "enabled", KT_BOOL, STEP(LEVEL_TRIM, enabled), 0, 0, "yes or no"),
        K("trim", "at", KT_PERCENT_OFF, STEP(LEVEL_TRIM, at), PCT(1), PCT(100),
          "a share of the budget from 1% to 100% like 75%, or off"),
        K("trim", "eta", KT_TIMESPAN_OFF, STEP(LEVEL_TRIM, eta), USEC_PER_SEC, 30 * USEC_PER_DAY,
          "a duration from 1s to 30d like 6h, or off"),
        K("trim", "cooldown", KT_TIMESPAN, STEP(LEVEL_TRIM, cooldown), USEC_PER_SEC, USEC_PER_DAY,
          "a duration from 1s to 1d, like 10m"),
        K("trim", "method", KT_TRIM_METHOD, offsetof(Policy, trim_method), 0, 0, "auto, ptrace or sql"),
        K("trim", "min-gain", KT_SIZE, STEP(LEVEL_TRIM, min_gain), 0, UINT64_MAX / 2, "a size like 64M"),
        K("trim", "backoff", KT_TIMESPAN, STEP(LEVEL_TRIM, backoff), 0, 7 * USEC_PER_DAY,
          "a duration up to 7d, like 1h"),

        K("throttle", "enabled", KT_BOOL, STEP(LEVEL_THROTTLE, enabled), 0, 0, "yes or no"),
        K("throttle", "at", KT_PERCENT_OFF, STEP(LEVEL_THROTTLE, at), PCT(1), PCT(100),
          "a share of the budget from 1% to 100% like 88%, or off"),
        K("throttle", "eta", KT_TIMESPAN_OFF, STEP(LEVEL_THROTTLE, eta), USEC_PER_SEC, 30 * USEC_PER_DAY,
          "a duration from 1s to 30d like 1h, or off"),
        K("throttle", "cooldown", KT_TIMESPAN, STEP(LEVEL_THROTTLE, cooldown), USEC_PER_SEC, USEC_PER_HOUR,
          "a duration from 1s to 1h, like 5s"),
        K("throttle", "calm-headroom", KT_PERCENT_OFF, offsetof(Policy, calm_headroom), 1, PCT(50),
          "a share of the budget from 0.01% to 50% like 3%, or off"),
        K("throttle", "margin", KT_PERCENT, offsetof(Policy, throttle_margin), 1, PCT(50),
          "a share of the budget from 0.01% to 50%, like 2%"),
        K("throttle", "floor", KT_PERCENT, offsetof(Policy, throttle_floor), PCT(1), PCT(100),
          "a share of the budget from 1% to 100%, like 50%"),
        K("throttle", "step-down", KT_PERCENT, offsetof(Policy, step_down), 1, PCT(100),
          "a share of the budget from 0.01% to 100%, like 1%"),
        K("throttle", "full-guard", KT_PERCENT, offsetof(Policy, full_guard), 1, PCT(100),
          "a PSI share from 0.01% to 100%, like 20%"),
        K("throttle", "some-guard", KT_PERCENT_OFF, offsetof(Policy, some_guard), 1, PCT(100),
          "a PSI share from 0.01% to 100% like 50%, or off"),

        K("admit", "enabled", KT_BOOL, STEP(LEVEL_ADMIT, enabled), 0, 0, "yes or no"),
        K("admit", "at", KT_PERCENT_OFF, STEP(LEVEL_ADMIT, at), PCT(1), PCT(100),
          "a share of the budget from 1% to 100% like 90%, or off"),
        K("admit", "eta", KT_TIMESPAN_OFF, STEP(LEVEL_ADMIT, eta), USEC_PER_SEC, 30 * USEC_PER_DAY,
          "a duration from 1s to 30d like 30m, or off"),
        K("admit", "cooldown", KT_TIMESPAN, STEP(LEVEL_ADMIT, cooldown), USEC_PER_SEC, USEC_PER_DAY,
          "a duration from 1s to 1d, like 1m"),
        K("admit", "backoff", KT_TIMESPAN, STEP(LEVEL_ADMIT, backoff), 0, 7 * USEC_PER_DAY,
          "a duration up to 7d, like 10m"),
        K("admit", "min-rise", KT_UINT, offsetof(Policy, admit_min_rise), 1, 100000,
          "a number of connections from 1 to 100000, like 20"),
        K("admit", "min-rise-share", KT_PERCENT, offsetof(Policy, admit_min_rise_share), 0, PCT(1000),
          "a share of the connection count from 0% to 1000%, like 25%"),
        K("admit", "rise-window", KT_TIMESPAN, offsetof(Policy, admit_rise_window), 10 * USEC_PER_SEC,
          USEC_PER_DAY, "a duration from 10s to 1d, like 5m"),
        K("admit", "headroom", KT_UINT, offsetof(Policy, admit_headroom), 0, 100000,
          "a number of connections from 0 to 100000, like 10"),
        K("admit", "fit", KT_BOOL, offsetof(Policy, admit_fit), 0, 0, "yes or no"),
        K("admit", "floor", KT_UINT, offsetof(Policy, admit_floor), 1, 100000,
          "a number of connections from 1 to 100000, like 10"),
        K("admit", "restore-after", KT_TIMESPAN, offsetof(Policy, admit_restore_after), USEC_PER_SEC, USEC_PER_DAY,
          "a duration from 1s to 1d, like 10m"),
        K("admit", "max-raise", KT_PERCENT, offsetof(Policy, admit_max_raise), 0, PCT(50),
          "a share of the budget from 0% to 50%, like 5%"),
        K("admit", "raise-for", KT_TIMESPAN, offsetof(Policy, admit_raise_for), USEC_PER_SEC, USEC_PER_HOUR,
          "a duration from 1s to 1h, like 2m"),
        K("admit", "end-excess", KT_BOOL, offsetof(Policy, admit_end_excess), 0, 0, "yes or no"),

        K("reset", "enabled", KT_BOOL, STEP(LEVEL_RESET, enabled), 0, 0, "yes or no"),
        K("reset", "at", KT_PERCENT_OFF, STEP(LEVEL_RESET, at), PCT(1), PCT(100),
          "a share of the budget from 1% to 100% like 92%, or off"),
        K("reset", "eta", KT_TIMESPAN_OFF, STEP(LEVEL_RESET, eta), USEC_PER_SEC, 30 * USEC_PER_DAY,
          "a duration from 1s to 30d like 20m, or off"),
        K("reset", "cooldown", KT_TIMESPAN, STEP(LEVEL_RESET, cooldown), USEC_PER_SEC, USEC_PER_DAY,
          "a duration from 1s to 1d, like 1m"),
        K("reset", "max-per-step", KT_UINT, offsetof(Policy, reset_max), 1, 1000,
          "a whole number from 1 to 1000"),
        K("reset", "min-memory", KT_SIZE, offsetof(Policy, reset_min_memory), 0, UINT64_MAX / 2,
          "a size like 64M"),
        K("reset", "emergency-max-per-step", KT_UINT, offsetof(Policy, reset_emergency_max), 0, 1000,
          "a whole number from 0 (no emergency reset) to 1000"),
        K("reset", "emergency-min-memory", KT_SIZE, offsetof(Policy, reset_emergency_min_memory), 0, UINT64_MAX / 2,
          "a size like 8M"),
        K("reset", "min-idle", KT_TIMESPAN, offsetof(Policy, reset_min_idle), 0, USEC_PER_WEEK,
          "a duration up to 1w, like 30s"),
        K("reset", "min-gain", KT_SIZE, STEP(LEVEL_RESET, min_gain), 0, UINT64_MAX / 2, "a size like 64M"),
        K("reset", "backoff", KT_TIMESPAN, STEP(LEVEL_RESET, backoff), 0, 7 * USEC_PER_DAY,
          "a duration up to 7d, like 10m"),
        K("reset", "exempt-users", KT_USERS, 0, 0, 0,
          "a comma-separated list of up to 32 user names of at most 80 characters"),
        K("reset", "exempt-hosts", KT_HOSTS, 0, 0, 0,
          "a comma-separated list of up to 32 host names of at most 255 characters"),
        K("reset", "in-transaction", KT_IN_TRX, offsetof(Policy, reset_in_trx), 0, 0, "never or emergency"),
        K("reset", "method", KT_RESET_METHOD, offsetof(Policy, reset_method), 0, 0, "sql, exec or signal"),
        K("reset", "exec", KT_ARGV, offsetof(Policy, reset_exec), 0, POLICY_ARGV_MAX,
          "a command: an absolute path and its arguments, double quotes around blanks, or nothing"),
        K("reset", "signal-process", KT_STRING, offsetof(Policy, reset_signal_process), 0,
          sizeof(((Policy *) 0)->reset_signal_process), "a process name like proxysql, or nothing"),
        K("reset", "signal", KT_SIGNAL, offsetof(Policy, reset_signal), 0, 0, "a signal name like HUP or USR1"),
        K("reset", "hook-timeout", KT_TIMESPAN, offsetof(Policy, hook_timeout), USEC_PER_SEC, USEC_PER_HOUR,
          "a duration from 1s to 1h, like 30s"),

        K("pool", "enabled", KT_BOOL, STEP(LEVEL_POOL, enabled), 0, 0, "yes or no"),
        K("pool", "at", KT_PERCENT_OFF, STEP(LEVEL_POOL, at), PCT(1), PCT(100),
          "a share of the budget from 1% to 100% like 90%, or off"),
        K("pool", "eta", KT_TIMESPAN_OFF, STEP(LEVEL_POOL, eta), USEC_PER_SEC, 30 * USEC_PER_DAY,
          "a duration from 1s to 30d like 30m, or off"),
        K("pool", "cooldown", KT_TIMESPAN, STEP(LEVEL_POOL, cooldown), USEC_PER_SEC, USEC_PER_DAY,
          "a duration from 1s to 1d, like 1m"),
        K("pool", "min-gain", KT_SIZE, STEP(LEVEL_POOL, min_gain), 0, UINT64_MAX / 2, "a size like 32M"),
        K("pool", "backoff", KT_TIMESPAN, STEP(LEVEL_POOL, backoff), 0, 7 * USEC_PER_DAY,
          "a duration up to 7d, like 30m"),
        K("pool", "step", KT_PERCENT, offsetof(Policy, pool_step), PCT(1), PCT(50),
          "a share of the configured buffer pool from 1% to 50%, like 10%"),
        K("pool", "floor", KT_PERCENT, offsetof(Policy, pool_floor), PCT(5), PCT(100),
          "a share of the configured buffer pool from 5% to 100%, like 50%"),
        K("pool", "resize-timeout", KT_TIMESPAN, offsetof(Policy, pool_resize_timeout), USEC_PER_SEC,
          USEC_PER_HOUR, "a duration from 1s to 1h, like 1m"),
        K("pool", "grow-after", KT_TIMESPAN, offsetof(Policy, pool_grow_after), USEC_PER_SEC, USEC_PER_DAY,
          "a duration from 1s to 1d, like 10m"),

        K("sql", "socket", KT_PATH, offsetof(Policy, sql_socket), 0, sizeof(((Policy *) 0)->sql_socket),
          "auto (the server's own socket), or the absolute path of a unix socket"),
        K("sql", "host", KT_STRING, offsetof(Policy, sql_host), 0, sizeof(((Policy *) 0)->sql_host),
          "a host name or address, or nothing to use the socket"),
        K("sql", "port", KT_UINT, offsetof(Policy, sql_port), 1, 65535, "a TCP port from 1 to 65535"),
        K("sql", "user", KT_STRING, offsetof(Policy, sql_user), 1, sizeof(((Policy *) 0)->sql_user),
          "a user name of at most 80 characters"),
        K("sql", "option-file", KT_PATH, offsetof(Policy, sql_option_file), 0, sizeof(((Policy *) 0)->sql_option_file),
          "the absolute path of a my.cnf-style file with a [client] section, or nothing"),
        K("sql", "connect-timeout", KT_TIMESPAN, offsetof(Policy, sql_connect_timeout), USEC_PER_SEC, USEC_PER_MINUTE,
          "a duration from 1s to 1m, like 2s"),
        K("sql", "query-timeout", KT_TIMESPAN, offsetof(Policy, sql_query_timeout), USEC_PER_SEC, 10 * USEC_PER_MINUTE,
          "a duration from 1s to 10m, like 10s"),
        K("sql", "keep-open", KT_BOOL, offsetof(Policy, sql_keep_open), 0, 0, "yes or no"),

        K("restart", "enabled", KT_BOOL, STEP(LEVEL_RESTART, enabled), 0, 0, "yes or no"),
        K("restart", "at", KT_PERCENT_OFF, STEP(LEVEL_RESTART, at), PCT(1), PCT(100),
          "a share of the budget from 1% to 100% like 96%, or off"),
        K("restart", "eta", KT_TIMESPAN_OFF, STEP(LEVEL_RESTART, eta), USEC_PER_SEC, 30 * USEC_PER_DAY,
          "a duration from 1s to 30d like 15m, or off"),
        K("restart", "cooldown", KT_TIMESPAN, STEP(LEVEL_RESTART, cooldown), USEC_PER_MINUTE, USEC_PER_WEEK,
          "a duration from 1m to 1w, like 30m"),
        K("restart", "max-per-day", KT_UINT, offsetof(Policy, restart_max_per_day), 1, 100,
          "a whole number from 1 to 100 (restart.enabled = no turns restarts off)"),
        K("restart", "min-uptime", KT_TIMESPAN, offsetof(Policy, restart_min_uptime), 0, USEC_PER_WEEK,
          "a duration up to 1w, like 1h"),
        K("restart", "windows", KT_WINDOWS, 0, 0, 0,
          "a comma-separated list of up to 16 windows like Sat..Sun 02:00-06:00, or nothing"),
        K("restart", "emergency-eta", KT_TIMESPAN_OFF, offsetof(Policy, emergency_eta), USEC_PER_SEC,
          USEC_PER_DAY, "a duration from 1s to 1d like 10m, or off"),
        K("restart", "pre-flush", KT_BOOL, offsetof(Policy, preflush), 0, 0, "yes or no"),
        K("restart", "pre-flush-timeout", KT_TIMESPAN, offsetof(Policy, preflush_timeout), USEC_PER_SEC, USEC_PER_HOUR,
          "a duration from 1s to 1h, like 2m"),
        K("restart", "pre-hook", KT_ARGV, offsetof(Policy, pre_hook), 0, POLICY_ARGV_MAX,
          "a command: an absolute path and its arguments, double quotes around blanks, or nothing"),
        K("restart", "post-hook", KT_ARGV, offsetof(Policy, post_hook), 0, POLICY_ARGV_MAX,
          "a command: an absolute path and its arguments, double quotes around blanks, or nothing"),
        K("restart", "max-raise", KT_PERCENT, offsetof(Policy, max_raise), 0, PCT(50),
          "a share of the budget from 0% to 50%, like 5%"),
        K("restart", "max-raise-total", KT_PERCENT, offsetof(Policy, max_raise_total), 0, PCT(100),
          "a share of the budget from 0% to 100%, like 20%"),
        K("restart", "stop-timeout", KT_TIMESPAN, offsetof(Policy, stop_timeout), 10 * USEC_PER_SEC,
          USEC_PER_DAY, "a duration from 10s to 1d, like 15m"),

        K("metrics", "listen", KT_LISTEN, 0, 0, 0,
          "ADDRESS:PORT like 127.0.0.1:9187 or [::1]:9187, a port alone for 127.0.0.1, or nothing"),
        K("metrics", "textfile", KT_PATH, offsetof(Policy, metrics_textfile), 0,
          sizeof(((Policy *) 0)->metrics_textfile),
          "the absolute path of a .prom file for node_exporter's textfile collector, or nothing"),

        K("explain", "every", KT_TIMESPAN_OFF, offsetof(Policy, explain_every), 10 * USEC_PER_SEC, USEC_PER_DAY,
          "a duration from 10s to 1d like 5m, or off"),
        K("explain", "allocator", KT_BOOL, offsetof(Policy, explain_allocator), 0, 0, "yes or no"),
};

#define N_KEYS ELEMENTSOF(keys)

/* The sections besides the ladder's, one per rung (named as its level): the ladder's come after
 * the first FIRST_SECTIONS of these. */
static const char *const other_sections[] = { "governor", "budget", "sampling", "trend", "psi", "sql", "metrics",
                                              "explain" };
#define FIRST_SECTIONS 5
#define N_SECTIONS (ELEMENTSOF(other_sections) + _LEVEL_MAX - 1)

/* Every section name, in the order the documentation gives them. */
static void section_names(const char *ret[static N_SECTIONS]) {
        size_t n = 0;
        for (size_t i = 0; i < FIRST_SECTIONS; i++)
                ret[n++] = other_sections[i];
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++)
                ret[n++] = level_names[l];
        for (size_t i = FIRST_SECTIONS; i < ELEMENTSOF(other_sections); i++)
                ret[n++] = other_sections[i];
}

/* The ladder in its order, its rungs joined by sep: "trim <= throttle <= ... <= restart". */
static const char *ladder_order(const char *sep, char *buf, size_t size) {
        StrBuf b;
        strbuf_init(&b, buf, size);
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++)
                strbuf_printf(&b, "%s%s", l > LEVEL_TRIM ? sep : "", level_names[l]);
        return buf;
}

bool policy_uses_sql(const Policy *p) {
        return p->step[LEVEL_ADMIT].enabled || p->step[LEVEL_POOL].enabled ||
               (p->step[LEVEL_RESET].enabled && p->reset_method == RESET_SQL) ||
               (p->step[LEVEL_TRIM].enabled && p->trim_method == TRIM_SQL) ||
               (p->step[LEVEL_RESTART].enabled && p->preflush);
}

uint64_t policy_host_reserve(const Policy *p, uint64_t host_total) {
        if (p->host_reserve != HOST_RESERVE_AUTO)
                return p->host_reserve;
        /* A fixed 1G would leave a small host no room at all (a 1G one: no budget; a 768M VM: no
         * raise of memory.max), and an eighth of a large host would be more than it needs. */
        return MIN(host_total / 8, HOST_RESERVE_AUTO_MAX);
}

const char *const *policy_key_names(void) {
        static const char *names[N_KEYS + 1];
        if (!names[0])
                for (size_t i = 0; i < N_KEYS; i++)
                        names[i] = keys[i].full;
        return names;
}

static int key_index(const char *full) {
        for (size_t i = 0; i < N_KEYS; i++)
                if (streq(keys[i].full, full))
                        return (int) i;
        return -1;
}

/* The index of v among names, or -EINVAL. */
static int name_index(const char *v, const char *const *names, int n) {
        for (int i = 0; i < n; i++)
                if (streq(v, names[i]))
                        return i;
        return -EINVAL;
}

/* ---- windows ---- */

static const char *const day_names[] = { "mon", "tue", "wed", "thu", "fri", "sat", "sun" };

static int parse_day(const char *s, size_t n, unsigned *ret) {
        for (unsigned i = 0; i < 7; i++)
                if (n == 3 && strncasecmp(s, day_names[i], 3) == 0) {
                        *ret = i;
                        return 0;
                }
        return -EINVAL;
}

static int parse_hhmm(const char *s, size_t n, bool allow_24, uint16_t *ret) {
        if (n != 5 || s[2] != ':')
                return -EINVAL;
        for (size_t i = 0; i < 5; i++)
                if (i != 2 && (s[i] < '0' || s[i] > '9'))
                        return -EINVAL;
        unsigned h = (unsigned) (s[0] - '0') * 10 + (unsigned) (s[1] - '0');
        unsigned m = (unsigned) (s[3] - '0') * 10 + (unsigned) (s[4] - '0');
        if (m > 59 || h > 24 || (h == 24 && (m != 0 || !allow_24)))
                return -EINVAL;
        *ret = (uint16_t) (h * 60 + m);
        return 0;
}

static int parse_one_window(const char *s, size_t n, MaintenanceWindow *ret) {
        MaintenanceWindow w = { .days = 0x7f };
        const char *sp = memchr(s, ' ', n);

        if (sp) {
                /* "Sat" or "Mon..Fri" (a range may wrap: "Fri..Mon") */
                size_t dn = (size_t) (sp - s);
                const char *dots = dn > 3 ? strstr(s, "..") : NULL;
                unsigned a, b;
                if (dots && dots < sp) {
                        if (parse_day(s, (size_t) (dots - s), &a) < 0 ||
                            parse_day(dots + 2, (size_t) (sp - dots - 2), &b) < 0)
                                return -EINVAL;
                } else if (parse_day(s, dn, &a) < 0)
                        return -EINVAL;
                else
                        b = a;
                w.days = 0;
                for (unsigned d = a;; d = (d + 1) % 7) {
                        w.days |= (uint8_t) (1u << d);
                        if (d == b)
                                break;
                }
                n -= dn + 1;
                s = sp + 1;
                while (n > 0 && *s == ' ') {
                        s++;
                        n--;
                }
        }
        /* "02:00-06:00" */
        if (n != 11 || s[5] != '-')
                return -EINVAL;
        if (parse_hhmm(s, 5, false, &w.start_min) < 0 || parse_hhmm(s + 6, 5, true, &w.end_min) < 0)
                return -EINVAL;
        if (w.start_min == w.end_min)
                return -EINVAL;
        *ret = w;
        return 0;
}

int parse_windows(const char *s, MaintenanceWindow *ret, unsigned max, unsigned *ret_n) {
        unsigned n = 0;

        while (*s) {
                while (*s == ' ' || *s == ',')
                        s++;
                if (!*s)
                        break;
                const char *e = strchr(s, ',');
                size_t len = e ? (size_t) (e - s) : strlen(s);
                while (len > 0 && s[len - 1] == ' ')
                        len--;
                if (n >= max)
                        return -E2BIG;
                char one[64];
                if (len >= sizeof(one))
                        return -EINVAL;
                memcpy(one, s, len);
                one[len] = '\0';
                if (parse_one_window(one, len, &ret[n]) < 0)
                        return -EINVAL;
                n++;
                s += len;
        }
        *ret_n = n;
        return 0;
}

unsigned minute_of_week(usec_t wall, int32_t utc_offset_sec) {
        int64_t secs = (int64_t) (wall / USEC_PER_SEC) + utc_offset_sec;
        int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
        int64_t sod = secs - days * 86400;
        /* 1970-01-01 was a Thursday: day 3 when Monday is day 0. */
        int64_t dow = ((days + 3) % 7 + 7) % 7;
        return (unsigned) (dow * 1440 + sod / 60);
}

bool windows_contain(const MaintenanceWindow *w, unsigned n, unsigned m) {
        if (n == 0)
                return true;
        for (unsigned i = 0; i < n; i++)
                for (unsigned d = 0; d < 7; d++) {
                        if (!(w[i].days & (1u << d)))
                                continue;
                        unsigned start = d * 1440 + w[i].start_min;
                        unsigned len = w[i].end_min > w[i].start_min
                                               ? (unsigned) (w[i].end_min - w[i].start_min)
                                               : (unsigned) (w[i].end_min + 1440 - w[i].start_min);
                        /* Distance from the window's start, around the week. */
                        unsigned off = (m + 7 * 1440 - start) % (7 * 1440);
                        if (off < len)
                                return true;
                }
        return false;
}

/* ---- parsing ---- */

typedef struct ParseCtx {
        Policy p;
        const char *filename;
        const char *pos, *end;
        unsigned lineno;
        char section[64];
        bool section_known;
        bool section_broken; /* after a malformed header: its keys are not reported one by one */
        unsigned key_line[N_KEYS];
        unsigned errors;
        policy_report_t report;
        void *userdata;
} ParseCtx;

_printf_(3, 4) static void report(ParseCtx *c, unsigned line, const char *fmt, ...) {
        char msg[1024];
        StrBuf b;
        va_list ap;

        strbuf_init(&b, msg, sizeof(msg));
        if (line > 0)
                strbuf_printf(&b, "%s:%u: ", c->filename, line);
        else
                strbuf_printf(&b, "%s: ", c->filename);
        va_start(ap, fmt);
        if (b.len < sizeof(msg))
                vsnprintf(msg + b.len, sizeof(msg) - b.len, fmt, ap);
        va_end(ap);
        c->errors++;
        if (c->report)
                c->report(c->userdata, msg);
}

static bool is_known_section(const char *s) {
        const char *names[N_SECTIONS];
        section_names(names);
        for (size_t i = 0; i < N_SECTIONS; i++)
                if (streq(s, names[i]))
                        return true;
        return false;
}

/* Feeds inih one line at a time. We see each raw line first: this is where line numbers come
 * from, where lines too long for inih's fixed buffer are caught instead of being split, where
 * leading white space is removed (inih would take an indented key for the continuation of the
 * previous value) and where '#' comments after a value are cut. */
static char *policy_reader(char *str, int num, void *stream) {
        ParseCtx *c = stream;

        if (c->pos >= c->end)
                return NULL;

        const char *nl = memchr(c->pos, '\n', (size_t) (c->end - c->pos));
        const char *e = nl ? nl : c->end;
        size_t n = (size_t) (e - c->pos);
        const char *line = c->pos;
        c->pos = nl ? nl + 1 : c->end;
        c->lineno++;

        str[0] = '\n';
        str[1] = '\0';

        if (memchr(line, '\0', n)) {
                report(c, c->lineno, "line contains a NUL byte (expected text)");
                return str;
        }
        if (c->lineno == 1 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
                line += 3;
                n -= 3;
        }
        while (n > 0 && (*line == ' ' || *line == '\t')) {
                line++;
                n--;
        }
        /* Cut a comment that follows white space. */
        for (size_t i = 1; i < n; i++)
                if ((line[i] == '#' || line[i] == ';') && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
                        n = i;
                        break;
                }
        while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
                n--;
        if (n == 0 || line[0] == '#' || line[0] == ';')
                return str;
        if ((size_t) num < 3 || n > (size_t) num - 2) {
                report(c, c->lineno, "line is longer than %d characters (expected a shorter line)", num - 2);
                return str;
        }

        if (line[0] == '[') {
                if (line[n - 1] != ']' || n < 3) {
                        report(c, c->lineno, "malformed section header (expected [section])");
                        c->section_known = false;
                        c->section_broken = true;
                        c->section[0] = '\0';
                        return str;
                }
                c->section_broken = false;
                size_t sn = n - 2;
                if (sn >= sizeof(c->section))
                        sn = sizeof(c->section) - 1;
                memcpy(c->section, line + 1, sn);
                c->section[sn] = '\0';
                c->section_known = is_known_section(c->section);
                if (!c->section_known) {
                        const char *names[N_SECTIONS];
                        section_names(names);
                        const char *s = closest_match(c->section, names, N_SECTIONS);
                        if (s)
                                report(c, c->lineno, "[%s]: unknown section (did you mean [%s]?)", c->section, s);
                        else {
                                char all[N_SECTIONS * 16];
                                StrBuf b;
                                strbuf_init(&b, all, sizeof(all));
                                for (size_t i = 0; i < N_SECTIONS; i++)
                                        strbuf_printf(&b, "%s[%s]", i > 0 ? ", " : "", names[i]);
                                report(c, c->lineno, "[%s]: unknown section (expected one of %s)", c->section, all);
                        }
                }
                memcpy(str, line, n);
                str[n] = '\n';
                str[n + 1] = '\0';
                return str;
        }

        const char *eq = memchr(line, '=', n);
        if (!eq || eq == line) {
                report(c, c->lineno, "'%.*s': not a setting (expected 'key = value' or '[section]')",
                       (int) MIN(n, 80), line);
                return str;
        }
        if (c->section_broken)
                return str;
        if (c->section[0] == '\0') {
                size_t kn = (size_t) (eq - line);
                while (kn > 0 && (line[kn - 1] == ' ' || line[kn - 1] == '\t'))
                        kn--;
                report(c, c->lineno, "'%.*s': setting outside any section (expected a [section] line first)",
                       (int) MIN(kn, 80), line);
                return str;
        }
        memcpy(str, line, n);
        str[n] = '\n';
        str[n + 1] = '\0';
        return str;
}

static int parse_list(const char *value, char *base, size_t stride, unsigned max, unsigned *ret_n,
                      char *detail, size_t dlen) {
        unsigned n = 0;
        const char *s = value;

        while (*s) {
                while (*s == ' ' || *s == ',')
                        s++;
                if (!*s)
                        break;
                const char *e = strchr(s, ',');
                size_t len = e ? (size_t) (e - s) : strlen(s);
                while (len > 0 && s[len - 1] == ' ')
                        len--;
                if (n >= max) {
                        snprintf(detail, dlen, "more than %u entries", max);
                        return -E2BIG;
                }
                if (len >= stride) {
                        snprintf(detail, dlen, "'%.*s...' is too long", 20, s);
                        return -ERANGE;
                }
                for (size_t i = 0; i < len; i++)
                        if ((unsigned char) s[i] < 0x20) {
                                snprintf(detail, dlen, "an entry contains a control character");
                                return -EINVAL;
                        }
                memcpy(base + n * stride, s, len);
                base[n * stride + len] = '\0';
                n++;
                s += len;
        }
        *ret_n = n;
        return 0;
}

/* "[::1]:9187", "127.0.0.1:9187", "9187" (127.0.0.1) or "" (no endpoint). A host name is
 * refused: the endpoint is bound before any name service is worth trusting. */
static int parse_listen(const char *v, char *addr, size_t addr_size, unsigned *port) {
        const char *p = v, *colon;
        char host[64];
        size_t n;

        if (!v[0]) {
                addr[0] = '\0';
                *port = 0;
                return 0;
        }
        if (v[0] == '[') {
                const char *end = strchr(v, ']');
                if (!end || end[1] != ':')
                        return -EINVAL;
                n = (size_t) (end - v - 1);
                if (n == 0 || n >= sizeof(host))
                        return -EINVAL;
                memcpy(host, v + 1, n);
                host[n] = '\0';
                p = end + 2;
                struct in6_addr a6;
                if (inet_pton(AF_INET6, host, &a6) != 1)
                        return -EINVAL;
        } else if ((colon = strrchr(v, ':'))) {
                n = (size_t) (colon - v);
                if (n == 0 || n >= sizeof(host) || memchr(v, ':', n))
                        return -EINVAL;
                memcpy(host, v, n);
                host[n] = '\0';
                p = colon + 1;
                struct in_addr a4;
                if (inet_pton(AF_INET, host, &a4) != 1)
                        return -EINVAL;
        } else
                strcpy(host, "127.0.0.1");
        uint64_t u;
        if (span_to_u64(span_from_str(p), &u) < 0 || u < 1 || u > 65535)
                return -EINVAL;
        if (strlen(host) >= addr_size)
                return -ERANGE;
        strcpy(addr, host);
        *port = (unsigned) u;
        return 0;
}

static int parse_value(Policy *p, const PolicyKey *k, const char *v, char *detail, size_t dlen) {
        void *field = (char *) p + k->offset;
        uint64_t u = 0;
        uint32_t bp = 0;
        usec_t t = 0;
        int r;

        detail[0] = '\0';
        switch (k->type) {
        case KT_BOOL:
                return parse_bool(v, field);

        case KT_RESERVE:
                if (streq(v, "auto")) {
                        *(uint64_t *) field = HOST_RESERVE_AUTO;
                        return 0;
                }
                _fallthrough_;
        case KT_SIZE:
                if ((r = parse_size(v, &u)) < 0)
                        return r;
                if (u < k->min || u > k->max)
                        return -ERANGE;
                *(uint64_t *) field = u;
                return 0;

        case KT_TIMESPAN_OFF:
                if (streq(v, "off")) {
                        *(usec_t *) field = 0;
                        return 0;
                }
                _fallthrough_;
        case KT_TIMESPAN:
                if ((r = parse_timespan(v, &t)) < 0)
                        return r;
                if (t < k->min || t > k->max)
                        return -ERANGE;
                *(usec_t *) field = t;
                return 0;

        case KT_PERCENT_OFF:
                if (streq(v, "off")) {
                        *(uint32_t *) field = 0;
                        return 0;
                }
                _fallthrough_;
        case KT_PERCENT:
                if ((r = parse_percent(v, &bp)) < 0)
                        return r;
                if (bp < k->min || bp > k->max)
                        return -ERANGE;
                *(uint32_t *) field = bp;
                return 0;

        case KT_UINT: {
                unsigned x;
                if ((r = parse_uint(v, UINT32_MAX, &x)) < 0)
                        return r;
                if (x < k->min || x > k->max)
                        return -ERANGE;
                *(unsigned *) field = x;
                return 0;
        }

        case KT_BUDGET:
                if (streq(v, "auto")) {
                        p->budget_mode = BUDGET_AUTO;
                        return 0;
                }
                if (strchr(v, '%')) {
                        if ((r = parse_percent(v, &bp)) < 0)
                                return r;
                        if (bp < PCT(1) || bp > PCT(100))
                                return -ERANGE;
                        p->budget_mode = BUDGET_HOST_SHARE;
                        p->budget_share = bp;
                        return 0;
                }
                if ((r = parse_size(v, &u)) < 0)
                        return r;
                if (u < (16ULL << 20)) {
                        snprintf(detail, dlen, "'%s' is below 16M", v);
                        return -ERANGE;
                }
                p->budget_mode = BUDGET_SIZE;
                p->budget_size = u;
                return 0;

        case KT_TRIM_METHOD:
                if ((r = name_index(v, trim_method_names, _TRIM_METHOD_MAX)) < 0)
                        return r;
                *(TrimMethod *) field = (TrimMethod) r;
                return 0;

        case KT_PSI_TYPE:
                if (streq(v, "some"))
                        *(PsiType *) field = PSI_SOME;
                else if (streq(v, "full"))
                        *(PsiType *) field = PSI_FULL;
                else
                        return -EINVAL;
                return 0;

        case KT_IN_TRX:
                if (streq(v, "never"))
                        *(InTransaction *) field = IN_TRX_NEVER;
                else if (streq(v, "emergency"))
                        *(InTransaction *) field = IN_TRX_EMERGENCY;
                else
                        return -EINVAL;
                return 0;

        case KT_USERS:
                return parse_list(v, &p->exempt_users[0][0], POLICY_USER_MAX, POLICY_MAX_LIST,
                                  &p->n_exempt_users, detail, dlen);
        case KT_HOSTS:
                return parse_list(v, &p->exempt_hosts[0][0], POLICY_HOST_MAX, POLICY_MAX_LIST,
                                  &p->n_exempt_hosts, detail, dlen);

        case KT_WINDOWS:
                r = parse_windows(v, p->windows, POLICY_MAX_WINDOWS, &p->n_windows);
                if (r == -E2BIG)
                        snprintf(detail, dlen, "more than %d windows", POLICY_MAX_WINDOWS);
                return r;

        case KT_RESET_METHOD:
                if ((r = name_index(v, reset_method_names, _RESET_METHOD_MAX)) < 0)
                        return r;
                *(ResetMethod *) field = (ResetMethod) r;
                return 0;

        case KT_SIGNAL: {
                static const struct {
                        const char *name;
                        int sig;
                } sigs[] = { { "HUP", 1 }, { "INT", 2 }, { "QUIT", 3 }, { "USR1", 10 }, { "USR2", 12 }, { "TERM", 15 } };
                const char *name = strncmp(v, "SIG", 3) == 0 ? v + 3 : v;
                for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                        if (streq(name, sigs[i].name)) {
                                *(int *) field = sigs[i].sig;
                                return 0;
                        }
                return -EINVAL;
        }

        case KT_ARGV: {
                char words[POLICY_ARGV_MAX];
                char *av[ARGV_MAX + 1];
                unsigned n;
                if (strlen(v) >= k->max)
                        return -ERANGE;
                r = argv_split(v, words, sizeof(words), av, &n);
                if (r == -EINVAL) {
                        snprintf(detail, dlen, "'%s' has an unclosed quote or a program without an absolute path", v);
                        return r;
                }
                if (r < 0)
                        return r;
                memcpy(field, v, strlen(v) + 1);
                return 0;
        }

        case KT_LISTEN:
                return parse_listen(v, p->metrics_address, sizeof(p->metrics_address), &p->metrics_port);

        case KT_PATH:
                if (v[0] && v[0] != '/' && !streq(v, "auto"))
                        return -EINVAL;
                _fallthrough_;
        case KT_STRING: {
                size_t n = strlen(v);
                if (n >= k->max || n < k->min)
                        return n < k->min ? -EINVAL : -ERANGE;
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char) v[i] < 0x20)
                                return -EINVAL;
                memcpy(field, v, n + 1);
                return 0;
        }
        }
        return -EINVAL;
}

static void report_unknown_key(ParseCtx *c, const char *section, const char *name) {
        const char *same[N_KEYS];
        size_t n = 0;

        for (size_t i = 0; i < N_KEYS; i++)
                if (streq(keys[i].section, section))
                        same[n++] = keys[i].name;
        const char *s = closest_match(name, same, n);
        if (s) {
                report(c, c->lineno, "%s.%s: unknown key (did you mean %s?)", section, name, s);
                return;
        }
        /* The right key in the wrong section? */
        for (size_t i = 0; i < N_KEYS; i++)
                if (streq(keys[i].name, name)) {
                        report(c, c->lineno, "%s.%s: unknown key (did you mean %s in [%s]?)", section, name,
                               name, keys[i].section);
                        return;
                }
        report(c, c->lineno, "%s.%s: unknown key (expected one of the keys of [%s], see memgov.ini(5))",
               section, name, section);
}

static int policy_handler(void *user, const char *section, const char *name, const char *value) {
        ParseCtx *c = user;
        char full[160], detail[160];
        int r;

        if (!c->section_known)
                return 1; /* the section was reported already */

        snprintf(full, sizeof(full), "%s.%s", section, name);
        int i = key_index(full);
        if (i < 0) {
                report_unknown_key(c, section, name);
                return 1;
        }
        if (c->key_line[i] > 0) {
                report(c, c->lineno, "%s: set twice (first on line %u; expected each key once)", full,
                       c->key_line[i]);
                return 1;
        }
        c->key_line[i] = c->lineno;

        r = parse_value(&c->p, &keys[i], value, detail, sizeof(detail));
        if (r < 0) {
                if (detail[0])
                        report(c, c->lineno, "%s: %s (expected %s)", full, detail, keys[i].expected);
                else if (r == -ERANGE)
                        report(c, c->lineno, "%s: '%s' is out of range (expected %s)", full, value,
                               keys[i].expected);
                else
                        report(c, c->lineno, "%s: '%s' is not valid (expected %s)", full, value,
                               keys[i].expected);
        }
        return 1;
}

/* ---- validation of the whole ---- */

typedef struct Validator {
        ParseCtx *c;
        const unsigned *lines; /* per key, line set in this file; NULL or 0 = from the default */
} Validator;

static unsigned line_of(const Validator *v, const char *full) {
        int i = key_index(full);
        return v->lines && i >= 0 ? v->lines[i] : 0;
}

static bool set_here(const Validator *v, const char *full) {
        return line_of(v, full) > 0;
}

/* Reports a conflict between two keys at the one the file sets (the second when it sets both). */
_printf_(4, 5) static void conflict(Validator *v, const char *a, const char *b, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        const char *subject = set_here(v, b) || !set_here(v, a) ? b : a;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        report(v->c, line_of(v, subject), "%s", msg);
}

static void validate(Validator *v) {
        const Policy *p = &v->c->p;
        char b1[FORMAT_PERCENT_MAX], b2[FORMAT_PERCENT_MAX], t1[FORMAT_TIMESPAN_MAX],
                t2[FORMAT_TIMESPAN_MAX];
        char ka[64], kb[64];

        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++) {
                const StepPolicy *s = &p->step[l];
                /* The buffer-pool rung may have no threshold of its own: it is entered when reset
                 * does not help and the working set still rises. */
                if (!s->enabled || l == LEVEL_POOL)
                        continue;
                if (s->at == 0 && s->eta == 0) {
                        snprintf(ka, sizeof(ka), "%s.at", level_to_string(l));
                        snprintf(kb, sizeof(kb), "%s.eta", level_to_string(l));
                        conflict(v, ka, kb, "%s: off, and so is %s: the enabled step never triggers "
                                 "(expected one of them set, or %s.enabled = no)",
                                 set_here(v, kb) || !set_here(v, ka) ? kb : ka,
                                 set_here(v, kb) || !set_here(v, ka) ? ka : kb, level_to_string(l));
                }
        }

        /* A higher rung must not trigger before a lower one. Comparing each rung with the nearest
         * enabled rung below it that sets the same threshold finds every inversion once. */
        for (int which = 0; which < 2; which++)
                for (Level l = LEVEL_TRIM + 1; l < _LEVEL_MAX; l++) {
                        const StepPolicy *s = &p->step[l];
                        const char *field = which == 0 ? "at" : "eta";
                        if (!s->enabled || (which == 0 ? s->at : s->eta) == 0)
                                continue;
                        /* Admission's thresholds, when a file leaves them at the default, are not
                         * held against the file's own: a policy written before the rung existed
                         * stays valid (the rung still acts when the ladder passes it on the way
                         * to reset). */
                        snprintf(ka, sizeof(ka), "admit.%s", field);
                        bool admit_own = set_here(v, ka);
                        if (l == LEVEL_ADMIT && !admit_own)
                                continue;
                        Level lo = l;
                        while (--lo > LEVEL_NORMAL)
                                if (p->step[lo].enabled && (which == 0 ? p->step[lo].at : p->step[lo].eta) > 0 &&
                                    (lo != LEVEL_ADMIT || admit_own))
                                        break;
                        if (lo == LEVEL_NORMAL)
                                continue;
                        const StepPolicy *t = &p->step[lo];
                        snprintf(ka, sizeof(ka), "%s.%s", level_to_string(lo), field);
                        snprintf(kb, sizeof(kb), "%s.%s", level_to_string(l), field);
                        bool hi = set_here(v, kb) || !set_here(v, ka);
                        char order[128];
                        if (which == 0 && s->at < t->at)
                                conflict(v, ka, kb, "%s: %s is %s %s = %s (expected the thresholds to "
                                         "rise with the ladder: %s)",
                                         hi ? kb : ka, format_bp(b1, hi ? s->at : t->at),
                                         hi ? "below" : "above", hi ? ka : kb,
                                         format_bp(b2, hi ? t->at : s->at), ladder_order(" <= ", order, sizeof(order)));
                        if (which == 1 && s->eta > t->eta)
                                conflict(v, ka, kb, "%s: %s is %s than %s = %s (expected the ETA "
                                         "thresholds to shrink up the ladder: %s)",
                                         hi ? kb : ka, format_timespan(t1, hi ? s->eta : t->eta),
                                         hi ? "longer" : "shorter", hi ? ka : kb,
                                         format_timespan(t2, hi ? t->eta : s->eta),
                                         ladder_order(" >= ", order, sizeof(order)));
                }

        uint32_t lowest = 0;
        const char *lowest_key = NULL;
        char lowest_buf[64];
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++)
                if (p->step[l].enabled && p->step[l].at > 0 && (lowest == 0 || p->step[l].at < lowest)) {
                        lowest = p->step[l].at;
                        snprintf(lowest_buf, sizeof(lowest_buf), "%s.at", level_to_string(l));
                        lowest_key = lowest_buf;
                }
        if (lowest_key && p->hysteresis >= lowest)
                conflict(v, lowest_key, "governor.hysteresis",
                         "governor.hysteresis: %s is not below %s = %s (expected a hysteresis "
                         "smaller than every threshold, or no step could ever be left)",
                         format_bp(b1, p->hysteresis), lowest_key, format_bp(b2, lowest));

        size_t tl = strlen(p->metrics_textfile);
        if (tl > 0 && (tl < 6 || !streq(p->metrics_textfile + tl - 5, ".prom")))
                report(v->c, line_of(v, "metrics.textfile"),
                       "metrics.textfile: '%s' does not end in .prom (expected the .prom file "
                       "node_exporter's textfile collector reads)", p->metrics_textfile);

        if (p->trend_min_points > p->trend_points)
                conflict(v, "trend.points", "trend.min-points",
                         "trend.min-points: %u is more than trend.points = %u (expected at most "
                         "trend.points)", p->trend_min_points, p->trend_points);

        if (p->fast_interval > p->interval)
                conflict(v, "sampling.interval", "sampling.fast-interval",
                         "sampling.fast-interval: %s is longer than sampling.interval = %s "
                         "(expected at most the normal interval)",
                         format_timespan(t1, p->fast_interval), format_timespan(t2, p->interval));

        if (p->psi_stall >= p->psi_window)
                conflict(v, "psi.trigger-window", "psi.trigger-stall",
                         "psi.trigger-stall: %s is not shorter than psi.trigger-window = %s "
                         "(expected a stall shorter than its window)",
                         format_timespan(t1, p->psi_stall), format_timespan(t2, p->psi_window));

        if (p->calm_headroom > 0 && p->throttle_floor > BP_ONE - p->calm_headroom)
                conflict(v, "throttle.calm-headroom", "throttle.floor",
                         "throttle.floor: %s is above the calm memory.high (100%% minus "
                         "throttle.calm-headroom = %s) (expected a floor below the calm value)",
                         format_bp(b1, p->throttle_floor), format_bp(b2, p->calm_headroom));

        const StepPolicy *rs = &p->step[LEVEL_RESTART];
        if (p->emergency_eta > 0 && rs->eta > 0 && p->emergency_eta > rs->eta)
                conflict(v, "restart.eta", "restart.emergency-eta",
                         "restart.emergency-eta: %s is longer than restart.eta = %s (expected an "
                         "emergency ETA at or below the restart ETA)",
                         format_timespan(t1, p->emergency_eta), format_timespan(t2, rs->eta));

        if (p->step[LEVEL_RESET].enabled && p->reset_method == RESET_EXEC && !p->reset_exec[0])
                conflict(v, "reset.exec", "reset.method",
                         "reset.method: exec needs reset.exec (expected the command to run)");
        if (p->step[LEVEL_RESET].enabled && p->reset_method == RESET_SIGNAL && !p->reset_signal_process[0])
                conflict(v, "reset.signal-process", "reset.method",
                         "reset.method: signal needs reset.signal-process (expected the process to signal)");

        if (p->reset_in_trx == IN_TRX_EMERGENCY && p->emergency_eta == 0)
                conflict(v, "restart.emergency-eta", "reset.in-transaction",
                         "reset.in-transaction: emergency needs restart.emergency-eta to define "
                         "an emergency (expected restart.emergency-eta to be set, or never)");
}

int policy_validate(const Policy *p, const char *filename, policy_report_t rep, void *userdata) {
        ParseCtx c = { .p = *p, .filename = filename, .report = rep, .userdata = userdata };
        Validator v = { .c = &c };

        validate(&v);
        return (int) c.errors;
}

int policy_parse(Policy *p, const char *text, size_t len, const char *filename, policy_report_t rep,
                 void *userdata) {
        /* The context is large (the policy holds its lists inline): keep it off the stack. */
        _cleanup_free_ ParseCtx *c = calloc(1, sizeof(ParseCtx));
        if (!c)
                return -ENOMEM;

        c->p = *p;
        c->filename = filename;
        c->pos = text;
        c->end = text + len;
        c->report = rep;
        c->userdata = userdata;

        int r = ini_parse_stream(policy_reader, c, policy_handler, c);
        if (r == -2)
                return -ENOMEM;
        /* Other inih errors (>0: a line it could not parse) cannot happen: the reader hands it
         * only blank lines, section lines and key = value lines. */

        if (c->errors == 0) {
                Validator v = { .c = c, .lines = c->key_line };
                validate(&v);
        }
        if (c->errors == 0)
                *p = c->p;
        return (int) c->errors;
}

int policy_load_default(Policy *ret) {
        _cleanup_free_ Policy *p = calloc(1, sizeof(Policy));
        if (!p)
                return -ENOMEM;
        int r = policy_parse(p, policy_default_text, policy_default_size, "<embedded default>", NULL, NULL);
        if (r < 0)
                return r;
        if (r > 0)
                return -EBADMSG; /* a build with a broken default.ini; the test suite catches it */
        *ret = *p;
        return 0;
}
