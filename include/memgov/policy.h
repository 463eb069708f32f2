/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* The rungs of the ladder, in escalation order. */
typedef enum Level {
        LEVEL_NORMAL,
        LEVEL_TRIM,
        LEVEL_THROTTLE,
        LEVEL_ADMIT, /* lower max_connections in a connection storm: only new connections are refused */
        LEVEL_RESET,
        LEVEL_POOL, /* shrink InnoDB's buffer pool; entered when reset does not help (bench/pool-vs-reset) */
        LEVEL_RESTART,
        _LEVEL_MAX,
} Level;

const char *level_to_string(Level l);
int level_from_string(const char *s, Level *ret);

typedef enum BudgetMode {
        BUDGET_AUTO,      /* memory.max when set, else host RAM minus host-reserve */
        BUDGET_SIZE,      /* a fixed size */
        BUDGET_HOST_SHARE /* a share of host RAM */
} BudgetMode;

typedef enum TrimMethod {
        TRIM_AUTO,
        TRIM_PTRACE,
        TRIM_SQL,
        _TRIM_METHOD_MAX,
} TrimMethod;

const char *trim_method_to_string(TrimMethod m);

typedef enum PsiType {
        PSI_SOME,
        PSI_FULL,
} PsiType;

typedef enum ResetMethod {
        RESET_SQL,    /* KILL CONNECTION the chosen sessions */
        RESET_EXEC,   /* run reset.exec (a pooler's command, a script) */
        RESET_SIGNAL, /* send reset.signal to the process named reset.signal-process */
        _RESET_METHOD_MAX,
} ResetMethod;

const char *reset_method_to_string(ResetMethod m);

#define POLICY_ARGV_MAX 512
/* budget.host-reserve = auto: 1G, or an eighth of host RAM where that is less. */
#define HOST_RESERVE_AUTO UINT64_MAX
#define HOST_RESERVE_AUTO_MAX (1ULL << 30)

typedef enum InTransaction {
        IN_TRX_NEVER,     /* never reset a session inside a write transaction */
        IN_TRX_EMERGENCY, /* only when the ETA is below restart emergency-eta */
} InTransaction;

/* Thresholds and pacing for one rung. */
typedef struct StepPolicy {
        bool enabled;
        uint32_t at;       /* enter at this share of the budget (basis points); 0 = off */
        usec_t eta;        /* enter when the ETA to the budget is below this; 0 = off */
        usec_t cooldown;   /* minimum time between two actions of this step */
        uint64_t min_gain; /* an action that frees less did not help (trim, reset) */
        usec_t backoff;    /* after an action that did not help, wait this long (trim, reset) */
} StepPolicy;

/* Days are a bit mask, bit 0 = Monday. Minutes of the day; end <= start crosses midnight. */
typedef struct MaintenanceWindow {
        uint8_t days;
        uint16_t start_min, end_min;
} MaintenanceWindow;

#define POLICY_MAX_LIST 32
#define POLICY_MAX_WINDOWS 16
#define POLICY_USER_MAX 81
#define POLICY_HOST_MAX 256

typedef struct Policy {
        /* [governor] */
        bool dry_run;
        usec_t settle;
        uint32_t hysteresis;
        uint32_t eta_hysteresis;
        bool lock_memory;

        /* [budget] */
        BudgetMode budget_mode;
        uint64_t budget_size;
        uint32_t budget_share;
        uint64_t host_reserve; /* HOST_RESERVE_AUTO: see policy_host_reserve() */

        /* [sampling] */
        usec_t interval;
        usec_t fast_interval;
        uint32_t fast_above;

        /* [trend] */
        usec_t trend_window;
        unsigned trend_points;
        unsigned trend_min_points;
        uint32_t trend_drop;

        /* [psi] */
        PsiType psi_type;
        usec_t psi_stall;
        usec_t psi_window;

        /* [trim] [throttle] [admit] [reset] [pool] [restart]: indexed by Level */
        StepPolicy step[_LEVEL_MAX];

        /* [trim] */
        TrimMethod trim_method;

        /* [throttle] */
        uint32_t calm_headroom; /* 0 = leave memory.high alone when calm */
        uint32_t throttle_margin;
        uint32_t throttle_floor;
        uint32_t step_down;
        uint32_t full_guard; /* PSI full avg10, hundredths of a percent (= basis points) */
        uint32_t some_guard; /* PSI some avg10 while pressing on memory.high; 0 = off */

        /* [admit] */
        unsigned admit_min_rise;        /* connections more than the fewest within rise-window */
        uint32_t admit_min_rise_share;  /* ...and at least this share of that fewest (basis points) */
        usec_t admit_rise_window;
        unsigned admit_headroom;        /* max_connections = the connected clients plus this */
        bool admit_fit;                 /* ...or plus the connections that fit under admit.at, if more */
        unsigned admit_floor;           /* never below this */
        usec_t admit_restore_after;     /* calm below throttle this long: max_connections put back */
        uint32_t admit_max_raise;       /* memory.max raised by at most this share of the budget */
        usec_t admit_raise_for;         /* ...for this long */
        bool admit_end_excess;          /* carried to a new server process: end the clients over it */

        /* [reset] */
        unsigned reset_max;
        uint64_t reset_min_memory;
        unsigned reset_emergency_max;        /* 0 = no emergency reset */
        uint64_t reset_emergency_min_memory;
        usec_t reset_min_idle;
        InTransaction reset_in_trx;
        ResetMethod reset_method;
        char reset_exec[POLICY_ARGV_MAX];
        char reset_signal_process[128];
        int reset_signal;
        usec_t hook_timeout;
        char exempt_users[POLICY_MAX_LIST][POLICY_USER_MAX];
        unsigned n_exempt_users;
        char exempt_hosts[POLICY_MAX_LIST][POLICY_HOST_MAX];
        unsigned n_exempt_hosts;

        /* [sql] */
        char sql_socket[256];      /* "auto": the server's own listening socket */
        char sql_host[256];        /* "" = the socket */
        unsigned sql_port;
        char sql_user[POLICY_USER_MAX];
        char sql_option_file[256]; /* "" = none: unix-socket authentication as sql_user */
        usec_t sql_connect_timeout;
        usec_t sql_query_timeout;
        bool sql_keep_open;        /* one session kept open for the actions, from the action thread */

        /* [pool] */
        uint32_t pool_step;           /* one shrink or grow step: share of the configured size */
        uint32_t pool_floor;          /* never below this share of the configured size */
        usec_t pool_resize_timeout;   /* how long to wait for the server to finish a resize */
        usec_t pool_grow_after;       /* calm for this long before a step back up */

        /* [restart] */
        unsigned restart_max_per_day;
        usec_t restart_min_uptime;
        MaintenanceWindow windows[POLICY_MAX_WINDOWS];
        unsigned n_windows;
        usec_t emergency_eta;
        bool preflush;
        usec_t preflush_timeout;
        char pre_hook[POLICY_ARGV_MAX];
        char post_hook[POLICY_ARGV_MAX];
        uint32_t max_raise;
        uint32_t max_raise_total;
        usec_t stop_timeout;

        /* [metrics] */
        char metrics_address[64]; /* "" = no HTTP endpoint; an IPv4 or IPv6 address */
        unsigned metrics_port;
        char metrics_textfile[256]; /* "" = none */

        /* [explain] */
        usec_t explain_every;   /* how often the daemon measures the parts; 0 = never */
        bool explain_allocator; /* ... the allocator's included (an injected call) */
} Policy;

/* Receives one finished message per problem: "file:line: key: what is wrong (expected ...)". */
typedef void (*policy_report_t)(void *userdata, const char *message);

/* Parses policy text on top of *p (a policy file overrides the embedded default key by key),
 * then validates the result as a whole. Returns the number of problems reported (0 = valid),
 * or a negative errno when the text could not be processed at all. *p is only changed when the
 * result is valid. */
int policy_parse(Policy *p, const char *text, size_t len, const char *filename,
                 policy_report_t report, void *userdata);

/* The embedded default (policies/default.ini compiled into the binary). */
extern const char policy_default_text[];
extern const size_t policy_default_size;
int policy_load_default(Policy *ret);

/* Validation of a complete policy, for callers that build one in code (tests, --budget). */
int policy_validate(const Policy *p, const char *filename, policy_report_t report, void *userdata);

/* Some enabled action talks to the server over SQL: admission, the buffer pool, a reset by
 * KILL, a trim through the loadable function, a restart's pre-flush. */
bool policy_uses_sql(const Policy *p);

/* What host RAM keeps for everything else (budget.host-reserve) on a host of HOST_TOTAL bytes. */
uint64_t policy_host_reserve(const Policy *p, uint64_t host_total);

/* Key names, for docs and tests: "section.key", NULL-terminated. */
const char *const *policy_key_names(void);

/* Maintenance windows: "Sat..Sun 02:00-05:00, Mon..Fri 03:00-04:00" */
int parse_windows(const char *s, MaintenanceWindow *ret, unsigned max, unsigned *ret_n);
/* Local time as minutes since Monday 00:00 -> inside any window? No windows = always. */
bool windows_contain(const MaintenanceWindow *w, unsigned n, unsigned minute_of_week);
/* Microseconds since the epoch and a UTC offset -> minute of the local week (Monday 00:00 = 0). */
unsigned minute_of_week(usec_t wall, int32_t utc_offset_sec);
