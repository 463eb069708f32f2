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

/* Logs at level and returns -abs(error) (0 when error is 0), whether or not the level is shown.
 * %m in fmt is strerror(error); with error 0, the caller's errno. errno is left as it was. */
_printf_(3, 4) int log_full_errno(int level, int error, const char *fmt, ...);

/* A structured entry: MESSAGE_ID plus extra "KEY=value" fields (NULL-terminated), and the message. */
_printf_(4, 5) void log_struct(int level, const char *message_id, const char *const *fields, const char *fmt, ...);

/* An error at any level: logged with it (%m, and ERRNO= in the journal) and returned as a
 * negative errno, so that `return log_debug_errno(r, "...: %m")` fails with r. */
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, (error), __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)

/* A message without an error: no value, so that none can be returned as one. */
#define log_error(...) ((void) log_full_errno(LOG_ERR, 0, __VA_ARGS__))
#define log_warning(...) ((void) log_full_errno(LOG_WARNING, 0, __VA_ARGS__))
#define log_notice(...) ((void) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__))
#define log_info(...) ((void) log_full_errno(LOG_INFO, 0, __VA_ARGS__))
#define log_debug(...) ((void) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__))
