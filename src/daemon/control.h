/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "manager.h"

/* The control socket: a unix stream socket answering "status\n" with the status document.
 * Only root, the daemon's own user and members of the socket's group may ask. */

int control_listen(Manager *m);
void control_close(Manager *m);

typedef enum ControlRequest {
        CONTROL_REQUEST_UNKNOWN,
        CONTROL_REQUEST_STATUS,
} ControlRequest;

/* What a client asked for, from the n bytes it sent (pure: fuzzed on its own). */
ControlRequest control_parse_request(const char *buf, size_t n);

/* Whether a peer with these credentials may talk to us (pure: tested on its own). */
bool control_peer_allowed(uid_t peer_uid, const gid_t *peer_groups, size_t n_groups, uid_t self_uid,
                          gid_t socket_gid);
