"""The hostile corpus: every archive is rejected by exactly the rule it was built to trip."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.hostile_corpus import corpus

from assay._internal.firewall.check import Accepted, FirewallLimits, Rejected, check
from assay._internal.firewall.materialise import materialise

ROOT = Path(__file__).resolve().parents[2]

REJECTS = [c for c in corpus.CASES if c.expect != "accept"]
ACCEPTS = [c for c in corpus.CASES if c.expect == "accept"]


def _run(case, source: io.BufferedIOBase | None = None):  # type: ignore[no-untyped-def]
    sink = io.BytesIO()
    result = check(
        source or io.BytesIO(case.build()),
        sink,
        replace(FirewallLimits(), **case.limits),
        artifacts=case.artifacts,
        strip_prefix=case.strip_prefix,
    )
    return result, sink


@pytest.mark.parametrize("case", REJECTS, ids=[c.name for c in REJECTS])
def test_hostile_archive_is_rejected_by_its_rule(case) -> None:  # type: ignore[no-untyped-def]
    result, sink = _run(case)
    assert isinstance(result, Rejected), f"{case.name} ({case.attack}) was accepted"
    assert result.rule == case.expect, (result.rule, result.detail)
    assert sink.getvalue() == b"", "a rejected archive must not produce output"
    assert result.member.isprintable()


@pytest.mark.parametrize("case", REJECTS, ids=[c.name for c in REJECTS])
def test_hostile_archive_is_rejected_from_a_pipe_too(case) -> None:  # type: ignore[no-untyped-def]
    """Non-seekable input takes the spooling path; the verdict must not change."""

    class Pipe(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
            chunk = self._data.read(min(len(b), 4096))  # short reads, like a socket
            b[: len(chunk)] = chunk
            return len(chunk)

    result, _ = _run(case, Pipe(case.build()))
    assert isinstance(result, Rejected)
    assert result.rule == case.expect


@pytest.mark.parametrize("case", ACCEPTS, ids=[c.name for c in ACCEPTS])
def test_sanitised_archive_is_accepted_with_metadata_stripped(case, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result, sink = _run(case)
    assert isinstance(result, Accepted), result
    assert result.dropped == case.dropped
    normalised = sink.getvalue()
    assert b"xattr" not in normalised and b"root" not in normalised
    dest = tmp_path / "out"
    dest.mkdir()
    materialise(io.BytesIO(normalised), dest)
    for path, mode in case.modes.items():
        st = os.lstat(dest / path)
        assert stat.S_IMODE(st.st_mode) == mode, (path, oct(st.st_mode))
    for entry in result.manifest:
        st = os.lstat(dest / entry.path)
        assert stat.S_ISDIR(st.st_mode) if entry.kind == "dir" else stat.S_ISREG(st.st_mode)
        assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX)


def test_corpus_is_large_and_covers_the_issue() -> None:
    assert len(REJECTS) >= 40
    assert len({c.name for c in corpus.CASES}) == len(corpus.CASES)
    required = {
        "link", "device", "fifo", "contiguous", "sparse", "absolute-path", "dot-dot",
        "empty-name", "control-char", "backslash", "duplicate", "case-collision",
        "unicode-collision", "path-length", "depth", "file-size", "total-size", "entry-count",
        "expansion-ratio", "component-length",
    }  # fmt: skip
    assert required <= {c.expect for c in REJECTS}


def test_size_bomb_really_expands_to_gigabytes() -> None:
    """The bomb case is only meaningful if it is small and its content is huge."""
    import zlib

    data = next(c for c in corpus.CASES if c.name == "gzip-size-bomb").build()
    assert len(data) < 8 * 2**20
    zeros = corpus._gzip_zeros(60 * 2**20)  # the reused gzip member of the bomb
    assert zlib.decompress(zeros, wbits=31) == bytes(60 * 2**20)
    assert data.count(zeros) == 70  # 70 x 60 MiB = 4.1 GiB inflated


def test_script_writes_the_corpus_and_the_cli_agrees(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner  # here, not above: the mutation gate runs this module

    from assay.cli import main as assay_main

    out = tmp_path / "corpus"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_hostile_corpus.py"), str(out)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "archives" in proc.stdout
    index = json.loads((out / "corpus.json").read_text())
    assert len(index) == len(corpus.CASES)
    # The CLI uses default limits and no artifacts: check the cases that need neither.
    plain = [
        (name, meta["expect"]) for name, meta in index.items()
        if not meta["limits"] and meta["artifacts"] is None and meta["strip_prefix"] is None
    ]  # fmt: skip
    # The command once as a process (`python -m assay`: its exit code and stdout), then the
    # sample through the same command in this process: an interpreter per archive only paid
    # the CLI's start-up again, about 2.5 s each.
    proc = subprocess.run(
        [sys.executable, "-m", "assay", "firewall", "check", "--json", str(out / "fifo.tar")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert json.loads(proc.stdout)["rule"] == "fifo"
    cli = CliRunner()
    for name, expect in [*plain[:: max(1, len(plain) // 12)], ("fifo.tar", "fifo")]:
        res = cli.invoke(assay_main, ["firewall", "check", "--json", str(out / name)])
        body = json.loads(res.stdout)
        if expect == "accept":
            assert res.exit_code == 0 and body["status"] == "accepted"
        else:
            assert res.exit_code == 1, (name, res.stdout, res.stderr)
            assert body["rule"] == expect
