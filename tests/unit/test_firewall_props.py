"""Property tests for the archive firewall.

Each property runs ASSAY_FIREWALL_EXAMPLES examples (200 by default, for CI);
scripts/fuzz_firewall.py runs them with 10,000 or more.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.hostile_corpus import corpus
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assay._internal.firewall.check import RULES, Accepted, Rejected, check
from assay._internal.firewall.materialise import materialise
from assay.errors import FirewallError

EXAMPLES = int(os.environ.get("ASSAY_FIREWALL_EXAMPLES", "200"))
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
"""Where each example materialises: a memory file system where there is one. The properties
make and remove thousands of small trees, which took several times longer on the CI
machine's disk; what materialise writes is the same on either."""
PROPS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TYPEFLAGS = {
    "file": b"0", "dir": b"5", "symlink": b"2", "hardlink": b"1", "char": b"3", "block": b"4",
    "fifo": b"6", "contiguous": b"7",
}  # fmt: skip
NON_REGULAR = {
    "symlink": "link", "hardlink": "link", "char": "device", "block": "device", "fifo": "fifo",
    "contiguous": "contiguous",
}  # fmt: skip


@dataclass(frozen=True)
class M:
    """One member as the test writes it; `style` picks ustar, PAX path or GNU long name."""

    name: bytes
    kind: str = "file"
    data: bytes = b""
    mode: int = 0o644
    style: str = "ustar"
    linkname: bytes = b""
    uid: int = 0


def encode(m: M) -> bytes:
    data = m.data if m.kind in ("file", "contiguous") else b""
    kw = {"typeflag": TYPEFLAGS[m.kind], "mode": m.mode, "uid": m.uid, "linkname": m.linkname}
    style = m.style if m.style != "ustar" or len(m.name) <= 100 else "pax"
    if style == "ustar":
        return corpus.member(m.name, data, **kw)
    if style == "pax":
        fallback = m.name[:100].replace(b"\x00", b"_")  # what a real writer puts there
        return corpus.pax([(b"path", m.name)]) + corpus.member(fallback, data, **kw)
    return corpus.gnu_long(m.name) + corpus.member(b"././@LongLink", data, **kw)


def build(members: list[M], compress: bool) -> bytes:
    raw = corpus.tar(*(encode(m) for m in members))
    return gzip.compress(raw, mtime=0) if compress else raw


# --- strategies ------------------------------------------------------------------------------

LEGAL_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_-.\u00e9\u0436\u4e2d"
legal_component = st.text(LEGAL_CHARS, min_size=1, max_size=40).filter(
    lambda s: s not in (".", "..")
)
legal_path = st.lists(legal_component, min_size=1, max_size=5).map("/".join)
styles = st.sampled_from(["ustar", "pax", "gnu"])
modes = st.integers(0, 0o7777)


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


@st.composite
def legal_archives(draw: st.DrawFn) -> tuple[list[M], dict[str, tuple[bytes, int]], set[str]]:
    """Members that must be accepted, and the files (content, mode) and dirs they must yield."""
    paths = draw(st.lists(legal_path, max_size=10, unique=True))
    files = [p for p in paths if not any(q.startswith(p + "/") for q in paths)]
    parents = {a for p in files for a in _ancestors(p)}
    extra_dirs = draw(st.lists(legal_path, max_size=3, unique=True))
    extra_dirs = [
        d for d in extra_dirs
        if d not in files and not any(d.startswith(f + "/") for f in files)
        and not any(a in files for a in _ancestors(d))
    ]  # fmt: skip
    explicit = sorted(set(draw(st.sets(st.sampled_from(sorted(parents)))) if parents else set()))
    members: list[M] = []
    expected: dict[str, tuple[bytes, int]] = {}
    for path in files:
        data = draw(st.binary(max_size=1500))
        mode = draw(modes)
        members.append(
            M(path.encode(), "file", data, mode, draw(styles), uid=draw(st.integers(0, 99999)))
        )
        expected[path] = (data, 0o755 if mode & 0o111 else 0o644)
    for path in sorted(set(explicit) | set(extra_dirs)):
        dotted = draw(st.sampled_from(["", "./"]))
        slash = draw(st.sampled_from(["", "/"]))
        members.append(
            M((dotted + path + slash).encode(), "dir", mode=draw(modes), style=draw(styles))
        )
    members = draw(st.permutations(members))
    dirs = parents | set(explicit) | set(extra_dirs)
    for d in list(dirs):
        dirs.update(_ancestors(d))
    return members, expected, dirs


hostile_component = st.sampled_from(
    ["..", ".", "", "a", "A", "\u00e9", "e\u0301", "\uff0e\uff0e", "\ufb01", "fi", "x\\y", "n\x00",
     "l\n", "\u202e", "c" * 300, "\U0001f600" * 70, "CON", "a b"]
)  # fmt: skip
any_name = st.one_of(
    legal_path,
    st.lists(st.one_of(hostile_component, legal_component), min_size=1, max_size=6).map("/".join),
    st.lists(legal_component, min_size=30, max_size=45).map("/".join),  # too deep / too long
).map(lambda s: s.encode("utf-8", "surrogatepass"))
any_member = st.builds(
    M,
    name=st.one_of(any_name, any_name.map(lambda b: b"/" + b), st.binary(max_size=30)),
    kind=st.sampled_from(list(TYPEFLAGS)),
    data=st.binary(max_size=600),
    mode=modes,
    style=styles,
    linkname=st.sampled_from([b"", b"/etc/passwd", b"../../x", b"a"]),
)
artifact_globs = st.one_of(
    st.none(), st.lists(st.sampled_from(["*", "**", "*.py", "**/*.txt", "a/**", "src/*.py"]),
                        min_size=1, max_size=3)
)  # fmt: skip


# --- checking what materialise wrote --------------------------------------------------------


def materialised(normalised: bytes) -> dict[str, tuple[str, bytes, int]]:
    """Materialise into a fresh directory; return path -> (kind, bytes, mode) of what is there.

    Also asserts that nothing but regular files and directories exists, and nothing outside.
    """
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        dest = Path(tmp) / "out"
        dest.mkdir()
        materialise(io.BytesIO(normalised), dest)
        assert os.listdir(tmp) == ["out"]
        return _walk(dest)


def _walk(dest: Path) -> dict[str, tuple[str, bytes, int]]:
    tree: dict[str, tuple[str, bytes, int]] = {}
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            full = Path(root) / name
            st_ = os.lstat(full)
            rel = full.relative_to(dest).as_posix()
            if stat.S_ISDIR(st_.st_mode):
                tree[rel] = ("dir", b"", stat.S_IMODE(st_.st_mode))
            else:
                assert stat.S_ISREG(st_.st_mode), f"{rel} is neither a file nor a directory"
                tree[rel] = ("file", full.read_bytes(), stat.S_IMODE(st_.st_mode))
    return tree


def assert_accepted_is_sound(
    result: Accepted, normalised: bytes
) -> dict[str, tuple[str, bytes, int]]:
    """Returns the materialised tree it checked."""
    assert result.size == len(normalised)
    assert result.digest == "sha256:" + hashlib.sha256(normalised).hexdigest()
    assert [e.path for e in result.manifest] == sorted(e.path for e in result.manifest)
    tree = materialised(normalised)
    assert set(tree) == {e.path for e in result.manifest}
    for entry in result.manifest:
        kind, data, mode = tree[entry.path]
        assert kind == entry.kind
        if kind == "file":
            assert len(data) == entry.size
            assert hashlib.sha256(data).hexdigest() == entry.sha256
            assert mode in (0o644, 0o755)
        else:
            assert mode == 0o755
    again = io.BytesIO()
    second = check(io.BytesIO(normalised), again)
    assert isinstance(second, Accepted)
    assert again.getvalue() == normalised, "normalising a normalised archive changed it"
    assert second.manifest == result.manifest
    return tree


# --- properties --------------------------------------------------------------------------------


@PROPS
@given(legal_archives(), st.booleans())
def test_legal_archives_are_accepted_exactly(archive, compress) -> None:  # type: ignore[no-untyped-def]
    members, expected, dirs = archive
    sink = io.BytesIO()
    result = check(io.BytesIO(build(members, compress)), sink)
    assert isinstance(result, Accepted), result
    files = {e.path: e for e in result.manifest if e.kind == "file"}
    assert set(files) == set(expected)
    for path, (data, _) in expected.items():
        assert files[path].sha256 == hashlib.sha256(data).hexdigest()
    assert {e.path for e in result.manifest if e.kind == "dir"} == dirs
    tree = assert_accepted_is_sound(result, sink.getvalue())
    assert {p: (d, m) for p, (k, d, m) in tree.items() if k == "file"} == expected
    # Member order, header style and metadata do not change the normalised archive.
    reordered = [M(m.name, m.kind, m.data, m.mode & 0o111, "pax") for m in reversed(members)]
    other = io.BytesIO()
    assert isinstance(check(io.BytesIO(build(reordered, not compress)), other), Accepted)
    assert other.getvalue() == sink.getvalue()


INJECTIONS = [
    *[(M(b"inj@" + k.encode(), k, linkname=b"/etc/passwd" if "link" in k else b""), rule)
      for k, rule in NON_REGULAR.items()],
    (M(b"../inj@x", data=b"x"), "dot-dot"),
    (M(b"inj@d/../../x", data=b"x"), "dot-dot"),
    (M("\uff0e\uff0e/inj@x".encode(), data=b"x"), "dot-dot"),
    (M(b"/inj@abs", data=b"x"), "absolute-path"),
    (M(b"inj@\\x", data=b"x"), "backslash"),
    (M(b"inj@\x00x", data=b"x", style="pax"), "control-char"),
    (M(b"inj@\x1bx", data=b"x"), "control-char"),
    (M("inj@\u202ex".encode(), data=b"x"), "control-char"),
    (M(b"inj@" + b"c" * 300, data=b"x", style="gnu"), "component-length"),
    (M(b"inj@d/" * 40 + b"f", data=b"x", style="pax"), "depth"),
    (M(b"inj@" + b"p" * 1100, data=b"x", style="pax"), "path-length"),
    (M(b"inj@\xff", data=b"x"), "encoding"),
    (M(b".", data=b"x"), "empty-name"),
]  # fmt: skip


@PROPS
@given(legal_archives(), st.sampled_from(INJECTIONS), st.integers(0, 20), st.booleans())
def test_one_hostile_member_rejects_the_archive_by_its_rule(
    archive, injection, at, compress
) -> None:  # type: ignore[no-untyped-def]
    members, _, _ = archive
    hostile, rule = injection
    members = list(members)
    members.insert(at % (len(members) + 1), hostile)
    sink = io.BytesIO()
    result = check(io.BytesIO(build(members, compress)), sink)
    assert isinstance(result, Rejected), result
    assert result.rule == rule, result
    assert sink.getvalue() == b""


@PROPS
@given(legal_archives(), st.sampled_from(["same", "dot", "upper", "nfd", "under"]), st.data())
def test_two_members_for_one_file_are_rejected(archive, how, data) -> None:  # type: ignore[no-untyped-def]
    members, expected, _ = archive
    assume(expected)
    path = data.draw(st.sampled_from(sorted(expected)))
    variants = {
        "same": (path, "duplicate"),
        "dot": ("./" + path.replace("/", "/./"), "duplicate"),
        "upper": (path.upper(), "case-collision"),
        "nfd": (path.replace("\u00e9", "e\u0301"), "unicode-collision"),
        "under": (path + "/inj", "path-conflict"),
    }
    name, rule = variants[how]
    assume(name != path or how == "same")
    assume(how != "upper" or name.lower() == path)  # not every letter has an upper case
    members = [*members, M(name.encode(), data=b"second", style=data.draw(styles))]
    members = data.draw(st.permutations(members))
    result = check(io.BytesIO(build(members, False)), io.BytesIO())
    assert isinstance(result, Rejected), result
    assert result.rule == rule, result


@PROPS
@given(
    st.lists(any_member, max_size=8), st.booleans(), artifact_globs,
    st.sampled_from([None, "a"]),
)  # fmt: skip
def test_any_archive_is_accepted_soundly_or_rejected_cleanly(
    members, compress, globs, prefix
) -> None:  # type: ignore[no-untyped-def]
    sink = io.BytesIO()
    result = check(io.BytesIO(build(members, compress)), sink, artifacts=globs, strip_prefix=prefix)
    non_regular = any(m.kind not in ("file", "dir") for m in members)
    climbs = any(b".." in m.name.split(b"/") for m in members)
    if isinstance(result, Rejected):
        assert result.rule in RULES
        assert sink.getvalue() == b""
        assert result.member.isprintable()
        return
    assert not climbs, "a '..' name was accepted"
    assert not (non_regular and globs is None), "a non-regular member was accepted"
    assert_accepted_is_sound(result, sink.getvalue())


@PROPS
@given(legal_archives(), st.lists(st.tuples(st.integers(0, 2**16), st.binary(min_size=1, max_size=4),
                                            st.sampled_from(["flip", "insert", "cut"])),
                                  min_size=1, max_size=3))  # fmt: skip
def test_materialise_accepts_only_what_check_would_emit(archive, mutations) -> None:  # type: ignore[no-untyped-def]
    """Materialising a damaged normalised archive fails, or equals what check() makes of it."""
    members, _, _ = archive
    sink = io.BytesIO()
    assert isinstance(check(io.BytesIO(build(members, False)), sink), Accepted)
    data = bytearray(sink.getvalue())
    for index, blob, how in mutations:
        i = index % (len(data) + 1)
        if how == "flip" and i < len(data):
            data[i] ^= blob[0] or 1
        elif how == "insert":
            data[i:i] = blob
        else:
            del data[i:]
    mutated = bytes(data)
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        dest = Path(tmp) / "out"
        dest.mkdir()
        try:
            materialise(io.BytesIO(mutated), dest)
        except FirewallError:
            assert os.listdir(tmp) == ["out"]
            _walk(dest)  # a partial tree is allowed, but only of regular files and directories
            return
        tree = _walk(dest)
    again = io.BytesIO()
    result = check(io.BytesIO(mutated), again)
    assert isinstance(result, Accepted), result
    assert again.getvalue() == mutated
    assert set(tree) == {e.path for e in result.manifest}


@pytest.mark.parametrize("case", [c for c in corpus.CASES if c.expect != "accept"][:30],
                         ids=lambda c: c.name)  # fmt: skip
def test_materialise_refuses_raw_hostile_archives(case, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Defence in depth: even without check(), materialise writes nothing from a hostile tar."""
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(FirewallError):
        materialise(io.BytesIO(case.build()), dest)
    assert os.listdir(tmp_path) == ["out"]
    assert os.listdir(dest) == []


@PROPS
@given(
    st.lists(any_member, max_size=6), st.booleans(),
    st.lists(st.tuples(st.integers(0, 2**16), st.integers(0, 255), st.sampled_from(["flip", "cut"])),
             min_size=1, max_size=4),
)  # fmt: skip
def test_damaged_archives_never_crash_the_firewall(members, compress, mutations) -> None:  # type: ignore[no-untyped-def]
    """Byte-level damage to any archive (headers, PAX records, gzip) gives a verdict, not a crash."""
    data = bytearray(build(members, compress))
    for index, value, how in mutations:
        i = index % (len(data) + 1)
        if how == "flip" and i < len(data):
            data[i] = value
        elif how == "cut":
            del data[i:]
    sink = io.BytesIO()
    result = check(io.BytesIO(bytes(data)), sink)
    if isinstance(result, Rejected):
        assert result.rule in RULES
        assert sink.getvalue() == b""
    else:
        assert_accepted_is_sound(result, sink.getvalue())
