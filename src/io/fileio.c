/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memgov/fileio.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        assert(ret);
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
        assert(path);
        assert(ret);
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        return read_full_fd(fd, max, ret, ret_len);
}

ssize_t read_small_file_at(int dirfd, const char *path, char *buf, size_t size) {
        assert(path);
        assert(buf);
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
        assert(st);
        assert(why);
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

int write_file_replace_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, bool sync) {
        assert(name);
        assert(data);
        char tmp[NAME_MAX + 1];
        int fd = -1, r;

        /* A name nobody can have prepared: O_EXCL refuses whatever is there (a file, a FIFO, a
         * symlink), and another random name is tried. */
        for (unsigned attempt = 0; fd < 0 && attempt < 16; attempt++) {
                uint64_t rnd;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t) sizeof(rnd))
                        rnd = (uint64_t) getpid() * 2654435761u + attempt;
                if (snprintf(tmp, sizeof(tmp), ".%.200s.%016llx.tmp", name, (unsigned long long) rnd) >= (int) sizeof(tmp))
                        return -ENAMETOOLONG;
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                            0600);
                if (fd < 0 && errno != EEXIST)
                        return negative_errno();
        }
        if (fd < 0)
                return -EEXIST;
        r = fchmod(fd, mode) < 0 ? negative_errno() : 0;
        for (size_t done = 0; r == 0 && done < len;) {
                ssize_t k = write(fd, (const char *) data + done, len - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        r = k < 0 ? negative_errno() : -EIO;
                else
                        done += (size_t) k;
        }
        if (r == 0 && sync && fsync(fd) < 0)
                r = negative_errno();
        if (close(fd) < 0 && r == 0)
                r = negative_errno();
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlinkat(dirfd, tmp, 0);
        return r;
}

int check_trusted_dir(int dirfd, uid_t euid, char *why, size_t why_size) {
        assert(why);
        struct stat st;
        if (fstat(dirfd, &st) < 0) {
                int r = negative_errno();
                snprintf(why, why_size, "cannot stat: %s", strerror(-r));
                return r;
        }
        if (euid != 0)
                return 0;
        if (!S_ISDIR(st.st_mode)) {
                snprintf(why, why_size, "not a directory");
                return -ENOTDIR;
        }
        if (st.st_uid != 0) {
                snprintf(why, why_size, "owned by uid %u, not root (expected chown root)", (unsigned) st.st_uid);
                return -EPERM;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                snprintf(why, why_size, "writable by %s (mode %04o; expected chmod go-w)",
                         (st.st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned) (st.st_mode & 07777));
                return -EPERM;
        }
        return 0;
}

int open_in_process_root(pid_t pid, const char *path, int flags) {
        assert(path);
        char root[64];
        struct open_how how = { .flags = (uint64_t) flags | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };

        snprintf(root, sizeof(root), "/proc/%d/root", (int) pid);
        _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return negative_errno();
        int fd = (int) syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
        return fd < 0 ? negative_errno() : fd;
}
