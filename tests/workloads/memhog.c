/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Memory workloads for the real-kernel tests.
 *
 *   memhog grow RATE_MB_PER_S LIMIT_MB
 *        touches RATE megabytes a second (in 1 MiB steps) until LIMIT, then holds it
 *   memhog fragment THREADS MB_PER_THREAD KEEP_ONE_IN
 *        each thread fills its malloc arena with small blocks, frees all but one in
 *        KEEP_ONE_IN, then waits: the heap holds MB_PER_THREAD per thread that only a trim
 *        gives back to the kernel
 *        one more thread ticks every 200 us and records the longest it was kept from running:
 *        each second, a line "rss KB kB stall US us" reports RSS and that stall (then resets it)
 *   memhog now
 *        prints CLOCK_MONOTONIC in microseconds
 *
 * Progress goes to stdout, one line per step, so that a test can follow it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static long rss_kb(void) {
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        long kb = -1;
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                        break;
        if (f)
                fclose(f);
        return kb;
}

static int grow(double rate, long limit_mb) {
        const size_t step = 1 << 20;
        uint64_t start = now_us();
        long done = 0;

        setvbuf(stdout, NULL, _IOLBF, 0);
        while (done < limit_mb) {
                /* Catch up with the schedule: done MiB by now. */
                uint64_t due = start + (uint64_t) ((double) (done + 1) / rate * 1e6);
                uint64_t t = now_us();
                if (due > t)
                        usleep((useconds_t) (due - t));
                char *p = malloc(step);
                if (!p) {
                        fprintf(stderr, "memhog: malloc failed at %ld MiB\n", done);
                        return 1;
                }
                memset(p, 0x5a, step);
                done++;
                if (done % 8 == 0)
                        printf("grow %ld MiB rss %ld kB\n", done, rss_kb());
        }
        printf("grow done %ld MiB\n", done);
        for (;;)
                pause();
}

static _Atomic uint64_t max_stall;

static void *ticker(void *arg) {
        for (;;) {
                uint64_t t = now_us();
                usleep(200);
                uint64_t late = now_us() - t;
                late = late > 200 ? late - 200 : 0;
                if (late > max_stall)
                        max_stall = late;
        }
        return NULL;
}

typedef struct Frag {
        size_t mb;
        unsigned keep;
        pthread_barrier_t *ready;
} Frag;

static void *fragment_thread(void *arg) {
        Frag *f = arg;
        size_t n = f->mb * 1024 * 1024 / 4096;
        void **blocks = malloc(n * sizeof(void *));
        /* Blocks of ~4K, well under the mmap threshold: they live in this thread's arena. */
        for (size_t i = 0; i < n; i++) {
                blocks[i] = malloc(4000);
                memset(blocks[i], 1, 4000);
        }
        for (size_t i = 0; i < n; i++)
                if (i % f->keep != 0)
                        free(blocks[i]);
        pthread_barrier_wait(f->ready);
        for (;;)
                pause();
        return NULL;
}

_Noreturn static void fragment(unsigned threads, size_t mb, unsigned keep) {
        pthread_barrier_t ready;
        pthread_t *t = calloc(threads, sizeof(pthread_t));
        Frag f = { .mb = mb, .keep = keep ? keep : 1, .ready = &ready };

        setvbuf(stdout, NULL, _IOLBF, 0);
        pthread_barrier_init(&ready, NULL, threads + 1);
        for (unsigned i = 0; i < threads; i++)
                pthread_create(&t[i], NULL, fragment_thread, &f);
        pthread_barrier_wait(&ready);
        pthread_t tick;
        pthread_create(&tick, NULL, ticker, NULL);
        printf("fragmented %u threads x %zu MiB, rss %ld kB\n", threads, mb, rss_kb());
        for (;;) {
                sleep(1);
                printf("rss %ld kB stall %llu us\n", rss_kb(), (unsigned long long) max_stall);
                max_stall = 0;
        }
}

int main(int argc, char **argv) {
        if (argc == 4 && strcmp(argv[1], "grow") == 0)
                return grow(atof(argv[2]), atol(argv[3]));
        if (argc == 5 && strcmp(argv[1], "fragment") == 0)
                fragment((unsigned) atoi(argv[2]), (size_t) atol(argv[3]), (unsigned) atoi(argv[4]));
        if (argc == 2 && strcmp(argv[1], "now") == 0) {
                printf("%llu\n", (unsigned long long) now_us());
                return 0;
        }
        fprintf(stderr, "usage: memhog grow RATE_MB_PER_S LIMIT_MB | fragment THREADS MB KEEP | now\n");
        return 2;
}
