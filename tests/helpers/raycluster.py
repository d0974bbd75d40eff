"""A real Ray cluster on this machine for tests and benchmarks: a head and extra nodes, each
started with `ray start --block` and the resource `assay_docker`, all inside one private
network namespace that has only a loopback interface.

Why a namespace: Ray rewrites a node address of 127.0.0.1 to the host's address and its gRPC
servers listen on every interface. In a namespace with only `lo`, "every interface" is
loopback, so nothing of the test cluster is reachable from the network. The Docker engine is
reached through its unix socket, which works from any network namespace.

Token authentication is on (RAY_AUTH_MODE=token, a random token in a file of the cluster's
temp dir given as RAY_AUTH_TOKEN_PATH). Each node is a `ray start --block` process in its own
session; stopping it (SIGTERM) makes it stop the Ray processes it started; whatever is still
in that session after that is killed by process group. Nothing else on the machine is
touched: no `ray stop` (it stops every Ray on the host).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port_in(netns_pid: int) -> int:
    """A free TCP port inside the namespace (bind port 0 there, read it back)."""
    code = "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])"
    out = subprocess.run(
        ["nsenter", f"--net=/proc/{netns_pid}/ns/net", sys.executable, "-c", code],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return int(out.stdout)


def _children(pid: int) -> list[tuple[int, str]]:
    kids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == pid:
            kids.append((int(proc.name), comm))
    return kids


@dataclass
class Node:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def raylet_pid(self) -> int:
        for pid, comm in _children(self.proc.pid):
            if comm == "raylet":
                return pid
        raise AssertionError(f"node {self.name}: no raylet under pid {self.proc.pid}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        # Its own session and process group (start_new_session): whatever it started and left.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


@dataclass
class LocalCluster:
    root: Path
    netns: subprocess.Popen[bytes]
    port: int = 0
    nodes: list[Node] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def token_path(self) -> Path:
        return self.root / "token"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(self.token_path))
        env.update(extra)
        return env

    def inside(self, argv: list[str]) -> list[str]:
        """`argv` run inside the cluster's network namespace."""
        return ["nsenter", f"--net=/proc/{self.netns.pid}/ns/net", *argv]

    def add_node(self, resources: dict[str, float], *, head: bool = False) -> Node:
        name = "head" if head else f"node{len(self.nodes)}"
        argv = [RAY, "start", "--block", "--disable-usage-stats", "--num-cpus", "1"]
        argv += ["--resources", json.dumps(resources), "--object-store-memory", "80000000"]
        if head:
            self.port = _free_port_in(self.netns.pid)
            argv += ["--head", "--port", str(self.port), "--node-ip-address", "127.0.0.1"]
            argv += ["--temp-dir", str(self.root / "ray"), "--include-dashboard=false"]
        else:
            argv += ["--address", self.address, "--node-ip-address", "127.0.0.1"]
        log = self.root / f"{name}.log"
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                self.inside(argv), env=self.env(), stdout=fh, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        node = Node(name, proc, log)
        self.nodes.append(node)
        deadline = time.monotonic() + 120
        while b"Ray runtime started" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start ({name}) failed:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        return node

    def wait_for_nodes(self, n: int, timeout: float = 90) -> None:
        code = (
            f"import ray,json;ray.init(address='{self.address}',logging_level='ERROR');"
            "print(json.dumps(sum(1 for x in ray.nodes() if x['Alive'])))"
        )
        deadline = time.monotonic() + timeout
        while True:
            out = subprocess.run(
                self.inside([sys.executable, "-c", code]), env=self.env(),
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            if out.returncode == 0 and int(out.stdout.split()[-1]) >= n:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster has not {n} live nodes: {out.stdout} {out.stderr}")
            time.sleep(1)

    def log_tails(self, limit: int = 3000) -> str:
        """The end of each node's log and of the head's GCS and raylet logs: why a cluster went
        away (CI on 65d3103 lost the head's GCS and its logs went with the temp dir)."""
        logs = [n.log for n in self.nodes]
        logs += sorted((self.root / "ray").glob("session_latest/logs/gcs_server.*"))
        logs += sorted((self.root / "ray").glob("session_latest/logs/raylet*.err"))
        parts = []
        for log in logs:
            with contextlib.suppress(OSError):
                parts.append(
                    f"--- {log.name}\n" + log.read_bytes()[-limit:].decode(errors="replace")
                )
        return "\n".join(parts)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
        if self.netns.poll() is None:
            self.netns.kill()
            self.netns.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(nodes: int = 2, slots: int = 2) -> LocalCluster:
    """A head and `nodes - 1` more nodes, each advertising `slots` of assay_docker."""
    root = Path(tempfile.mkdtemp(prefix="assay-raytest-"))
    (root / "token").write_text(secrets.token_hex(32) + "\n")
    os.chmod(root / "token", 0o600)
    netns = subprocess.Popen(
        ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec sleep infinity"],
        start_new_session=True,
    )
    cluster = LocalCluster(root, netns)
    try:
        time.sleep(0.3)  # `ip link set lo up` before anyone binds
        cluster.add_node({"assay_docker": slots}, head=True)
        for _ in range(nodes - 1):
            cluster.add_node({"assay_docker": slots})
        cluster.wait_for_nodes(nodes)
    except BaseException:
        cluster.stop()
        raise
    return cluster
