"""Batch grading without Docker: job lists, resume, atomic output, errors, interrupts."""

from __future__ import annotations

import base64
import json
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from assay._internal.batch import run as batch
from assay._internal.batch.journal import exclusive, unfinished_gradings
from assay._internal.batch.run import (
    Job,
    Progress,
    jobs_from_dir,
    jobs_from_manifest,
    load_tasks,
    run_batch,
)
from assay._internal.model.diagnostics import CaseDiagnostic, Diagnostics, Judged
from assay._internal.model.diagnostics import load as load_diagnostics
from assay._internal.model.task import Task
from assay._internal.model.verdict import CaseResult, ControllerFacts, Verdict, build_verdict
from assay._internal.runtime import ContainerSpec, GradingScope
from assay._internal.runtime.fake import FakeRuntime
from assay._internal.runtime.observed import Cancelled, ObservedRuntime
from assay._internal.signing.sign import verify_envelope
from assay._internal.tiers.core.intake import Refused, from_path
from assay.errors import EngineUnavailableError, InfrastructureError, UsageError

ROOT = Path(__file__).resolve().parents[2]
ADD = ROOT / "examples" / "add"
WORDCOUNT = ROOT / "examples" / "wordcount"


def intake_digest(task: Task, submission: Path) -> str | None:
    """The submission digest a real grading records: the intake's own path, on a fake engine."""
    with GradingScope(FakeRuntime(), "g-0000000000000000") as scope:
        taken = from_path(scope, task, submission)
    return None if isinstance(taken, Refused) else taken.digest


def _verdict(task: Task, gid: str, passed: bool, submission: str | None = None) -> Verdict:
    now = datetime.now(UTC)
    facts = ControllerFacts(
        grading_id=gid,
        task_id=task.id,
        task_digest=task.digest,
        tier="t3",
        runtime="fake",
        submission_digest=submission,
        started_at=now,
        ended_at=now,
    )
    status = "pass" if passed else "fail"
    cases = [CaseResult(id=f"c{i}", status=status, duration_s=0.0) for i in range(3)]
    # Every fake grading borrowed a reused judge: a note, which never joins a failure's reasons.
    notes = ["note:judge-reused"]
    return build_verdict(facts, cases, 3, notes if passed else [*notes, "compare:mismatch"])


class FakeGrader:
    """Passes a submission whose directory name contains 'good'; other names fail; names with
    'boom' raise an infrastructure error, 'bug' an unexpected exception, 'gone' a lost engine."""

    def __init__(self, delay: float = 0.0) -> None:
        self.calls: list[str] = []
        self.started: list[float] = []
        self.delay = delay
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0

    def __call__(self, task: Task, submission: Path, gid: str) -> Judged:
        with self.lock:
            self.calls.append(submission.name)
            self.started.append(time.monotonic())
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(self.delay)
            name = submission.name
            if "boom" in name:
                raise InfrastructureError("engine refused to create the judge container")
            if "bug" in name:
                raise ZeroDivisionError("division by zero")
            if "gone" in name:
                raise EngineUnavailableError("lost the Docker engine")
            return Judged(_verdict(task, gid, "good" in name, intake_digest(task, submission)))
        finally:
            with self.lock:
                self.active -= 1


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def _subs(tmp: Path, *names: str) -> Path:
    d = tmp / "subs"
    for name in names:
        (d / name).mkdir(parents=True)
        (d / name / "solution.py").write_text("def add(a, b):\n    return a + b\n")
    return d


def _run(
    out: Path,
    jobs: list[Job],
    grader: FakeGrader,
    key: Ed25519PrivateKey,
    parallelism: int = 2,
    **kw: object,
) -> batch.BatchResult:
    return run_batch(out, jobs, load_tasks(jobs), grader, key, parallelism, **kw)  # type: ignore[arg-type]


# -- job lists --------------------------------------------------------------------------------


def test_manifest_paths_are_relative_to_it_and_ids_are_stable(tmp_path: Path) -> None:
    subs = _subs(tmp_path, "a-good", "b-bad")
    m = tmp_path / "m.jsonl"
    m.write_text(
        json.dumps({"task": str(ADD), "submission": "subs/a-good", "id": "first"})
        + "\n\n"
        + json.dumps({"task": str(ADD), "submission": "subs/b-bad"})
        + "\n"
    )
    jobs = jobs_from_manifest(m)
    assert [j.submission for j in jobs] == [subs / "a-good", subs / "b-bad"]
    assert jobs[0].id == "first"
    assert jobs[1].id.startswith("b-bad-") and len(jobs[1].id) == len("b-bad-") + 16
    assert jobs_from_manifest(m)[1].id == jobs[1].id  # same manifest, same ids
    m.write_text(json.dumps({"task": str(WORDCOUNT), "submission": "subs/b-bad"}) + "\n")
    assert jobs_from_manifest(m)[0].id != jobs[1].id  # another task, another id


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"task": "t", "submission": "s", "id": "../escape"}', "not usable as a file name"),
        ('{"task": "t", "submission": "s", "id": ".hidden"}', "not usable as a file name"),
        ('{"task": "t", "submission": "s", "id": 7}', "'id' must be a string"),
        ('{"task": "t", "submission": "s", "tier": "t0"}', "unknown key"),
        ('{"task": "t", "task": "u", "submission": "s"}', "duplicate-key"),
        ('["t", "s"]', "must be a JSON object"),
        ('{"task": "t"}', "must be non-empty strings"),
        ("not json", "not a JSON object line"),
    ],
)
def test_manifest_rejects_bad_lines_naming_the_line(
    tmp_path: Path, line: str, message: str
) -> None:
    m = tmp_path / "m.jsonl"
    m.write_text('{"task": "t", "submission": "s0"}\n' + line + "\n")
    with pytest.raises(UsageError, match=message) as info:
        jobs_from_manifest(m)
    assert f"{m}:2" in str(info.value)


def test_manifest_rejects_duplicate_ids(tmp_path: Path) -> None:
    m = tmp_path / "m.jsonl"
    line = json.dumps({"task": "t", "submission": "s", "id": "x"})
    m.write_text(line + "\n" + line.replace('"s"', '"s2"') + "\n")
    with pytest.raises(UsageError, match="already used"):
        jobs_from_manifest(m)


def test_directory_of_submissions_takes_dirs_and_tars_only(tmp_path: Path) -> None:
    subs = _subs(tmp_path, "alpha", "we!rd name", ".hidden")
    with tarfile.open(subs / "beta.tar.gz", "w:gz") as tf:
        tf.add(subs / "alpha" / "solution.py", arcname="solution.py")
    (subs / "notes.txt").write_text("not a submission")
    (subs / "alpha.tar").write_bytes((subs / "beta.tar.gz").read_bytes())  # same stem as a dir
    jobs = jobs_from_dir(ADD, subs)
    ids = {j.submission.name: j.id for j in jobs}
    assert set(ids) == {"alpha", "alpha.tar", "beta.tar.gz", "we!rd name"}
    assert ids["beta.tar.gz"] == "beta"
    assert ids["alpha"] != ids["alpha.tar"]  # a collision gets hash suffixes, not an overwrite
    assert ids["alpha"].startswith("alpha-") and ids["alpha.tar"].startswith("alpha-")
    assert ids["we!rd name"].startswith("we_rd_name-")
    assert len(set(ids.values())) == len(ids)


def test_empty_submissions_directory_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no subdirectory or tar"):
        jobs_from_dir(ADD, tmp_path / "empty")


# -- grading, output, resume ------------------------------------------------------------------


def test_batch_writes_one_verifying_verdict_per_job_and_a_summary(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "s1-good", "s2-bad", "s3-good", "s4-boom", "s5-bug")
    jobs = jobs_from_dir(ADD, subs)
    out = tmp_path / "out"
    grader = FakeGrader()
    res = _run(out, jobs, grader, key)
    assert not res.interrupted
    for jid, passed in [("s1-good", True), ("s2-bad", False), ("s3-good", True)]:
        v = verify_envelope((out / f"{jid}.dsse.json").read_bytes(), key.public_key())
        assert v.passed is passed
    # Errors leave no verdict: there is nothing to sign, and nothing can read as a pass.
    assert not (out / "s4-boom.dsse.json").exists()
    assert not (out / "s5-bug.dsse.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["total"], summary["passed"], summary["failed"], summary["errors"]) == (
        5,
        2,
        1,
        2,
    )
    assert summary["pass_rate"] == pytest.approx(2 / 5)
    assert summary["complete"] is False
    assert summary["failures"] == [{"id": "s2-bad", "reasons": ["compare:mismatch"]}]
    assert summary["notes"] == {"note:judge-reused": 3}
    errors = {e["id"]: e["error"] for e in summary["error_details"]}
    assert "engine refused" in errors["s4-boom"]
    assert errors["s5-bug"].startswith("internal: ZeroDivisionError")
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "start" for e in events) == 5
    assert unfinished_gradings(out / "log.jsonl") == []
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_second_run_skips_finished_and_retries_errors(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "s1-good", "s2-bad", "s3-boom")
    jobs = jobs_from_dir(ADD, subs)
    out = tmp_path / "out"
    _run(out, jobs, FakeGrader(), key)
    before = {p.name: p.read_bytes() for p in out.glob("*.dsse.json")}
    again = FakeGrader()
    res = _run(out, jobs, again, key)
    assert again.calls == ["s3-boom"]  # only the one without a verdict
    assert res.tally.resumed == 2 and res.tally.graded == 1
    assert {p.name: p.read_bytes() for p in out.glob("*.dsse.json")} == before
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errors"]) == (1, 1, 1)


class ExplainingGrader(FakeGrader):
    """Fails 'bad' submissions with their cases explained, as the strict tier returns them."""

    def __call__(self, task: Task, submission: Path, gid: str) -> Judged:
        judged = super().__call__(task, submission, gid)
        if judged.verdict.passed:
            return judged
        case = CaseDiagnostic(id="c0", reason="compare:mismatch", expected="3", actual="-1")
        return Judged(judged.verdict, Diagnostics(grading_id=gid, cases=[case]))


def test_the_diagnostics_a_grading_returns_are_written_beside_its_verdict(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "s1-good", "s2-bad")
    jobs = jobs_from_dir(ADD, subs)
    out = tmp_path / "out"
    _run(out, jobs, ExplainingGrader(), key)
    v = verify_envelope((out / "s2-bad.dsse.json").read_bytes(), key.public_key())
    explained = load_diagnostics((out / "s2-bad.diag.json").read_bytes())
    assert explained is not None and explained.grading_id == v.grading_id
    assert [(c.id, c.expected, c.actual) for c in explained.cases] == [("c0", "3", "-1")]
    assert not (out / "s1-good.diag.json").exists()


@pytest.mark.parametrize("damage", ["truncate", "flip", "other-key", "symlink"])
def test_a_verdict_that_does_not_verify_is_graded_again(
    tmp_path: Path, key: Ed25519PrivateKey, damage: str
) -> None:
    subs = _subs(tmp_path, "s1-good", "s2-bad")
    jobs = jobs_from_dir(ADD, subs)
    out = tmp_path / "out"
    _run(out, jobs, FakeGrader(), key)
    target = out / "s2-bad.dsse.json"
    data = target.read_bytes()
    if damage == "truncate":
        target.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        env = json.loads(data)
        payload = base64.b64decode(env["payload"])
        assert b'"passed":false' in payload
        env["payload"] = base64.b64encode(payload.replace(b'"passed":false', b'"passed":true'))
        env["payload"] = env["payload"].decode()
        target.write_text(json.dumps(env))
    elif damage == "other-key":
        _run(tmp_path / "elsewhere", jobs, FakeGrader(), Ed25519PrivateKey.generate())
        target.write_bytes((tmp_path / "elsewhere" / "s2-bad.dsse.json").read_bytes())
    else:
        (tmp_path / "real.json").write_bytes(data)
        target.unlink()
        target.symlink_to(tmp_path / "real.json")
    again = FakeGrader()
    res = _run(out, jobs, again, key)
    assert again.calls == ["s2-bad"]
    assert res.regraded_invalid == ["s2-bad"]
    assert not target.is_symlink()
    assert verify_envelope(target.read_bytes(), key.public_key()).passed is False


def test_a_verdict_for_another_version_of_the_task_is_graded_again(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    _, jobs, out = _graded_once(tmp_path, key)
    stale = load_tasks(jobs)
    task = next(iter(stale.values()))
    tweaked = Task(task.root, task.config, "sha256:" + "00" * 32)
    again = FakeGrader()
    run_batch(out, jobs, {k: tweaked for k in stale}, again, key, 1)
    assert again.calls == ["s1-good"]


def _graded_once(tmp: Path, key: Ed25519PrivateKey) -> tuple[Path, list[Job], Path]:
    """One good submission of examples/add, graded into tmp/out."""
    subs = _subs(tmp, "s1-good")
    jobs = jobs_from_dir(ADD, subs)
    _run(tmp / "out", jobs, FakeGrader(), key)
    return subs, jobs, tmp / "out"


def _write_tar(path: Path, content: str) -> None:
    src = path.parent / "tar-src.py"
    src.write_text(content)
    with tarfile.open(path, "w") as tf:
        tf.add(src, arcname="solution.py")
    src.unlink()


@pytest.mark.parametrize("form", ["dir", "tar"])
def test_a_submission_replaced_under_the_same_id_is_graded_again(
    tmp_path: Path, key: Ed25519PrivateKey, form: str
) -> None:
    subs = _subs(tmp_path, "s1-good", "s2-good")
    if form == "tar":
        for name in ("s1-good", "s2-good"):
            shutil.rmtree(subs / name)
            _write_tar(subs / f"{name}.tar", "def add(a, b):\n    return a + b\n")
    jobs = jobs_from_dir(ADD, subs)
    out = tmp_path / "out"
    _run(out, jobs, FakeGrader(), key)
    wrong = "def add(a, b):\n    return a - b\n"
    if form == "dir":
        (subs / "s1-good" / "solution.py").write_text(wrong)
    else:
        _write_tar(subs / "s1-good.tar", wrong)
    again = FakeGrader()
    res = _run(out, jobs, again, key)
    assert again.calls == [jobs[0].submission.name]  # the unchanged one is kept
    assert res.regraded_invalid == ["s1-good"]
    v = verify_envelope((out / "s1-good.dsse.json").read_bytes(), key.public_key())
    assert v.submission_digest == intake_digest(
        next(iter(load_tasks(jobs).values())), jobs[0].submission
    )
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert {"id": "s1-good", "reason": "batch:submission-changed"}.items() <= next(
        e for e in events if e["event"] == "regrade"
    ).items()


def test_a_change_outside_the_artifacts_keeps_the_verdict(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs, jobs, out = _graded_once(tmp_path, key)
    (subs / "s1-good" / "notes.txt").write_text("not an artifact of the task")
    again = FakeGrader()
    assert _run(out, jobs, again, key).tally.resumed == 1
    assert again.calls == []


@pytest.mark.parametrize("how", ["removed", "refused"])
def test_a_submission_without_a_digest_is_graded_again_never_kept(
    tmp_path: Path, key: Ed25519PrivateKey, how: str
) -> None:
    subs, jobs, out = _graded_once(tmp_path, key)
    target = subs / "s1-good" / "solution.py"
    target.unlink()
    if how == "refused":  # the firewall refuses a link: no digest, so no way to compare
        target.symlink_to("/etc/passwd")
    else:
        (subs / "s1-good").rmdir()
    again = FakeGrader()
    res = _run(out, jobs, again, key)
    assert res.regraded_invalid == ["s1-good"] and again.calls == ["s1-good"]


def test_a_verdict_naming_no_submission_is_graded_again(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "s1-good")
    jobs = jobs_from_dir(ADD, subs)
    out = tmp_path / "out"

    def refused(task: Task, submission: Path, gid: str) -> Judged:
        return Judged(_verdict(task, gid, False, None))  # what a grading the firewall refused signs

    run_batch(out, jobs, load_tasks(jobs), refused, key, 1)
    again = FakeGrader()
    assert _run(out, jobs, again, key).regraded_invalid == ["s1-good"]


def test_a_symlink_at_the_top_of_submissions_is_refused(tmp_path: Path) -> None:
    subs = _subs(tmp_path, "s1-good")
    elsewhere = _subs(tmp_path / "other", "secret")
    (subs / "s2").symlink_to(elsewhere / "secret")
    with pytest.raises(UsageError, match=r"s2.*symbolic link") as err:
        jobs_from_dir(ADD, subs)
    assert err.value.exit_code == 2
    (subs / "s2").unlink()
    (subs / "s3.tar").symlink_to(tmp_path / "nowhere.tar")
    with pytest.raises(UsageError, match=r"s3\.tar.*symbolic link"):
        jobs_from_dir(ADD, subs)


def test_a_manifest_entry_naming_a_symlink_is_refused(tmp_path: Path) -> None:
    subs = _subs(tmp_path, "real")
    (subs / "link").symlink_to(subs / "real")
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps({"task": str(ADD), "submission": "subs/link"}) + "\n")
    with pytest.raises(UsageError, match=r"m\.jsonl:1.*subs/link.*symbolic link"):
        jobs_from_manifest(m)


def test_grade_many_exits_2_naming_the_symlink(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from assay.cli.grade_many import grade_many_cmd

    subs = _subs(tmp_path, "s1-good")
    (subs / "s2").symlink_to(subs / "s1-good")
    argv = [str(ADD), "--submissions", str(subs), "--out", str(tmp_path / "out")]
    res = CliRunner().invoke(grade_many_cmd, argv)
    assert res.exit_code == 2
    assert str(subs / "s2") in res.output and "symbolic link" in res.output


def test_parallelism_is_bounded(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    subs = _subs(tmp_path, *(f"s{i:02d}-good" for i in range(12)))
    grader = FakeGrader(delay=0.05)
    _run(tmp_path / "out", jobs_from_dir(ADD, subs), grader, key, parallelism=3)
    assert len(grader.calls) == 12
    assert 2 <= grader.max_active <= 3


def test_lost_engine_stops_scheduling_and_is_not_a_pass(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "a-gone", *(f"s{i:02d}-good" for i in range(10)))
    grader = FakeGrader()
    res = _run(tmp_path / "out", jobs_from_dir(ADD, subs), grader, key, parallelism=1)
    assert grader.calls == ["a-gone"]
    assert res.aborted_engine and res.tally.errors == 1 and res.tally.passed == 0
    assert res.not_run == 10


def test_a_second_run_on_the_same_output_is_refused(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    subs = _subs(tmp_path, "s1-good")
    jobs = jobs_from_dir(ADD, subs)
    out = tmp_path / "out"
    out.mkdir()
    with exclusive(out), pytest.raises(UsageError, match="another"):
        _run(out, jobs, FakeGrader(), key)


def test_gradings_a_killed_run_left_open_are_swept_first(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    open_gid, closed_gid = "g-" + "1" * 16, "g-" + "2" * 16
    lines = [
        {"event": "start", "id": "x", "grading_id": open_gid},
        {"event": "start", "id": "y", "grading_id": closed_gid},
        {"event": "end", "id": "y", "grading_id": closed_gid},
        {"event": "start", "id": "z", "grading_id": "g-../../etc"},
    ]
    (out / "log.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines) + '{"event": "sta')
    leftover = Path(tempfile.gettempdir()) / f"assay-{open_gid}-inputs-test"
    leftover.mkdir(exist_ok=True)
    swept: list[str] = []

    def sweep(gid: str) -> int:
        swept.append(gid)
        return 2

    res = _run(out, jobs_from_dir(ADD, _subs(tmp_path, "s1-good")), FakeGrader(), key, sweep=sweep)
    assert swept == [open_gid]
    assert res.recovered_containers == 2
    assert not leftover.exists()
    assert unfinished_gradings(out / "log.jsonl") == []


# -- interrupts -------------------------------------------------------------------------------


def test_ctrl_c_stops_scheduling_and_keeps_what_finished(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, *(f"s{i:02d}-good" for i in range(20)))
    jobs = jobs_from_dir(ADD, subs)
    grader = FakeGrader(delay=0.05)
    stopping: list[int] = []

    interrupted_at: list[float] = []

    def interrupt_once(o: batch.Outcome, t: batch.Tally) -> None:
        if t.done == 3:
            interrupted_at.append(time.monotonic())
            raise KeyboardInterrupt

    progress = Progress(on_outcome=interrupt_once, on_stopping=stopping.append)
    out = tmp_path / "out"
    res = _run(out, jobs, grader, key, parallelism=2, progress=progress)
    assert res.interrupted
    assert stopping and stopping[0] <= 2
    finished = sorted(p.name for p in out.glob("*.dsse.json"))
    # Running gradings finished and kept their verdicts; nothing else started.
    assert len(finished) == len(grader.calls) == res.tally.done
    # At most one undrained result and one running grading per worker when Ctrl-C came, and
    # nothing started afterwards (the rest would have taken ~0.4 s more).
    assert 3 <= len(finished) <= 3 + 2 * 2
    assert max(grader.started) < interrupted_at[0] + 0.04
    assert res.not_run == 20 - len(finished)
    assert json.loads((out / "summary.json").read_text())["interrupted"] is True
    again = FakeGrader()
    _run(out, jobs, again, key)
    assert sorted(again.calls) == sorted(
        j.submission.name for j in jobs if f"{j.id}.dsse.json" not in finished
    )


def test_second_ctrl_c_cancels_running_gradings_and_discards_their_results(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "a-good", *(f"s{i:02d}-good" for i in range(6)))
    jobs = jobs_from_dir(ADD, subs)
    released = threading.Event()
    cancelled: list[str] = []

    class Blocking(FakeGrader):
        def __call__(self, task: Task, submission: Path, gid: str) -> Judged:
            if submission.name != "a-good":
                released.wait(10)  # a long grading; only cancel() ends it early
            return super().__call__(task, submission, gid)

    def cancel(gid: str) -> None:
        cancelled.append(gid)
        released.set()

    def first_interrupt(o: batch.Outcome, t: batch.Tally) -> None:
        raise KeyboardInterrupt

    def second_interrupt(running: int) -> None:
        assert running >= 1
        raise KeyboardInterrupt

    out = tmp_path / "out"
    t0 = time.monotonic()
    res = _run(
        out,
        jobs,
        Blocking(),
        key,
        parallelism=2,
        progress=Progress(on_outcome=first_interrupt, on_stopping=second_interrupt),
        cancel=cancel,
    )
    assert time.monotonic() - t0 < 5  # did not wait for the long gradings
    assert res.interrupted
    assert 1 <= len(cancelled) <= 2
    assert sorted(p.name for p in out.glob("*.dsse.json")) == ["a-good.dsse.json"]
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert sorted(e["grading_id"] for e in events if e["event"] == "aborted") == sorted(cancelled)
    assert unfinished_gradings(out / "log.jsonl") == []
    assert res.tally.done == 1 and res.not_run == 6


# -- the runtime wrapper ----------------------------------------------------------------------


def test_observed_runtime_counts_per_grading_and_refuses_cancelled_ones() -> None:
    rt = ObservedRuntime(FakeRuntime())
    spec = ContainerSpec(image="img", grading_id="g-a", role="judge")
    cid = rt.create(spec)
    rt.start(cid)
    rt.exec(cid, ("true",), deadline_s=5, output_cap=10)
    other = rt.create(ContainerSpec(image="img", grading_id="g-b", role="candidate"))
    assert rt.cancel("g-b") == 1
    assert rt.inner.leftovers("g-b") == []
    with pytest.raises(Cancelled):
        rt.create(ContainerSpec(image="img", grading_id="g-b", role="candidate"))
    stats = rt.take("g-a")
    assert stats.containers == 1
    assert stats.calls == {"create:judge": 1, "start": 1, "exec": 1}
    assert rt.take("g-a").calls == {}  # taken means forgotten
    assert other not in rt.inner.containers  # type: ignore[attr-defined]
    rt.take("g-b")
    rt.create(ContainerSpec(image="img", grading_id="g-b", role="candidate"))  # forgotten too


def test_shared_resources_are_logged_open_and_closed_after_the_last_grading(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "s1-good", "s2-bad")
    closed: list[int] = []
    grader = FakeGrader()

    def close() -> None:
        closed.append(len(grader.calls))

    pool_gid = "g-" + "7" * 16
    out = tmp_path / "out"
    shared = [batch.Shared("judge-pool", pool_gid, close)]
    _run(out, jobs_from_dir(ADD, subs), grader, key, shared=shared)
    assert closed == [2]  # once, after both gradings
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    mine = [e["event"] for e in events if e.get("grading_id") == pool_gid]
    assert mine == ["start", "end"]
    assert unfinished_gradings(out / "log.jsonl") == []


def test_a_shared_resource_that_cannot_be_closed_is_left_for_the_next_run(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    # Seen with a restarted engine: the judge pool's sweep raised a connection error out of
    # run_batch, so the batch died with a traceback and no summary.
    subs = _subs(tmp_path, "s1-good", "s2-bad")

    def close() -> None:
        raise ConnectionError("('Connection aborted.', FileNotFoundError(2, 'No such file'))")

    pool_gid = "g-" + "8" * 16
    out = tmp_path / "out"
    res = _run(out, jobs_from_dir(ADD, subs), FakeGrader(), key, shared=[
        batch.Shared("judge-pool", pool_gid, close)
    ])  # fmt: skip
    assert res.tally.passed == 1 and res.tally.failed == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == 2
    events = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events if e.get("id") == "judge-pool"][-1] == "close-failed"
    assert unfinished_gradings(out / "log.jsonl") == [pool_gid]  # swept by the next run


def _disk_full_for(suffix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Both writers of the output directory: `publish` (a grading's files), `atomic_write` (the
    # summary).
    for name in ("publish", "atomic_write"):
        real = getattr(batch, name)

        def full(path: Path, data: bytes, real: Callable[[Path, bytes], None] = real) -> None:
            if path.name.endswith(suffix):
                raise OSError(28, "No space left on device")
            real(path, data)

        monkeypatch.setattr(batch, name, full)


def test_a_verdict_that_cannot_be_written_is_a_named_error_and_graded_again(
    tmp_path: Path, key: Ed25519PrivateKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    subs = _subs(tmp_path, "s1-good", "s2-bad")
    out = tmp_path / "out"
    _disk_full_for(".dsse.json", monkeypatch)
    res = _run(out, jobs_from_dir(ADD, subs), FakeGrader(), key)
    assert res.tally.passed == 0 and res.tally.errors == 2
    assert {e["error"] for e in res.tally.error_list} == {
        "output: could not write the verdict (No space left on device)"
    }
    monkeypatch.undo()
    grader = FakeGrader()
    res = _run(out, jobs_from_dir(ADD, subs), grader, key)
    assert sorted(grader.calls) == ["s1-good", "s2-bad"] and res.tally.passed == 1


def test_a_summary_that_cannot_be_written_is_an_infrastructure_error(
    tmp_path: Path, key: Ed25519PrivateKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen with a full output file system: the OSError ended `grade-many` with a traceback.
    subs = _subs(tmp_path, "s1-good")
    _disk_full_for(batch.SUMMARY, monkeypatch)
    with pytest.raises(InfrastructureError, match=r"could not write .*summary\.json"):
        _run(tmp_path / "out", jobs_from_dir(ADD, subs), FakeGrader(), key)
    assert (tmp_path / "out" / "s1-good.dsse.json").exists()


def test_event_log_lines_that_cannot_be_written_are_counted_not_raised() -> None:
    # A raising log killed the worker thread and lost its job's outcome.
    log = batch.EventLog(Path("/dev/full"))
    log.write("start", id="x", grading_id="g-" + "1" * 16)
    log.write("end", id="x", grading_id="g-" + "1" * 16)
    assert log.lost == 2
    log.close()


# -- lost nodes (grade-many --ray) ------------------------------------------------------------


class LosingGrader(FakeGrader):
    """The first grading of each job named 'lost' dies with its node; 'always-lost' every time."""

    def __init__(self) -> None:
        super().__init__()
        self.gids: dict[str, list[str]] = {}

    def __call__(self, task: Task, submission: Path, gid: str) -> Judged:
        from assay.errors import NodeLostError

        seen = self.gids.setdefault(submission.name, [])
        seen.append(gid)
        if "always-lost" in submission.name or ("lost" in submission.name and len(seen) == 1):
            raise NodeLostError(f"grading {gid}: the node running it was lost")
        return super().__call__(task, submission, gid)


def test_a_grading_lost_with_its_node_is_graded_again_fresh_and_swept(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "a-lost-good", "b-lost-bad", "c-good", "d-bad")
    grader = LosingGrader()
    swept: list[str] = []

    def sweep(gid: str) -> int:
        swept.append(gid)
        return 1

    out = tmp_path / "out"
    res = _run(out, jobs_from_dir(ADD, subs), grader, key, sweep=sweep)
    t = res.tally
    assert (t.passed, t.failed, t.errors, t.graded) == (2, 2, 0, 4)  # each counted once
    for name in ("a-lost-good", "b-lost-bad"):
        first, second = grader.gids[name]
        assert first != second  # a fresh grading, under its own id
        v = verify_envelope((out / f"{name}.dsse.json").read_bytes(), key.public_key())
        assert v.grading_id == second and v.passed is ("good" in name)
    lost = sorted(grader.gids[n][0] for n in ("a-lost-good", "b-lost-bad"))
    assert sorted(swept) == lost and res.recovered_containers == 2
    assert [len(grader.gids[n]) for n in ("c-good", "d-bad")] == [1, 1]  # a verdict: never again
    assert unfinished_gradings(out / "log.jsonl") == []


def test_a_lost_grading_that_cannot_be_swept_stays_open_for_the_next_run(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "a-lost-good")
    grader = LosingGrader()

    def sweep(gid: str) -> int:
        raise InfrastructureError("no node answers")

    out = tmp_path / "out"
    res = _run(out, jobs_from_dir(ADD, subs), grader, key, sweep=sweep)
    assert res.tally.passed == 1
    assert unfinished_gradings(out / "log.jsonl") == [grader.gids["a-lost-good"][0]]


def test_a_job_lost_every_time_ends_as_an_error_after_the_attempts(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    subs = _subs(tmp_path, "a-always-lost-good", "b-good")
    grader = LosingGrader()
    res = _run(tmp_path / "out", jobs_from_dir(ADD, subs), grader, key, sweep=lambda gid: 0)
    assert len(grader.gids["a-always-lost-good"]) == batch.MAX_ATTEMPTS
    assert (res.tally.passed, res.tally.errors) == (1, 1)
    assert "NodeLostError" in res.tally.error_list[0]["error"]
    assert not (tmp_path / "out" / "a-always-lost-good.dsse.json").exists()
