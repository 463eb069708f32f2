/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include "memgov/macro.h"

/* Reads a whole file below dirfd (AT_FDCWD for a plain path) into a NUL-terminated buffer.
 * Kernel files report a size of 0 or 4096 whatever they hold: read until EOF, up to max bytes
 * (-EFBIG beyond). */
int read_full_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Reads a small file into a caller's buffer: the hot path of sampling allocates nothing.
 * Returns the length, -ENOBUFS when it did not fit. */
ssize_t read_small_file_at(int dirfd, const char *path, char *buf, size_t size);

/* Files that steer a root process (policies, credentials) must be root's and not writable by
 * others. Returns 0, or -EPERM with why filled in. Only enforced when euid is 0. */
int check_trusted_file(const struct stat *st, uid_t euid, char *why, size_t why_size);

/* Replaces dirfd/name with data, whole or not at all: written to a new file of a random name in
 * the same directory (never one found there: not a FIFO, a symlink or someone's file), given
 * mode, fsync'ed when sync, then renamed over name. */
int write_file_replace_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, bool sync);

/* A directory whose files steer a root process (state): root's and not writable by others.
 * Returns 0, or a negative errno with why filled in. Only enforced when euid is 0. */
int check_trusted_dir(int dirfd, uid_t euid, char *why, size_t why_size);

/* Opens path as process pid sees it: resolved inside its root (/proc/PID/root), an absolute
 * symbolic link staying inside, magic links (/proc/self/...) not followed, so that what the
 * process puts in its files cannot lead memgov to one of the host's. flags as open(2)'s
 * (O_CLOEXEC always). */
int open_in_process_root(pid_t pid, const char *path, int flags);
/* The same below a root directory already open. openat2() where there is one; without it (an
 * old kernel, a seccomp filter that answers ENOSYS), or with walk, the same resolution done one
 * component at a time. */
int open_in_root(int rootfd, const char *path, int flags, bool walk);
/* Opens path below dirfd, every symbolic link on the way followed only while it stays below
 * (a relative link, as a Kubernetes volume's "..data" ones): an absolute link or a ".." above
 * dirfd is -EXDEV, a magic link -ELOOP. openat2(RESOLVE_BENEATH) where there is one, otherwise
 * (or with walk) the same resolution one component at a time. */
int open_beneath(int dirfd, const char *path, int flags, bool walk);

/* Opens the file an O_PATH descriptor pins with flags (O_RDONLY...), only once fstat says it is a
 * regular file (-EBADFD otherwise): a device node is never opened (a device's open has effects:
 * /dev/watchdog arms a reboot) and a FIFO never blocks. ret_st: its stat, if not NULL. */
int reopen_regular(int pathfd, int flags, struct stat *ret_st);
