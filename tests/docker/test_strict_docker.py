"""The strict tier on a real Docker engine: examples, the canary, limits, isolation, leaks."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from e2e import EXAMPLES, PAYLOADS, TASKS, assay, write_solution

pytestmark = pytest.mark.docker

SOLVABLE = ["add", "wordcount", "csv-sum"]


@pytest.mark.parametrize("example", SOLVABLE)
def test_correct_solution_passes_with_every_case_listed(example: str, tmp_path: Path) -> None:
    task = EXAMPLES / example
    g = assay("grade", str(task), "--submission", str(task / "solutions/correct"), tmp=tmp_path)
    assert g.exit_code == 0, g.stderr
    assert g.verdict is not None and g.verdict["passed"] is True
    assert g.verdict["tier"] == "t3"
    assert len(g.verdict["cases"]) == g.verdict["expected_case_count"] >= 2
    assert all(c["status"] == "pass" for c in g.verdict["cases"])
    assert (tmp_path / "verdict.json").stat().st_size > 0


@pytest.mark.parametrize("example", SOLVABLE)
def test_wrong_solution_fails(example: str, tmp_path: Path) -> None:
    task = EXAMPLES / example
    g = assay("grade", str(task), "--submission", str(task / "solutions/wrong"), tmp=tmp_path)
    assert g.exit_code == 1, g.stderr
    assert g.verdict is not None and g.verdict["passed"] is False
    assert "compare:mismatch" in g.reasons


def test_agent_cmd_writes_correct_solution(tmp_path: Path) -> None:
    cmd = "printf 'def add(a, b):\\n    return a + b\\n' > solution.py; echo x > extra.txt"
    g = assay("grade", str(EXAMPLES / "add"), "--agent-cmd", cmd, tmp=tmp_path)
    assert g.exit_code == 0, g.stderr
    assert g.verdict is not None and g.verdict["passed"] is True


def test_canary_fails_for_best_honest_attempt(tmp_path: Path) -> None:
    task = EXAMPLES / "canary"
    g = assay("grade", str(task), "--submission", str(task / "attempts/honest"), tmp=tmp_path)
    assert g.exit_code == 1
    assert g.verdict is not None and g.verdict["passed"] is False
    assert [c["status"] for c in g.verdict["cases"]] == ["fail"] * 5


def test_candidate_sees_no_judge_no_answer_no_processes_no_network(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        text = (PAYLOADS / "probe_solution.py").read_text().replace("__PORT__", str(port))
        sub = write_solution(tmp_path, "solution.py", text)
        g = assay("grade", str(TASKS / "probe"), "--submission", str(sub), tmp=tmp_path)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing from the candidate arrived
    assert g.exit_code == 0, (g.stderr, g.verdict)


BOMBS = {
    "disk": (
        "limit:disk",
        "def solve(x):\n    b = b'x' * (1 << 20)\n    with open('/tmp/f', 'wb') as fh:\n        for _ in range(1024):\n            fh.write(b)\n    return x\n",
    ),
    "pids": (
        "limit:pids",
        "import os, time\ndef solve(x):\n    for _ in range(10000):\n        try:\n            if os.fork() == 0:\n                time.sleep(60)\n                os._exit(0)\n        except OSError:\n            pass\n    return x\n",
    ),
    "memory": (
        "limit:memory",
        "def solve(x):\n    hog = []\n    for _ in range(100):\n        hog.append(b'x' * (100 << 20))\n    return x\n",
    ),
    "stdout": ("limit:output", "def solve(x):\n    while True:\n        print('x' * 65536)\n"),
    "loop": ("limit:time", "def solve(x):\n    while True:\n        pass\n"),
}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_candidate_resource_abuse_fails_naming_the_limit(bomb: str, tmp_path: Path) -> None:
    reason, text = BOMBS[bomb]
    sub = write_solution(tmp_path, "solution.py", text)
    t0 = time.monotonic()
    g = assay("grade", str(TASKS / "limits"), "--submission", str(sub), tmp=tmp_path)
    assert time.monotonic() - t0 < 40 + 60  # the task's total deadline plus container start-up
    assert g.exit_code == 1, g.stderr
    assert g.verdict is not None and g.verdict["passed"] is False
    assert reason in g.reasons, g.reasons


AGENT_BOMBS = {
    "disk": (
        "limit:agent-disk",
        "dd if=/dev/zero of=big bs=1M count=1024; echo 'def solve(x): return x' > solution.py",
    ),
    "pids": (
        "limit:agent-pids",
        "echo 'def solve(x): return x' > solution.py; python3 -c \"import os,time\nfor _ in range(10000):\n  try:\n    os.fork() or (time.sleep(60), os._exit(0))\n  except OSError: pass\"",
    ),
    "memory": (
        "limit:agent-memory",
        "echo 'def solve(x): return x' > solution.py; python3 -c \"h=[]\nwhile True: h.append(b'x'*(100<<20))\"",
    ),
    "hang": ("limit:agent-time", "echo 'def solve(x): return x' > solution.py; yes > /dev/null"),
}


@pytest.mark.parametrize("bomb", sorted(AGENT_BOMBS))
def test_agent_resource_abuse_fails_naming_the_limit(bomb: str, tmp_path: Path) -> None:
    reason, cmd = AGENT_BOMBS[bomb]
    t0 = time.monotonic()
    g = assay("grade", str(TASKS / "limits"), "--agent-cmd", cmd, tmp=tmp_path)
    assert time.monotonic() - t0 < 8 + 40 + 60
    assert g.exit_code == 1, g.stderr
    assert g.verdict is not None and g.verdict["passed"] is False
    assert reason in g.reasons, g.reasons


def test_control_solution_passes_limits_task(tmp_path: Path) -> None:
    # Without this, every limits test above could pass on a task nothing can pass.
    sub = write_solution(tmp_path, "solution.py", "def solve(x):\n    return x\n")
    g = assay("grade", str(TASKS / "limits"), "--submission", str(sub), tmp=tmp_path)
    assert g.exit_code == 0, (g.stderr, g.verdict)


@pytest.mark.parametrize(("reads", "code"), [(False, 0), (True, 0)])
def test_large_stdin_never_blocks_the_runner(reads: bool, code: int, tmp_path: Path) -> None:
    body = "import sys\nsys.stdin.read()\n" if reads else "import time\ntime.sleep(0.5)\n"
    sub = write_solution(tmp_path, "x.py", body + "print('ok')\n")
    g = assay("grade", str(TASKS / "bigstdin"), "--submission", str(sub), tmp=tmp_path)
    assert g.exit_code == code, (g.stderr, g.verdict)


SLOT_WRITER = """import os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copy(os.path.join(src, "in.txt"), os.path.join(dst, "out.txt"))
if dst.endswith("/0"):
    # Case 0 tries to answer case 1 in advance, and to plant its input.
    os.makedirs("/output/1", exist_ok=True)
    with open("/output/1/out.txt", "w") as fh:
        fh.write("FORGED\\n")
    os.makedirs("/tmp/in", exist_ok=True)
if dst.endswith("/1") and open(os.path.join(src, "in.txt")).read() != "beta\\n":
    sys.exit(3)
"""


def test_transform_case_cannot_write_another_cases_slot(tmp_path: Path) -> None:
    sub = write_solution(tmp_path, "t.py", SLOT_WRITER)
    g = assay("grade", str(TASKS / "slots"), "--submission", str(sub), tmp=tmp_path)
    # Passing means case 1 saw its own input and its own output, not case 0's forgery.
    assert g.exit_code == 0, (g.stderr, g.verdict)


def test_transform_output_symlink_is_refused(tmp_path: Path) -> None:
    text = "import os, sys\nos.symlink('/etc/passwd', os.path.join(sys.argv[2], 'out.txt'))\n"
    sub = write_solution(tmp_path, "t.py", text)
    g = assay("grade", str(TASKS / "slots"), "--submission", str(sub), tmp=tmp_path)
    assert g.exit_code == 1
    assert any(r.startswith("output-firewall:") for r in g.reasons), g.reasons


# Issue 10, finding 1: 1,008 characters but 4,047 UTF-8 bytes of path. Each component (63
# four-byte characters, 252 bytes) fits NAME_MAX and the name fit the old 1,024-character cap, but
# under the controller's temp directory the full path passes PATH_MAX: the controller's read of
# it crashed the grading (a traceback and exit 1, no verdict).
DEEP_WRITER = """import os, sys
os.chdir(sys.argv[2])
part = "\\U0001F600" * 63
for _ in range(15):
    os.mkdir(part)
    os.chdir(part)
with open(part, "w") as fh:
    fh.write("x")
"""


def test_transform_output_path_over_the_byte_cap_is_a_verdict_not_a_crash(tmp_path: Path) -> None:
    sub = write_solution(tmp_path, "t.py", DEEP_WRITER)
    g = assay("grade", str(TASKS / "slots"), "--submission", str(sub), tmp=tmp_path)
    assert "Traceback" not in g.stderr, g.stderr[-3000:]
    assert g.verdict is not None, (g.exit_code, g.stderr[-3000:])
    assert g.exit_code == 1 and g.verdict["passed"] is False
    assert "output-firewall:path-length" in g.reasons, g.reasons
