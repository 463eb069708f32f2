/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Whether a process found by name may be taken for the database server. Anybody can start a
 * process named mysqld: by name alone, a local user could make the real server ungoverned (two
 * candidates) or become the target while the server restarts. The facts come from /proc; the
 * judgement is pure. */

typedef struct CandidateFacts {
        bool exe_known;     /* the executable could be looked at */
        uid_t exe_uid;      /* its owner and mode */
        mode_t exe_mode;
        const char *exe_name; /* its file name (of the resolved path), NULL when not known */
        const char *names;    /* the server names looked for, comma-separated */
        uid_t ruid;         /* the process's real user */
        const char *cgroup; /* its cgroup v2 path, NULL when not known */
        bool all_users;     /* memgov sees every user's processes (the initial PID namespace), not a
                             * container's own namespace where every process is the pod's */
        bool enforce;       /* memgov runs as root: files it trusts must be root's */
        uid_t uid_min;      /* the first uid of login users (login.defs UID_MIN) */
        uid_t server_uid;   /* the database servers' account ("mysql"), (uid_t) -1 when none */
} CandidateFacts;

/* true when the process may be the server; false with why ("runs as uid 1000, a login user"). */
bool server_candidate_ok(const CandidateFacts *f, char *why, size_t why_size);

/* UID_MIN from the text of login.defs, else 1000. */
uid_t login_defs_uid_min(const char *text, size_t len);
