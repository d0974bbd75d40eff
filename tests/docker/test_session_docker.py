"""`Grader.session()` on a real engine: a session driven by hand (exec, write, read, grade), the
bad inputs of issue 14, and nothing left behind after success, failure, an exception, a killed
container and Ctrl-C."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import assay
from assay.errors import InfrastructureError, UsageError

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
ADD = ROOT / "examples" / "add"
CORRECT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"


@pytest.fixture(scope="module")
def grader(
    tmp_path_factory: pytest.TempPathFactory, base_image: str, docker_runtime: object
) -> Iterator[assay.Grader]:
    key = tmp_path_factory.mktemp("key") / "signing.key"
    with assay.Grader(image=base_image, key=key) as g:
        yield g


def _leftovers(grader: assay.Grader, gid: str) -> list[str]:
    rt = grader.runtime()
    return list(rt.leftovers(gid))  # type: ignore[attr-defined]


def _agent_pids(s: assay.Session, marker: str) -> list[str]:
    """Processes in the container whose command line holds `marker` (no ps in the image)."""
    res = s.exec(
        ["sh", "-c", 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " <"$f"; echo; done'],
    )
    return [line for line in res.stdout.decode().splitlines() if marker in line]


def test_a_session_driven_by_hand_is_graded_and_leaves_nothing(grader: assay.Grader) -> None:
    with grader.session(ADD) as s:
        gid = s.grading_id
        assert _leftovers(grader, gid)  # the agent container and its workspace volume

        r = s.exec(["sh", "-c", "echo out; echo err >&2; exit 7"])
        assert (r.exit_code, r.stdout, r.stderr, r.timed_out) == (7, b"out\n", b"err\n", False)
        assert s.exec("pwd").stdout == b"/workspace\n"
        assert s.exec("id -u").stdout == b"1000\n"
        assert s.exec("cat /task/README.md").stdout.startswith(b"# add")
        assert s.exec("cat", input=b"\x00\xffbytes").stdout == b"\x00\xffbytes"
        assert s.exec("echo $X", env={"X": "y"}).stdout == b"y\n"
        # No network: only the loopback interface exists.
        assert s.exec("cat /proc/net/dev").stdout.count(b":") == 1

        # The timeout is enforced here, and kills what the command started, not the container.
        marker = secrets.token_hex(6)
        t0 = time.monotonic()
        r = s.exec(f"sleep 300 # {marker}-child & sleep 300 # {marker}-parent; :", timeout=2)
        assert r.timed_out and r.exit_code is None
        assert time.monotonic() - t0 < 30
        assert _agent_pids(s, marker) == []

        # Output over the cap is cut there, the command killed, the session still usable.
        s.output_cap = 4096
        r = s.exec(f"yes # {marker}")
        assert r.truncated and r.exit_code is None and len(r.stdout) == 4096
        assert _agent_pids(s, marker) == []

        s.write_file("pkg/notes.txt", "draft")
        assert s.read_file("/workspace/pkg/notes.txt") == b"draft"
        s.write_file("solution.py", CORRECT)
        assert s.read_file("solution.py") == CORRECT.encode()
        assert s.exec("stat -c %u solution.py").stdout == b"1000\n"
        graded = s.grade()

        with pytest.raises(UsageError, match="was graded"):
            s.exec("true")
    assert graded.verdict.passed, graded.verdict.reason_codes
    assert graded.verdict.grading_id == gid
    assert graded.verdict.image_digests["agent"].startswith("sha256:")
    assert assay.verify(graded.envelope, grader.public_key).passed
    assert _leftovers(grader, gid) == []
    with pytest.raises(UsageError, match="was graded"):
        s.read_file("solution.py")


def test_bad_paths_are_refused(grader: assay.Grader) -> None:
    with grader.session(ADD) as s:
        gid = s.grading_id
        s.exec("ln -s /etc etc; ln -s /task/README.md readme; mkdir d; ln -s ../.. d/up")
        for path in ("../x", "a/../../x", "/etc/passwd", "/tmp/x", "/workspace/../etc/x", ""):
            with pytest.raises(UsageError):
                s.write_file(path, "x")
            with pytest.raises(UsageError):
                s.read_file(path)
        # A symlink anywhere on the path, into or out of the workspace, is refused.
        for path in ("etc/passwd", "readme", "d/up/etc/x", "etc/newfile"):
            with pytest.raises(UsageError, match="symlink"):
                s.write_file(path, "x")
        with pytest.raises(UsageError, match="symlink"):
            s.read_file("etc/passwd")
        with pytest.raises(UsageError, match="symlink"):
            s.read_file("readme")
        with pytest.raises(FileNotFoundError):
            s.read_file("missing.txt")
        with pytest.raises(IsADirectoryError):
            s.read_file("d")
        # Nothing was written through a link.
        assert s.exec("cat /task/README.md").stdout.startswith(b"# add")
    # Leaving the block without grading removes everything.
    assert _leftovers(grader, gid) == []
    with pytest.raises(UsageError, match="has ended"):
        s.exec("true")


def test_a_wrong_solution_fails_and_an_exception_leaves_nothing(grader: assay.Grader) -> None:
    with grader.session(ADD) as s:
        s.write_file("solution.py", WRONG)
        graded = s.grade()
    assert not graded.verdict.passed
    assert "compare:mismatch" in graded.verdict.reason_codes
    assert _leftovers(grader, s.grading_id) == []

    with pytest.raises(ZeroDivisionError), grader.session(ADD) as s2:
        s2.write_file("solution.py", CORRECT)
        1 / 0
    assert _leftovers(grader, s2.grading_id) == []


def test_a_killed_container_is_an_infrastructure_error_never_a_verdict(
    grader: assay.Grader,
) -> None:
    rt = grader.runtime()
    with grader.session(ADD) as s:
        s.write_file("solution.py", CORRECT)
        rt.kill(s._cid)  # type: ignore[arg-type]
        with pytest.raises(InfrastructureError):
            s.grade()
    assert _leftovers(grader, s.grading_id) == []

    with grader.session(ADD) as s2:
        rt.kill(s2._cid)  # type: ignore[arg-type]
        with pytest.raises(InfrastructureError):
            s2.exec("true")
        with pytest.raises(UsageError):
            s2.grade()  # the session ended with its container
    assert _leftovers(grader, s2.grading_id) == []


def test_a_workspace_over_the_artifact_limit_fails_naming_it(
    grader: assay.Grader, tmp_path: Path
) -> None:
    task = tmp_path / "add"
    shutil.copytree(ADD, task)
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(toml.replace("[limits]", "[limits]\nartifact_bytes = 65536"))
    with grader.session(task) as s:
        with pytest.raises(UsageError, match="artifact limit"):
            s.write_file("big.bin", b"x" * 70000)
        s.write_file("solution.py", CORRECT)
        r = s.exec("head -c 100000 /dev/zero > big.bin")
        assert r.exit_code != 0  # the workspace is full
        graded = s.grade()
    assert not graded.verdict.passed
    assert graded.verdict.reason_codes == ["limit:agent-disk"]
    assert _leftovers(grader, s.grading_id) == []


CHILD = """
import sys, assay
with assay.Grader(image=sys.argv[2], key=sys.argv[3]) as g, g.session(sys.argv[1]) as s:
    print(s.grading_id, flush=True)
    s.exec("sleep 120")
"""


def test_ctrl_c_during_a_session_leaves_nothing(
    grader: assay.Grader, base_image: str, tmp_path: Path
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(ADD), base_image,
         str(tmp_path / "signing.key")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        gid = child.stdout.readline().strip()
        assert gid.startswith("g-"), child.stderr.read() if child.stderr else ""
        deadline = time.monotonic() + 60
        while not _leftovers(grader, gid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _leftovers(grader, gid)
        time.sleep(1)  # inside the exec
        os.kill(child.pid, signal.SIGINT)
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "KeyboardInterrupt" in err
    assert child.returncode != 0
    assert _leftovers(grader, gid) == []
