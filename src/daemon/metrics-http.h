/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "manager.h"

/* The Prometheus endpoint (metrics.listen) and the node_exporter textfile (metrics.textfile). */

/* Starts serving when the policy asks for it; 0 when it does not. */
int metrics_http_start(Manager *m);
void metrics_http_stop(Manager *m);
/* After a policy reload: restarts the endpoint when metrics.listen changed. */
int metrics_http_reload(Manager *m, const Policy *old);
/* Rewrites the textfile, when there is one; failures are logged once until it works again. */
void metrics_textfile_write(Manager *m);
