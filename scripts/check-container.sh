#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Checks the container image (Containerfile) and the Kubernetes manifests (docs/kubernetes/).
#   check-container.sh          check; exit status 0 only when everything holds
#   check-container.sh --keep   the same, and keep the temporary directory (its path is printed)
#
# With a podman or docker that can reach its daemon, the image is built for real; memgov check
# runs in it on the ConfigMap's policy and its ldd must find every library. Without one, the
# build stage is replayed on this machine (Debian 12, the image's base):
#   - its apt-get packages are installed, its COPY lines stage the sources in a temporary
#     directory, its meson commands run there, and meson install --destdir fills a staging tree;
#   - every file the runtime stage copies from the build stage must be in that tree;
#   - every shared library of memgov and memgov_udf.so must come from a package the runtime
#     stage installs (or one they depend on), and each of those packages must be needed;
#   - memgov check, from that tree, must accept the ConfigMap's policy.
# Either way, the manifests must pass yamllint and agree with each other and with the
# Containerfile (ports, mount paths, Secret keys, capabilities).
# Runs as root (through sudo when started by another user) and installs what it needs with
# apt-get, like setup-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

keep=0
for a in "$@"; do
        case $a in
        --keep) keep=1 ;;
        -h|--help) sed -n '3,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "check-container: unknown argument '$a' (expected --keep)" >&2; exit 2 ;;
        esac
done

fail() {
        echo "check-container: $*" >&2
        exit 1
}

# As root: apt-get installs, and memgov check judges the policy file as the sidecar, running as
# root, does (owner, mode).
if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null || fail "need root (or sudo)"
        exec sudo "$0" "$@"
fi

# Installs the Debian packages given that are missing (the same way as setup-deps.sh).
ensure_pkgs() {
        local missing=() p
        for p in "$@"; do
                if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
                        missing+=("$p")
                fi
        done
        [[ ${#missing[@]} -eq 0 ]] && return 0
        echo "check-container: installing ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
                apt-get update -qq
                apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        fi
}

# yamllint brings python3 and its yaml module, which the checks below read the manifests with:
# Debian's python3, whatever python3 comes first in PATH.
ensure_pkgs python3 yamllint
py=/usr/bin/python3

tmp=$(mktemp -d -t memgov-container.XXXXXX)
if [[ $keep -eq 1 ]]; then
        trap 'echo "check-container: kept $tmp" >&2' EXIT
else
        trap 'rm -rf "$tmp"' EXIT
fi

# The checks, in Python: the Containerfile's syntax (continued lines, exec forms, stages) and
# the manifests (YAML) are no job for sed.
cat >"$tmp/check.py" <<'PY'
import json, os, re, shlex, shutil, subprocess, sys

import yaml

CONTAINERFILE = "Containerfile"
K8S = "docs/kubernetes"
problems = []


def problem(msg):
    problems.append(msg)


def die(msg):
    print("check-container: " + msg, file=sys.stderr)
    sys.exit(1)


# ---- Containerfile ----------------------------------------------------------------------------

def instructions(path):
    """(line number, INSTRUCTION, arguments) with continued lines joined and comments dropped."""
    out, buf, start = [], "", 0
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not buf and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if buf and line.lstrip().startswith("#"):
                continue
            if not buf:
                start = n
            if line.endswith("\\"):
                buf += line[:-1] + " "
                continue
            buf += line
            word, _, rest = buf.strip().partition(" ")
            out.append((start, word.upper(), rest.strip()))
            buf = ""
    if buf:
        die(f"{path}:{start}: the last instruction ends with a line continuation")
    return out


def exec_form(args):
    """The argv of an exec-form (JSON) or shell-form argument."""
    if args.startswith("["):
        try:
            v = json.loads(args)
        except ValueError as e:
            die(f"{CONTAINERFILE}: not a JSON array: {args} ({e})")
        return v
    return ["/bin/sh", "-c", args]


def parse_containerfile():
    stages = []
    for n, ins, args in instructions(CONTAINERFILE):
        if ins == "FROM":
            m = re.match(r"^(\S+)(?:\s+AS\s+(\S+))?$", args, re.I)
            if not m:
                die(f"{CONTAINERFILE}:{n}: FROM {args}: expected IMAGE [AS NAME]")
            stages.append({"line": n, "image": m.group(1), "name": m.group(2) or str(len(stages)), "ins": []})
        elif not stages:
            if ins != "ARG":
                die(f"{CONTAINERFILE}:{n}: {ins} before the first FROM")
        else:
            stages[-1]["ins"].append((n, ins, args))
    if len(stages) < 2:
        die(f"{CONTAINERFILE}: expected a build stage and a runtime stage, found {len(stages)} stage(s)")
    return stages


def copy_args(args):
    """COPY [--from=X] [--chown=..] SRC... DEST: (from, sources, dest)."""
    words = json.loads(args) if args.startswith("[") else shlex.split(args)
    frm = None
    while words and words[0].startswith("--"):
        w = words.pop(0)
        if w.startswith("--from="):
            frm = w.split("=", 1)[1]
    if len(words) < 2:
        die(f"{CONTAINERFILE}: COPY {args}: expected a source and a destination")
    return frm, words[:-1], words[-1]


def apt_packages(run):
    """The packages of every 'apt-get install' in a RUN command."""
    pkgs = []
    for part in re.split(r"&&|;|\|\|", run):
        words = shlex.split(part)
        if len(words) >= 2 and words[0] == "apt-get" and "install" in words:
            pkgs += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return pkgs


def describe():
    """Prints what the shell part needs, as shell assignments."""
    stages = parse_containerfile()
    runtime = stages[-1]
    froms = {copy_args(a)[0] for _, i, a in runtime["ins"] if i == "COPY" and copy_args(a)[0]}
    if len(froms) != 1:
        die(f"{CONTAINERFILE}: the last stage copies from {sorted(froms) or 'no stage'}: expected one build stage")
    build = next((s for s in stages if s["name"] == froms.pop()), None)
    if build is None:
        die(f"{CONTAINERFILE}: the last stage copies from a stage that does not exist")
    bpkgs = [p for _, i, a in build["ins"] if i == "RUN" for p in apt_packages(a)]
    rpkgs = [p for _, i, a in runtime["ins"] if i == "RUN" for p in apt_packages(a)]
    print("build_image=" + shlex.quote(build["image"]))
    print("runtime_image=" + shlex.quote(runtime["image"]))
    print("build_pkgs=(" + " ".join(map(shlex.quote, bpkgs)) + ")")
    print("runtime_pkgs=(" + " ".join(map(shlex.quote, rpkgs)) + ")")


def find_stages():
    stages = parse_containerfile()
    runtime = stages[-1]
    frm = next(copy_args(a)[0] for _, i, a in runtime["ins"] if i == "COPY" and copy_args(a)[0])
    return next(s for s in stages if s["name"] == frm), runtime


def map_destdir(cmd, root):
    """meson install --destdir /x: /x inside the emulated image root."""
    words = shlex.split(cmd)
    for k, w in enumerate(words):
        if w == "--destdir" and k + 1 < len(words) and words[k + 1].startswith("/"):
            words[k + 1] = root + words[k + 1]
        elif w.startswith("--destdir=/"):
            words[k] = "--destdir=" + root + w.split("=", 1)[1]
    return words


def copy_into(src, dst):
    """COPY semantics: a directory's contents go into dst; a file goes to dst, or into it when dst
    ends with / (or is a directory)."""
    if os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    else:
        if dst.endswith("/") or os.path.isdir(dst):
            os.makedirs(dst, exist_ok=True)
            dst = os.path.join(dst, os.path.basename(src))
        else:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)


def replay_build(tmp):
    """The build stage's WORKDIR, COPY and meson RUN lines, on this machine, in tmp/build-root."""
    build, _ = find_stages()
    root = os.path.join(tmp, "build-root")
    workdir = "/"
    for n, ins, args in build["ins"]:
        where = f"{CONTAINERFILE}:{n}"
        if ins == "WORKDIR":
            workdir = os.path.normpath(os.path.join(workdir, args))
            os.makedirs(root + workdir, exist_ok=True)
        elif ins in ("COPY", "ADD"):
            frm, srcs, dst = copy_args(args)
            if frm or ins == "ADD":
                die(f"{where}: {ins} {args}: only COPY from the build context is replayed")
            target = os.path.join(workdir, dst)
            if dst.endswith("/") and not target.endswith("/"):
                target += "/"
            for s in srcs:
                if not os.path.exists(s):
                    die(f"{where}: COPY {s}: no such file in the build context")
                copy_into(s, root + target)
        elif ins == "RUN":
            argv = exec_form(args)
            cmd = argv[2] if argv[:2] == ["/bin/sh", "-c"] else shlex.join(argv)
            if apt_packages(cmd):
                print(f"== {where}: apt-get: installed on this machine already")
                continue
            if not cmd.startswith("meson "):
                die(f"{where}: RUN {cmd}: only apt-get and meson commands are replayed (add the step "
                    "to this script)")
            words = map_destdir(cmd, root)
            print(f"== {where}: {cmd}", flush=True)
            r = subprocess.run(words, cwd=root + workdir)
            if r.returncode != 0:
                die(f"{where}: RUN {cmd}: exit status {r.returncode}")
        elif ins in ("ENV", "ARG", "LABEL", "USER"):
            die(f"{where}: {ins} in the build stage is not replayed (add it to this script)")
    return root


def runtime_facts():
    """The runtime stage's ENTRYPOINT, CMD and USER."""
    _, runtime = find_stages()
    facts = {"entrypoint": None, "cmd": None, "user": None}
    for n, ins, args in runtime["ins"]:
        if ins == "ENTRYPOINT":
            facts["entrypoint"] = exec_form(args)
        elif ins == "CMD":
            facts["cmd"] = exec_form(args)
        elif ins == "USER":
            facts["user"] = args
    return facts


def assemble_runtime(tmp, build_root):
    """The runtime stage's COPY --from lines, into tmp/runtime-root."""
    _, runtime = find_stages()
    root = os.path.join(tmp, "runtime-root")
    for n, ins, args in runtime["ins"]:
        where = f"{CONTAINERFILE}:{n}"
        if ins == "COPY":
            frm, srcs, dst = copy_args(args)
            if not frm:
                problem(f"{where}: COPY {args}: the runtime stage copies from the build context, not the build")
                continue
            for s in srcs:
                src = build_root + s
                if not os.path.exists(src):
                    problem(f"{where}: COPY --from={frm} {s}: the build stage's tree has no {s}")
                    continue
                copy_into(src, root + dst)
    return root


def elf_files(root):
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    yield p


def owner_package(lib):
    """The Debian package that ships lib, trying both sides of the merged /usr."""
    real = os.path.realpath(lib)
    cands = []
    for p in (lib, real):
        cands += [p, p[4:] if p.startswith("/usr/") else "/usr" + p]
    for c in cands:
        r = subprocess.run(["dpkg-query", "-S", c], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout:
            for line in r.stdout.splitlines():
                pkgs, _, path = line.partition(": ")
                if path == c:
                    return pkgs.split(",")[0].split(":")[0].strip()
    return None


def dependency_closure(pkgs):
    """The packages pkgs need, recursively (Depends and Pre-Depends)."""
    r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                        "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + pkgs,
                       capture_output=True, text=True)
    if r.returncode != 0:
        die("apt-cache depends " + " ".join(pkgs) + ": " + r.stderr.strip())
    out = set(pkgs)
    for line in r.stdout.splitlines():
        if not line.startswith(" "):
            out.add(line.strip().strip("<>").split(":")[0])
    return out


def check_libraries(root, runtime_pkgs):
    for p in runtime_pkgs:
        r = subprocess.run(["apt-cache", "policy", p], capture_output=True, text=True)
        if "Candidate:" not in r.stdout or "Candidate: (none)" in r.stdout:
            problem(f"{CONTAINERFILE}: runtime package {p} does not exist in this machine's Debian release")
    allowed = dependency_closure(runtime_pkgs)
    used = set()
    indirect = []  # libraries missing only because of a missing direct dependency, said once
    pkgs_of = {}
    for f in sorted(elf_files(root)):
        name = f[len(root):]
        r = subprocess.run(["ldd", f], capture_output=True, text=True)
        if r.returncode != 0:
            problem(f"{name}: ldd failed: {r.stderr.strip()}")
            continue
        needed = subprocess.run(["objdump", "-p", f], capture_output=True, text=True).stdout
        direct = set(re.findall(r"^\s*NEEDED\s+(\S+)", needed, re.M))
        for line in r.stdout.splitlines():
            m = re.match(r"^\s*(\S+)\s+=>\s+(\S+)", line) or re.match(r"^\s*(/\S+)\s+\(", line)
            if not m:
                continue
            soname, path = (m.group(1), m.group(2)) if m.lastindex == 2 else (os.path.basename(m.group(1)), m.group(1))
            if path == "not":
                problem(f"{name}: needs {soname}, which is not found")
                continue
            pkg = owner_package(path)
            if pkg is None:
                problem(f"{name}: {soname} ({path}) belongs to no Debian package on this machine")
            elif pkg not in allowed and soname in direct:
                problem(f"{name}: {soname} comes from {pkg}, which the runtime stage does not install "
                        f"(add it to the apt-get install line of the last stage)")
            elif pkg not in allowed:
                indirect.append(f"{soname} ({pkg})")
            elif soname in direct:
                used.add(pkg)
            if pkg:
                pkgs_of.setdefault(name, set()).add(pkg)
    for name, pkgs in sorted(pkgs_of.items()):
        print(f"   {name}: libraries from {' '.join(sorted(pkgs))}")
    if indirect and not any(" which the runtime stage does not install" in p for p in problems):
        problem(f"{CONTAINERFILE}: libraries loaded through others come from packages that neither the runtime "
                f"stage nor their dependencies install: {', '.join(indirect)}")
    for p in runtime_pkgs:
        if p not in used:
            problem(f"{CONTAINERFILE}: runtime package {p} provides no library memgov or memgov_udf.so loads "
                    "(drop it, or say here why it is needed)")


def check_build_packages(build_pkgs):
    """setup-deps.sh's build packages must all be in the build stage (scdoc only with man pages,
    cairo only with charts)."""
    text = open("scripts/setup-deps.sh").read()
    m = re.search(r"^build_pkgs=\(([^)]*)\)", text, re.M)
    if not m:
        problem("scripts/setup-deps.sh: no build_pkgs=(...) list")
        return
    build, _ = find_stages()
    runs = " ".join(a for _, i, a in build["ins"] if i == "RUN")
    for p in m.group(1).split():
        if p == "scdoc" and "-Dman=disabled" in runs:
            continue
        if p == "libcairo2-dev" and "-Dplot=disabled" in runs:
            continue
        if p not in build_pkgs:
            problem(f"{CONTAINERFILE}: the build stage does not install {p} (scripts/setup-deps.sh builds with it)")


# ---- manifests --------------------------------------------------------------------------------

def load_docs(name):
    with open(os.path.join(K8S, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def ini_sections(text):
    out, sec = {}, None
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s.startswith("[") and s.endswith("]"):
            sec = s[1:-1].strip()
            out.setdefault(sec, {})
        elif "=" in s and sec:
            k, _, v = s.partition("=")
            out[sec][k.strip()] = v.strip()
    return out


def container(pod, name):
    c = next((c for c in pod["containers"] if c["name"] == name), None)
    if c is None:
        die(f"{K8S}/statefulset.yaml: no container named {name}")
    return c


def mount_for(c, path):
    """The volume mount of container c that holds path, the deepest one."""
    best = None
    for m in c.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if (path == mp or path.startswith(mp + "/")) and (best is None or len(mp) > len(best["mountPath"])):
            best = m
    return best


def volume(pod, name):
    return next((v for v in pod.get("volumes", []) if v["name"] == name), None)


def volume_file(pod, mount, path):
    """The volume of mount, and the key/mode giving the file at path inside it."""
    v = volume(pod, mount["name"])
    rel = path[len(mount["mountPath"].rstrip("/")) + 1:]
    if "subPath" in mount:
        rel = mount["subPath"]
    for kind in ("configMap", "secret"):
        if v and kind in v:
            src = v[kind]
            items = src.get("items")
            mode = src.get("defaultMode", 0o644)
            if items is None:
                return v, kind, rel, mode
            for it in items:
                if it["path"] == rel:
                    return v, kind, it["key"], it.get("mode", mode)
            return v, kind, None, mode
    return v, None, None, None


def check_manifests(facts, ini_path):
    cm = load_docs("configmap.yaml")
    sts_docs = load_docs("statefulset.yaml")
    secrets = {d["metadata"]["name"]: d for d in load_docs("secret-example.yaml") if d["kind"] == "Secret"}
    kust = load_docs("kustomization.yaml")[0]

    for r in kust.get("resources", []):
        if not os.path.exists(os.path.join(K8S, r)):
            problem(f"{K8S}/kustomization.yaml: resource {r} does not exist")
    sts = next((d for d in sts_docs if d["kind"] == "StatefulSet"), None)
    if sts is None:
        die(f"{K8S}/statefulset.yaml: no StatefulSet")
    tpl = sts["spec"]["template"]
    pod = tpl["spec"]
    mg = container(pod, "memgov")
    db = container(pod, "mariadb")
    here = f"{K8S}/statefulset.yaml"

    # The image: the same repository kustomization.yaml rewrites.
    repo = mg["image"].rsplit(":", 1)[0]
    if not any(i.get("name") == repo for i in kust.get("images", [])):
        problem(f"{K8S}/kustomization.yaml: images does not name {repo}, the memgov container's image")

    # The policy: the file the memgov container is told to read is the ConfigMap's key.
    args = mg.get("command") or facts["entrypoint"] or []
    args = list(args) + list(mg.get("args") if "args" in mg else facts["cmd"] or [])
    if facts["entrypoint"] != ["/usr/bin/memgov", "run"]:
        problem(f"{CONTAINERFILE}: ENTRYPOINT is {facts['entrypoint']}, expected [\"/usr/bin/memgov\", \"run\"]")
    policy_path = None
    for k, a in enumerate(args):
        if a in ("--policy", "-p") and k + 1 < len(args):
            policy_path = args[k + 1]
        elif a.startswith("--policy="):
            policy_path = a.split("=", 1)[1]
    cm_doc = next((d for d in cm if d["kind"] == "ConfigMap"), None)
    if cm_doc is None:
        die(f"{K8S}/configmap.yaml: no ConfigMap")
    policy_key = None
    if policy_path is None:
        problem(f"{here}: the memgov container gives no --policy")
    else:
        m = mount_for(mg, policy_path)
        v, kind, key, mode = volume_file(pod, m, policy_path) if m else (None, None, None, None)
        if kind != "configMap" or v["configMap"]["name"] != cm_doc["metadata"]["name"] or key not in cm_doc["data"]:
            problem(f"{here}: --policy {policy_path} is not a key of ConfigMap {cm_doc['metadata']['name']}")
        else:
            policy_key = key
            if mode & 0o022:
                problem(f"{here}: the policy's mode {mode:04o} is writable by group or others: memgov, as root, "
                        "refuses it")
    if policy_key is None:
        die("no policy to check")
    policy_text = cm_doc["data"][policy_key]
    policy = ini_sections(policy_text)

    # Metrics: one port everywhere, and an address Prometheus can reach.
    listen = policy.get("metrics", {}).get("listen", "")
    ann = tpl["metadata"].get("annotations", {})
    ports = {p.get("name"): p["containerPort"] for p in mg.get("ports", [])}
    if ann.get("prometheus.io/scrape") == "true":
        m = re.match(r"^(?:\[(.*)\]|([^:]*)):(\d+)$", listen) or re.match(r"^()()(\d+)$", listen)
        if not m:
            problem(f"{K8S}/configmap.yaml: the pod is scraped but [metrics] listen is '{listen}'")
        else:
            addr, port = m.group(1) or m.group(2) or "127.0.0.1", int(m.group(3))
            if addr.startswith("127.") or addr == "::1":
                problem(f"{K8S}/configmap.yaml: [metrics] listen = {listen}: Prometheus scrapes the pod IP, "
                        "not the loopback (listen = 0.0.0.0:PORT)")
            if str(port) != str(ann.get("prometheus.io/port")):
                problem(f"{here}: prometheus.io/port is {ann.get('prometheus.io/port')}, "
                        f"[metrics] listen port is {port}")
            if ports.get("metrics") != port:
                problem(f"{here}: the memgov container's metrics port is {ports.get('metrics')}, "
                        f"[metrics] listen port is {port}")

    # SQL: the socket on a volume both containers mount; the option file from a Secret, readable
    # by its owner only.
    sql = policy.get("sql", {})
    sock = sql.get("socket", "auto")
    if sock not in ("auto", ""):
        a, b = mount_for(mg, sock), mount_for(db, sock)
        if not a or not b or a["name"] != b["name"] or a["mountPath"] != b["mountPath"]:
            problem(f"{here}: [sql] socket {sock} is not on a volume both containers mount at the same path")
    of = sql.get("option-file", "")
    if of:
        m = mount_for(mg, of)
        v, kind, key, mode = volume_file(pod, m, of) if m else (None, None, None, None)
        if kind != "secret":
            problem(f"{here}: [sql] option-file {of} is on no Secret volume of the memgov container")
        else:
            name = v["secret"]["secretName"]
            if mode & 0o077:
                problem(f"{here}: the option file's mode is {mode:04o}: memgov refuses one its group or others "
                        "can read (defaultMode: 0400)")
            if name not in secrets or key not in secrets[name].get("stringData", {}):
                problem(f"{K8S}/secret-example.yaml: Secret {name} has no key {key} ([sql] option-file)")
            if pod.get("securityContext", {}).get("fsGroup") is not None:
                problem(f"{here}: the pod sets fsGroup, which makes {of} readable by its group: memgov refuses it")

    # Every Secret key the pod reads exists in the example.
    for v in pod.get("volumes", []):
        s = v.get("secret")
        if s:
            for it in s.get("items", []):
                if it["key"] not in secrets.get(s["secretName"], {}).get("stringData", {}):
                    problem(f"{K8S}/secret-example.yaml: Secret {s['secretName']} has no key {it['key']}")
    for c in pod["containers"]:
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref["key"] not in secrets.get(ref["name"], {}).get("stringData", {}):
                problem(f"{K8S}/secret-example.yaml: Secret {ref['name']} has no key {ref['key']}")

    # What the sidecar needs from the pod.
    if pod.get("shareProcessNamespace") is not True:
        problem(f"{here}: shareProcessNamespace must be true: memgov finds mariadbd among the pod's processes")
    sc = mg.get("securityContext", {})
    caps = sc.get("capabilities", {})
    if "ALL" not in caps.get("drop", []) or sorted(caps.get("add", [])) != ["DAC_READ_SEARCH", "KILL", "SYS_PTRACE"]:
        problem(f"{here}: the memgov container must drop ALL capabilities and add exactly SYS_PTRACE, KILL and "
                "DAC_READ_SEARCH")
    if sc.get("runAsUser") != 0:
        problem(f"{here}: the memgov container must run as uid 0: added capabilities reach no other user "
                "(the Containerfile says why)")
    if sc.get("readOnlyRootFilesystem"):
        for d in ("/run/memgov", "/var/lib/memgov"):
            m = mount_for(mg, d)
            if not m or m.get("readOnly"):
                problem(f"{here}: the root file system is read-only and {d} (memgov writes there) is no "
                        "writable volume")
    probe = mg.get("livenessProbe", {}).get("exec", {}).get("command", [])
    if probe and probe[0] not in ("/usr/bin/memgov", "memgov"):
        problem(f"{here}: the liveness probe runs {probe[0]}, not memgov")
    if facts["user"] != "10001:10001":
        problem(f"{CONTAINERFILE}: the runtime stage's USER is {facts['user']}, expected 10001:10001")

    with open(ini_path, "w") as f:
        f.write(policy_text)
    os.chmod(ini_path, 0o644)
    # Where the policy starts in configmap.yaml, to turn memgov check's line numbers into its own.
    with open(os.path.join(K8S, "configmap.yaml")) as f:
        for n, line in enumerate(f, 1):
            if re.match(rf"^\s+{re.escape(policy_key)}:\s*\|", line):
                with open(ini_path + ".line", "w") as o:
                    o.write(str(n))
                break


def main():
    what = sys.argv[1]
    if what == "describe":
        describe()
        return
    tmp = sys.argv[2]
    if what == "manifests":
        check_build_packages(sys.argv[3].split())
        check_manifests(runtime_facts(), os.path.join(tmp, "memgov.ini"))
    elif what == "replay":
        build_pkgs = sys.argv[3].split()
        runtime_pkgs = sys.argv[4].split()
        check_build_packages(build_pkgs)
        build_root = replay_build(tmp)
        print("== runtime stage: COPY --from the build stage", flush=True)
        root = assemble_runtime(tmp, build_root)
        print("== runtime stage: shared libraries and their packages", flush=True)
        check_libraries(root, runtime_pkgs)
        check_manifests(runtime_facts(), os.path.join(tmp, "memgov.ini"))
    for p in problems:
        print("check-container: " + p, file=sys.stderr)
    sys.exit(1 if problems else 0)


main()
PY

# What the Containerfile declares: its two base images and package lists.
build_image='' runtime_image='' build_pkgs=() runtime_pkgs=()
eval "$("$py" "$tmp/check.py" describe)"
echo "== Containerfile: build on $build_image, run on $runtime_image"

echo "== yamllint"
yamllint -s docs/kubernetes/*.yaml .yamllint || fail "yamllint found problems in docs/kubernetes/"

policy_refused() {
        local at
        at=$(cat "$tmp/memgov.ini.line" 2>/dev/null || echo "?")
        fail "memgov check refuses the ConfigMap's policy: its line 1 is line $((at + 1)) of docs/kubernetes/configmap.yaml"
}

runtime=
for rt in podman docker; do
        if command -v "$rt" >/dev/null && "$rt" info >/dev/null 2>&1; then
                runtime=$rt
                break
        fi
done

if [[ -n $runtime ]]; then
        "$py" "$tmp/check.py" manifests "$tmp" "${build_pkgs[*]}" || fail "the Containerfile or the manifests have problems (above)"
        echo "== $runtime build"
        image=localhost/memgov-check:latest
        "$runtime" build -f Containerfile -t "$image" . || fail "$runtime build failed"
        [[ $("$runtime" image inspect -f '{{json .Config.Entrypoint}}' "$image") == '["/usr/bin/memgov","run"]' ]] ||
                fail "the image's entrypoint is not [\"/usr/bin/memgov\", \"run\"]"
        [[ $("$runtime" image inspect -f '{{.Config.User}}' "$image") == "10001:10001" ]] ||
                fail "the image's user is not 10001:10001"
        echo "== shared libraries in the image"
        for f in /usr/bin/memgov /usr/lib/memgov/memgov_udf.so; do
                out=$("$runtime" run --rm --entrypoint ldd "$image" "$f") || fail "ldd $f in the image failed"
                if grep -q "not found" <<<"$out"; then
                        fail "in the image, $f misses libraries: $(grep 'not found' <<<"$out")"
                fi
        done
        echo "== memgov check on the ConfigMap's policy, in the image, as the pod runs it"
        "$runtime" run --rm "$image" --help >/dev/null || fail "memgov run --help fails in the image"
        "$runtime" run --rm --user 0:0 --cap-drop ALL --cap-add SYS_PTRACE --cap-add KILL --cap-add DAC_READ_SEARCH --read-only \
                -v "$tmp/memgov.ini:/etc/memgov/memgov.ini:ro,Z" --entrypoint /usr/bin/memgov "$image" \
                check /etc/memgov/memgov.ini || policy_refused
        echo "== the image and the manifests are consistent"
        exit 0
fi

echo "== no podman or docker daemon: replaying the build stage of Containerfile on this machine"
# shellcheck source=/dev/null
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-unknown}")
[[ $runtime_image == *"$codename"* ]] ||
        echo "check-container: warning: this machine runs Debian $codename, the image $runtime_image:" \
             "packages are checked against this machine's release" >&2
# objdump lists each binary's own NEEDED libraries.
ensure_pkgs "${build_pkgs[@]}" binutils
"$py" "$tmp/check.py" replay "$tmp" "${build_pkgs[*]}" "${runtime_pkgs[*]}" ||
        fail "the Containerfile or the manifests have problems (above)"

echo "== memgov check on the ConfigMap's policy"
"$tmp/runtime-root/usr/bin/memgov" check "$tmp/memgov.ini" || policy_refused
echo "== the Containerfile and the manifests are consistent"
