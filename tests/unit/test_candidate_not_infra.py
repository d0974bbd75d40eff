"""Issue 36, item 2, the pure parts: what a candidate's bytes, sizes or build can make of the
controller's own steps is a named failure, never an engine error or an exception nobody
meant (`infra:internal-error`). The real-backend halves are in
tests/docker/test_candidate_not_infra_docker.py and tests/docker/test_deep_trees_docker.py."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from e2e import EXAMPLES

from assay._internal.api.submission import as_source
from assay._internal.firewall.check import ManifestEntry
from assay._internal.model.languages import LANGUAGES
from assay._internal.model.task import load_task
from assay._internal.runtime.fake import FakeRuntime
from assay._internal.runtime.scope import GradingScope
from assay._internal.tiers.core.controller import Grading
from assay._internal.tiers.core.intake import PAGE_BYTES, Refused, tmpfs_bytes
from assay._internal.tiers.strict import grade as strict
from assay._internal.tiers.strict.program import missing_program

GID = "g-0000000000000036"


def _entry(path: str, kind: str, size: int) -> ManifestEntry:
    return ManifestEntry(path, kind, size, "")  # type: ignore[arg-type]


def test_an_unpacked_archive_costs_a_tmpfs_whole_pages_and_a_page_per_entry() -> None:
    manifest = [
        _entry("d", "dir", 0),
        _entry("d/empty", "file", 0),
        _entry("d/one", "file", 1),
        _entry("d/page", "file", PAGE_BYTES),
        _entry("d/more", "file", PAGE_BYTES + 1),
    ]
    assert tmpfs_bytes(manifest) == PAGE_BYTES * (1 + 1 + 1 + 1 + 2)
    thousand = [_entry(f"f{i}", "file", 1) for i in range(1000)]
    assert tmpfs_bytes(thousand) == 1000 * PAGE_BYTES  # the firewall counted 1,000 bytes


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _runner(outputs: dict[str, object]) -> bytes:
    cases = [{"id": i, "status": "ok", "output_b64": o} for i, o in outputs.items()]
    return json.dumps({"runner": "assay-runner/1", "cases": cases}).encode()


def _b64(files: dict[str, bytes]) -> str:
    return base64.b64encode(_tar(files)).decode()


CASES = [{"id": "c0"}, {"id": "c1"}]


def test_transform_outputs_that_would_not_fit_the_judge_fail_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sent anyway, the judge's tmpfs refused the upload: an engine error, no verdict."""
    monkeypatch.setattr(strict, "EXCHANGE_BYTES", 32 * PAGE_BYTES)
    # output/, then per case its directory and ten 1-byte files: 1 + 2 x 11 = 23 pages.
    fits = {f"c{k}": _b64({f"f{i}": b"x" for i in range(10)}) for k in range(2)}
    # 1 + 11 + 21 = 33 pages: one over.
    over = {"c0": fits["c0"], "c1": _b64({f"f{i}": b"x" for i in range(20)})}
    with GradingScope(FakeRuntime(), GID) as scope:
        combined = strict.transform_outputs(scope, _runner(fits), CASES, 1 << 20)
        refused = strict.transform_outputs(scope, _runner(over), CASES, 1 << 20)
    assert isinstance(combined, bytes)
    names = tarfile.open(fileobj=io.BytesIO(combined)).getnames()
    assert len(names) == 1 + 2 * 11
    assert isinstance(refused, Refused) and refused.reason == "limit:outputs-total"
    assert refused.member == "c1"


@pytest.mark.parametrize("encoded", ["é" * 8, "not base64!", 7, None])
def test_a_case_output_that_is_not_base64_is_refused_by_name(encoded: object) -> None:
    """A non-ASCII string made `b64decode` raise ValueError, which nothing caught."""
    with GradingScope(FakeRuntime(), GID) as scope:
        out = strict.transform_outputs(scope, _runner({"c0": encoded}), CASES, 1 << 20)
    assert isinstance(out, Refused) and out.reason == "output-firewall:bad-encoding"


def _build(tmp: Path, data: bytes | None, mode: int = 0o755) -> Path:
    build = tmp / "build"
    build.mkdir()
    if data is not None:
        (build / "main").write_bytes(data)
        os.chmod(build / "main", mode)
    return build


@pytest.mark.parametrize(
    ("data", "mode", "words"),
    [
        (None, 0o755, "has no main"),
        (b"!<arch>\n...", 0o644, "not executable"),
        (b"!<arch>\n...", 0o755, "no ELF executable"),
        (b"#!/bin/sh\n", 0o755, "no ELF executable"),
    ],
)
def test_a_build_with_nothing_to_run_is_named(
    tmp_path: Path, data: bytes | None, mode: int, words: str
) -> None:
    why = missing_program(LANGUAGES["rust"], _build(tmp_path, data, mode))
    assert why is not None and words in why


def test_a_built_executable_or_an_interpreted_source_is_runnable(tmp_path: Path) -> None:
    build = _build(tmp_path, b"\x7fELF\x02\x01\x01" + bytes(64))
    assert missing_program(LANGUAGES["c"], build) is None
    (build / "main").unlink()
    (build / "main").mkdir()
    assert missing_program(LANGUAGES["go"], build) == "the build's main is not a file"
    assert missing_program(LANGUAGES["python3"], build) is None  # python3 from the image
    assert missing_program(LANGUAGES["java"], build) is None


def test_a_file_object_over_its_raw_cap_is_refused_as_a_verdict_not_a_usage_error(
    tmp_path: Path,
) -> None:
    shutil.copytree(EXAMPLES / "add", tmp_path / "add")
    with (tmp_path / "add" / "task.toml").open("a") as fh:
        fh.write("artifact_bytes = 4096\n")
    task = load_task(tmp_path / "add")
    with as_source(io.BytesIO(bytes(2 << 20)), task, GID) as source:
        assert source.refused is not None and source.path is None
        rt = FakeRuntime()
        g = Grading(rt, task, "t3", "img", gid=GID)
        with g.scope() as scope:
            taken = g.take_submission(scope, source)
    assert isinstance(taken, Refused) and taken.reason == "limit:artifact-bytes"
    with as_source(io.BytesIO(b"small"), task, GID) as source:
        assert source.refused is None and source.stream is not None  # the firewall judges it
        g = Grading(FakeRuntime(), task, "t3", "img", gid=GID)
        with g.scope() as scope:
            taken = g.take_submission(scope, source)
    assert isinstance(taken, Refused) and taken.reason == "firewall:truncated"
