/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"
#include "memgov/state-file.h"

/* The server settings a memgov before this one changed and did not put back (the state file's
 * inherited changes: max_connections, innodb_buffer_pool_size, innodb_max_dirty_pages_pct), put
 * back on the server process they were changed on, where they are still the value it set, by
 * the rungs' own restores; forgotten where the process is another one (it started at its
 * configuration) or someone changed the value since. Each outcome is logged. Nothing in a dry
 * run. Called on the action thread once the server accepts clients. */
void put_back_inherited(const ActionContext *c);
/* The same for one setting, k a server setting; called by its rung before it changes it again,
 * so that the value found before the first change is the server's own, not the leftover. */
void put_back_inherited_kind(const ActionContext *c, ChangeKind k);
