"""Issue 10, finding 2: a submission costs host writes for its artifacts only.

`grade --submission DIR` (and grade-many) used to pack the whole directory into a host temp
file before any glob or cap applied: a 3 GiB sparse file that is not even an artifact cost 3 GiB
of writes, a 1 TiB one filled the disk. Writes are measured as the controller process's `wchar`
(/proc/self/io: every byte it passed to write(), to any file system, tmpfs included).
"""

from __future__ import annotations

import hashlib
import os
import random
import tarfile
import zlib
from pathlib import Path

import pytest
from e2e import EXAMPLES

from assay._internal.firewall.tarwrite import END_OF_ARCHIVE, header
from assay._internal.model.task import load_task
from assay._internal.runtime import GradingScope
from assay._internal.runtime.fake import FakeRuntime
from assay._internal.tiers.core.intake import Refused, Submission, from_path

TASK = load_task(EXAMPLES / "add")  # artifacts = ["solution.py"], artifact_bytes 64 MiB
GIB = 2**30
BUDGET = 100 * 10**6
SOLUTION = "def add(a, b):\n    return a + b\n"


def _written() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


def _intake(path: Path) -> tuple[Submission | Refused, int]:
    with GradingScope(FakeRuntime(), "g-00000000000000f2") as scope:
        before = _written()
        taken = from_path(scope, TASK, path)
        return taken, _written() - before


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as fh:
        fh.truncate(size)


def test_a_3gib_sparse_non_artifact_costs_no_host_writes(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    (sub / "data").mkdir(parents=True)
    (sub / "solution.py").write_text(SOLUTION)
    _sparse(sub / "data" / "huge.bin", 3 * GIB)
    taken, written = _intake(sub)
    assert written < BUDGET, f"a 3 GiB sparse non-artifact cost {written:,} bytes of host writes"
    # Listed by name, never read: its size does not count against the archive cap either.
    assert isinstance(taken, Submission), taken
    assert [e.path for e in taken.accepted.manifest] == ["solution.py"]
    assert taken.accepted.dropped == ("data/huge.bin",)
    assert taken.accepted.manifest[0].sha256 == hashlib.sha256(SOLUTION.encode()).hexdigest()
    print(f"host writes, 3 GiB sparse non-artifact: {written:,} bytes")


def test_a_3gib_artifact_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    _sparse(sub / "solution.py", 3 * GIB)
    taken, written = _intake(sub)
    assert written < BUDGET, f"a 3 GiB artifact over the cap cost {written:,} bytes of host writes"
    assert isinstance(taken, Refused) and taken.reason == "firewall:file-size", taken
    print(f"host writes, 3 GiB sparse artifact over the cap: {written:,} bytes")


def test_a_gzip_tar_spools_only_what_it_keeps(tmp_path: Path) -> None:
    """300 MB of non-artifact data in a .tar.gz (90x compressible, under the bomb ratio)."""
    size = 300 * 10**6
    block = bytes(random.Random(10).randbytes(400)) + bytes(39_600)  # 40 kB > deflate's window
    archive = tmp_path / "sub.tar.gz"
    deflate = zlib.compressobj(6, zlib.DEFLATED, 31)
    with archive.open("wb") as out:
        out.write(deflate.compress(header("solution.py", "file", len(SOLUTION), 0o644)))
        out.write(deflate.compress(SOLUTION.encode() + bytes(-len(SOLUTION) % 512)))
        out.write(deflate.compress(header("data/big.bin", "file", size, 0o644)))
        for _ in range(size // len(block)):
            out.write(deflate.compress(block))
        out.write(deflate.compress(bytes(-size % 512)))
        out.write(deflate.compress(END_OF_ARCHIVE) + deflate.flush())
    assert archive.stat().st_size < 10 * 10**6
    taken, written = _intake(archive)
    assert written < BUDGET, f"300 MB of dropped gzip data cost {written:,} bytes of host writes"
    assert isinstance(taken, Submission), taken
    assert taken.accepted.dropped == ("data/big.bin",)
    print(f"host writes, .tar.gz with 300 MB dropped: {written:,} bytes")


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_links_and_special_files_still_reach_the_firewall(tmp_path: Path, kind: str) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    if kind == "symlink":
        os.symlink("/etc/passwd", sub / "solution.py")
    elif kind == "hardlink":
        (sub / "aaa.py").write_text(SOLUTION)  # sorted first: solution.py is its second name
        os.link(sub / "aaa.py", sub / "solution.py")
    else:
        os.mkfifo(sub / "solution.py")
    taken, _ = _intake(sub)
    assert isinstance(taken, Refused), taken
    assert taken.reason == ("firewall:fifo" if kind == "fifo" else "firewall:link")


def test_the_packed_directory_matches_what_tar_would_give(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    (sub / "pkg" / "deep").mkdir(parents=True)
    (sub / "solution.py").write_text(SOLUTION)
    (sub / "pkg" / "deep" / "x.txt").write_text("x")
    (sub / "solution.py").chmod(0o755)
    os.symlink("/usr/bin/python3", sub / "pkg" / "python")  # dropped: not an artifact
    packed = tmp_path / "ref.tar"
    with tarfile.open(packed, "w") as tf:
        for child in sorted(sub.iterdir()):
            tf.add(child, arcname=child.name)
    ours, _ = _intake(sub)
    reference, _ = _intake(packed)
    assert isinstance(ours, Submission) and isinstance(reference, Submission)
    assert ours.digest == reference.digest
    assert ours.accepted.dropped == reference.accepted.dropped
