/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "memgov/clock.h"

usec_t now_clock(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}

void sleep_usec(usec_t t) {
        struct timespec ts = { .tv_sec = (time_t) (t / USEC_PER_SEC), .tv_nsec = (long) (t % USEC_PER_SEC) * 1000 };
        nanosleep(&ts, NULL);
}
