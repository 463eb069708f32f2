/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Runs a fuzz target over files, as libFuzzer would run them one by one: every FILE, or every
 * file of every DIR (sorted, not recursive). It is how the unit suite replays the seed corpora
 * in builds without libFuzzer (gcc): each past crash stays a regression test.
 *   fuzz-TARGET FILE|DIR... */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static int run_file(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        /* Exactly the file's size, no terminator: a parser reading past its input is caught under
         * AddressSanitizer, as with libFuzzer. */
        size_t size = (size_t) st.st_size;
        uint8_t *buf = malloc(size ? size : 1);
        if (!buf)
                return -ENOMEM;
        size_t off = 0;
        while (off < size) {
                ssize_t k = read(fd, buf + off, size - off);
                if (k <= 0) {
                        fprintf(stderr, "%s: short read\n", path);
                        free(buf);
                        return -EIO;
                }
                off += (size_t) k;
        }
        (void) LLVMFuzzerTestOneInput(buf, size);
        free(buf);
        return 0;
}

static int by_name(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int run_dir(const char *dir, unsigned *count) {
        DIR *d = opendir(dir);
        size_t n = 0, cap = 0;
        int r = 0;

        if (!d) {
                fprintf(stderr, "%s: %s\n", dir, strerror(errno));
                return -errno;
        }
        char **names = NULL;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (n == cap) {
                        cap = cap ? 2 * cap : 64;
                        char **nn = realloc(names, cap * sizeof(char *));
                        if (!nn)
                                abort();
                        names = nn;
                }
                names[n] = strdup(de->d_name);
                if (!names[n])
                        abort();
                n++;
        }
        closedir(d);
        if (n > 0)
                qsort(names, n, sizeof(char *), by_name);
        for (size_t i = 0; i < n; i++) {
                char path[4096];
                struct stat st;
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                        if (run_file(path) < 0)
                                r = -EIO;
                        else
                                (*count)++;
                }
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv) {
        unsigned count = 0;
        int r = 0;

        if (argc < 2) {
                fprintf(stderr, "Usage: %s FILE|DIR...\n", argv[0]);
                return EXIT_FAILURE;
        }
        if (LLVMFuzzerInitialize)
                (void) LLVMFuzzerInitialize(&argc, &argv);
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        r = -errno;
                } else if (S_ISDIR(st.st_mode)) {
                        if (run_dir(argv[i], &count) < 0)
                                r = -EIO;
                } else if (run_file(argv[i]) < 0)
                        r = -EIO;
                else
                        count++;
        }
        printf("%s: %u input(s) run\n", argv[0], count);
        /* An empty corpus is a mistake in the tree, not a pass. */
        return r < 0 || count == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
