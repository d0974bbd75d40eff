"""Build the hostile archive corpus for the archive firewall, from code (no binary blobs).

Each case is one archive and the rule id it must trip (or "accept" for archives that are accepted
with their dangerous metadata stripped). The tests load this module and check every case in
memory; run it to write the archives out for other tools:

    python scripts/make_hostile_corpus.py OUTDIR   # OUTDIR/<case>.tar[.gz] + OUTDIR/corpus.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

BLOCK = 512
POSIX = b"ustar\x0000"
GNU = b"ustar  \x00"
MIB = 2**20


# --- a tar toolkit that can write what well-behaved writers refuse to -------------------------


def header(
    name: bytes,
    *,
    typeflag: bytes = b"0",
    size: int = 0,
    mode: int = 0o644,
    linkname: bytes = b"",
    magic: bytes = POSIX,
    prefix: bytes = b"",
    uid: int = 0,
    gid: int = 0,
    uname: bytes = b"",
    gname: bytes = b"",
    size_field: bytes | None = None,
    checksum_delta: int = 0,
    tail: bytes = b"",  # raw bytes for offset 345.. (GNU atime/ctime, or garbage)
) -> bytes:
    """One 512-byte header with a correct checksum (unless checksum_delta says otherwise)."""
    if len(name) > 100 or len(linkname) > 100 or len(prefix) > 155:
        raise ValueError("field too long; use pax() or gnu_long()")
    block = bytearray(BLOCK)
    block[0 : len(name)] = name
    block[100:108] = b"%07o\x00" % mode
    block[108:116] = b"%07o\x00" % uid
    block[116:124] = b"%07o\x00" % gid
    if size_field is None:
        size_field = b"%011o\x00" % size if size < 8**11 else b"\x80" + size.to_bytes(11, "big")
    block[124:136] = size_field
    block[136:148] = b"00000000000\x00"
    block[148:156] = b" " * 8
    block[156:157] = typeflag
    block[157 : 157 + len(linkname)] = linkname
    block[257 : 257 + len(magic)] = magic
    block[265 : 265 + len(uname)] = uname
    block[297 : 297 + len(gname)] = gname
    block[345 : 345 + len(prefix)] = prefix
    if tail:
        block[345 : 345 + len(tail)] = tail
    block[148:156] = b"%06o\x00 " % (sum(block) + checksum_delta)
    return bytes(block)


def pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % BLOCK)


def member(name: bytes, data: bytes = b"", **kw: object) -> bytes:
    """A header plus its data; `size` may be passed to lie about the data length."""
    kw.setdefault("size", len(data))
    return header(name, **kw) + pad(data)  # type: ignore[arg-type]


def pax_records(records: Iterable[tuple[bytes, bytes]]) -> bytes:
    out = b""
    for key, value in records:
        body = b" " + key + b"=" + value + b"\n"
        n = len(body) + 1
        while len(str(n)) + len(body) != n:
            n = len(str(n)) + len(body)
        out += str(n).encode() + body
    return out


def pax(
    records: Iterable[tuple[bytes, bytes]] = (), *, raw: bytes | None = None, typeflag: bytes = b"x"
) -> bytes:
    """A PAX extended (x) or global (g) header; `raw` gives a payload verbatim."""
    payload = pax_records(records) if raw is None else raw
    return header(b"././@PaxHeader", typeflag=typeflag, size=len(payload)) + pad(payload)


def gnu_long(value: bytes, typeflag: bytes = b"L") -> bytes:
    """A GNU long name (L) or long link target (K) header, NUL-terminated as GNU tar writes it."""
    data = value + b"\x00"
    return header(b"././@LongLink", typeflag=typeflag, size=len(data), magic=GNU) + pad(data)


def tar(*members: bytes, end: bool = True) -> bytes:
    return b"".join(members) + (bytes(2 * BLOCK) if end else b"")


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


# --- the cases -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    expect: str  # a rule id, or "accept"
    attack: str
    build: Callable[[], bytes]
    limits: dict[str, int] = field(default_factory=dict)  # FirewallLimits overrides
    artifacts: tuple[str, ...] | None = None
    strip_prefix: str | None = None
    modes: dict[str, int] = field(default_factory=dict)  # accept: path -> mode after materialise
    dropped: tuple[str, ...] = ()  # accept: expected Accepted.dropped

    @property
    def filename(self) -> str:
        return self.name + (".tar.gz" if self.build()[:2] == b"\x1f\x8b" else ".tar")


CASES: list[Case] = []


def case(
    name: str, expect: str, attack: str, **kw: object
) -> Callable[[Callable[[], bytes]], Callable[[], bytes]]:
    def register(build: Callable[[], bytes]) -> Callable[[], bytes]:
        CASES.append(Case(name, expect, attack, cache(build), **kw))  # type: ignore[arg-type]
        return build

    return register


OK = member(b"ok.txt", b"fine\n")
PASSWD = b"root:x:0:0:owned:/root:/bin/sh\n"

# Traversal and name tricks


@case("tar-slip-cve-2007-4559", "dot-dot", "CVE-2007-4559: '../' climbs out of the target")
def _() -> bytes:
    return tar(OK, member(b"../../../../../../tmp/evil.sh", b"#!/bin/sh\nid\n", mode=0o755))


@case("dot-slash-dot-dot", "dot-dot", "'./..' hides the climb behind a harmless first component")
def _() -> bytes:
    return tar(member(b"./../evil", b"x"))


@case("dot-dot-mid-path", "dot-dot", "a/../../b: climbs out after descending")
def _() -> bytes:
    return tar(member(b"src/../../outside.py", b"x"))


@case("dot-dot-directory", "dot-dot", "a directory named '..'")
def _() -> bytes:
    return tar(member(b"../", typeflag=b"5", mode=0o755))


@case("absolute-etc-passwd", "absolute-path", "an absolute name overwrites /etc/passwd")
def _() -> bytes:
    return tar(member(b"/etc/passwd", PASSWD))


@case("backslash-traversal", "backslash", "'..\\..\\' traverses on Windows and in some tools")
def _() -> bytes:
    return tar(member(b"..\\..\\evil.bat", b"x"))


@case("ustar-prefix-traversal", "dot-dot", "the POSIX prefix field carries the traversal")
def _() -> bytes:
    return tar(member(b"cron.d/x", b"x", prefix=b"../../../etc"))


@case("pax-path-traversal", "dot-dot", "a PAX path overrides a harmless ustar name with '../'")
def _() -> bytes:
    return tar(pax([(b"path", b"../../etc/cron.d/owned")]), member(b"harmless.txt", b"* * * * *"))


@case("pax-path-absolute", "absolute-path", "a PAX path to /root/.ssh/authorized_keys")
def _() -> bytes:
    return tar(pax([(b"path", b"/root/.ssh/authorized_keys")]), member(b"keys.txt", b"ssh-ed25519"))


@case("pax-fallback-traversal", "dot-dot", "PAX-unaware readers use the ustar name: '../' there")
def _() -> bytes:
    return tar(pax([(b"path", b"safe.txt")]), member(b"../../evil.txt", b"x"))


@case("gnu-longname-traversal", "dot-dot", "a GNU long name (type L) with '../' components")
def _() -> bytes:
    return tar(gnu_long(b"../" * 40 + b"evil"), member(b"././@LongLink-member", b"x"))


@case("gnu-longname-absolute", "absolute-path", "a GNU long name that is absolute")
def _() -> bytes:
    return tar(gnu_long(b"/" + b"a" * 150 + b"/evil"), member(b"short", b"x"))


@case("fullwidth-dot-dot", "dot-dot", "FULLWIDTH FULL STOPs become '..' under NFKC / best-fit")
def _() -> bytes:
    return tar(member("\uff0e\uff0e/evil".encode(), b"x"))


@case("fullwidth-solidus", "dot-dot", "FULLWIDTH SOLIDUS becomes '/' under NFKC / best-fit")
def _() -> bytes:
    return tar(member("a\uff0f..\uff0fevil".encode(), b"x"))


@case("empty-name", "empty-name", "a member with an empty name")
def _() -> bytes:
    return tar(member(b"", b"x"))


@case("dot-name-file", "empty-name", "a regular file named '.' (the target itself)")
def _() -> bytes:
    return tar(member(b".", b"x"))


@case(
    "pax-path-nul", "control-char", "a NUL inside a PAX path: C readers stop at it, others do not"
)
def _() -> bytes:
    return tar(pax([(b"path", b"safe.txt\x00../../evil")]), member(b"safe.txt", b"x"))


@case("gnu-longname-nul", "control-char", "a NUL inside a GNU long name truncates it in tarfile")
def _() -> bytes:
    return tar(gnu_long(b"safe.txt\x00../../../evil"), member(b"safe.txt", b"x"))


@case("newline-in-name", "control-char", "a newline forges an extra line in logs and manifests")
def _() -> bytes:
    return tar(member(b"ok.py\nPASSED all tests", b"x"))


@case("ansi-escape-name", "control-char", "ANSI escapes rewrite the reviewer's terminal")
def _() -> bytes:
    return tar(member(b"\x1b[2J\x1b[32mall tests passed\x1b[0m.py", b"x"))


@case("bidi-override-name", "control-char", "U+202E makes 'evil\u202eyp.txt' read as 'evil txt.py'")
def _() -> bytes:
    return tar(member("evil\u202eyp.txt".encode(), b"x"))


@case("zero-width-name", "control-char", "U+200B makes two names look identical")
def _() -> bytes:
    return tar(member("solution\u200b.py".encode(), b"x"))


@case("invalid-utf8-name", "encoding", "undecodable bytes mean different names to different tools")
def _() -> bytes:
    return tar(member(b"\xff\xfe\x2e\x2e.py", b"x"))


@case("pax-hdrcharset-binary", "encoding", "hdrcharset=BINARY declares raw, undecodable names")
def _() -> bytes:
    return tar(
        pax([(b"hdrcharset", b"BINARY"), (b"path", b"\xc0\xae\xc0\xae/x")]), member(b"x", b"x")
    )


@case(
    "name-field-after-nul", "format", "bytes after the name's NUL: readers that ignore NUL differ"
)
def _() -> bytes:
    return tar(member(b"ok.txt\x00../../../evil", b"x"))


# Links, devices and other non-regular members


@case("symlink-to-host-file", "link", "a symlink to /etc/shadow, read back through the grader")
def _() -> bytes:
    return tar(member(b"expected_output.txt", typeflag=b"2", linkname=b"/etc/shadow"))


@case("hardlink-to-etc-passwd", "link", "a hard link to /etc/passwd, then data written over it")
def _() -> bytes:
    return tar(member(b"passwd", typeflag=b"1", linkname=b"/etc/passwd"), member(b"passwd", PASSWD))


@case(
    "symlink-write-through", "link", "a directory symlink to /tmp, then a file written through it"
)
def _() -> bytes:
    return tar(member(b"out", typeflag=b"2", linkname=b"/tmp"), member(b"out/evil.sh", b"id"))


@case("symlink-chain-climbs-out", "link", "CVE-2025-4138 shape: each link climbs one level more")
def _() -> bytes:
    links = [member(b"l0", typeflag=b"2", linkname=b".")]
    links += [member(b"l%d" % i, typeflag=b"2", linkname=b"l%d/.." % (i - 1)) for i in range(1, 8)]
    return tar(*links, member(b"l7/etc/cron.d/x", b"x"))


@case("hardlink-to-symlink-chain", "link", "CVE-2025-4330 shape: a hard link to a symlink outside")
def _() -> bytes:
    return tar(
        member(b"h", typeflag=b"1", linkname=b"s"),
        member(b"s", typeflag=b"2", linkname=b"../../../../etc/passwd"),
        member(b"h", PASSWD),
    )


@case("long-link-target", "link", "CVE-2025-4517 shape: a target past PATH_MAX stops realpath()")
def _() -> bytes:
    deep = b"/".join([b"d" * 200] * 25) + b"/" + b"../" * 40 + b"etc/passwd"
    return tar(pax([(b"linkpath", deep)]), member(b"link", typeflag=b"2"))


@case("gnu-long-link-target", "link", "a GNU long link target (type K) climbing out")
def _() -> bytes:
    return tar(gnu_long(b"../" * 60 + b"etc/passwd", b"K"), member(b"link", typeflag=b"2"))


@case(
    "symlink-named-like-artifact",
    "link",
    "a kept artifact that is really a symlink",
    artifacts=("solution.py",),
)
def _() -> bytes:
    return tar(member(b"solution.py", typeflag=b"2", linkname=b"/opt/judge/expected.py"))


@case("file-with-linkname", "link", "a regular file that also names a link target")
def _() -> bytes:
    return tar(member(b"f.py", b"x", linkname=b"/etc/passwd"))


@case("char-device", "device", "a character device node (e.g. /dev/mem)")
def _() -> bytes:
    return tar(member(b"mem", typeflag=b"3"))


@case("block-device", "device", "a block device node (e.g. the host disk)")
def _() -> bytes:
    return tar(member(b"sda", typeflag=b"4"))


@case("fifo", "fifo", "a FIFO that blocks the grader when opened")
def _() -> bytes:
    return tar(member(b"results.xml", typeflag=b"6"))


@case("contiguous-file", "contiguous", "type 7, read as a regular file by some tools only")
def _() -> bytes:
    return tar(member(b"c.py", b"x", typeflag=b"7"))


@case("gnu-sparse", "sparse", "an old GNU sparse member (type S): holes filled differently")
def _() -> bytes:
    return tar(member(b"sparse.bin", b"x", typeflag=b"S", magic=GNU))


@case("pax-sparse", "sparse", "a PAX 1.0 sparse member (GNU.sparse.* keys)")
def _() -> bytes:
    records = [
        (b"GNU.sparse.major", b"1"),
        (b"GNU.sparse.minor", b"0"),
        (b"GNU.sparse.name", b"big.bin"),
        (b"GNU.sparse.realsize", b"1073741824"),
    ]
    return tar(pax(records), member(b"GNUSparseFile.0/big.bin", b"1\n0\n512\n"))


@case("gnu-volume-label", "member-type", "a GNU volume label (type V)")
def _() -> bytes:
    return tar(member(b"label", typeflag=b"V", magic=GNU), OK)


@case("gnu-multivolume", "member-type", "a GNU multi-volume continuation (type M)")
def _() -> bytes:
    return tar(member(b"part", b"x", typeflag=b"M", magic=GNU))


@case("unknown-type", "member-type", "a vendor type flag nobody agrees on")
def _() -> bytes:
    return tar(member(b"thing", b"x", typeflag=b"Z"))


@case("symlink-hidden-data", "format", "data after a symlink header: skipped by some readers only")
def _() -> bytes:
    hidden = member(b"hidden.py", b"evil")
    return tar(header(b"l", typeflag=b"2", linkname=b"x", size=len(hidden)) + hidden)


@case("directory-with-data", "format", "a directory header declaring data bytes")
def _() -> bytes:
    return tar(member(b"d/", b"smuggled", typeflag=b"5"))


# Duplicates and collisions


@case("duplicate-overwrite", "duplicate", "a second solution.py replaces the first at extraction")
def _() -> bytes:
    return tar(
        member(b"solution.py", b"def f(): return 1\n"),
        member(b"solution.py", b"import os; os.system('id')\n"),
    )


@case("duplicate-dot-slash", "duplicate", "'./a.py' and 'a.py' are the same file")
def _() -> bytes:
    return tar(member(b"a.py", b"1"), member(b"./a.py", b"2"))


@case("duplicate-double-slash", "duplicate", "'src//a.py' and 'src/a.py' are the same file")
def _() -> bytes:
    return tar(member(b"src/a.py", b"1"), member(b"src//a.py", b"2"))


@case(
    "duplicate-directory-then-file", "duplicate", "a directory replaced by a file of the same name"
)
def _() -> bytes:
    return tar(member(b"pkg/", typeflag=b"5", mode=0o755), member(b"pkg", b"x"))


@case("case-collision", "case-collision", "Solution.py and solution.py: one file on macOS/Windows")
def _() -> bytes:
    return tar(member(b"solution.py", b"good"), member(b"Solution.py", b"evil"))


@case(
    "case-collision-directories", "case-collision", "SRC/ and src/ merge on case-insensitive disks"
)
def _() -> bytes:
    return tar(member(b"src/a.py", b"1"), member(b"SRC/b.py", b"2"))


@case("casefold-collision", "case-collision", "'STRASSE' and 'straße' are equal under casefold")
def _() -> bytes:
    return tar(member("straße.py".encode(), b"1"), member(b"STRASSE.py", b"2"))


@case("unicode-nfc-collision", "unicode-collision", "composed and decomposed 'é' (NFC vs NFD)")
def _() -> bytes:
    return tar(member("caf\u00e9.py".encode(), b"1"), member("cafe\u0301.py".encode(), b"2"))


@case("unicode-nfkc-collision", "unicode-collision", "the 'ﬁ' ligature and 'fi' under NFKC")
def _() -> bytes:
    return tar(member(b"file.py", b"1"), member("\ufb01le.py".encode(), b"2"))


@case(
    "file-used-as-directory", "path-conflict", "a file 'a', then 'a/b' needs 'a' to be a directory"
)
def _() -> bytes:
    return tar(member(b"a", b"x"), member(b"a/b", b"y"))


@case("directory-then-same-file", "path-conflict", "'a/b' makes 'a' a directory, then file 'a'")
def _() -> bytes:
    return tar(member(b"a/b", b"y"), member(b"a", b"x"))


# Caps


@case("gzip-size-bomb", "expansion-ratio", "4 MB of gzip expanding to 4.1 GiB of zeros")
def _() -> bytes:
    return gzip_bomb(files=70, file_bytes=60 * MIB)


@case("declared-4gib-file", "file-size", "a header declaring a 4 GiB file (disk exhaustion)")
def _() -> bytes:
    return header(b"huge.bin", size=4 * 2**30)


@case("entries-100k", "entry-count", "100,000 empty files exhaust inodes and grader time")
def _() -> bytes:
    return tar(*(header(b"e/%06d" % i) for i in range(100_000)))


@case("name-4kib-pax", "path-length", "a 4 KiB PAX path name")
def _() -> bytes:
    return tar(pax([(b"path", b"a" * 4096)]), member(b"a", b"x"))


@case("name-4kib-gnu", "path-length", "a 4 KiB GNU long name")
def _() -> bytes:
    return tar(gnu_long(b"a/" * 2048), member(b"a", b"x"))


@case("gnu-longname-huge", "path-length", "a 1 MiB GNU long-name header (memory exhaustion)")
def _() -> bytes:
    return tar(gnu_long(b"a" * MIB), member(b"a", b"x"))


@case("component-300-chars", "component-length", "a 300-character name (ENAMETOOLONG)")
def _() -> bytes:
    return tar(pax([(b"path", b"n" * 300)]), member(b"n", b"x"))


@case("component-100-emoji-400-bytes", "component-length", "few characters, too many bytes")
def _() -> bytes:
    return tar(pax([(b"path", "\U0001f600".encode() * 100)]), member(b"n", b"x"))


@case(
    "name-1008-chars-4047-bytes",
    "path-length",
    "1,008 four-byte characters: under 1,024 characters, past PATH_MAX under a temp directory",
)
def _() -> bytes:
    return tar(pax([(b"path", "/".join(["\U0001f600" * 63] * 16).encode())]), member(b"n", b"x"))


@case(
    "nfkc-expansion-flood",
    "name-bytes",
    "3,000 names of U+FDFA, which NFKC expands 18-fold: seconds of normalisation CPU",
)
def _() -> bytes:
    return tar(*nfkc_flood(3000))


@case("deep-nesting", "depth", "40 nested directories")
def _() -> bytes:
    return tar(pax([(b"path", b"d/" * 40 + b"f")]), member(b"f", b"x"))


@case(
    "total-size",
    "total-size",
    "many files each under the cap, together over it",
    limits={"max_total_bytes": 4096},
)
def _() -> bytes:
    return tar(*(member(b"f%d" % i, bytes(1500)) for i in range(3)))


@case(
    "archive-size",
    "archive-size",
    "a stream longer than the archive cap",
    limits={"max_archive_bytes": 8192},
)
def _() -> bytes:
    return tar(member(b"big", bytes(16384)))


@case("pax-header-huge", "pax-header", "a 1 MiB PAX header (memory exhaustion)")
def _() -> bytes:
    return tar(pax([(b"comment", b"x" * MIB)]), member(b"a", b"x"))


@case("pax-record-flood", "pax-header", "thousands of tiny xattr records per member (CPU time)")
def _() -> bytes:
    records = [(b"SCHILY.xattr.user.%d" % i, b"") for i in range(3000)]
    return tar(pax(records), member(b"a", b"x"))


# Malformed headers and streams


@case("bad-checksum", "format", "a corrupted header")
def _() -> bytes:
    return tar(member(b"a.py", b"x", checksum_delta=1))


@case("pre-posix-v7", "format", "a magic-less V7 header: directories and names are guesswork")
def _() -> bytes:
    return tar(member(b"a.py", b"x", magic=b""))


@case("gnu-prefix-garbage", "format", "a GNU header with data in the POSIX prefix area")
def _() -> bytes:
    return tar(member(b"a.py", b"x", magic=GNU, tail=b"../../../etc"))


@case("negative-base256-size", "format", "a negative base-256 size")
def _() -> bytes:
    return tar(member(b"a.py", size_field=b"\xff" * 12))


@case("octal-garbage-size", "format", "a size field that is not a number")
def _() -> bytes:
    return tar(member(b"a.py", size_field=b"12 34\x0056789"))


@case("pax-duplicate-key", "pax-header", "two PAX path records: first-wins vs last-wins readers")
def _() -> bytes:
    return tar(pax([(b"path", b"ok.py"), (b"path", b"../../evil.py")]), member(b"ok.py", b"x"))


@case("pax-unknown-key", "pax-header", "a PAX key no reader here understands")
def _() -> bytes:
    return tar(pax([(b"VENDOR.extract.mode", b"setuid")]), member(b"a.py", b"x"))


@case("pax-size-mismatch", "pax-header", "a PAX size contradicting the header hides a member")
def _() -> bytes:
    hidden = member(b"hidden.py", b"evil")
    return tar(
        pax([(b"size", b"4")]), header(b"a.py", size=4 + len(hidden)) + pad(b"good") + hidden
    )


@case("pax-empty-path", "pax-header", "an empty PAX path: 'fall back' for some readers only")
def _() -> bytes:
    return tar(pax(raw=b"8 path=\n"), member(b"a.py", b"x"))


@case("pax-bad-length", "pax-header", "a PAX record whose length lies (CVE-2024-6232 area)")
def _() -> bytes:
    return tar(pax(raw=b"99 path=evil\n"), member(b"a.py", b"x"))


@case("pax-two-headers", "pax-header", "two PAX headers for one member")
def _() -> bytes:
    return tar(pax([(b"path", b"a.py")]), pax([(b"path", b"../b.py")]), member(b"a.py", b"x"))


@case("pax-global-path", "pax-header", "a global PAX header renaming every later member")
def _() -> bytes:
    return tar(pax([(b"path", b"../../evil")], typeflag=b"g"), member(b"a.py", b"x"))


@case("pax-dangling", "pax-header", "a PAX header with no member after it")
def _() -> bytes:
    return tar(OK, pax([(b"path", b"x")]))


@case("pax-and-gnu-name", "header-conflict", "a PAX path and a GNU long name disagree")
def _() -> bytes:
    return tar(gnu_long(b"a" * 120), pax([(b"path", b"b" * 120)]), member(b"c", b"x"))


@case("gnu-two-longnames", "gnu-header", "two GNU long names for one member")
def _() -> bytes:
    return tar(gnu_long(b"a" * 120), gnu_long(b"b" * 120), member(b"c", b"x"))


@case("empty-stream", "truncated", "zero bytes")
def _() -> bytes:
    return b""


@case("missing-end-marker", "truncated", "no end-of-archive marker: a cut-off stream")
def _() -> bytes:
    return tar(OK, end=False)


@case("truncated-data", "truncated", "a member whose data is cut off")
def _() -> bytes:
    return member(b"a.py", size=4096)[:1024]


@case("hidden-member-after-end", "trailing-data", "a member after the end marker (tar -i sees it)")
def _() -> bytes:
    return tar(OK) + tar(member(b"evil.py", b"x"))


@case("lone-zero-block", "trailing-data", "one zero block, then more members")
def _() -> bytes:
    return OK + bytes(BLOCK) + tar(member(b"evil.py", b"x"))


@case("gzip-bad-crc", "compression", "a gzip stream whose CRC does not match its content")
def _() -> bytes:
    data = bytearray(gz(tar(OK, member(b"b.txt", b"hello" * 100))))
    data[-8] ^= 0xFF
    return bytes(data)


@case("gzip-trailing-garbage", "compression", "bytes after the gzip stream")
def _() -> bytes:
    return gz(tar(OK)) + b"garbage"


@case("gzip-truncated", "compression", "a gzip stream cut in the middle")
def _() -> bytes:
    return gz(tar(OK, member(b"r.bin", bytes(range(256)) * 64)))[:-20]


@case("bzip2-input", "format", "a bzip2 stream (not accepted, never guessed at)")
def _() -> bytes:
    import bz2

    return bz2.compress(tar(OK))


@case(
    "strip-prefix-escape",
    "strip-prefix",
    "a member outside the pulled directory",
    strip_prefix="workspace",
)
def _() -> bytes:
    return tar(
        member(b"workspace/", typeflag=b"5", mode=0o755), member(b"judge/expected.txt", b"x")
    )


# Accepted, with the dangerous metadata stripped


@case("setuid-binary", "accept", "setuid/setgid bits: stripped to 0755", modes={"bin/tool": 0o755})
def _() -> bytes:
    return tar(member(b"bin/tool", b"\x7fELF", mode=0o6755, uid=0, uname=b"root"))


@case(
    "sticky-world-writable-dir",
    "accept",
    "sticky/world-writable dir: 0755",
    modes={"tmp": 0o755, "tmp/a": 0o644},
)
def _() -> bytes:
    return tar(member(b"tmp/", typeflag=b"5", mode=0o1777), member(b"tmp/a", b"x", mode=0o666))


@case(
    "file-capability-xattr",
    "accept",
    "a security.capability xattr (file caps): dropped",
    modes={"ping": 0o755},
)
def _() -> bytes:
    cap = b"\x01\x00\x00\x02\x00\x20\x00\x00"  # cap_net_raw+ep
    return tar(pax([(b"SCHILY.xattr.security.capability", cap)]), member(b"ping", b"x", mode=0o755))


@case(
    "conftest-outside-artifacts",
    "accept",
    "a conftest.py the task did not declare: dropped",
    artifacts=("solution.py",),
    dropped=("conftest.py",),
    modes={"solution.py": 0o644},
)
def _() -> bytes:
    return tar(
        member(b"conftest.py", b"import pytest\n"), member(b"solution.py", b"def f(): ...\n")
    )


@case(
    "docker-workspace",
    "accept",
    "Docker get_archive layout, with a dropped venv symlink",
    strip_prefix="workspace",
    artifacts=("**/*.py",),
    dropped=(".venv/bin/python",),
    modes={"pkg": 0o755, "pkg/mod.py": 0o644},
)
def _() -> bytes:
    return tar(
        member(b"workspace/", typeflag=b"5", mode=0o755),
        member(b"workspace/.venv/bin/python", typeflag=b"2", linkname=b"/usr/bin/python3"),
        member(b"workspace/pkg/mod.py", b"x = 1\n", uid=1000, gid=1000, uname=b"agent"),
    )


def nfkc_flood(count: int) -> list[bytes]:
    """Members named with 1,023 bytes of U+FDFA (4 components of 255 bytes, each 1,530
    characters after NFKC): three shared directories, a distinct last component each."""
    wide = "\ufdfa" * 85
    parents = "/".join([wide] * 3)
    return [
        pax([(b"path", f"{parents}/{wide[:-1]}{chr(0x4E00 + i)}".encode())]) + member(b"f", b"")
        for i in range(count)
    ]


# --- the size bomb is streamed from one precomputed member, never held expanded ------------


def gzip_bomb(files: int, file_bytes: int) -> bytes:
    """A multi-member gzip: each file's header, then a reused gzip member of `file_bytes` zeros."""
    zeros = _gzip_zeros(file_bytes)
    parts = []
    for i in range(files):
        parts += [gz(header(b"bomb/%04d" % i, size=file_bytes)), zeros]
    parts.append(gz(bytes(2 * BLOCK)))
    return b"".join(parts)


@cache
def _gzip_zeros(n: int) -> bytes:
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(MIB)
    out = [deflate.compress(block[: min(MIB, n - done)]) for done in range(0, n, MIB)]
    return b"".join(out) + deflate.flush()


def write(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    index = {}
    for c in CASES:
        (outdir / c.filename).write_bytes(c.build())
        index[c.filename] = {
            "expect": c.expect,
            "attack": c.attack,
            "limits": c.limits,
            "artifacts": c.artifacts,
            "strip_prefix": c.strip_prefix,
        }
    (outdir / "corpus.json").write_text(json.dumps(index, indent=2, ensure_ascii=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the hostile archive corpus.")
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    write(args.outdir)
    rejected = sum(1 for c in CASES if c.expect != "accept")
    print(f"{len(CASES)} archives ({rejected} must be rejected) in {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
