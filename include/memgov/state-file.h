/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memgov/clock.h"

/* The state file (STATE_DIR/INSTANCE.state): what memgov keeps across its own restarts.
 *
 * - The restart history, so that restart.max-per-day holds across them.
 * - What memgov changed on the server and its cgroup, and what it found there before: recorded
 *   (written, synced) before each change is made, forgotten once it is put back. A memgov that
 *   dies without its way out (a watchdog abort, SIGKILL) leaves the next one what to put back:
 *   otherwise that one takes a lowered max_connections, a shrunk buffer pool, a pre-flush's
 *   innodb_max_dirty_pages_pct of 0 or a raised memory.max for the server's own.
 *
 * Written as a whole to a new file of a random name in the directory, synced, renamed over the
 * old one: never half a file. The directory is root's and written by root alone (a directory
 * others may write holds memgov's own "private", 0700). Every call is safe from any thread. */

typedef enum ChangeKind {
        CHANGE_MAX_CONNECTIONS, /* admission */
        CHANGE_POOL_SIZE,       /* innodb_buffer_pool_size: the pool rung */
        CHANGE_DIRTY_PAGES_PCT, /* innodb_max_dirty_pages_pct: the restart's pre-flush, in hundredths */
        CHANGE_MEMORY_HIGH,     /* the cgroup's limits (UINT64_MAX: "max") */
        CHANGE_MEMORY_MAX,
        _CHANGE_KIND_MAX,
} ChangeKind;

typedef struct ServerChange {
        bool active;
        /* The server process it was made on (a new process starts at its configuration again);
         * 0 for the cgroup's limits, which outlive it. */
        pid_t pid;
        uint64_t starttime;
        uint64_t found; /* what memgov found before its first change of it */
        uint64_t set;   /* what memgov set it to last */
        /* Recorded by a memgov before this one: to be put back at start (state_file_load sets it,
         * a change of this memgov's clears it). */
        bool inherited;
} ServerChange;

typedef struct StateFile StateFile;

/* "max_connections", "innodb_buffer_pool_size", ..., "memory.max". */
const char *change_kind_to_string(ChangeKind k);
/* Whether the change is of a setting of the server process (over SQL), not of its cgroup. */
bool change_kind_is_server_setting(ChangeKind k);

/* Opens (creating it if needed) the state directory dir for instance; says why, once, when it
 * cannot (then there is no state file: *ret NULL). */
int state_file_open(const char *dir, const char *instance, StateFile **ret);
StateFile *state_file_free(StateFile *f);
/* The file's path, for messages. */
const char *state_file_path(const StateFile *f);

/* Reads the file, if there is one: the restart history (into clock, at most max, oldest first;
 * ret_n how many) and the changes, each marked inherited. Says what is wrong with a file it
 * cannot use, and ignores it. */
void state_file_load(StateFile *f, usec_t *clock, unsigned max, unsigned *ret_n);
/* The restart history to keep; written at once. */
int state_file_set_restarts(StateFile *f, const usec_t *clock, unsigned n);

/* Before a change is made: the value found (kept from the first change while one is recorded:
 * the value before memgov's first change, not before its last) and the value about to be set.
 * Written and synced before it returns: a negative errno when it could not be (the change may
 * still be made; the caller says so). */
int state_file_change(StateFile *f, ChangeKind k, pid_t pid, uint64_t starttime, uint64_t found, uint64_t set);
/* Once it is put back (or found changed by someone else, or gone with its server process). */
int state_file_forget(StateFile *f, ChangeKind k);
/* The change recorded of k (active false: none). */
ServerChange state_file_get(StateFile *f, ChangeKind k);
