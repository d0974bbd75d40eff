"""The public Python API: its names and signatures are pinned here; a change to either is a
deliberate change to this file. The mapping submission's safety is shown both at the firewall
(no engine) and through a real grading (docker)."""

from __future__ import annotations

import io
import secrets
import tarfile
import tempfile
from pathlib import Path

import pytest

import assay
import assay.batch
import assay.errors
import assay.firewall
import assay.runtime
import assay.runtime.conformance

ROOT = Path(__file__).resolve().parents[2]
ADD = ROOT / "examples" / "add"
CORRECT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"


# -- every type a public signature names is public ------------------------------------------


# Each exit code means one thing (README): 1 is a FAILED verdict or a failed verification, so
# no other error may take it; 2 is the caller's or the task's fault; 3 is no verdict.


# -- mapping submissions at the firewall (no engine) -------------------------------------------


# -- through real gradings -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def grader(tmp_path_factory: pytest.TempPathFactory, base_image: str):  # type: ignore[no-untyped-def]
    key = tmp_path_factory.mktemp("key") / "signing.key"
    with assay.Grader(key=key, image=base_image) as g:
        yield g


def _landing_places(name: str, cwd: Path) -> list[Path]:
    """Where a `../name` or absolute name would land if anything unpacked it naively."""
    return [
        cwd.parent / name,
        Path(tempfile.gettempdir()) / name,
        Path("/") / name,
        Path(tempfile.gettempdir()).parent / name,
    ]


@pytest.mark.docker
def test_mapping_grades_pass_fail_and_refuse_escapes(
    grader: assay.Grader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    escape = f"assay-escape-{secrets.token_hex(4)}.py"
    ok = grader.grade(ADD, {"solution.py": CORRECT})
    bad = grader.grade(ADD, {"solution.py": WRONG})
    dotdot = grader.grade(ADD, {"solution.py": CORRECT, f"../{escape}": "import os"})
    absolute = grader.grade(ADD, {"solution.py": CORRECT, f"/tmp/{escape}": "x = 1"})
    nul = grader.grade(ADD, {"solution.py\x00.txt": CORRECT})
    assert ok.verdict.passed and ok.verdict.tier == "t3"
    assert not bad.verdict.passed
    assert not dotdot.verdict.passed and "firewall:dot-dot" in dotdot.verdict.reason_codes
    assert not absolute.verdict.passed
    assert "firewall:absolute-path" in absolute.verdict.reason_codes
    assert not nul.verdict.passed and "firewall:control-char" in nul.verdict.reason_codes
    assert [p for p in _landing_places(escape, tmp_path) if p.exists()] == []
    for graded in (ok, bad, dotdot, absolute, nul):
        assert assay.verify(graded.envelope, grader.public_key) == graded.verdict


@pytest.mark.docker
def test_tar_file_object_and_directory_submissions(grader: assay.Grader) -> None:
    correct = ADD / "solutions" / "correct"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for child in sorted(correct.iterdir()):
            tf.add(child, arcname=child.name)
    raw.seek(0)
    from_object = grader.grade(ADD, raw)
    from_dir = grader.grade(ADD, correct)
    assert from_object.verdict.passed and from_dir.verdict.passed
    assert from_object.verdict.submission_digest == from_dir.verdict.submission_digest


@pytest.mark.docker
def test_grade_many_yields_every_job(grader: assay.Grader) -> None:
    jobs = [
        assay.Job(ADD, {"solution.py": CORRECT}, id="right"),
        assay.Job(ADD, {"solution.py": WRONG}, id="wrong"),
        assay.Job(ADD, {"../x.py": "x = 1"}, id="escape"),
    ]
    results = {g.job_id: g for g in grader.grade_many(jobs, parallel=2)}
    assert sorted(results) == ["escape", "right", "wrong"]
    assert results["right"].verdict.passed
    assert not results["wrong"].verdict.passed
    assert "firewall:dot-dot" in results["escape"].verdict.reason_codes
    for graded in results.values():
        assert assay.verify(graded.envelope, grader.public_key) == graded.verdict
