/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memgov/session-memory.h"

/* performance_schema's own memory instruments (memory/performance_schema/...) are always on and
 * count no session: only the server's count. */
static const char mysql_instruments[] =
        "SELECT @@performance_schema, COUNT(*), IFNULL(SUM(ENABLED = 'NO'), 0) "
        "FROM performance_schema.setup_instruments "
        "WHERE NAME LIKE 'memory/%' AND NAME NOT LIKE 'memory/performance\\_schema/%'";

typedef struct Instruments {
        bool got;
        bool on;
        unsigned long total, off;
} Instruments;

static int read_row(void *userdata, unsigned n, char **row) {
        Instruments *in = userdata;
        if (n < 3 || !row[0] || !row[1] || !row[2])
                return 0;
        in->got = true;
        in->on = strtoul(row[0], NULL, 10) != 0;
        in->total = strtoul(row[1], NULL, 10);
        in->off = strtoul(row[2], NULL, 10);
        return 0;
}

int session_memory_check(SqlConn *c, SessionMemory *ret, char *why, size_t why_size) {
        assert(c);
        assert(ret);
        assert(why);

        why[0] = '\0';
        if (c->mariadb) {
                *ret = SESSION_MEMORY_MEASURED;
                return 0;
        }
        Instruments in = {};
        char err[256];
        int r = sql_run(c, mysql_instruments, read_row, &in, err, sizeof(err));
        if (r < 0) {
                snprintf(why, why_size, "reading performance_schema.setup_instruments: %s", err);
                return r;
        }
        if (!in.got) {
                snprintf(why, why_size, "performance_schema.setup_instruments gave no answer");
                return -EPROTO;
        }
        if (!in.on) {
                *ret = SESSION_MEMORY_OFF;
                snprintf(why, why_size, "the server measures no session's memory: performance_schema is off "
                         "(start it with performance_schema = ON)");
        } else if (in.total > 0 && in.off == in.total) {
                *ret = SESSION_MEMORY_OFF;
                snprintf(why, why_size, "the server measures no session's memory: all %lu of performance_schema's "
                         "memory instruments (memory/%%) are off (start it with "
                         "performance-schema-instrument = 'memory/%%=ON')", in.total);
        } else if (in.off > 0) {
                *ret = SESSION_MEMORY_PARTIAL;
                snprintf(why, why_size, "%lu of performance_schema's %lu memory instruments (memory/%%) are off: "
                         "the sessions' memory reads short (start the server with "
                         "performance-schema-instrument = 'memory/%%=ON')", in.off, in.total);
        } else
                *ret = SESSION_MEMORY_MEASURED;
        return 0;
}

const char *session_memory_to_string(SessionMemory m) {
        switch (m) {
        case SESSION_MEMORY_MEASURED:
                return "measured";
        case SESSION_MEMORY_PARTIAL:
                return "partial";
        case SESSION_MEMORY_OFF:
                return "off";
        }
        abort();
}
