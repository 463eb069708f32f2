/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/policy.h"
#include "memgov/privileges.h"

/* The registry of actions: one row per thing the governor can do to a server, and everything
 * that differs between them (names, the rung that decides it, how its effect is measured, its
 * pacing, its timeout, the privileges it needs, how it is shown) read from that row. A new kind
 * of action is one row here and its actuator. */

typedef enum ActionKind {
        ACTION_TRIM,
        ACTION_SET_HIGH,
        ACTION_SET_MAX,
        ACTION_RESET,
        ACTION_RESTART,
        ACTION_POOL, /* resize InnoDB's buffer pool (appended: traces name actions, bit order is kept) */
        ACTION_ADMIT, /* lower max_connections in a connection storm, or put it back (appended too) */
        _ACTION_KIND_MAX,
} ActionKind;

/* The action threads (action-worker.h): a job waits only behind the jobs of its own lane, and the
 * restart behind the limits decided before it: a slow statement on a swamped server never holds
 * a limit or a restart back.
 * Seen with one thread: memory.high 8 s behind a 20 s buffer-pool resize while the server stalled. */
typedef enum ActionLane {
        ACTION_LANE_SERVER, /* talks to the server (SQL, ptrace): as slow as the server is */
        ACTION_LANE_PROMPT, /* the limits: the cgroup, through the service manager or not */
        ACTION_LANE_RESTART, /* the restart, which holds its thread until the server is back: it
                              * starts only once the limits decided before it are written */
        _ACTION_LANE_MAX,
} ActionLane;

struct Decision;

/* Where an action's parameters go, one by name (JSON, the status): the sink of params(). */
typedef struct ActionParamSink {
        void (*u64)(void *userdata, const char *key, uint64_t v);
        void (*size)(void *userdata, const char *key, uint64_t v); /* bytes; SIZE_UNLIMITED is "max" */
        void (*boolean)(void *userdata, const char *key, bool v);
        void (*string)(void *userdata, const char *key, const char *v);
        void *userdata;
} ActionParamSink;

typedef struct ActionInfo {
        const char *name;         /* "memory.high": logs, traces, metrics labels, status, JSON */
        const char *verb;         /* "set memory.high": the action column of replay's timeline */
        const char *summary;      /* "memory.high change(s)": replay's summary counts */
        const char *message_id;   /* journal MESSAGE_ID of its decisions (32 hex digits) */
        Level level;              /* the rung that decides it */
        /* At most once per its rung's cooldown (memory.high is paced from when it last changed,
         * memory.max goes with the restart). */
        bool paced;
        /* It writes a limit (memory.high, memory.max): a value, read back; only the latest
         * decided value matters, and a failure does not move the ladder. */
        bool sets_limit;
        /* The action thread it runs on; in order with the others of its lane only. */
        ActionLane lane;
        /* Whether the policy lets it happen beyond its rung being enabled; NULL: always. */
        bool (*enabled)(const Policy *p);
        /* Its effect is judged (freed at least [section] min-gain, else a backoff): the bytes the
         * actuator measured, else what the working set did against its trend. */
        bool measured;
        /* The actuator measures what it gave back: trace column "<name>_freed" and the
         * reclaimed-bytes metric. */
        const char *freed_column;
        /* The trace column of the server's own value the action works from, as its actuator last
         * reported it (ActionResult.baseline): the engine keeps it for the next decision, and a
         * replay sees it too. NULL: none. */
        const char *baseline_column;
        bool reclaims; /* shown in memgov_reclaimed_bytes_total */
        /* It changes a setting of the server process (max_connections, the buffer pool's size),
         * which a new process starts without: its cooldown and backoff start over with it. */
        bool process_setting;
        /* Not tried again for this long after a failure. */
        usec_t (*backoff)(const Policy *p);
        /* How long its actuator may run before the engine hears it failed. */
        usec_t (*timeout)(const Policy *p);
        /* The capabilities its actuator needs under this policy (linux/capability.h bits). */
        uint64_t (*capabilities)(const Policy *p, const PrivilegeNeeds *n);
        /* On the chart: the marker's colour (0xRRGGBB), its label's darker shade, the label on
         * the marker and in the legend. */
        uint32_t chart_rgb, chart_text_rgb;
        const char *chart_label, *chart_legend;
        /* Where markers share a pixel column the highest rank shows: 0 .. _ACTION_KIND_MAX-1, each
         * once; the most frequent lowest, the most serious highest. */
        unsigned chart_rank;
        /* The decision's parameters of this action, each to the sink; NULL: none but its value. */
        void (*params)(const struct Decision *d, const ActionParamSink *sink);
} ActionInfo;

extern const ActionInfo action_table[_ACTION_KIND_MAX];

/* The row of a kind; an unknown kind is a bug and aborts, never becomes some other action. */
const ActionInfo *action_info(ActionKind k);
const char *action_kind_to_string(ActionKind k);
/* The kind named so (action_info(k)->name), or -EINVAL. */
int action_kind_from_string(const char *s, ActionKind *ret);
/* A decided action's parameters to the sink (nothing for an action without any). */
void action_params(const struct Decision *d, const ActionParamSink *sink);
/* Whether the policy lets this action happen: its rung enabled, and its own condition. */
bool action_enabled(const Policy *p, ActionKind k);
