/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"

/* The admission rung: max_connections lowered in a connection storm, and put back, over [sql].
 *
 * What memgov set and what it found are kept per server process (its pid and start time): a
 * restore puts back exactly the value found, and only while max_connections is still the value
 * memgov set (a server whose max_connections someone changed since is left as it is). */
typedef struct AdmitMemory {
        pid_t pid;
        uint64_t starttime;
        uint64_t configured; /* max_connections as memgov found it; 0 = nothing remembered */
        uint64_t set;        /* what memgov set it to */
        uint64_t errors;     /* Connection_errors_max_connections when it was lowered */
        bool errors_known;   /* ... as the server said (not asked when lowering on the kernel's count) */
} AdmitMemory;

/* Lower: max_connections to the clients connected (d->admit_connections, the kernel's count of the
 * server's sockets, else Threads_connected; less memgov's own session) plus d->admit_headroom, never
 * below d->admit_floor; with d->admit_carried, d->admit_connections is the count before the storm
 * on the process before a restart, whatever is connected now, and with admit.end-excess the clients
 * over the new value are ended, the longest in one statement first, then the newest (the detail
 * says how many). Not lower than it is: an explained -EALREADY. Restore (d->admit_restore): back to m->configured, when max_connections is still
 * m->set; otherwise nothing is done (success, the detail says why) and m is forgotten.
 * ret->value is max_connections after (in a dry run the value found), ret->value_before the value
 * found, ret->baseline the configured value. A dry run connects and reads, and leaves out the
 * SET and any change to m. */
int admit_run(const ActionContext *c, const Decision *d, AdmitMemory *m, ActionResult *ret);

/* The rung's actuator (actuator_fn): admit_run with the memory of the governed server. */
int admit_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
