"""Runs as the candidate: looks everywhere it can for the judge, the answer key, other
containers' processes and the network, and reports what it found."""

import os
import re
import socket

NUM = re.compile(rb"\d{18}")
SKIP = ("/proc", "/sys", "/dev")


def _scan(path, out, budget):
    try:
        with open(path, "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        return budget
    out.update(m.decode() for m in NUM.findall(data))
    return budget - 1


def probe(planted):
    numbers = set()
    budget = 200_000
    for top, dirs, files in os.walk("/"):
        if top.startswith(SKIP):
            dirs[:] = []
            continue
        for f in files:
            budget = _scan(os.path.join(top, f), numbers, budget)
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for part in ("environ", "cmdline"):
                _scan(f"/proc/{pid}/{part}", numbers, budget)
    judge_paths = [p for p in ("/judge", "/state", "/exchange") if os.path.exists(p)]
    foreign = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if not any(
            k in cmd
            for k in ("docker-init", "sleep infinity", "/assay/runner.py", "/assay/call.py")
        ):
            foreign.append(cmd)
    # The test opened a listener on the host's 127.0.0.1:PORT; a candidate without network
    # reaches only its own loopback, where nothing listens.
    try:
        s = socket.create_connection(("127.0.0.1", int("__PORT__")), timeout=2)
        s.close()
        connect = "connected"
    except OSError:
        connect = "refused-or-unreachable"
    return {
        "numbers": sorted(numbers),
        "judge_paths": judge_paths,
        "foreign_processes": foreign,
        "interfaces": sorted(os.listdir("/sys/class/net")),
        "connect": connect,
        "routes": open("/proc/net/route").read().splitlines()[1:],
    }
