/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "memgov/clock.h"
#include "cgroup-limits.h"
#include "memgov/actuator.h"
#include "memgov/fileio.h"
#include "memgov/parse-cgroup.h"
#include "memgov/units.h"

#define LIMIT_BUS_TIMEOUT (10 * USEC_PER_SEC)
#define LIMIT_VERIFY_FOR (2 * USEC_PER_SEC)

static int read_limit(int cgroup_fd, const char *file, uint64_t *ret) {
        char buf[64];
        ssize_t n = read_small_file_at(cgroup_fd, file, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        return parse_cgroup_value(buf, (size_t) n, ret);
}

static uint64_t page_floor(uint64_t v) {
        long page = sysconf(_SC_PAGESIZE);
        if (v == SIZE_UNLIMITED || page <= 0)
                return v;
        return v - v % (uint64_t) page;
}

/* systemd's property for a cgroup file: memory.high -> MemoryHigh. */
static const char *unit_property(const char *file) {
        return streq(file, "memory.high") ? "MemoryHigh" : "MemoryMax";
}

static int set_through_systemd(const ActionContext *c, const char *file, uint64_t value, ActionResult *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        sd_bus *bus = NULL;
        int r;

        /* The calling thread's own connection: actions run off the event loop's thread. */
        r = sd_bus_default_system(&bus);
        if (r < 0)
                return action_fail(ret, r, "cannot connect to systemd: %s", strerror(-r));
        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", c->target->unit, 1);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", unit_property(file), "t", value);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0) {
                sd_bus_unref(bus);
                return action_fail(ret, r, "building the SetUnitProperties call: %s", strerror(-r));
        }
        r = sd_bus_call(bus, m, LIMIT_BUS_TIMEOUT, &error, &reply);
        sd_bus_unref(bus);
        if (r < 0)
                return action_fail(ret, r, "SetUnitProperties(%s, %s): %s", c->target->unit,
                                   unit_property(file), error.message ? error.message : strerror(-r));
        return 0;
}

static int write_cgroupfs(const ActionContext *c, int fd, const char *file, uint64_t value, ActionResult *ret) {
        char text[32];
        int n = value == SIZE_UNLIMITED ? snprintf(text, sizeof(text), "max\n")
                                        : snprintf(text, sizeof(text), "%" PRIu64 "\n", value);
        /* memory.high may block here while the kernel reclaims: we are off the event loop. */
        if (write(fd, text, (size_t) n) != n) {
                int r = negative_errno();
                return action_fail(ret, r, "writing %.*s to %s of %s: %s", n - 1, text, file,
                                   c->target->cgroup, strerror(-r));
        }
        return 0;
}

int limits_set(const ActionContext *c, const char *file, uint64_t value, ActionResult *ret) {
        assert(c);
        assert(file);
        assert(ret);
        const ActionTarget *t = c->target;
        char v[FORMAT_BYTES_MAX], got[FORMAT_BYTES_MAX];
        bool unit = t->kind == TARGET_UNIT && t->unit[0];
        int r;

        if (t->cgroup_fd < 0)
                return action_fail(ret, -EOPNOTSUPP, "%s: %s has no cgroup v2 memory controller", file, t->description);
        /* What is there before memgov's first change of it, read before the file is opened for
         * writing (O_TRUNC empties a copied tree's file). */
        ChangeKind kind = streq(file, "memory.high") ? CHANGE_MEMORY_HIGH : CHANGE_MEMORY_MAX;
        ServerChange had = state_file_get(c->state, kind);
        uint64_t before = 0;
        bool read = c->state && !c->dry_run && !had.active && read_limit(t->cgroup_fd, file, &before) >= 0;
        /* Open it for writing even in a dry run: a permission problem shows now, not on the day. */
        /* O_TRUNC when writing, as a shell's '>' does: nothing to cgroupfs, a whole value in a
         * copied tree (where a dry run must leave the file as it is). */
        _cleanup_close_ int fd = openat(t->cgroup_fd, file, O_WRONLY | O_CLOEXEC | (c->dry_run ? 0 : O_TRUNC));
        if (fd < 0 && !unit) {
                r = negative_errno();
                return action_fail(ret, r, "cannot open %s of %s for writing: %s%s", file, t->cgroup,
                                   strerror(-r), r == -EROFS ? " (the cgroup file system is mounted read-only)" : "");
        }

        if (c->dry_run) {
                if (unit)
                        snprintf(ret->detail, sizeof(ret->detail), "would set %s=%s on %s (runtime, through systemd)",
                                 unit_property(file), format_bytes(v, value), t->unit);
                else
                        snprintf(ret->detail, sizeof(ret->detail), "would write %s to %s of %s", format_bytes(v, value),
                                 file, t->cgroup);
                return 0;
        }

        /* Recorded before it is made, with what was there before memgov's first change: a memgov
         * that dies leaves the next one what to put back. */
        if (had.active || read)
                (void) state_file_change(c->state, kind, 0, 0, had.active ? had.found : before, value);

        r = unit ? set_through_systemd(c, file, value, ret) : write_cgroupfs(c, fd, file, value, ret);
        if (r < 0)
                return r;

        /* Read back: systemd applies runtime properties from its own loop, a moment later. */
        uint64_t want = page_floor(value), now = SIZE_UNKNOWN;
        for (usec_t waited = 0;; waited += 50 * USEC_PER_MSEC) {
                r = read_limit(t->cgroup_fd, file, &now);
                if (r < 0)
                        return action_fail(ret, r, "reading %s of %s back: %s", file, t->cgroup, strerror(-r));
                if (now == want || !unit || waited >= LIMIT_VERIFY_FOR)
                        break;
                sleep_usec(50 * USEC_PER_MSEC);
        }
        ret->value = now;
        if (now != want)
                return action_fail(ret, -EIO, "%s of %s reads %s after setting %s", file, t->cgroup,
                                   format_bytes(got, now), format_bytes(v, value));
        snprintf(ret->detail, sizeof(ret->detail), "%s of %s is now %s%s", file, unit ? t->unit : t->cgroup,
                 format_bytes(v, now), unit ? " (through systemd, runtime)" : "");
        /* Back to what memgov found: nothing left to put back. */
        ServerChange rec = state_file_get(c->state, kind);
        if (rec.active && page_floor(rec.found) == now)
                (void) state_file_forget(c->state, kind);
        return 0;
}

int limits_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        assert(d->action == ACTION_SET_HIGH || d->action == ACTION_SET_MAX);
        return limits_set(c, d->action == ACTION_SET_HIGH ? "memory.high" : "memory.max", d->value, ret);
}
