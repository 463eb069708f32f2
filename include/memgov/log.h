/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <syslog.h>

#include "memgov/macro.h"

/* Logging for the shell (never the core). Plain lines on stderr, or structured entries in the
 * journal when stderr is connected to it (JOURNAL_STREAM). The max level is per process. */

typedef enum LogTarget {
        LOG_TARGET_AUTO,
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
} LogTarget;

void log_setup(LogTarget target);
void log_set_max_level(int level);
int log_get_max_level(void);
int log_level_from_string(const char *s);
bool log_to_journal(void);

/* Logs and returns -abs(error) (or 0 when error is 0), so callers can `return log_error_errno(r, ...)`. */
_printf_(3, 4) int log_full_errno(int level, int error, const char *fmt, ...);

/* A structured entry: MESSAGE_ID plus extra "KEY=value" fields (NULL-terminated), and the message. */
_printf_(4, 5) void log_struct(int level, const char *message_id, const char *const *fields, const char *fmt, ...);

#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, (error), __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
