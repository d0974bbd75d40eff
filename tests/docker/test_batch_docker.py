"""`assay grade-many` on a real engine: correct verdicts, then a run stopped half-way (Ctrl-C,
then SIGKILL) and resumed: nothing finished is graded again, and no container is left."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e import EXAMPLES

from assay._internal.runtime.docker import DockerRuntime
from assay._internal.signing.keys import load_public_key
from assay._internal.signing.sign import verify_envelope

pytestmark = pytest.mark.docker

ADD = EXAMPLES / "add"


def _submissions(tmp: Path, n: int) -> dict[str, bool]:
    """n submissions of examples/add, every third one wrong; returns id -> should pass."""
    expect = {}
    for i in range(n):
        good = i % 3 != 2
        name = f"s{i:02d}-{'correct' if good else 'wrong'}"
        shutil.copytree(ADD / "solutions" / ("correct" if good else "wrong"), tmp / "subs" / name)
        expect[name] = good
    return expect


def _cmd(tmp: Path, jobs: int) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp / "config"))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    argv = [sys.executable, "-m", "assay", "grade-many", str(ADD)]
    argv += ["--submissions", str(tmp / "subs"), "--out", str(tmp / "out"), "--jobs", str(jobs)]
    return argv, env


def _events(tmp: Path) -> list[dict[str, object]]:
    lines = (tmp / "out" / "log.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _grading_ids(tmp: Path) -> set[str]:
    """Every label the batch used: one per grading, plus its judge pool's."""
    return {str(e["grading_id"]) for e in _events(tmp) if e.get("event") == "start"}


def _job_starts(events: list[dict[str, object]]) -> list[str]:
    return [str(e["id"]) for e in events if e["event"] == "start" and e["id"] != "judge-pool"]


def _check_all(tmp: Path, expect: dict[str, bool]) -> None:
    pub = load_public_key(tmp / "config" / "assay" / "signing.pub")
    for jid, good in expect.items():
        v = verify_envelope((tmp / "out" / f"{jid}.dsse.json").read_bytes(), pub)
        assert v.passed is good, (jid, v.reason_codes)
        assert v.tier == "t3" and v.task_id == "add"
    summary = json.loads((tmp / "out" / "summary.json").read_text())
    assert summary["passed"] == sum(expect.values())
    assert summary["failed"] == len(expect) - sum(expect.values())
    assert summary["errors"] == 0 and summary["complete"] is True


def _leftovers(rt: DockerRuntime, gids: set[str]) -> list[str]:
    return [name for gid in sorted(gids) for name in rt.leftovers(gid)]


def _run_until(tmp: Path, jobs: int, n_done: int, sig: signal.Signals) -> tuple[int, set[str]]:
    argv, env = _cmd(tmp, jobs)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out = tmp / "out"
    deadline = time.monotonic() + 120
    while len(list(out.glob("*.dsse.json"))) < n_done:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    return proc.returncode, {p.name for p in out.glob("*.dsse.json")}


def test_batch_grades_correctly(tmp_path: Path, docker_runtime: DockerRuntime) -> None:
    expect = _submissions(tmp_path, 12)
    argv, env = _cmd(tmp_path, 4)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _check_all(tmp_path, expect)
    assert sorted(_job_starts(_events(tmp_path))) == sorted(expect)
    assert sum(e["event"] == "start" and e["id"] == "judge-pool" for e in _events(tmp_path)) == 1
    assert _leftovers(docker_runtime, _grading_ids(tmp_path)) == []


def test_interrupted_batch_resumes_without_regrading(
    tmp_path: Path, docker_runtime: DockerRuntime
) -> None:
    expect = _submissions(tmp_path, 16)
    code, done_first = _run_until(tmp_path, 2, 3, signal.SIGINT)
    assert code == 130
    assert 3 <= len(done_first) < 16
    assert _leftovers(docker_runtime, _grading_ids(tmp_path)) == []
    first_bytes = {n: (tmp_path / "out" / n).read_bytes() for n in done_first}
    first_events = len(_events(tmp_path))

    argv, env = _cmd(tmp_path, 2)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    second = _events(tmp_path)[first_events:]
    regraded = set(_job_starts(second))
    skipped = {str(e["id"]) for e in second if e["event"] == "skipped"}
    assert {f"{i}.dsse.json" for i in skipped} == done_first
    assert regraded == set(expect) - skipped
    for name, data in first_bytes.items():
        assert (tmp_path / "out" / name).read_bytes() == data
    _check_all(tmp_path, expect)
    assert _leftovers(docker_runtime, _grading_ids(tmp_path)) == []


def test_killed_batch_is_swept_and_resumed(tmp_path: Path, docker_runtime: DockerRuntime) -> None:
    expect = _submissions(tmp_path, 10)
    code, done_first = _run_until(tmp_path, 4, 2, signal.SIGKILL)
    assert code == -signal.SIGKILL
    started = {str(e["grading_id"]) for e in _events(tmp_path) if e["event"] == "start"}
    ended = {str(e["grading_id"]) for e in _events(tmp_path) if e["event"] == "end"}
    open_gids = started - ended

    argv, env = _cmd(tmp_path, 4)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    recovered = {str(e["grading_id"]) for e in _events(tmp_path) if e["event"] == "recovered"}
    assert recovered == open_gids
    _check_all(tmp_path, expect)
    assert _leftovers(docker_runtime, _grading_ids(tmp_path)) == []
    tmpdirs = [p for gid in open_gids for p in Path("/tmp").glob(f"assay-{gid}-*")]
    assert tmpdirs == []
    assert len(done_first) >= 2


def test_a_replaced_submission_is_graded_again_on_resume(
    tmp_path: Path, docker_runtime: DockerRuntime
) -> None:
    """Issue 10 finding 6: the same job id, other bytes: the old verdict is not kept."""
    expect = _submissions(tmp_path, 2)
    argv, env = _cmd(tmp_path, 2)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _check_all(tmp_path, expect)
    n_events = len(_events(tmp_path))

    replaced = "s00-correct"
    shutil.rmtree(tmp_path / "subs" / replaced)
    shutil.copytree(ADD / "solutions" / "wrong", tmp_path / "subs" / replaced)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    second = _events(tmp_path)[n_events:]
    assert _job_starts(second) == [replaced]
    assert [(e["id"], e["reason"]) for e in second if e["event"] == "regrade"] == [
        (replaced, "batch:submission-changed")
    ]
    _check_all(tmp_path, {**expect, replaced: False})
    assert _leftovers(docker_runtime, _grading_ids(tmp_path)) == []
    # Finding 10b on a real engine: each role's image, the pooled judge's included.
    pub = load_public_key(tmp_path / "config" / "assay" / "signing.pub")
    image = docker_runtime.image_digest(env["ASSAY_BASE_IMAGE"])
    for jid in expect:
        v = verify_envelope((tmp_path / "out" / f"{jid}.dsse.json").read_bytes(), pub)
        assert v.image_digests == {"judge": image, "candidate": image}

    (tmp_path / "subs" / "s99-link").symlink_to(tmp_path / "subs" / "s01-correct")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert f"{tmp_path / 'subs' / 's99-link'} is a symbolic link" in proc.stderr
