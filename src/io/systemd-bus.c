/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "memgov/systemd-bus.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT "org.freedesktop.systemd1.Unit"


static int fail(int r, const sd_bus_error *e, const char *what, char *why, size_t why_size) {
        snprintf(why, why_size, "%s: %s", what, e && e->message ? e->message : strerror(-r));
        return r;
}

/* Resource-control properties live on the unit type's own interface: Service, Scope, Slice. */
static const char *type_interface(const char *unit) {
        const char *dot = strrchr(unit, '.');
        if (dot && streq(dot, ".scope"))
                return "org.freedesktop.systemd1.Scope";
        if (dot && streq(dot, ".slice"))
                return "org.freedesktop.systemd1.Slice";
        return "org.freedesktop.systemd1.Service";
}

int unit_get_info(sd_bus *bus, const char *unit, UnitInfo *ret, char *why, size_t why_size) {
        assert(unit);
        assert(ret);
        assert(why);
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        char *s = NULL;
        int r;

        *ret = (UnitInfo) { .memory_high = UINT64_MAX, .memory_max = UINT64_MAX };
        /* LoadUnit answers for inactive units too, where GetUnit says "not loaded". */
        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "LoadUnit", &error, &reply, "s", unit);
        if (r < 0)
                return fail(r, &error, unit, why, why_size);
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return fail(r, NULL, unit, why, why_size);
        snprintf(ret->object_path, sizeof(ret->object_path), "%s", path);

        r = sd_bus_get_property_string(bus, SD_DEST, path, SD_UNIT, "LoadState", &error, &s);
        if (r < 0)
                return fail(r, &error, unit, why, why_size);
        if (!streq(s, "loaded")) {
                snprintf(why, why_size, "%s: unit %s (expected an installed unit)", unit, s);
                free(s);
                return -ENOENT;
        }
        free(s);

        r = sd_bus_get_property_string(bus, SD_DEST, path, SD_UNIT, "ActiveState", &error, &s);
        if (r < 0)
                return fail(r, &error, unit, why, why_size);
        snprintf(ret->active_state, sizeof(ret->active_state), "%s", s);
        free(s);

        const char *iface = type_interface(unit);
        r = sd_bus_get_property_string(bus, SD_DEST, path, iface, "ControlGroup", &error, &s);
        if (r < 0)
                return fail(r, &error, unit, why, why_size);
        snprintf(ret->control_group, sizeof(ret->control_group), "%s", s);
        free(s);

        if (streq(iface, "org.freedesktop.systemd1.Service")) {
                uint32_t pid = 0;
                r = sd_bus_get_property_trivial(bus, SD_DEST, path, iface, "MainPID", &error, 'u', &pid);
                if (r < 0)
                        return fail(r, &error, unit, why, why_size);
                ret->main_pid = (pid_t) pid;
        }
        r = sd_bus_get_property_trivial(bus, SD_DEST, path, iface, "MemoryHigh", &error, 't', &ret->memory_high);
        if (r < 0)
                return fail(r, &error, unit, why, why_size);
        r = sd_bus_get_property_trivial(bus, SD_DEST, path, iface, "MemoryMax", &error, 't', &ret->memory_max);
        if (r < 0)
                return fail(r, &error, unit, why, why_size);
        return 0;
}
