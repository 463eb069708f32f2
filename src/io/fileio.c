/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memgov/fileio.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        size_t size = 4096, len = 0;
        _cleanup_free_ char *buf = malloc(size + 1);

        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len == size) {
                        if (size >= max)
                                return -EFBIG;
                        size_t nsize = MIN(size * 2, max);
                        char *n = realloc(buf, nsize + 1);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                        size = nsize;
                }
                ssize_t k = read(fd, buf + len, size - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}

int read_full_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        return read_full_fd(fd, max, ret, ret_len);
}

ssize_t read_small_file_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        size_t len = 0;

        if (fd < 0)
                return negative_errno();
        if (size == 0)
                return -ENOBUFS;
        for (;;) {
                if (len == size - 1) {
                        /* Full: only fine if the file ends exactly here. */
                        char extra;
                        ssize_t k = read(fd, &extra, 1);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return negative_errno();
                        if (k > 0)
                                return -ENOBUFS;
                        break;
                }
                ssize_t k = read(fd, buf + len, size - 1 - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = '\0';
        return (ssize_t) len;
}

int check_trusted_file(const struct stat *st, uid_t euid, char *why, size_t why_size) {
        if (euid != 0)
                return 0;
        if (!S_ISREG(st->st_mode)) {
                snprintf(why, why_size, "not a regular file");
                return -EPERM;
        }
        if (st->st_uid != 0) {
                snprintf(why, why_size, "owned by uid %u, not root (expected root:root, chown root)",
                         (unsigned) st->st_uid);
                return -EPERM;
        }
        if (st->st_mode & (S_IWGRP | S_IWOTH)) {
                snprintf(why, why_size, "writable by %s (mode %04o; expected chmod go-w)",
                         (st->st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned) (st->st_mode & 07777));
                return -EPERM;
        }
        return 0;
}
