/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/socket.h>

#include "memgov/clock.h"

/* connect() with a bound: the socket is made non-blocking (and left so), and the connection
 * given up after timeout with -ETIMEDOUT. A stream socket of AF_UNIX whose listener's backlog is
 * full answers EAGAIN at once and connects only once the listener accepts, maybe never: it is
 * tried again, 1 ms to 50 ms apart, until the bound. Other families connect in the background
 * (EINPROGRESS) and are waited for with poll(). */
int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len, usec_t timeout);
