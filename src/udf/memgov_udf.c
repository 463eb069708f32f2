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
 * tcmalloc's MallocExtension_ReleaseFreeMemory(), else glibc's malloc_trim(0). */
#include <dlfcn.h>
#include <malloc.h>
#include <mysql.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

my_bool memgov_trim_init(UDF_INIT *initid, UDF_ARGS *args, char *message) {
        if (args->arg_count != 0) {
                snprintf(message, MYSQL_ERRMSG_SIZE, "memgov_trim() takes no arguments");
                return 1;
        }
        initid->maybe_null = 0;
        initid->const_item = 0;
        return 0;
}

long long memgov_trim(UDF_INIT *initid, UDF_ARGS *args, char *is_null, char *error) {
        typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
        typedef void (*release_fn)(void);
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
