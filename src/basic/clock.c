/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "memgov/clock.h"

usec_t now_clock(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}
