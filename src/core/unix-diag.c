/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <string.h>
#include <sys/socket.h>

#include "memgov/unix-diag.h"

#define TCP_LISTEN_STATE 10 /* TCP_LISTEN: unix sockets report the TCP states */

static int parse_socket(const struct nlmsghdr *h, const uint64_t *inodes, size_t n_inodes, UnixDiagSocket *ret) {
        const struct unix_diag_msg *m = NLMSG_DATA(h);
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
                return -EBADMSG;
        if (m->udiag_family != AF_UNIX)
                return -EBADMSG;

        const unsigned char *a = (const unsigned char *) m + NLMSG_ALIGN(sizeof(*m));
        size_t left = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*m)));
        const unsigned char *name = NULL;
        size_t name_len = 0;
        const struct unix_diag_vfs *vfs = NULL;
        while (left > 0) {
                struct nlattr at;
                if (left < sizeof(at))
                        return -EBADMSG;
                memcpy(&at, a, sizeof(at));
                if (at.nla_len < NLA_HDRLEN || at.nla_len > left)
                        return -EBADMSG;
                const unsigned char *payload = a + NLA_HDRLEN;
                size_t plen = at.nla_len - NLA_HDRLEN;
                switch (at.nla_type & NLA_TYPE_MASK) {
                case UNIX_DIAG_NAME:
                        name = payload;
                        name_len = plen;
                        break;
                case UNIX_DIAG_VFS:
                        if (plen < sizeof(*vfs))
                                return -EBADMSG;
                        vfs = (const struct unix_diag_vfs *) payload;
                        break;
                }
                size_t step = NLA_ALIGN(at.nla_len);
                if (step >= left)
                        break;
                a += step;
                left -= step;
        }

        /* sun_path's 108 bytes at most, a terminating NUL possibly counted: whether the reply is
         * well-formed never depends on which socket is looked for. */
        if (name && name_len > sizeof(ret->path))
                return -EBADMSG;
        if (ret->found || m->udiag_type != SOCK_STREAM || m->udiag_state != TCP_LISTEN_STATE)
                return 0;
        bool ours = false;
        for (size_t i = 0; i < n_inodes && !ours; i++)
                ours = inodes[i] == m->udiag_ino;
        /* An abstract name starts with a NUL, and a path has a file to check: both required. */
        if (!ours || !name || name_len == 0 || name[0] != '/' || !vfs)
                return 0;
        size_t n = strnlen((const char *) name, name_len);
        if (n != name_len && n + 1 != name_len)
                return 0; /* a NUL inside: no file has that name */
        if (n >= sizeof(ret->path))
                return -EBADMSG; /* longer than sun_path holds, no kernel says so */
        memcpy(ret->path, name, n);
        ret->path[n] = '\0';
        struct unix_diag_vfs v;
        memcpy(&v, vfs, sizeof(v));
        ret->inode = m->udiag_ino;
        ret->vfs_inode = v.udiag_vfs_ino;
        ret->vfs_dev = v.udiag_vfs_dev;
        ret->found = true;
        return 0;
}

int unix_diag_parse(const void *buf, size_t len, const uint64_t *inodes, size_t n_inodes, UnixDiagSocket *ret) {
        const unsigned char *p = buf;

        while (len > 0) {
                struct nlmsghdr h;
                if (len < sizeof(h))
                        return -EBADMSG;
                memcpy(&h, p, sizeof(h));
                if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len)
                        return -EBADMSG;
                if (h.nlmsg_type == NLMSG_DONE)
                        return 1;
                if (h.nlmsg_type == NLMSG_ERROR) {
                        struct nlmsgerr e;
                        if (h.nlmsg_len < NLMSG_LENGTH(sizeof(e)))
                                return -EBADMSG;
                        memcpy(&e, p + NLMSG_HDRLEN, sizeof(e));
                        return e.error < 0 && e.error > -4096 ? e.error : -EBADMSG;
                }
                if (h.nlmsg_type != SOCK_DIAG_BY_FAMILY)
                        return -EBADMSG;
                /* Aligned for NLMSG_DATA's casts: the message is copied out first. */
                union {
                        struct nlmsghdr h;
                        unsigned char bytes[8192];
                } msg;
                if (h.nlmsg_len > sizeof(msg))
                        return -EBADMSG;
                memcpy(&msg, p, h.nlmsg_len);
                int r = parse_socket(&msg.h, inodes, n_inodes, ret);
                if (r < 0)
                        return r;
                size_t step = NLMSG_ALIGN(h.nlmsg_len);
                if (step >= len)
                        break;
                p += step;
                len -= step;
        }
        return 0;
}
