#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The governor's own trust boundaries on a real kernel, as root, with the shipped default policy
# and an unprivileged local user as the attacker (docs/security.md):
# - every thread of the running governor, the action thread included, has the same dropped
#   capability sets (the action thread kept every capability when it started before the drop);
# - a process named like the server but started by a login user, by nobody through a link of
#   the server's name, by another system account, or from an executable a user owns, is neither
#   the target nor a reason to refuse the real one, and is never governed while the real server
#   is away;
# - the server itself as the attacker (the database container): one that listens on no socket
#   holds memgov's ladder at normal ("still starting") while it grows, and gains nothing by it:
#   its cgroup's memory.max holds it (the kernel kills it there), memgov and everything outside
#   the cgroup go on.
#   tests/vm/run-vm.sh --env MEMGOV_BUILD=build tests/vm/scenarios/security.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "security: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
fail() { echo "security: FAIL: $*" >&2; exit 1; }
attacker=1000 # a login user's uid (UID_MIN); no account needed

# The real server: a root-owned executable named mariadbd, run as a system account, in a cgroup.
work=$(mktemp -d)
chmod 755 "$work"
mkdir "$work/bin" "$work/evil"
cp /bin/sleep "$work/bin/mariadbd"
chmod 755 "$work/bin/mariadbd"
server_uid=$(id -u mysql) # the servers' account (Debian's packages create it)
cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 256M >"$cg/memory.max"
start_server() {
        ( echo "$BASHPID" >"$cg/cgroup.procs"; exec setpriv --reuid="$server_uid" --regid="$server_uid" --clear-groups \
                "$work/bin/mariadbd" 600 ) &
        server=$!
}
start_server

# The attackers: the same root-owned binary started as a login user; a copy that user owns;
# nobody running a root-owned binary through a symbolic link named mariadbd (the process takes
# the link's name); another system account (a compromised daemon) running the server's binary.
cp /bin/sleep "$work/evil/mysqld"
ln -s /bin/sleep "$work/evil/mariadbd"
chown "$attacker:$attacker" "$work/evil" "$work/evil/mysqld"
setpriv --reuid=$attacker --regid=$attacker --clear-groups "$work/bin/mariadbd" 600 &
impostor1=$!
setpriv --reuid=$attacker --regid=$attacker --clear-groups "$work/evil/mysqld" 600 &
impostor2=$!
setpriv --reuid=nobody --regid=nogroup --clear-groups "$work/evil/mariadbd" 600 &
impostor3=$!
setpriv --reuid=daemon --regid=daemon --clear-groups "$work/bin/mariadbd" 600 &
impostor4=$!
impostors=($impostor1 $impostor2 $impostor3 $impostor4)
# Each has executed its binary once it carries its name: setpriv execs it, later on a busy guest
# (seen: still setpriv after 0.5 s beside another VM).
for p in "${impostors[@]}"; do
        for _ in $(seq 100); do
                comm=$(cat /proc/$p/comm)
                [[ $comm == mariadbd || $comm == mysqld ]] && break
                sleep 0.1
        done
        [[ $comm == mariadbd || $comm == mysqld ]] || fail "impostor $p does not carry a server's name ($comm) after 10 s"
done

# memgov with the embedded default policy and its default target, the server by name.
"$build/memgov" run --policy-dir "$work" --socket /run/memgov/sec.sock --state-dir "$results" \
        2>"$results/memgov.log" &
governor=$!
for _ in $(seq 100); do
        grep -q "governing\|processes named\|waiting for the target" "$results/memgov.log" && break
        sleep 0.1
done
grep -q "governing mariadbd pid $server (" "$results/memgov.log" ||
        fail "the real server (pid $server) is not the target: $(cat "$results/memgov.log")"
echo "security: ok: with 4 impostors running (uid $attacker twice, nobody, daemon), memgov governs the real server (pid $server)"
"$build/memgov" status --json --socket /run/memgov/sec.sock >"$results/status.json"
python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["target"]; sys.exit(t["pid"] != int(sys.argv[2]))' \
        "$results/status.json" "$server" || fail "status names another target: $(cat "$results/status.json")"

# Capabilities: every thread of the governor, all five sets, the same and dropped.
python3 - "$governor" <<'EOF' || fail "capabilities differ between the governor's threads"
import os, sys
pid = sys.argv[1]
sets = {}
for tid in os.listdir(f"/proc/{pid}/task"):
    caps = {l.split(":")[0]: int(l.split(":")[1], 16) for l in open(f"/proc/{pid}/task/{tid}/status")
            if l.startswith("Cap")}
    sets[tid] = caps
    print(f"thread {tid}: " + " ".join(f"{k} {v:016x}" for k, v in sorted(caps.items())))
first = next(iter(sets.values()))
if len(sets) < 2:
    sys.exit("only one thread: the action thread is missing")
if any(s != first for s in sets.values()):
    sys.exit(1)
full = (1 << 41) - 1
if first["CapEff"] == full or first["CapBnd"] == full or first["CapInh"] or first["CapAmb"]:
    sys.exit(f"not dropped: {first}")
# What the default policy with a process target needs: ptrace, kill (restart by SIGTERM),
# resource (PSI), memory lock, read-search; nothing else.
want = (1 << 19) | (1 << 5) | (1 << 24) | (1 << 14) | (1 << 2)
if first["CapEff"] != want or first["CapPrm"] != want or first["CapBnd"] != want:
    sys.exit(f"effective {first['CapEff']:x}, permitted {first['CapPrm']:x}, bounding {first['CapBnd']:x}; "
             f"expected {want:x}")
EOF
grep -q "capabilities kept: CAP_SYS_PTRACE CAP_SYS_RESOURCE CAP_IPC_LOCK CAP_KILL CAP_DAC_READ_SEARCH$" \
        "$results/memgov.log" || fail "the log does not say what was kept: $(grep capab "$results/memgov.log")"
echo "security: ok: every thread of the governor has effective = permitted = bounding = the five capabilities logged"

# The real server goes away: the impostors are still not taken.
kill "$server"
wait "$server" 2>/dev/null || true
for _ in $(seq 100); do
        grep -q "waiting for the target" "$results/memgov.log" && break
        sleep 0.1
done
sleep 2
grep "waiting for the target" "$results/memgov.log" | grep -q "can be the server is running (4 ignored" ||
        fail "without the server, memgov does not say it ignores the impostors: $(tail -3 "$results/memgov.log")"
for p in "${impostors[@]}"; do
        if grep -q "governing [a-z]* pid $p (" "$results/memgov.log"; then
                fail "impostor $p became the target"
        fi
done
echo "security: ok: with the server away, the impostors are ignored (4) and nothing is governed"

# The server back: found again.
start_server
for _ in $(seq 100); do
        grep -q "governing mariadbd pid $server (" "$results/memgov.log" && break
        sleep 0.1
done
grep -q "governing mariadbd pid $server (" "$results/memgov.log" || fail "the restarted server was not found again"
echo "security: ok: the restarted server (pid $server) is governed again"

# The server as the attacker: it never listens (memgov takes it as still starting, and its
# ladder waits) and grows past its cgroup's memory.max.
mkdir "$work/grow"
cp "$build/tests/memgov-memhog" "$work/grow/mariadbd"
chmod 755 "$work/grow/mariadbd"
kill "$server"
wait "$server" 2>/dev/null || true
mark=$(wc -l <"$results/memgov.log")
( echo "$BASHPID" >"$cg/cgroup.procs"; exec setpriv --reuid="$server_uid" --regid="$server_uid" --clear-groups \
        "$work/grow/mariadbd" grow 8 1024 ) >"$results/grow.log" 2>&1 &
grower=$!
for _ in $(seq 900); do
        awk '$1 == "oom_kill" && $2 > 0 { found = 1 } END { exit !found }' "$cg/memory.events" && break
        sleep 0.2
done
awk '$1 == "oom_kill" && $2 > 0 { found = 1 } END { exit !found }' "$cg/memory.events" ||
        fail "the growing server was not held at memory.max: $(tr '\n' ' ' <"$cg/memory.events")"
wait "$grower" 2>/dev/null && fail "the growing server was not killed"
for _ in $(seq 100); do
        tail -n +"$mark" "$results/memgov.log" | grep -q "OOM killer killed" && break
        sleep 0.1
done
after=$(tail -n +"$mark" "$results/memgov.log")
grep -q "governing mariadbd pid $grower (" <<<"$after" || fail "the growing server was not the target: $after"
grep -q "the server is still starting (it listens on no socket yet)" <<<"$after" ||
        fail "memgov did not hold its ladder for a server that listens on nothing: $after"
# (memory.high at its calm value is no rung: a throttle shows as a level)
grep -E -- '^memgov: level |^memgov: (warning: )?-> ' <<<"$after" | grep -v -- '-> memory.high of' &&
        fail "memgov acted on a server that listens on nothing"
grep -q "OOM killer killed" <<<"$after" || fail "memgov did not see the kernel's kill in the cgroup: $after"
kill -0 "$governor" 2>/dev/null || fail "memgov is gone"
for p in "${impostors[@]}"; do kill -0 "$p" 2>/dev/null || fail "process $p outside the cgroup is gone"; done
echo "security: ok: a server that listens on nothing held the ladder at normal and grew to its memory.max" \
     "$(($(cat "$cg/memory.max") >> 20))M (peak $(($(cat "$cg/memory.peak") >> 20))M), where the kernel killed it;" \
     "memgov and every process outside the cgroup went on"

kill "$governor"
wait "$governor" || fail "memgov exited with status $?"
kill "${impostors[@]}" 2>/dev/null || true
wait 2>/dev/null || true
