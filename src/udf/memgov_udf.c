/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memgov_trim(): a loadable SQL function for MariaDB and MySQL that gives the server's free heap
 * memory back to the kernel, from the connection thread that calls it: the trim method that
 * needs no ptrace. Returns the bytes the server's RSS shrank by.
 *
 *   cp memgov_udf.so $(mariadb -Nse 'SELECT @@plugin_dir')/
 *   CREATE FUNCTION memgov_trim RETURNS INTEGER SONAME 'memgov_udf.so';
 *   SELECT memgov_trim();
 *
 * It calls what the server's allocator offers: jemalloc's mallctl("arena.4096.purge"),
 * tcmalloc's MallocExtension_ReleaseFreeMemory(), else glibc's malloc_trim(0).
 *
 * Every account of the server may call it, and a trim takes each arena's lock in turn: so at
 * most one trim runs per MEMGOV_TRIM_INTERVAL seconds in the whole server, and a call in
 * between returns NULL without trimming (SELECT BENCHMARK(100000, memgov_trim()) trims once). */
#include <dlfcn.h>
#include <malloc.h>
#include <mysql.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MEMGOV_TRIM_INTERVAL 10 /* seconds */

/* The UDF ABI: these names are looked up by the server. */
my_bool memgov_trim_init(UDF_INIT *initid, UDF_ARGS *args, char *message);
long long memgov_trim(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error);
void memgov_trim_deinit(UDF_INIT *initid);

static long long rss_bytes(void) {
        FILE *f = fopen("/proc/self/statm", "re");
        long long size = 0, resident = 0;
        if (f) {
                if (fscanf(f, "%lld %lld", &size, &resident) != 2)
                        resident = 0;
                fclose(f);
        }
        return resident * sysconf(_SC_PAGESIZE);
}

/* CLOCK_MONOTONIC of the last trim, in seconds, plus one: 0 until the first. */
static _Atomic long long last_trim;

/* Whether this call may trim: one call per interval wins, whatever the threads. */
static int trim_allowed(void) {
        struct timespec ts;
        if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
                return 0;
        long long now = (long long) ts.tv_sec + 1, last = atomic_load(&last_trim);
        if (last != 0 && now - last < MEMGOV_TRIM_INTERVAL)
                return 0;
        return atomic_compare_exchange_strong(&last_trim, &last, now);
}

my_bool memgov_trim_init(UDF_INIT *initid, UDF_ARGS *args, char *message) {
        if (args->arg_count != 0) {
                snprintf(message, MYSQL_ERRMSG_SIZE, "memgov_trim() takes no arguments");
                return 1;
        }
        initid->maybe_null = 1; /* NULL: a trim ran less than MEMGOV_TRIM_INTERVAL ago */
        initid->const_item = 0;
        return 0;
}

long long memgov_trim(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error) {
        typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
        typedef void (*release_fn)(void);

        if (!trim_allowed()) {
                *is_null = 1;
                return 0;
        }
        long long before = rss_bytes();

        mallctl_fn mallctl = (mallctl_fn) dlsym(RTLD_DEFAULT, "mallctl");
        if (!mallctl)
                mallctl = (mallctl_fn) dlsym(RTLD_DEFAULT, "je_mallctl");
        release_fn release = (release_fn) dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory");
        if (mallctl)
                (void) mallctl("arena.4096.purge", NULL, NULL, NULL, 0); /* MALLCTL_ARENAS_ALL */
        else if (release)
                release();
        else
                (void) malloc_trim(0);

        long long after = rss_bytes();
        *is_null = 0;
        return before > after ? before - after : 0;
}

void memgov_trim_deinit(UDF_INIT *initid) {
}
