#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What docs/kubernetes/ asks of a kubelet, for the sidecar test to lay out (tests/lib/kubelet.sh):

  kube-pod.py DIR container NAME
      the container NAME of the StatefulSet in DIR/statefulset.yaml, one fact a line:
        args ARG...                      its args (shell-quoted)
        capabilities CAP...              securityContext.capabilities.add, lower case
        read-only-root yes|no            securityContext.readOnlyRootFilesystem
        run-as UID                       securityContext.runAsUser
        mount PATH ro|rw VOLUME KIND MEDIUM MODE SOURCE ITEMS
            each volumeMount: its volume's kind (emptyDir, configMap, secret), medium (memory or
            disk), defaultMode (octal, or -), the ConfigMap's or Secret's name (or -), and its
            items as KEY=PATH,... (without items in the manifest, every key of the object)
  kube-pod.py DIR data KIND NAME KEY
      the value of KEY in the ConfigMap or Secret NAME of any YAML file in DIR (data or stringData)
"""
import glob
import os
import shlex
import sys

import yaml


def documents(d):
    for path in sorted(glob.glob(os.path.join(d, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if isinstance(doc, dict):
                    yield doc


def die(msg):
    print(f"kube-pod.py: {msg}", file=sys.stderr)
    sys.exit(1)


def container(d, name):
    sts = [doc for doc in documents(d) if doc.get("kind") == "StatefulSet"]
    if len(sts) != 1:
        die(f"expected one StatefulSet in {d}, found {len(sts)}")
    spec = sts[0]["spec"]["template"]["spec"]
    c = next((c for c in spec["containers"] if c["name"] == name), None)
    if c is None:
        die(f"no container {name} in the StatefulSet")
    sc = c.get("securityContext", {})
    print("args " + " ".join(shlex.quote(a) for a in c.get("args", [])))
    print("capabilities " + " ".join(cap.lower() for cap in sc.get("capabilities", {}).get("add", [])))
    print("read-only-root " + ("yes" if sc.get("readOnlyRootFilesystem") else "no"))
    print(f"run-as {sc.get('runAsUser', 0)}")
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = volumes.get(m["name"])
        if v is None:
            die(f"volumeMount {m['name']} has no volume")
        if "emptyDir" in v:
            kind, medium, mode, source, items = "emptyDir", (v["emptyDir"] or {}).get("medium", "") or "disk", "-", "-", "-"
        elif "configMap" in v or "secret" in v:
            kind = "configMap" if "configMap" in v else "secret"
            s = v[kind]
            # A Secret's volume is a tmpfs; a ConfigMap's is on the node's disk.
            medium = "Memory" if kind == "secret" else "disk"
            mode = "%o" % s.get("defaultMode", 0o644)
            source = s.get("name") or s.get("secretName")
            # Without items, every key of the object, at its own name.
            items = ",".join(f"{i['key']}={i['path']}" for i in s.get("items", [])) or \
                ",".join(f"{k}={k}" for k in keys(d, "ConfigMap" if kind == "configMap" else "Secret", source)) or "-"
        else:
            die(f"volume {m['name']}: a kind this test does not lay out: {sorted(v)}")
        print(f"mount {m['mountPath']} {'ro' if m.get('readOnly') else 'rw'} {m['name']} {kind} "
              f"{'memory' if medium == 'Memory' else 'disk'} {mode} {source} {items}")


def keys(d, kind, name):
    for doc in documents(d):
        if doc.get("kind") == kind and doc.get("metadata", {}).get("name") == name:
            return sorted(set(doc.get("data") or {}) | set(doc.get("stringData") or {}))
    die(f"no {kind} {name} in {d}")


def data(d, kind, name, key):
    for doc in documents(d):
        if doc.get("kind") == kind and doc.get("metadata", {}).get("name") == name:
            for field in ("stringData", "data"):
                if key in (doc.get(field) or {}):
                    sys.stdout.write(doc[field][key])
                    return
            die(f"{kind} {name} has no key {key}")
    die(f"no {kind} {name} in {d}")


if len(sys.argv) == 4 and sys.argv[2] == "container":
    container(sys.argv[1], sys.argv[3])
elif len(sys.argv) == 6 and sys.argv[2] == "data":
    data(sys.argv[1], sys.argv[3], sys.argv[4], sys.argv[5])
else:
    die("usage: kube-pod.py DIR container NAME | DIR data KIND NAME KEY")
