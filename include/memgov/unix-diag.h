/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kernel's sock_diag answer for unix sockets (NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY with
 * UDIAG_SHOW_NAME | UDIAG_SHOW_VFS): how the server's listening socket is found. Unlike
 * /proc/net/unix, where a path is printed unescaped and a newline in a path forges a line,
 * each socket is one message and its name an attribute of explicit length. */

typedef struct UnixDiagSocket {
        bool found;
        uint64_t inode;              /* the socket's own inode (socket:[N] in /proc/PID/fd) */
        uint64_t vfs_inode, vfs_dev; /* the inode of the file it is bound to (0: unknown), its device */
        char path[109];              /* NUL-terminated; sun_path's room and the NUL */
} UnixDiagSocket;

/* Reads one buffer of the dump (the reply may come in several): the first listening stream
 * socket bound to an absolute path whose inode is among inodes is stored in *ret (later ones
 * are ignored). Returns 1 once the dump's end (NLMSG_DONE) was read, 0 when more is to come,
 * -EBADMSG for a malformed reply, or the error the kernel answered (NLMSG_ERROR). */
int unix_diag_parse(const void *buf, size_t len, const uint64_t *inodes, size_t n_inodes, UnixDiagSocket *ret);
