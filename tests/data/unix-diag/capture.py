#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Captures a sock_diag dump of unix sockets (SOCK_DIAG_BY_FAMILY, UDIAG_SHOW_NAME |
# UDIAG_SHOW_VFS, listening sockets) from a real kernel, in a network namespace of its own
# (run it under `unshare -n`), with the sockets test-unix-diag.c expects:
#   server    listening on DIR/server.sock
#   forger    listening on a path holding a newline and a /proc/net/unix line that gives the
#             server's inode and DIR/impostor.sock
#   impostor  listening on DIR/impostor.sock
#   abstract  listening on an abstract name
#   idle      bound to DIR/idle.sock, not listening (not in the dump)
# Writes reply.bin (the kernel's bytes, each recv() after the other) and sockets.txt
# (NAME INODE VFS_INODE VFS_DEV PATH-as-repr).
#   unshare -n python3 capture.py OUTDIR
import os, socket, struct, sys, tempfile

out = sys.argv[1]
d = tempfile.mkdtemp(prefix="md", dir="/tmp")
def listening(path, backlog=True):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    if backlog:
        s.listen(4)
    return s

server = listening(d + "/server.sock")
ino = os.fstat(server.fileno()).st_ino
impostor = listening(d + "/impostor.sock")
# The fields short, as a parser splitting on spaces reads them: the name must fit in sun_path.
forged = "%s/x\n0: 2 0 10000 1 1 %d %s/impostor.sock" % (d, ino, d)
os.makedirs(os.path.dirname(forged))  # the forged line's path is made of directories
forger = listening(forged)
abstract = listening("\0memgov-abstract")
idle = listening(d + "/idle.sock", backlog=False)

NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY = 4, 20
NLM_F_REQUEST, NLM_F_DUMP = 1, 0x300
UDIAG_SHOW_NAME, UDIAG_SHOW_VFS = 1, 2
nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
# struct unix_diag_req: family, protocol, pad, states (1 << TCP_LISTEN), ino, show, cookie[2]
req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 1 << 10, 0, UDIAG_SHOW_NAME | UDIAG_SHOW_VFS, 0, 0)
hdr = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0)
nl.sendto(hdr + req, (0, 0))
reply = b""
done = False
while not done:
    b = nl.recv(65536)
    reply += b
    off = 0
    while off + 16 <= len(b):
        length, kind = struct.unpack_from("=IH", b, off)
        done = done or kind in (2, 3)  # NLMSG_ERROR, NLMSG_DONE
        off += (length + 3) & ~3
with open(os.path.join(out, "reply.bin"), "wb") as f:
    f.write(reply)
with open(os.path.join(out, "sockets.txt"), "w") as f:
    for name, s, path in (("server", server, d + "/server.sock"), ("forger", forger, forged),
                          ("impostor", impostor, d + "/impostor.sock"), ("abstract", abstract, None),
                          ("idle", idle, d + "/idle.sock")):
        st = os.fstat(s.fileno())
        vfs = os.stat(path) if path else None
        f.write("%s %d %d %d %r\n" % (name, st.st_ino, vfs.st_ino if vfs else 0,
                                      vfs.st_dev if vfs else 0, path))
print(d)
