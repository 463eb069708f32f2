/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Timestamps kernel memory events of a cgroup as a second observer would see them: arms a PSI
 * trigger on memory.pressure and watches memory.events with inotify, and prints one line per
 * wakeup: "psi MONO_US" or "events MONO_US" (CLOCK_MONOTONIC).
 *   eventwatch CGROUP_DIR STALL_US WINDOW_US SECONDS */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000;
}

int main(int argc, char **argv) {
        char path[4096], trig[64];
        if (argc != 5) {
                fprintf(stderr, "usage: eventwatch CGROUP_DIR STALL_US WINDOW_US SECONDS\n");
                return 2;
        }
        snprintf(path, sizeof(path), "%s/memory.pressure", argv[1]);
        int psi = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        snprintf(trig, sizeof(trig), "some %s %s", argv[2], argv[3]);
        if (psi < 0 || write(psi, trig, strlen(trig) + 1) < 0) {
                perror("eventwatch: PSI trigger");
                return 1;
        }
        int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        snprintf(path, sizeof(path), "%s/memory.events", argv[1]);
        if (in < 0 || inotify_add_watch(in, path, IN_MODIFY) < 0) {
                perror("eventwatch: inotify");
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        unsigned long long end = now_us() + (unsigned long long) atoi(argv[4]) * 1000000ULL;
        struct pollfd p[2] = { { .fd = psi, .events = POLLPRI }, { .fd = in, .events = POLLIN } };
        while (now_us() < end) {
                if (poll(p, 2, 200) <= 0)
                        continue;
                unsigned long long t = now_us();
                if (p[0].revents & POLLPRI)
                        printf("psi %llu\n", t);
                if (p[1].revents & POLLIN) {
                        char buf[4096];
                        while (read(in, buf, sizeof(buf)) > 0)
                                ;
                        printf("events %llu\n", t);
                }
        }
        return 0;
}
