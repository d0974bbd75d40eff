"""The scanner behind "the key never enters a container" must itself be shown to find leaks:
each test plants a secret through one channel and checks that exactly that channel reports it."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from helpers import keyscan
from helpers.keyscan import _Scanner, key_needles

from assay._internal.signing.sign import generate_keypair


def _needle(tag: str) -> bytes:
    return f"{tag}-{secrets.token_hex(12)}".encode()


def test_stream_finds_a_needle_split_across_chunks() -> None:
    needle = _needle("split")
    scan = _Scanner([needle])
    scan.stream("filesystem", "/x", [b"a" * 100 + needle[:5], needle[5:] + b"b" * 100])
    assert scan.findings == ["filesystem: needle 0 in /x"]


def test_stream_reports_an_oversize_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyscan, "MAX_ARCHIVE_BYTES", 10)
    scan = _Scanner([_needle("big")])
    scan.stream("filesystem", "/big", [b"x" * 8, b"x" * 8])
    assert scan.findings == ["scan-incomplete: /big exceeds 10 bytes"]


def test_needles_must_be_distinctive() -> None:
    with pytest.raises(ValueError):
        _Scanner([b"short"])


def test_key_needles_cover_the_file_the_raw_key_and_the_path(tmp_path: Path) -> None:
    key_path, _ = generate_keypair(tmp_path)
    needles = key_needles(key_path)
    assert key_path.read_bytes() in needles
    assert str(key_path).encode() in needles
    assert all(len(n) >= 8 for n in needles)
    assert len(set(needles)) >= 7
