/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <linux/capability.h>
#include <stdlib.h>

#include "memgov/action.h"
#include "memgov/engine.h"
#include "memgov/strutil.h"

#define CAP(c) (UINT64_C(1) << (c))

/* An SQL connection to the server's own socket ("auto") reaches it through /proc/PID/fd and
 * /proc/PID/root, files of the server's user that may be private to it. */
static uint64_t sql_caps(const Policy *p) {
        return streq(p->sql_socket, "auto") && !p->sql_host[0] ? CAP(CAP_DAC_READ_SEARCH) : 0;
}

static uint64_t no_caps(const Policy *p, const PrivilegeNeeds *n) {
        return 0;
}

/* ---- trim ---- */

static usec_t trim_backoff(const Policy *p) {
        return p->step[LEVEL_TRIM].backoff;
}

static usec_t trim_timeout(const Policy *p) {
        return 45 * USEC_PER_SEC;
}

static uint64_t trim_caps(const Policy *p, const PrivilegeNeeds *n) {
        /* ptrace: what the server's threads are doing (/proc/PID/task/TID/syscall, 0400). */
        return (p->trim_method != TRIM_SQL ? CAP(CAP_DAC_READ_SEARCH) : 0) |
               (p->trim_method != TRIM_PTRACE ? sql_caps(p) : 0);
}

static void trim_params(const Decision *d, const ActionParamSink *k) {
        k->string(k->userdata, "method", trim_method_to_string(d->trim.method));
}

/* ---- memory.high, memory.max ---- */

static usec_t limits_backoff(const Policy *p) {
        return 4 * p->settle;
}

static usec_t limits_timeout(const Policy *p) {
        return 10 * USEC_PER_SEC;
}

static bool max_raise_enabled(const Policy *p) {
        /* memory.max is only ever raised for a restart, or for a while once admission is lowered */
        return p->max_raise > 0 || (p->step[LEVEL_ADMIT].enabled && p->admit_max_raise > 0);
}

/* ---- reset ---- */

static usec_t reset_backoff(const Policy *p) {
        return p->step[LEVEL_RESET].backoff;
}

static usec_t reset_timeout(const Policy *p) {
        /* connect, list (twice: RESET_SECOND_LOOK), end, trim */
        return 2 * p->sql_connect_timeout + 4 * p->sql_query_timeout + RESET_SECOND_LOOK + p->hook_timeout +
               45 * USEC_PER_SEC;
}

static uint64_t reset_caps(const Policy *p, const PrivilegeNeeds *n) {
        switch (p->reset_method) {
        case RESET_SQL:
                return sql_caps(p);
        case RESET_SIGNAL: /* the pooler belongs to another user */
                return n->dry_run ? 0 : CAP(CAP_KILL);
        default:
                return 0;
        }
}

static void reset_params(const Decision *d, const ActionParamSink *k) {
        k->u64(k->userdata, "max_sessions", d->reset.max);
        k->u64(k->userdata, "min_memory", d->reset.min_memory);
        k->u64(k->userdata, "min_idle_us", d->reset.min_idle);
        k->boolean(k->userdata, "in_transaction", d->reset.in_trx);
        k->boolean(k->userdata, "newest_first", d->reset.newest_first);
        k->u64(k->userdata, "newcomers", d->reset.newcomers);
}

/* ---- restart ---- */

static usec_t restart_backoff(const Policy *p) {
        return p->step[LEVEL_RESTART].cooldown;
}

static usec_t restart_timeout(const Policy *p) {
        /* pre-flush, hooks, the stop itself */
        return p->preflush_timeout + 2 * p->hook_timeout + p->stop_timeout + 30 * USEC_PER_SEC;
}

static uint64_t restart_caps(const Policy *p, const PrivilegeNeeds *n) {
        /* SIGTERM through a pidfd to the server, another user's process, outside systemd; under
         * systemd the restart goes through RestartUnit, which needs no capability. */
        return (p->preflush ? sql_caps(p) : 0) | (!n->dry_run && !n->unit ? CAP(CAP_KILL) : 0);
}

static void restart_params(const Decision *d, const ActionParamSink *k) {
        k->boolean(k->userdata, "preflush", d->restart.preflush);
}

/* ---- the buffer pool ---- */

static usec_t pool_backoff(const Policy *p) {
        return p->step[LEVEL_POOL].backoff;
}

static usec_t pool_timeout(const Policy *p) {
        /* connect, read the sizes, set, wait for the resize, read back */
        return 2 * p->sql_connect_timeout + 4 * p->sql_query_timeout + p->pool_resize_timeout + 15 * USEC_PER_SEC;
}

static uint64_t pool_caps(const Policy *p, const PrivilegeNeeds *n) {
        return sql_caps(p);
}

static void pool_params(const Decision *d, const ActionParamSink *k) {
        k->string(k->userdata, "direction", d->pool.grow ? "grow" : "shrink");
        k->u64(k->userdata, "configured", d->pool.configured); /* 0: not known yet */
        k->u64(k->userdata, "step_bp", d->pool.step);
        k->u64(k->userdata, "floor_bp", d->pool.floor);
        if (d->pool.grow)
                k->size(k->userdata, "grow_max", d->pool.grow_max);
}

/* ---- admission (max_connections) ---- */

static usec_t admit_backoff(const Policy *p) {
        return p->step[LEVEL_ADMIT].backoff > 0 ? p->step[LEVEL_ADMIT].backoff : p->step[LEVEL_ADMIT].cooldown;
}

static usec_t admit_timeout(const Policy *p) {
        /* connect, read the counts, set, read back */
        return 2 * p->sql_connect_timeout + 4 * p->sql_query_timeout + 5 * USEC_PER_SEC;
}

static uint64_t admit_caps(const Policy *p, const PrivilegeNeeds *n) {
        /* The connection count is read from the server's /proc/PID/fd (0500, the server's user). */
        return sql_caps(p) | CAP(CAP_DAC_READ_SEARCH);
}

static void admit_params(const Decision *d, const ActionParamSink *k) {
        k->string(k->userdata, "direction", d->admit.restore ? "restore" : "lower");
        if (d->admit.restore)
                return;
        k->u64(k->userdata, "connections", d->admit.connections);
        k->boolean(k->userdata, "carried", d->admit.carried);
        k->u64(k->userdata, "headroom", d->admit.headroom);
        k->u64(k->userdata, "fit", d->admit.fit);
        k->u64(k->userdata, "floor", d->admit.floor);
}

const ActionInfo action_table[_ACTION_KIND_MAX] = {
        [ACTION_TRIM] = {
                .name = "trim", .verb = "trim", .summary = "trim(s)",
                .message_id = "1262f995102f42428305d0c7e15c8019",
                .level = LEVEL_TRIM, .paced = true, .measured = true, .freed_column = "trim_freed", .reclaims = true,
                .backoff = trim_backoff, .timeout = trim_timeout, .capabilities = trim_caps,
                .chart_rgb = 0x98df8a, .chart_text_rgb = 0x2e7d32, .chart_rank = 1, .chart_label = "trim", .chart_legend = "trim",
                .params = trim_params,
        },
        [ACTION_SET_HIGH] = {
                .name = "memory.high", .verb = "set memory.high", .summary = "memory.high change(s)",
                .message_id = "303c01d3321c48119618c91ffa030833",
                .level = LEVEL_THROTTLE, .sets_limit = true, .lane = ACTION_LANE_PROMPT,
                .backoff = limits_backoff, .timeout = limits_timeout, .capabilities = no_caps,
                .chart_rgb = 0xffbb78, .chart_text_rgb = 0xb35900, .chart_rank = 0, .chart_label = "high", .chart_legend = "memory.high set",
        },
        [ACTION_SET_MAX] = {
                .name = "memory.max", .verb = "set memory.max", .summary = "memory.max change(s)",
                .message_id = "9fd1c55faef1443db0947c34fcc03780",
                .level = LEVEL_RESTART, .sets_limit = true, .lane = ACTION_LANE_PROMPT,
                .enabled = max_raise_enabled, /* raised while the server restarts */
                .backoff = limits_backoff, .timeout = limits_timeout, .capabilities = no_caps,
                .chart_rgb = 0xff9896, .chart_text_rgb = 0xb71c1c, .chart_rank = 2, .chart_label = "max", .chart_legend = "memory.max set",
        },
        [ACTION_RESET] = {
                .name = "reset", .verb = "reset", .summary = "connection reset(s)",
                .message_id = "3463c69795ad41739599c8b28c573430",
                .level = LEVEL_RESET, .paced = true, .measured = true, .freed_column = "reset_freed", .reclaims = true,
                .backoff = reset_backoff, .timeout = reset_timeout, .capabilities = reset_caps,
                .chart_rgb = 0xc5b0d5, .chart_text_rgb = 0x5e3c99, .chart_rank = 4, .chart_label = "reset", .chart_legend = "reset",
                .params = reset_params,
        },
        [ACTION_RESTART] = {
                .name = "restart", .verb = "restart", .summary = "graceful restart(s)",
                .message_id = "f35287a3f95646a58ea0fec8bf1de717",
                .level = LEVEL_RESTART, .paced = true, .reclaims = true,
                /* a thread of its own, once the limits decided before it are written (the raise
                 * of memory.max decided with it); never behind a pool step or a trim */
                .lane = ACTION_LANE_RESTART,
                .backoff = restart_backoff, .timeout = restart_timeout, .capabilities = restart_caps,
                .chart_rgb = 0xf7b6d2, .chart_text_rgb = 0xad1457, .chart_rank = 6, .chart_label = "restart", .chart_legend = "restart",
                .params = restart_params,
        },
        [ACTION_POOL] = {
                .name = "pool", .verb = "resize pool", .summary = "buffer-pool resize(s)",
                .message_id = "5b8c2e1f6a9d4f0b8e3a7c1d2f4b6e90",
                .level = LEVEL_POOL, .paced = true, .process_setting = true, .measured = true, .freed_column = "pool_freed", .reclaims = true,
                .baseline_column = "pool_configured",
                .backoff = pool_backoff, .timeout = pool_timeout, .capabilities = pool_caps,
                .chart_rgb = 0xdbdb8d, .chart_text_rgb = 0x827717, .chart_rank = 5, .chart_label = "pool",
                .chart_legend = "buffer pool resized",
                .params = pool_params,
        },
        [ACTION_ADMIT] = {
                .name = "admission", .verb = "set max_connections", .summary = "max_connections change(s)",
                .message_id = "1b35d506ab044f7fa5b30ccee69abd21",
                /* Not measured: it gives nothing back, it stops the growth that new connections
                 * bring; once it is in place and the working set still rises, the ladder goes on. */
                .level = LEVEL_ADMIT, .paced = true, .process_setting = true,
                .backoff = admit_backoff, .timeout = admit_timeout, .capabilities = admit_caps,
                .chart_rgb = 0x9edae5, .chart_text_rgb = 0x00838f, .chart_rank = 3, .chart_label = "admit",
                .chart_legend = "max_connections set",
                .params = admit_params,
        },
};

const ActionInfo *action_info(ActionKind k) {
        if (k < 0 || k >= _ACTION_KIND_MAX)
                abort(); /* a kind outside the registry is a bug: never some other action */
        return &action_table[k];
}

const char *action_kind_to_string(ActionKind k) {
        return k >= 0 && k < _ACTION_KIND_MAX ? action_table[k].name : "invalid";
}

int action_kind_from_string(const char *s, ActionKind *ret) {
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++)
                if (streq(s, action_table[k].name)) {
                        *ret = k;
                        return 0;
                }
        return -EINVAL;
}

void action_params(const Decision *d, const ActionParamSink *sink) {
        const ActionInfo *a = action_info(d->action);
        if (a->params)
                a->params(d, sink);
}

bool action_enabled(const Policy *p, ActionKind k) {
        const ActionInfo *a = action_info(k);
        return p->step[a->level].enabled && (!a->enabled || a->enabled(p));
}
