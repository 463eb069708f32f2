/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Human units, parsed and printed the same way everywhere (policy files, traces, logs, replay).
 * Sizes are binary: 1K = 1024 bytes, 1G = 1024^3 bytes. */

int parse_size(const char *s, uint64_t *ret);          /* "64G", "512M", "1.5G", "4096" */
int parse_timespan(const char *s, usec_t *ret);        /* "15s", "2h", "500ms", "1h30m" */
int parse_percent(const char *s, uint32_t *ret_bp);    /* "85%", "2.5%" -> basis points */
int parse_uint(const char *s, unsigned max, unsigned *ret);
int parse_bool(const char *s, bool *ret);              /* yes/no, true/false, on/off, 1/0 */

/* Parses a fixed-point decimal "123.456" scaled by unit into bytes; used by trace readers. */
int parse_decimal_scaled(const char *s, size_t len, uint64_t unit, uint64_t *ret);

#define FORMAT_BYTES_MAX 24
#define FORMAT_TIMESPAN_MAX 32
#define FORMAT_PERCENT_MAX 16
#define FORMAT_RATE_MAX 32
#define FORMAT_WALL_MAX 32

/* 53687091200 -> "50G", 54975581388 -> "51.2G", SIZE_UNLIMITED -> "max" */
const char *format_bytes(char buf[static FORMAT_BYTES_MAX], uint64_t bytes);
/* A change FROM -> TO: both as format_bytes() writes them, else, where that reads the same for
 * two values that differ, both in a smaller unit until they read apart: (1G, 1.01G) ->
 * "1024M", "1034M". Returns A. */
const char *format_bytes_change(char a[static FORMAT_BYTES_MAX], char b[static FORMAT_BYTES_MAX], uint64_t from,
                                uint64_t to);
/* Two largest components: 34800000000 -> "9h40m"; USEC_INFINITY -> "never" */
const char *format_timespan(char buf[static FORMAT_TIMESPAN_MAX], usec_t t);
/* Exact basis points: 8550 -> "85.5%" */
const char *format_bp(char buf[static FORMAT_PERCENT_MAX], uint32_t bp);
/* Signed bytes per second as a rate per hour: "0.9G/h", "-120M/h" */
const char *format_rate(char buf[static FORMAT_RATE_MAX], double bytes_per_sec);
/* Microseconds since the epoch plus a UTC offset -> "2026-08-10 23:09:57" */
const char *format_wall(char buf[static FORMAT_WALL_MAX], usec_t wall, int32_t utc_offset_sec);

/* part/whole in basis points, saturating; whole 0 -> 0. */
uint32_t ratio_bp(uint64_t part, uint64_t whole);
/* value * bp / 10000 without overflow for any uint64 value. */
uint64_t apply_bp(uint64_t value, uint32_t bp);

/* Days since 1970-01-01 for a proleptic Gregorian date, and back. */
int64_t days_from_civil(int64_t y, unsigned m, unsigned d);
void civil_from_days(int64_t z, int64_t *ret_y, unsigned *ret_m, unsigned *ret_d);
