"""The controller's host work made cheaper (issue 38, item 3), with every guarantee kept: a
mapping's tar and a submission's normalised archive stay off the disk (the archive is written
only for a caller that asks for it) yet cross the same firewall, a batch's files are still published atomically, the verdict signed is the one
validated, and helper threads that are kept never hold a step back or outlive a fork."""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from e2e import EXAMPLES
from helpers.verdicts import verdict

from assay._internal.api.submission import as_source
from assay._internal.batch.journal import publish
from assay._internal.firewall.mapping import write_mapping_tar
from assay._internal.model.task import load_task
from assay._internal.runtime import GradingScope
from assay._internal.runtime.fake import FakeRuntime
from assay._internal.runtime.scope import grading_tempdirs
from assay._internal.signing.dsse import decode
from assay._internal.signing.sign import sign_verdict, statement_for, verify_envelope
from assay._internal.tiers.core.controller import Grading
from assay._internal.tiers.core.intake import (
    Crossing,
    Refused,
    Submission,
    firewall_limits,
    through_firewall,
)
from assay._internal.tiers.core.overlap import Background

TASK = load_task(EXAMPLES / "add")
GID = "g-00000000000000c3"
SOLUTION = "def add(a, b):\n    return a + b\n"


def _take(source_gid: str, submission: object) -> Submission | Refused:
    with as_source(submission, TASK, source_gid) as source:  # type: ignore[arg-type]
        assert grading_tempdirs(source_gid) == []  # nothing of it on the disk
        g = Grading(FakeRuntime(), TASK, "t3", "img", gid=source_gid)
        with g.scope() as scope:
            taken = g.take_submission(scope, source)
            if isinstance(taken, Submission):
                assert (taken.files / "solution.py").read_text() == SOLUTION
    assert grading_tempdirs(source_gid) == []
    return taken


def test_a_mapping_crosses_the_firewall_from_memory_as_a_directory_does(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "solution.py").write_text(SOLUTION)
    from_dir = _take(GID, str(tmp_path / "sub"))
    from_mapping = _take(GID, {"solution.py": SOLUTION})
    assert isinstance(from_dir, Submission) and isinstance(from_mapping, Submission)
    assert from_mapping.digest == from_dir.digest
    assert from_mapping.accepted.manifest == from_dir.accepted.manifest


def test_a_file_object_crosses_the_firewall_from_memory() -> None:
    buf = io.BytesIO()
    write_mapping_tar({"solution.py": SOLUTION, "notes.txt": "x"}, buf)
    buf.seek(0)
    taken = _take(GID, buf)
    assert isinstance(taken, Submission)
    assert taken.accepted.dropped == ("notes.txt",)


@pytest.mark.parametrize("name", ["../solution.py", "/etc/solution.py", "sol\x00ution.py"])
def test_a_mapping_the_firewall_refuses_is_refused_by_its_rule(name: str) -> None:
    taken = _take(GID, {name: SOLUTION})
    assert isinstance(taken, Refused) and taken.reason.startswith("firewall:"), taken


def test_the_unsafe_baselines_still_get_a_path() -> None:
    with as_source({"solution.py": SOLUTION}, TASK, GID, as_path=True) as source:
        assert source.path is not None and source.stream is None
        assert source.path.is_file() and grading_tempdirs(GID) == [source.path.parent]
    assert grading_tempdirs(GID) == []


def test_the_normalised_archive_is_a_file_only_once_asked_for_and_is_what_was_checked() -> None:
    buf = io.BytesIO()
    write_mapping_tar({"solution.py": SOLUTION}, buf)
    how = Crossing(firewall_limits(TASK), TASK.config.artifacts, None, "submission")
    with GradingScope(FakeRuntime(), GID) as scope:
        buf.seek(0)
        taken = through_firewall(scope, buf, how)
        assert isinstance(taken, Submission)
        assert (taken.files / "solution.py").read_text() == SOLUTION

        def dirs() -> list[str]:  # assay-<gid>-<purpose>-<what>-XXXX
            return sorted(p.name.split("-")[4] for p in grading_tempdirs(GID))

        assert dirs() == ["files"]
        archive = taken.archive
        assert taken.archive == archive and dirs() == ["archive", "files"]
        digest = "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
        assert digest == taken.digest
    assert grading_tempdirs(GID) == []


def test_published_files_are_whole_exact_and_leave_no_temp_names(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        publish(tmp_path / "a.dsse.json", b"first")
        publish(tmp_path / "a.dsse.json", b"second")
    finally:
        os.umask(old)
    assert (tmp_path / "a.dsse.json").read_bytes() == b"second"
    assert (tmp_path / "a.dsse.json").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.dsse.json"]


def test_publish_never_writes_through_a_link_planted_at_its_temp_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"untouched")
    real = os.open

    def planted(path: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        if str(path).endswith(".tmp"):
            os.symlink(target, path)
        return real(path, flags, mode)

    monkeypatch.setattr(os, "open", planted)
    with pytest.raises(FileExistsError):
        publish(tmp_path / "b.dsse.json", b"data")
    monkeypatch.undo()
    assert target.read_bytes() == b"untouched"
    assert not (tmp_path / "b.dsse.json").exists()


def test_the_signed_payload_is_the_validated_verdict_in_canonical_form() -> None:
    key = Ed25519PrivateKey.generate()
    v = verdict(("pass", "fail"))
    envelope = sign_verdict(v, key)
    payload = decode(envelope).payload
    canonical = json.dumps(
        statement_for(v), separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")
    assert payload == canonical
    assert verify_envelope(envelope, key.public_key()) == v


def test_kept_helpers_run_every_step_even_when_steps_wait_for_each_other() -> None:
    # A step that waits for another step it started needs a second helper, never the idle
    # one it occupies: every step finds a helper of its own.
    def outer() -> int:
        return Background(lambda: 7).result() + 1

    assert [Background(outer).result() for _ in range(20)] == [8] * 20
    gate = threading.Event()
    waiting = [Background(gate.wait) for _ in range(12)]  # more than the idle helpers kept
    gate.set()
    assert all(bg.result() for bg in waiting)


def test_a_step_that_raises_leaves_its_helper_serving() -> None:
    for _ in range(5):
        with pytest.raises(ZeroDivisionError):
            Background(lambda: 1 // 0).result()
    assert Background(lambda: "next").result() == "next"


def test_a_forked_child_gets_helpers_of_its_own() -> None:
    assert Background(lambda: 1).result() == 1  # an idle helper now exists in this process
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        code = 0
        try:
            done = threading.Event()
            threading.Thread(target=lambda: (Background(lambda: 2).result(), done.set())).start()
            code = 0 if done.wait(10) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
