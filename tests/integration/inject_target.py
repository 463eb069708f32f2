# SPDX-License-Identifier: GPL-2.0-or-later
"""Drives tests/workloads/inject-target.c for the injection tests."""
import subprocess
import time


class Target:
    def __init__(self, binary, period_ms, slack_ms=300, env=None, prefix=(), mode=None):
        self.p = subprocess.Popen(list(prefix) + [binary, str(period_ms), str(slack_ms)] + ([mode] if mode else []),
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1, env=env)
        self.tids = {}
        self.lines = []
        for line in self.p.stdout:
            line = line.strip()
            if line == "ready":
                break
            kind, name, tid = line.split()
            self.tids[name] = int(tid)
        self.pid = self.p.pid

    def command(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def feed(self):
        self.command("feed")
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the target died")
            line = line.strip()
            self.lines.append(line)
            if line.startswith("fed"):
                return

    def alive(self):
        return self.p.poll() is None

    def stop(self, timeout=30):
        self.command("stop")
        out, _ = self.p.communicate(timeout=timeout)
        self.lines += out.strip().splitlines()
        return self.p.returncode

    def failures(self):
        return [l for l in self.lines if l.startswith("FAIL")]

    def kill(self):
        if self.alive():
            self.p.kill()
            self.p.wait()
