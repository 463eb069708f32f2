/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <time.h>

#include "memgov/units.h"

/* The time on clock c (CLOCK_MONOTONIC, CLOCK_REALTIME, ...), in microseconds. The shell reads
 * clocks; the core is handed the values. */
usec_t now_clock(clockid_t c);

/* Sleeps t microseconds (less if a signal comes). */
void sleep_usec(usec_t t);
