/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"

/* The buffer-pool rung: one step of innodb_buffer_pool_size down, or back up, over [sql].
 *
 * Shrink: to the size found less d->pool_step (basis points of the configured size), never below
 * d->pool_floor of it, in multiples of what the server accepts exactly (so that it never rounds
 * a size of its own). Already at the floor: an explained failure, -ERANGE (the rung is spent).
 * Grow: by d->pool_step, at most d->pool_grow_max (what memgov took), never above the configured
 * size. At the configured size already, or with nothing memgov took to give back: success, and
 * the detail says that nothing was done.
 *
 * The resize is waited for, up to the policy's pool_resize_timeout, then read back. ret->value is
 * the size after (in a dry run the size found: nothing changes), ret->value_before the size
 * found, ret->baseline the configured size used (d->pool_configured, or the size found when that
 * is 0). A shrink measures what it gave back (memory.current of the target's cgroup, else the
 * server's RSS) into ret->freed. A dry run connects, reads and computes everything and only
 * leaves out the SET. */
int pool_run(const ActionContext *c, const Decision *d, ActionResult *ret);

/* The rung's actuator (actuator_fn): pool_run with the configured size remembered for the server
 * process from the first resize on. */
int pool_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
