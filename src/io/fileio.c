/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
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

static void close_dir(int *dir, int to) {
        if (*dir >= 0)
                close(*dir);
        *dir = to;
}

/* What openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) does, one component at a time, for a
 * kernel or a seccomp filter without openat2 (systemd 252's SystemCallFilter= answers ENOSYS for
 * it): every component opened with O_NOFOLLOW, a symbolic link's text read and walked on (from
 * the root when absolute), ".." never above the root, at most 40 links. The kernel follows no
 * link itself, so no magic link (/proc/self/root) and no absolute link leaves the root. With
 * beneath, RESOLVE_BENEATH instead: an absolute link, or ".." above the root, is -EXDEV. */
static int open_in_root_walk(int rootfd, const char *path, int flags, bool beneath) {
        char buf[PATH_MAX], next[PATH_MAX], target[PATH_MAX], comp[NAME_MAX + 1];
        struct stat root_st, st;
        unsigned links = 0;
        int dir = -1, r;

        if (fstat(rootfd, &root_st) < 0)
                return negative_errno();
        if (strlen(path) >= sizeof(buf))
                return -ENAMETOOLONG;
        if (beneath && path[0] == '/')
                return -EXDEV;
        strcpy(buf, path);
        const char *rest = buf;
        dir = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
        if (dir < 0)
                return negative_errno();

        for (;;) {
                rest += strspn(rest, "/");
                if (*rest == '\0') {
                        /* The path names a directory (the root itself, or "a/b/"). */
                        if (flags & O_PATH)
                                return dir;
                        r = openat(dir, ".", flags | O_CLOEXEC);
                        r = r < 0 ? negative_errno() : r;
                        close(dir);
                        return r;
                }
                size_t n = strcspn(rest, "/");
                if (n > NAME_MAX) {
                        close(dir);
                        return -ENAMETOOLONG;
                }
                memcpy(comp, rest, n);
                comp[n] = '\0';
                rest += n;
                bool last = rest[strspn(rest, "/")] == '\0';

                if (streq(comp, "."))
                        continue;
                if (streq(comp, "..")) {
                        if (fstat(dir, &st) < 0) {
                                r = negative_errno();
                                close(dir);
                                return r;
                        }
                        if (st.st_dev == root_st.st_dev && st.st_ino == root_st.st_ino) {
                                if (!beneath)
                                        continue; /* ".." of the root is the root */
                                close(dir);
                                return -EXDEV;
                        }
                        int up = openat(dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                        if (up < 0) {
                                r = negative_errno();
                                close(dir);
                                return r;
                        }
                        close_dir(&dir, up);
                        continue;
                }

                int fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        r = negative_errno();
                        if (fd >= 0)
                                close(fd);
                        close(dir);
                        return r;
                }
                if (S_ISLNK(st.st_mode)) {
                        ssize_t k = ++links > 40 ? -1 : readlinkat(fd, "", target, sizeof(target) - 1);
                        r = links > 40 ? -ELOOP : k < 0 ? negative_errno() : 0;
                        close(fd);
                        if (r == 0 && (size_t) k + strlen(rest) >= sizeof(next))
                                r = -ENAMETOOLONG;
                        if (r < 0) {
                                close(dir);
                                return r;
                        }
                        target[k] = '\0';
                        snprintf(next, sizeof(next), "%s%s", target, rest);
                        strcpy(buf, next);
                        rest = buf;
                        if (target[0] == '/' && beneath) {
                                close(dir);
                                return -EXDEV;
                        }
                        if (target[0] == '/') {
                                int top = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
                                if (top < 0) {
                                        r = negative_errno();
                                        close(dir);
                                        return r;
                                }
                                close_dir(&dir, top);
                        }
                        continue;
                }
                if (last) {
                        if (flags & O_PATH) {
                                close(dir);
                                return fd;
                        }
                        /* Opened for real by name once more: it must be the file just looked at. */
                        struct stat again;
                        r = openat(dir, comp, flags | O_NOFOLLOW | O_CLOEXEC);
                        if (r < 0)
                                r = negative_errno();
                        else if (fstat(r, &again) < 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino) {
                                close(r);
                                r = -EAGAIN;
                        }
                        close(fd);
                        close(dir);
                        return r;
                }
                if (!S_ISDIR(st.st_mode)) {
                        close(fd);
                        close(dir);
                        return -ENOTDIR;
                }
                close_dir(&dir, fd);
        }
}

int open_in_root(int rootfd, const char *path, int flags, bool walk) {
        assert(path);
        if (!walk) {
                struct open_how how = { .flags = (uint64_t) flags | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
                int fd = (int) syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS)
                        return negative_errno();
        }
        return open_in_root_walk(rootfd, path, flags, false);
}

int open_beneath(int dirfd, const char *path, int flags, bool walk) {
        assert(path);
        if (!walk) {
                struct open_how how = { .flags = (uint64_t) flags | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
                int fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS)
                        return negative_errno();
        }
        return open_in_root_walk(dirfd, path, flags, true);
}

int reopen_regular(int pathfd, int flags, struct stat *ret_st) {
        struct stat st, again;
        char self[64];

        if (fstat(pathfd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        /* The magic link reaches the inode pinned by pathfd, whatever its path names now. */
        snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
        int fd = open(self, (flags & ~O_PATH) | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &again) < 0 || again.st_dev != st.st_dev || again.st_ino != st.st_ino) {
                close(fd);
                return -EAGAIN;
        }
        if (ret_st)
                *ret_st = again;
        return fd;
}

int open_in_process_root(pid_t pid, const char *path, int flags) {
        assert(path);
        char root[64];

        snprintf(root, sizeof(root), "/proc/%d/root", (int) pid);
        _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return negative_errno();
        return open_in_root(rootfd, path, flags, false);
}
