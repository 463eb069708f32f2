/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "decision-log.h"
#include "memgov/format.h"
#include "memgov/log.h"

const char *decision_message_id(const Decision *d) {
        /* An action's id is its row's in the registry; the other kinds have theirs here. */
        static const char *const ids[_DECISION_KIND_MAX] = {
                [DECISION_LEVEL] = "0d101adb2a0c43709e70636c5a7a591c",
                [DECISION_EFFECT] = "85257ad846124dea8d7e5c13eea70aaf",
                [DECISION_HOLD] = "dee2433363744e9fbb51a85de1f4b709",
                [DECISION_EVENT] = "88bff9ab44fd43d580d8b98c71f5caec",
        };
        if (decision_is_action(d))
                return action_info(d->action)->message_id;
        return d->kind >= 0 && d->kind < _DECISION_KIND_MAX && ids[d->kind] ? ids[d->kind] : ids[DECISION_EVENT];
}

static int priority(const Decision *d) {
        switch (d->kind) {
        case DECISION_EVENT:
                return d->oom_kill ? LOG_ERR : LOG_WARNING;
        case DECISION_EFFECT:
        case DECISION_HOLD:
                return LOG_INFO;
        default:
                return LOG_NOTICE;
        }
}

void decision_log(const EngineOutput *out, const Decision *d, bool dry_run, const Target *t, char *line, size_t size) {
        char verb[32];
        char f[12][96];
        const char *fields[13];
        unsigned n = 0;

        decision_verb(d, dry_run, verb, sizeof(verb));
        snprintf(line, size, "%-16s %s", verb, d->reason);

        snprintf(f[n], sizeof(f[n]), "MEMGOV_KIND=%s", decision_name(d));
        fields[n] = f[n];
        n++;
        snprintf(f[n], sizeof(f[n]), "MEMGOV_LEVEL=%s", level_to_string(d->level));
        fields[n] = f[n];
        n++;
        snprintf(f[n], sizeof(f[n]), "MEMGOV_DRY_RUN=%d", dry_run);
        fields[n] = f[n];
        n++;
        snprintf(f[n], sizeof(f[n]), "MEMGOV_TARGET=%.80s", t->spec.kind == TARGET_UNIT ? t->spec.value : t->cgroup);
        fields[n] = f[n];
        n++;
        if (out->ws != SIZE_UNKNOWN) {
                snprintf(f[n], sizeof(f[n]), "MEMGOV_WORKING_SET=%" PRIu64, out->ws);
                fields[n] = f[n];
                n++;
        }
        if (out->budget != SIZE_UNKNOWN) {
                snprintf(f[n], sizeof(f[n]), "MEMGOV_BUDGET=%" PRIu64, out->budget);
                fields[n] = f[n];
                n++;
                snprintf(f[n], sizeof(f[n]), "MEMGOV_SHARE_BP=%u", out->ws_bp);
                fields[n] = f[n];
                n++;
        }
        if (out->eta != USEC_INFINITY) {
                snprintf(f[n], sizeof(f[n]), "MEMGOV_ETA_USEC=%" PRIu64, out->eta);
                fields[n] = f[n];
                n++;
        }
        if (out->trend_valid) {
                snprintf(f[n], sizeof(f[n]), "MEMGOV_SLOPE_BYTES_PER_HOUR=%" PRId64, (int64_t) (out->slope * 3600.0));
                fields[n] = f[n];
                n++;
        }
        if ((decision_is_action(d) && action_info(d->action)->sets_limit) || d->kind == DECISION_EFFECT) {
                snprintf(f[n], sizeof(f[n]), "MEMGOV_VALUE=%" PRIu64, d->value);
                fields[n] = f[n];
                n++;
        }
        if (d->kind == DECISION_LEVEL) {
                snprintf(f[n], sizeof(f[n]), "MEMGOV_FROM_LEVEL=%s", level_to_string(d->from));
                fields[n] = f[n];
                n++;
        }
        fields[n] = NULL;
        log_struct(priority(d), decision_message_id(d), fields, "%s", line);
}

void action_result_log(const Decision *d, const ActionResult *r, bool dry_run, const char *tail) {
        const char *fields[] = { NULL, NULL };
        char kind[64];
        snprintf(kind, sizeof(kind), "MEMGOV_KIND=%s", decision_name(d));
        fields[0] = kind;
        /* A detail that ends with the error's own text says it already (an SQL actuator passes
         * on why its connection failed): not twice. */
        const char *text = r->error < 0 ? strerror(-r->error) : "";
        size_t dl = strlen(r->detail), tl = strlen(text);
        bool says_it = r->error < 0 && dl >= tl && streq(r->detail + dl - tl, text);
        tail = tail ? tail : "";
        if (r->error < 0 && (r->explained || says_it))
                log_struct(LOG_WARNING, MESSAGE_ID_ACTION_RESULT, fields, "-> %s failed: %s%s",
                           decision_name(d), r->detail, tail);
        else if (r->error < 0)
                log_struct(LOG_WARNING, MESSAGE_ID_ACTION_RESULT, fields, "-> %s failed: %s%s%s%s",
                           decision_name(d), r->detail, r->detail[0] ? ": " : "", strerror(-r->error), tail);
        else if (r->detail[0])
                log_struct(dry_run ? LOG_INFO : LOG_NOTICE, MESSAGE_ID_ACTION_RESULT, fields, "-> %s%s", r->detail, tail);
}
