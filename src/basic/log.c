/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>

#include "memgov/log.h"
#include "memgov/strutil.h"

/* Process-wide logging settings: the only mutable state outside the Manager. */
static int max_level = LOG_INFO;
static LogTarget target = LOG_TARGET_STDERR;

static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long dev, ino;
        struct stat st;

        /* JOURNAL_STREAM=dev:ino names the stream systemd connected us to; check it is still stderr. */
        if (!e || sscanf(e, "%lu:%lu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == dev && st.st_ino == ino;
}

void log_setup(LogTarget t) {
        if (t == LOG_TARGET_AUTO)
                t = stderr_is_journal() ? LOG_TARGET_JOURNAL : LOG_TARGET_STDERR;
        target = t;
}

bool log_to_journal(void) {
        return target == LOG_TARGET_JOURNAL;
}

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_level_from_string(const char *s) {
        assert(s);
        static const struct {
                const char *name;
                int level;
        } t[] = {
                { "emerg", LOG_EMERG }, { "alert", LOG_ALERT },   { "crit", LOG_CRIT },   { "err", LOG_ERR },
                { "error", LOG_ERR },   { "warning", LOG_WARNING }, { "notice", LOG_NOTICE }, { "info", LOG_INFO },
                { "debug", LOG_DEBUG },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                if (strcasecmp(s, t[i].name) == 0)
                        return t[i].level;
        return -EINVAL;
}

static const char *level_prefix(int level) {
        switch (level) {
        case LOG_EMERG:
        case LOG_ALERT:
        case LOG_CRIT:
        case LOG_ERR:
                return "error: ";
        case LOG_WARNING:
                return "warning: ";
        default:
                return "";
        }
}

static void emit(int level, const char *message_id, const char *const *fields, int error, const char *raw) {
        /* One message, one line, and nothing in it that acts: text from the server's side (a
         * process name, a session's host, an error from the server) cannot start a line that
         * reads like memgov's own, nor move a terminal that shows the log or the journal. */
        char msg[4 * 2048 + 1];
        escape_untrusted(raw, msg, sizeof(msg));
        if (target == LOG_TARGET_JOURNAL) {
                struct iovec iov[32];
                char prio[32], mid[64], errbuf[32], *m = NULL, field[16][4 * 256 + 1];
                size_t n = 0;

                snprintf(prio, sizeof(prio), "PRIORITY=%d", level);
                iov[n++] = (struct iovec) { prio, strlen(prio) };
                if (message_id) {
                        snprintf(mid, sizeof(mid), "MESSAGE_ID=%s", message_id);
                        iov[n++] = (struct iovec) { mid, strlen(mid) };
                }
                if (error != 0) {
                        snprintf(errbuf, sizeof(errbuf), "ERRNO=%d", abs(error));
                        iov[n++] = (struct iovec) { errbuf, strlen(errbuf) };
                }
                for (size_t i = 0; fields && fields[i] && i < ELEMENTSOF(field) && n < ELEMENTSOF(iov) - 2; i++) {
                        escape_untrusted(fields[i], field[i], sizeof(field[i]));
                        iov[n++] = (struct iovec) { field[i], strlen(field[i]) };
                }
                iov[n++] = (struct iovec) { (void *) "SYSLOG_IDENTIFIER=memgov", STRLEN("SYSLOG_IDENTIFIER=memgov") };
                if (asprintf(&m, "MESSAGE=%s", msg) >= 0) {
                        iov[n++] = (struct iovec) { m, strlen(m) };
                        if (sd_journal_sendv(iov, (int) n) >= 0) {
                                free(m);
                                return;
                        }
                        free(m);
                }
                /* The journal refused: fall through to stderr, which it also collects. */
        }
        fprintf(stderr, "memgov: %s%s\n", level_prefix(level), msg);
}

int log_full_errno(int level, int error, const char *fmt, ...) {
        assert(fmt);
        int saved = errno;
        char msg[2048];
        va_list ap;

        if (level <= max_level) {
                /* %m in fmt refers to error, as in systemd; without one, to the caller's errno. */
                errno = error != 0 ? abs(error) : saved;
                va_start(ap, fmt);
                vsnprintf(msg, sizeof(msg), fmt, ap);
                va_end(ap);
                emit(level, NULL, NULL, error, msg);
        }
        errno = saved;
        return error == 0 ? 0 : -abs(error);
}

void log_struct(int level, const char *message_id, const char *const *fields, const char *fmt, ...) {
        assert(fmt);
        char msg[2048];
        va_list ap;

        if (level > max_level)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        emit(level, message_id, fields, 0, msg);
}
