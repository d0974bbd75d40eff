"""`assay grade-many --ray` on a real local Ray cluster (tests/helpers/raycluster.py: a head and
a second node, each advertising `assay_docker`, token authentication on, inside a private
network namespace with only loopback) grading on this machine's Docker engine.

The batch is split across both nodes; the second node's raylet is killed by its PID while it
grades: every submission must still end with a correct verdict that verifies with the driver's
key, the lost gradings are graded again from scratch (a fresh grading id each) and swept, and
nothing labelled is left on the engine. Bad input: no token authentication, nothing at the
address, a wrong token, no node with the resource (exit 2 with the cause), and a base image
the nodes lack (each grading an infrastructure error naming the node and the fix)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e import EXAMPLES
from helpers.raycluster import LocalCluster, start_cluster

from assay._internal.runtime.docker import DockerRuntime
from assay._internal.signing.keys import load_public_key
from assay._internal.signing.sign import verify_envelope

pytest.importorskip("ray", reason="the ray extra is not installed (scripts/setup.sh installs it)")
# One cluster for the module: every test here runs on the same xdist worker.
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.xdist_group("ray")]

ADD = EXAMPLES / "add"


@pytest.fixture(scope="module")
def cluster(
    docker_runtime: DockerRuntime, request: pytest.FixtureRequest
) -> Iterator[LocalCluster]:
    c = start_cluster(nodes=2, slots=2)
    failed = request.session.testsfailed
    try:
        yield c
    finally:
        if request.session.testsfailed > failed:
            # Shown with the module's last test: what the cluster said before it is removed.
            print(c.log_tails())
        c.stop()


def _submissions(tmp: Path, n: int) -> dict[str, bool]:
    expect = {}
    for i in range(n):
        good = i % 2 == 0
        name = f"s{i:02d}-{'correct' if good else 'wrong'}"
        shutil.copytree(ADD / "solutions" / ("correct" if good else "wrong"), tmp / "subs" / name)
        expect[name] = good
    return expect


def _grade_many(
    cluster: LocalCluster, tmp: Path, *extra: str, env: dict[str, str] | None = None
) -> list[str]:
    argv = [sys.executable, "-m", "assay", "grade-many", str(ADD), "--submissions"]
    argv += [str(tmp / "subs"), "--out", str(tmp / "out"), "--ray", cluster.address, *extra]
    return cluster.inside(argv)


def _env(cluster: LocalCluster, tmp: Path, **extra: str) -> dict[str, str]:
    return cluster.env(
        XDG_CONFIG_HOME=str(tmp / "config"),
        ASSAY_BASE_IMAGE=os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest"),
        **extra,
    )


def _events(tmp: Path) -> list[dict[str, object]]:
    lines = (tmp / "out" / "log.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _node_id(node_pid: int) -> str:
    """The Ray node id a `ray start` process's raylet was given."""
    from helpers.raycluster import _children

    for pid, comm in _children(node_pid):
        if comm == "raylet":
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            for a in args:
                if a.startswith(b"--node_id="):
                    return a.split(b"=", 1)[1].decode()[:12]
    raise AssertionError("no raylet")


def test_batch_across_two_nodes_survives_a_killed_node(
    cluster: LocalCluster, tmp_path: Path, docker_runtime: DockerRuntime
) -> None:
    expect = _submissions(tmp_path, 16)
    second = cluster.nodes[1]
    second_id = _node_id(second.proc.pid)
    proc = subprocess.Popen(
        _grade_many(cluster, tmp_path, "--jobs", "4"),
        env=_env(cluster, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # Kill only once the second node has finished a grading and is running more.
    deadline = time.monotonic() + 300
    while True:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the second node never finished a grading"
        log = tmp_path / "out" / "log.jsonl"
        ends = [e for e in _events(tmp_path) if e.get("event") == "end"] if log.exists() else []
        if any(second_id in str(e.get("node")) for e in ends):
            break
        time.sleep(0.2)
    os.kill(second.raylet_pid(), signal.SIGKILL)
    _out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err

    events = _events(tmp_path)
    pub = load_public_key(tmp_path / "config" / "assay" / "signing.pub")
    for jid, good in expect.items():
        v = verify_envelope((tmp_path / "out" / f"{jid}.dsse.json").read_bytes(), pub)
        assert v.passed is good, (jid, v.reason_codes)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errors"]) == (8, 8, 0)
    assert summary["complete"] is True

    ends = [e for e in events if e.get("event") == "end" and "id" in e]
    nodes = {str(e["node"]).split("/")[-1] for e in ends}
    assert len(nodes) == 2 and second_id in nodes, nodes  # the batch was split
    assert sorted(str(e["id"]) for e in ends) == sorted(expect)  # each counted once
    lost = [e for e in events if e.get("event") == "lost"]
    assert lost, "the kill hit no running grading"
    # A lost grading is graded again under a fresh id, and its id is swept and closed.
    starts = [str(e["grading_id"]) for e in events if e.get("event") == "start"]
    assert len(set(starts)) == len(starts) == len(expect) + len(lost)
    recovered = {str(e["grading_id"]) for e in events if e.get("event") == "recovered"}
    unswept = {str(e["lost_grading_id"]) for e in lost} - recovered
    # A sweep sent to the killed node before the cluster noticed its death fails (CI on 70d850d:
    # one of two lost ids): the id then stays open in the log, named, and the next run over
    # the same output sweeps it before anything else (docs/scale.md).
    failed = {str(e["lost_grading_id"]) for e in events if e.get("event") == "sweep-failed"}
    assert unswept <= failed, (unswept, failed)
    if unswept:
        again = subprocess.run(
            _grade_many(cluster, tmp_path, "--jobs", "4"), env=_env(cluster, tmp_path),
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        later = _events(tmp_path)[len(events) :]
        assert unswept <= {str(e["grading_id"]) for e in later if e.get("event") == "recovered"}
        assert not [e for e in later if e.get("event") == "start"]  # every verdict was kept
    assert [n for gid in starts for n in docker_runtime.leftovers(gid)] == []


def test_sigterm_stops_a_ray_batch_like_ctrl_c(
    cluster: LocalCluster, tmp_path: Path, docker_runtime: DockerRuntime
) -> None:
    """ray.init replaces SIGTERM's handler with sys.exit; the driver must keep grade-many's:
    no new gradings, the running ones finish and are kept, a summary, exit 130."""
    expect = _submissions(tmp_path, 8)
    proc = subprocess.Popen(
        _grade_many(cluster, tmp_path, "--jobs", "2"),
        env=_env(cluster, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not list((tmp_path / "out").glob("*.dsse.json")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["not_run"] > 0
    pub = load_public_key(tmp_path / "config" / "assay" / "signing.pub")
    done = list((tmp_path / "out").glob("*.dsse.json"))
    assert len(done) == summary["passed"] + summary["failed"]
    for path in done:
        v = verify_envelope(path.read_bytes(), pub)
        assert v.passed is expect[path.name.removesuffix(".dsse.json")]
    starts = [str(e["grading_id"]) for e in _events(tmp_path) if e.get("event") == "start"]
    assert [n for gid in starts for n in docker_runtime.leftovers(gid)] == []


def test_without_token_auth_nothing_connects(cluster: LocalCluster, tmp_path: Path) -> None:
    _submissions(tmp_path, 1)
    env = {k: v for k, v in _env(cluster, tmp_path).items() if not k.startswith("RAY_AUTH")}
    proc = subprocess.run(
        _grade_many(cluster, tmp_path), env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert "without token authentication" in proc.stderr
    assert "--ray-insecure-no-auth" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_wrong_token_is_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    _submissions(tmp_path, 1)
    env = _env(cluster, tmp_path, RAY_AUTH_TOKEN="0" * 64)
    proc = subprocess.run(
        _grade_many(cluster, tmp_path), env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    assert "refused this driver's token" in proc.stderr


def test_no_cluster_at_the_address(cluster: LocalCluster, tmp_path: Path) -> None:
    _submissions(tmp_path, 1)
    argv = _grade_many(cluster, tmp_path)
    argv[argv.index(cluster.address)] = "127.0.0.1:1"
    proc = subprocess.run(
        argv, env=_env(cluster, tmp_path), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert "no Ray cluster answers at 127.0.0.1:1" in proc.stderr


def test_no_node_with_the_resource(cluster: LocalCluster, tmp_path: Path) -> None:
    _submissions(tmp_path, 1)
    env = _env(cluster, tmp_path, ASSAY_RAY_RESOURCE="assay_docker_nowhere")
    proc = subprocess.run(
        _grade_many(cluster, tmp_path), env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    assert "advertises the resource 'assay_docker_nowhere'" in proc.stderr


def test_a_node_without_the_image_names_itself_and_the_fix(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    expect = _submissions(tmp_path, 3)
    env = _env(cluster, tmp_path)
    env["ASSAY_BASE_IMAGE"] = "assay-base:no-such-tag-for-ray-test"
    proc = subprocess.run(
        _grade_many(cluster, tmp_path), env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 3, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    # Every job was tried (the batch went on past the first), none has a verdict.
    assert summary["errors"] == len(expect) and summary["not_run"] == 0
    for err in summary["error_details"]:
        assert "on node " in err["error"] and "no-such-tag-for-ray-test" in err["error"]
        assert "(fix, on that node: run `bash scripts/setup.sh`" in err["error"]
    assert not list((tmp_path / "out").glob("*.dsse.json"))
