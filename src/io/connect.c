/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>

#include "memgov/connect.h"
#include "memgov/macro.h"

int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len, usec_t timeout) {
        assert(fd >= 0);
        assert(sa);
        usec_t deadline = now_clock(CLOCK_MONOTONIC) + timeout, pause = USEC_PER_MSEC;

        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return negative_errno();
        for (;;) {
                if (connect(fd, sa, len) == 0)
                        return 0;
                int r = negative_errno();
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (r == -EINTR)
                        continue;
                if (r == -EAGAIN && sa->sa_family == AF_UNIX) {
                        /* The listener's queue is full: nothing goes on in the background. */
                        if (now >= deadline)
                                return -ETIMEDOUT;
                        usec_t wait = MIN(pause, deadline - now);
                        (void) nanosleep(&(struct timespec) { .tv_sec = (time_t) (wait / USEC_PER_SEC),
                                                               .tv_nsec = (long) (wait % USEC_PER_SEC) * 1000 },
                                         NULL);
                        pause = MIN(pause * 2, 50 * USEC_PER_MSEC);
                        continue;
                }
                if (r != -EINPROGRESS)
                        return r;
                for (;;) {
                        now = now_clock(CLOCK_MONOTONIC);
                        if (now >= deadline)
                                return -ETIMEDOUT;
                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                        int k = poll(&p, 1, (int) MIN((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (usec_t) INT32_MAX));
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return negative_errno();
                        if (k > 0)
                                break;
                }
                int error = 0;
                socklen_t l = sizeof(error);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &l) < 0)
                        return negative_errno();
                return error ? -error : 0;
        }
}
