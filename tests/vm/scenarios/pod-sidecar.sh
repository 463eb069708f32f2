#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Kubernetes sidecar topology, built with unshare: "container A" runs a real MariaDB,
# "container B" runs memgov; each has its own cgroup and mount namespaces and a read-only
# cgroup file system rooted at its own cgroup, and they share the process namespace
# (shareProcessNamespace). memgov in B finds the server by name, reads its cgroup through
# /proc/PID/root (its /proc/PID/cgroup path starts with "/.."), reaches its socket (private to
# A) through /proc/PID/root, says once that memory.high cannot be set, and still trims and
# resets. Then B gets the host's cgroup hierarchy, writable (a hostPath mount, --cgroup-root):
# the same server's cgroup is found by its absolute path and memory.high is set.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/pod-sidecar.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "pod-sidecar: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
# shellcheck source=../../lib/mariadb.sh
. "$here/lib/mariadb.sh"
fail() { echo "pod-sidecar: FAIL: $*" >&2; exit 1; }
ok() { echo "pod-sidecar: ok: $*"; }
container=$here/lib/container.sh
policy=$here/vm/policies/pod.ini
sessions=$here/workloads/sessions.py

pod=${MEMGOV_CGROUP:?}/pod
mkdir -p "$pod/db" "$pod/memgov"
echo "+memory +pids" >"$pod/cgroup.subtree_control"
echo 400M >"$pod/db/memory.max"
echo 0 >"$pod/db/memory.swap.max" 2>/dev/null || true

# Container A: the server, its run directory an emptyDir of the pod (medium Memory) that
# container B mounts too, as statefulset.yaml has it: on the "node", not where the host sees
# the server's socket path.
node=${MEMGOV_DISK:?run with --disk}/pod/node
# shellcheck source=../../lib/kubelet.sh
. "$here/lib/kubelet.sh"
kubelet_empty_dir "$node/run-mysqld" memory
MARIADB_CGROUP=$pod/db
MARIADB_WRAP=("$container" --volume "$node/run-mysqld:$MEMGOV_DISK/mariadb/run" --)
mkdir -p "$MEMGOV_DISK/mariadb/run"
mariadb_start "$MEMGOV_DISK/mariadb"
mariadb_sql "CREATE USER IF NOT EXISTS leaky@localhost IDENTIFIED BY 'leaky'"
sock=$(mariadb_client_socket)
[[ ! -S $MARIADB_SOCKET ]] || fail "the server's socket is visible outside its container"
[[ $(sed -n 's/^0:://p' "/proc/$MARIADB_PID/cgroup") == "${pod#/sys/fs/cgroup}/db" ]] ||
        fail "the server is in $(cat "/proc/$MARIADB_PID/cgroup")"
ok "container A: mariadbd pid $MARIADB_PID in ${pod#/sys/fs/cgroup}/db, its socket private to it"

# Container B: memgov, finding the server on its own.
( echo "$BASHPID" >"$pod/memgov/cgroup.procs"
  exec "$container" -- "$build/memgov" run --policy "$policy" --socket /run/memgov/pod.sock --state-dir "" \
        --record "$results/pod.trace.csv" ) 2>"$results/pod.memgov.log" &
governor=$!
for _ in $(seq 50); do grep -q governing "$results/pod.memgov.log" && break; sleep 0.2; done
grep -q "governing mariadbd pid $MARIADB_PID (/../db through /proc/$MARIADB_PID/root/sys/fs/cgroup)" \
        "$results/pod.memgov.log" || fail "memgov did not find the server's cgroup: $(cat "$results/pod.memgov.log")"
[[ $(sed -n 's/^0:://p' "/proc/$governor/cgroup") == "${pod#/sys/fs/cgroup}/memgov" ]] || fail "memgov is not in container B"
ok "container B: memgov found mariadbd pid $MARIADB_PID, cgroup /../db read through /proc/PID/root"

python3 "$sessions" "$sock" leaky leaky leaky 3 2 80 >"$results/pod.leaky.log" &
leaky=$!
for _ in $(seq 450); do
        grep -q -- '-> reset [0-9]* of' "$results/pod.memgov.log" && break
        grep -q '^oom_kill [1-9]' "$pod/db/memory.events" && break
        sleep 0.2
done
kill "$leaky" 2>/dev/null || true
kill "$governor"; wait "$governor" || true
grep -E 'read-only|-> |throttle skipped' "$results/pod.memgov.log" || true

[[ $(grep -c 'memory.high and memory.max cannot be set, so there is no throttling' "$results/pod.memgov.log") == 1 ]] ||
        fail "the read-only cgroup file system was not reported exactly once"
grep -q 'throttle skipped: the cgroup file system is read-only here' "$results/pod.memgov.log" ||
        fail "throttling was not held back"
grep -q -- '-> memory.high' "$results/pod.memgov.log" && fail "memory.high was written"
[[ $(cat "$pod/db/memory.high") == max ]] || fail "memory.high is $(cat "$pod/db/memory.high")"
grep -q -- '-> .*malloc_trim in thread' "$results/pod.memgov.log" || fail "no trim injected across the containers"
grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$results/pod.memgov.log" ||
        fail "no session reset over the server's private socket"
grep -q '^oom_kill 0' "$pod/db/memory.events" || fail "the server was OOM-killed"
ok "read-only cgroup said once, no throttling; trim injected and sessions reset across the containers; oom_kill 0"

# Container B with the host's hierarchy (a writable hostPath mount at /host/cgroup).
( echo "$BASHPID" >"$pod/memgov/cgroup.procs"
  exec "$container" --host-cgroup /host/cgroup -- "$build/memgov" run --policy "$policy" --cgroup-root /host/cgroup \
        --socket /run/memgov/pod2.sock --state-dir "" ) 2>"$results/pod2.memgov.log" &
governor=$!
for _ in $(seq 100); do grep -q -- '-> memory.high of' "$results/pod2.memgov.log" && break; sleep 0.2; done
high_set=$(cat "$pod/db/memory.high")
kill "$governor"; wait "$governor" || true
grep -q "governing mariadbd pid $MARIADB_PID (${pod#/sys/fs/cgroup}/db)" "$results/pod2.memgov.log" ||
        fail "with the host hierarchy, the cgroup was not found by its path: $(head -5 "$results/pod2.memgov.log")"
grep -q 'read-only' "$results/pod2.memgov.log" && fail "the writable hierarchy was taken for read-only"
grep -q -- '-> memory.high of .* is now' "$results/pod2.memgov.log" || fail "memory.high was not set: $(cat "$results/pod2.memgov.log")"
[[ $high_set != max ]] || fail "memory.high was still max in the cgroup while memgov ran"
[[ $(cat "$pod/db/memory.high") == max ]] || fail "memgov stopped and left memory.high at $(cat "$pod/db/memory.high")"
ok "host hierarchy at /host/cgroup: cgroup ${pod#/sys/fs/cgroup}/db found, memory.high set to $high_set, put back to max on stopping"

# Container B as a kubelet makes it from docs/kubernetes/ as shipped: its args, capabilities and
# read-only root from statefulset.yaml; its volumes laid out on the "node" as the kubelet lays
# them out (tests/lib/kubelet.sh) and mounted where the manifest says: the ConfigMap's policy
# and the Secret's option file behind the atomic writer's "..data" links, emptyDirs of mode 0777
# for the state and the control socket, the server's socket directory shared with container A.
# The objects' data come from configmap.yaml and secret-example.yaml; the policy with the one
# change its comment asks for after the dry run (dry-run = no), and this test's pace.
kube=$(cd "$here/../docs/kubernetes" && pwd)
pod_tool=$here/lib/kube-pod.py

# The ConfigMap's policy, live (its comment: dry-run = no once the logs show the decisions
# expected), at this test's pace, and without a graceful restart: no kubelet starts the server
# again here.
policy_as_applied() {
        sed -i 's/^\(\s*\)dry-run = yes$/\1dry-run = no/' "$1"
        grep -q '^dry-run = no$' "$1" || fail "configmap.yaml's memgov.ini has no 'dry-run = yes' line"
        cat >>"$1" <<'EOF'

# The test's pace (tests/vm/policies/pod.ini): a growth of seconds, not hours.
[governor]
settle = 3s
[sampling]
interval = 1s
fast-interval = 500ms
[trend]
window = 40s
points = 20
min-points = 5
[trim]
at = 50%
eta = 60s
cooldown = 10s
min-gain = 4M
backoff = 20s
[reset]
at = 70%
eta = 25s
cooldown = 4s
max-per-step = 4
min-memory = 16M
min-idle = 0
min-gain = 4M
backoff = 6s
[restart]
enabled = no
EOF
}

# Lays out the volumes of container B under $node/$1 and sets vols (container.sh's --volume
# options), args, caps and read_only_root. $2: the pod's fsGroup, or none.
kubelet_pod() {
        local at=$node/$1 fs_group=$2 what rest path mode name kind medium dmode source items kv key
        mkdir -p "$at/data"
        vols=() args=() caps=() read_only_root=no
        while read -r what rest; do
                case $what in
                args) eval "args=($rest)" ;;
                capabilities) read -r -a caps <<<"$rest" ;;
                read-only-root) read_only_root=$rest ;;
                run-as) [[ $rest == 0 ]] || fail "the manifest runs memgov as uid $rest: this test runs it as root" ;;
                mount)
                        read -r path mode name kind medium dmode source items <<<"$rest"
                        case $kind in
                        emptyDir)
                                if [[ $name == run-mysqld ]]; then
                                        # The one container A mounts too, made with it.
                                        vols+=(--volume "$node/run-mysqld:$path:$mode")
                                        continue
                                fi
                                kubelet_empty_dir "$at/$name" "$medium"
                                [[ $fs_group == none ]] || kubelet_fs_group "$at/$name" "$fs_group"
                                ;;
                        configMap | secret)
                                local files=() object=ConfigMap
                                [[ $kind == secret ]] && object=Secret
                                IFS=, read -r -a items <<<"$items"
                                for kv in "${items[@]}"; do
                                        key=${kv%%=*}
                                        python3 "$pod_tool" "$kube" data "$object" "$source" "$key" >"$at/data/$key"
                                        [[ $key != memgov.ini ]] || policy_as_applied "$at/data/$key"
                                        files+=("${kv#*=}=$at/data/$key")
                                done
                                kubelet_atomic_volume "$at/$name" "$medium" "$dmode" "${files[@]}"
                                [[ $fs_group == none ]] || kubelet_fs_group "$at/$name" "$fs_group" ro
                                ;;
                        esac
                        vols+=(--volume "$at/$name:$path:$mode")
                        ;;
                esac
        done <<<"$(python3 "$pod_tool" "$kube" container memgov)"
        [[ $read_only_root == yes ]] && vols=(--read-only-root "${vols[@]}")
        (( ${#args[@]} )) || fail "no args for the memgov container in statefulset.yaml"
}

# Starts memgov as the container's entrypoint would (the Containerfile's "memgov run" and the
# manifest's args), with the manifest's capabilities only and no_new_privs
# (allowPrivilegeEscalation: false); its log in $results/$1.log.
start_kube_memgov() {
        local bounding=-all cap
        for cap in "${caps[@]}"; do bounding+=",+$cap"; done
        ( echo "$BASHPID" >"$pod/memgov/cgroup.procs"
          exec "$container" "${vols[@]}" -- setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all \
                --bounding-set="$bounding" -- "$build/memgov" run "${args[@]}" ) 2>"$results/$1.log" &
        governor=$!
        for _ in $(seq 100); do grep -q 'sql: \(a session kept\|cannot keep\)' "$results/$1.log" && break; sleep 0.2; done
}

mariadb_sql "$(python3 "$pod_tool" "$kube" data Secret memgov-sql memgov-user.sql)"
kubelet_pod shipped none
[[ -L $node/shipped/memgov-sql/client.cnf && -L $node/shipped/memgov-sql/..data &&
   $(stat -c %a "$node/shipped/memgov-state") == 777 ]] ||
        fail "the volumes are not laid out as a kubelet does: $(ls -la "$node/shipped/memgov-sql" "$node/shipped")"
start_kube_memgov kube
log=$results/kube.log
grep -q "governing mariadbd pid $MARIADB_PID" "$log" || fail "memgov as shipped did not find the server: $(cat "$log")"
grep -q 'sql: a session kept open for the actions' "$log" ||
        fail "no SQL session with the Secret's option file behind its ..data links: $(grep sql "$log")"
grep -q 'state directory /var/lib/memgov is writable by everyone (mode 0777): the state is kept in /var/lib/memgov/private' "$log" ||
        fail "the emptyDir state directory was not used through private/: $(grep -i state "$log")"
grep -q 'kept in memory only' "$log" && fail "the state was kept in memory only: $(grep -i state "$log")"
grep 'missing capabilities' "$log" && fail "the manifest's capabilities are not what the shipped policy needs"
# The manifest's liveness probe, inside the container, and the metrics on the pod's loopback.
nsenter -t "$governor" -m -- "$build/memgov" status --probe || fail "memgov status --probe failed in the container"
python3 -c 'import urllib.request, sys; t = urllib.request.urlopen("http://127.0.0.1:9187/metrics", timeout=5).read().decode(); sys.exit(0 if "memgov_samples_total" in t else 1)' ||
        fail "no metrics on 127.0.0.1:9187 ([metrics] listen of the ConfigMap)"
ok "as a kubelet lays out docs/kubernetes/: policy and option file through ..data links, state in the emptyDir's private/, probe and metrics answer"
python3 "$sessions" "$sock" leaky leaky leaky 3 2 80 >"$results/kube.leaky.log" &
leaky=$!
for _ in $(seq 450); do
        grep -q -- '-> reset [0-9]* of' "$log" && break
        grep -q '^oom_kill [1-9]' "$pod/db/memory.events" && break
        sleep 0.2
done
kill "$leaky" 2>/dev/null || true
kill "$governor"; wait "$governor" || true
grep -E -- '-> |refused|Read-only|read-only' "$log" || true
grep -q -- '-> .*malloc_trim in thread' "$log" || fail "no trim injected with the manifest's capabilities"
grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$log" || fail "no session reset with the Secret's credentials"
# (The cgroup file system is read-only too, as the runtime mounts it: PSI triggers are not
# armed there, said once; anything else read-only is a write outside the volumes.)
grep 'Read-only file system' "$log" | grep -v 'PSI: cannot open memory.pressure' &&
        fail "memgov wrote outside its volumes"
grep -q '^oom_kill 0' "$pod/db/memory.events" || fail "the server was OOM-killed"
[[ $(stat -c %a "$node/shipped/memgov-state/private" 2>/dev/null) == 700 ]] || fail "no private/ (0700) in the state emptyDir"
ok "with the manifest's capabilities ($(IFS=,; echo "${caps[*]}")), a read-only root and no_new_privs: trim injected, sessions reset; oom_kill 0"

# What is really untrusted is still refused: a pod fsGroup makes the Secret's option file
# readable by its group (refused, and said why; the state directory, group-owned too, still
# serves), and a Secret whose ..data leads out of the volume.
kubelet_pod fs-group 2000
start_kube_memgov kube-fs-group
kill "$governor"; wait "$governor" || true
grep -q 'client.cnf is readable by its group (mode 0440; .*fsGroup' "$results/kube-fs-group.log" ||
        fail "a Secret readable by the pod's fsGroup was not refused: $(grep sql "$results/kube-fs-group.log")"
grep -q 'state directory /var/lib/memgov is writable by everyone (mode 2777): the state is kept in' "$results/kube-fs-group.log" ||
        fail "the fsGroup's emptyDir was not used: $(grep -i state "$results/kube-fs-group.log")"
kubelet_pod escape none
mkdir -p "$node/escape/outside"
install -m 0400 "$node/escape/data/client.cnf" "$node/escape/outside/client.cnf"
ln -sfn "$node/escape/outside" "$node/escape/memgov-sql/..data"
start_kube_memgov kube-escape
kill "$governor"; wait "$governor" || true
grep -q 'client.cnf: is a symbolic link that leads out of its directory' "$results/kube-escape.log" ||
        fail "a Secret's link out of its volume was followed: $(grep sql "$results/kube-escape.log")"
ok "refused: a Secret readable by the pod's fsGroup, a Secret whose ..data leads out of the volume"
mariadb_stop
echo "pod-sidecar: PASS"
