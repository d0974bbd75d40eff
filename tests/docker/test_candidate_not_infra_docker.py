"""Issue 36, item 2, beyond depth: each way the audit found for a candidate's bytes, sizes, names
or build to end a grading with no verdict (an `EngineError`, exit 3) or a usage error, on the
real backends, now a failed verdict with a named reason (or, for a session's tool call, the
error a file call gives). The audit table is in docs/security.md, "Errors"."""

from __future__ import annotations

import io
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e import EXAMPLES

import assay
from assay._internal.api.session import Session
from assay._internal.runtime.engine import open_runtime
from assay._internal.sandbox.execute import RunRequest, execute
from assay._internal.tiers.strict import grade as strict
from assay._internal.tiers.strict import judgespec

pytestmark = pytest.mark.docker

BACKENDS = ["runc", "docker"]


@pytest.fixture(scope="module", params=BACKENDS)
def grader(request: pytest.FixtureRequest) -> Iterator[assay.Grader]:
    with assay.Grader(oci_runtime=request.param) as g:
        yield g


@pytest.fixture(scope="module")
def runc() -> Iterator[assay.Grader]:
    with assay.Grader(oci_runtime="runc") as g:
        yield g


def _task(root: Path, toml: str, cases: list[dict[str, Any]], files: dict[str, str]) -> Path:
    (root / "inputs").mkdir(parents=True)
    (root / "judge").mkdir()
    (root / "inputs" / "README.md").write_text("a test task\n")
    (root / "task.toml").write_text(toml)
    (root / "judge" / "cases.json").write_text(json.dumps(cases))
    for name, text in files.items():
        (root / "judge" / name).write_text(text)
    return root


# -- a transform's outputs, together, and the judge's /exchange ---------------------------------

TRANSFORM = """id = "many-files"
kind = "transform"
artifacts = ["transform.py"]

[transform]
command = ["python3", "/candidate/transform.py"]

[judge]
cases = "cases.json"

[limits]
output_bytes = 4194304
"""
WRITER = (
    "import os, sys\nfor i in range({n}):\n"
    "    with open(os.path.join(sys.argv[2], 'f%05d' % i), 'w') as fh:\n        fh.write('x')\n"
)


def test_transform_outputs_the_judge_cannot_hold_fail_by_name(
    grader: assay.Grader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three cases of 700 one-byte files: 2,100 bytes to the firewall, 2,100 pages (8.2 MiB)
    of tmpfs. With the judge's /exchange at 8 MiB the upload failed with ENOSPC, an engine
    error; 600 files a case (7 MiB) still go up and are compared: the count is no guess."""
    monkeypatch.setattr(judgespec, "EXCHANGE_BYTES", 8 << 20)
    monkeypatch.setattr(strict, "EXCHANGE_BYTES", 8 << 20)
    cases = [{"id": f"c{i}", "input": {"files": {"d.txt": "x"}},
              "expected": {"files": {"o.txt": "x"}}} for i in range(3)]  # fmt: skip
    task = _task(tmp_path / "t", TRANSFORM, cases, {})
    over = grader.grade(task, {"transform.py": WRITER.format(n=700)}).verdict
    assert not over.passed and list(over.reason_codes) == ["limit:outputs-total"]
    under = grader.grade(task, {"transform.py": WRITER.format(n=600)}).verdict
    assert not under.passed and "limit:outputs-total" not in under.reason_codes
    assert [c.status for c in under.cases] == ["fail"] * 3, under.reason_codes
    assert list(under.reason_codes) == ["compare:mismatch"]


# -- a judge the candidate's output makes slow ---------------------------------------------------

SLOW = """id = "slow-checker"
kind = "stdio"

[stdio]
languages = ["python3"]
checker = "python"
checker_program = "checker.py"

[judge]
cases = "cases.json"

[limits]
total_timeout = 12.0
output_bytes = 8388608
"""
CHECKER = """import time


def check(input: bytes, output: bytes, answer: bytes) -> bool:
    time.sleep(len(output) / 1e5)  # honest, and slower the more the program printed
    return output.split() == answer.split()
"""


def test_a_judge_past_its_deadline_on_the_candidates_output_is_a_failed_compare(
    grader: assay.Grader, tmp_path: Path
) -> None:
    """The exec's deadline kills the judge's container; that stop was read as the engine's
    (`the judge's container stopped during compare`, no verdict), though the candidate's 3 MB
    per test made the checker take its 10 s per test twice, past the 12 s budget."""
    cases = [{"id": f"t{i}", "input": {"stdin": f"{i}\n"}, "expected": {"stdout": f"{i}\n"}}
             for i in (1, 2)]  # fmt: skip
    task = _task(tmp_path / "t", SLOW, cases, {"checker.py": CHECKER})
    honest = grader.grade(task, {"main.py": "print(input())\n"}).verdict
    assert honest.passed, honest.reason_codes
    flood = grader.grade(task, {"main.py": "import sys\nsys.stdout.write('x' * (3 << 20))\n"})
    assert list(flood.verdict.reason_codes) == ["judge:compare-failed"]


# -- a harbor workdir of many small files ------------------------------------------------------


def test_many_small_artifacts_are_restored_into_the_harbor_verifier(
    grader: assay.Grader, tmp_path: Path
) -> None:
    """4 MiB of artifact bytes allowed, 2,000 one-byte files submitted: 8 MB of tmpfs. The
    verifier's workdir was sized by the byte cap, and the restore failed with ENOSPC."""
    task = tmp_path / "task"
    shutil.copytree(EXAMPLES / "log-canary-harbor", task)
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(
        toml.replace("artifact_bytes = 67108864", "artifact_bytes = 4194304")
    )
    sub = tmp_path / "sub"
    sub.mkdir()
    for i in range(2000):
        (sub / f"f{i:04}").write_text("x")
    verdict = grader.grade(task, sub).verdict
    assert not verdict.passed  # the canary's ticket is not among them
    assert [c.status for c in verdict.cases] == ["fail"]  # the tests ran on what was restored


# -- a build with nothing to run -----------------------------------------------------------------

NO_PROGRAM = {
    "rust": '#![crate_type = "lib"]\npub fn f() -> i32 { 1 }\n',
    "go": "package foo\n\nfunc F() int { return 1 }\n",
}


@pytest.mark.parametrize("lang", sorted(NO_PROGRAM))
def test_a_build_with_no_program_fails_the_grading_and_is_refused_by_the_sandbox(
    runc: assay.Grader, lang: str
) -> None:
    """Both compile with exit 0 to an `ar` archive named `main`, mode 0644: the runner cannot
    exec it, crashed on it, and the sandbox route called that an engine error."""
    source = {"rust": "main.rs", "go": "main.go"}[lang]
    verdict = runc.grade(EXAMPLES / f"stdio-{lang}", {source: NO_PROGRAM[lang]}).verdict
    assert list(verdict.reason_codes) == ["compile:no-program"]
    done = execute(open_runtime("runc"), RunRequest(lang, NO_PROGRAM[lang]), runc.image)
    assert done.refused == "compile:no-program" and done.run is None
    assert done.compile is not None and done.compile.exit_code == 0


# -- a file-object submission over its cap -------------------------------------------------------


def test_a_file_object_over_its_cap_is_a_failed_verdict(runc: assay.Grader, tmp_path: Path) -> None:
    task = tmp_path / "add"
    shutil.copytree(EXAMPLES / "add", task)
    with (task / "task.toml").open("a") as fh:
        fh.write("artifact_bytes = 4096\n")  # under the task's own [limits]
    big = io.BytesIO(bytes(2 << 20))  # more than 2 x 4096 + 1 MiB of raw bytes
    verdict = runc.grade(task, big).verdict
    assert list(verdict.reason_codes) == ["limit:artifact-bytes"]


# -- a session's file calls while the agent's own commands change the workspace ------------------


def test_a_sessions_file_calls_racing_the_agent_or_a_full_workspace_are_no_infrastructure_error(
    grader: assay.Grader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe saw a file, the agent's command removed it before the engine read it: that
    read raised InfrastructureError. The race is made certain here by a probe that answers
    `file` once for a path that is gone; the engine's refusal to read it is real."""
    real = Session._probe
    lied: list[int] = []

    def probe_once_stale(self: Session, rt: Any, cid: str, parts: list[str]) -> str:
        if parts == ["gone.txt"] and not lied:
            lied.append(1)
            return "file"
        return real(self, rt, cid, parts)

    monkeypatch.setattr(Session, "_probe", probe_once_stale)
    with grader.session(EXAMPLES / "add") as s:
        with pytest.raises(FileNotFoundError):
            s.read_file("gone.txt")
        assert lied == [1]
        s.exec("head -c 70000000 /dev/zero > fill; true")  # past the 64 MiB workspace
        with pytest.raises(assay.errors.UsageError, match="workspace is full"):
            s.write_file("new.txt", "x" * 100_000)
        s.exec("rm fill; printf 'def add(a, b):\\n    return a + b\\n' > solution.py")
        assert s.grade().verdict.passed


BOMB = (
    'nohup python3 -c "import os, time\nwhile True:\n  try:\n    os.fork() or time.sleep(600)\n'
    '  except OSError:\n    time.sleep(0.01)" >/dev/null 2>&1 &'
)


def test_a_fork_bomb_in_a_session_ends_in_its_limit_not_a_dead_session(
    grader: assay.Grader,
) -> None:
    """An exec into a container at its pids limit can crash runc's own init there (it cannot
    start a thread in the container's cgroup), and its Go stack dump filled the 4 KiB of the
    session's probe: that overrun killed the container, and the session ended with an
    InfrastructureError and no verdict (two runs in three, on runc). Three sessions here."""
    for _ in range(3):
        with grader.session(EXAMPLES / "add") as s:
            s.exec("printf 'def add(a, b):\\n    return a + b\\n' > solution.py")
            s.exec(BOMB, timeout=10)
            time.sleep(3)
            s.exec("true", timeout=10)
            try:
                assert s.read_file("solution.py").startswith(b"def add")
            except assay.errors.UsageError as exc:
                assert "pids limit" in str(exc)
            assert list(s.grade().verdict.reason_codes) == ["limit:agent-pids"]
