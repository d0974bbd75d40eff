"""Archive firewall: the CLI, interoperability with real tar writers, and edge cases by hand."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.hostile_corpus import corpus

from assay._internal.firewall.check import RULES, Accepted, FirewallLimits, Rejected, check
from assay._internal.firewall.materialise import materialise
from assay._internal.firewall.tarread import read_members
from assay._internal.firewall.tarsource import SeekableSource
from assay._internal.firewall.tarwrite import header
from assay.cli import main
from assay.errors import AssayError, FirewallError, UsageError

ROOT = Path(__file__).resolve().parents[2]
TREE = {
    "solution.py": b"def f(x):\n    return x\n",
    "src/pkg/__init__.py": b"",
    "src/pkg/mod.py": b"VALUE = 1\n",
    "data/input.txt": bytes(range(256)) * 40,
    "caf\u00e9/\u4e2d.txt": b"unicode",
    "deep/" + "n" * 90 + "/" + "m" * 90 + "/file.txt": b"long path",
}
DEEP = "deep/" + "n" * 90 + "/" + "m" * 90 + "/file.txt"


def _write_tree(root: Path) -> None:
    for rel, data in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "solution.py").chmod(0o4755)


def _accept(data: bytes, **kw: object) -> tuple[Accepted, bytes]:
    sink = io.BytesIO()
    result = check(io.BytesIO(data), sink, **kw)  # type: ignore[arg-type]
    assert isinstance(result, Accepted), result
    return result, sink.getvalue()


def _files(result: Accepted) -> set[str]:
    return {e.path for e in result.manifest if e.kind == "file"}


# --- interoperability: archives real writers produce are accepted, with one manifest ----------


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_python_tarfile_archives_are_accepted(tmp_path, fmt) -> None:  # type: ignore[no-untyped-def]
    _write_tree(tmp_path / "w")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        tf.add(tmp_path / "w", arcname="workspace")
    result, _ = _accept(buf.getvalue(), strip_prefix="workspace")
    assert _files(result) == set(TREE)


def test_gnu_tar_archives_are_accepted_in_every_format(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _write_tree(tmp_path / "w")
    manifests = []
    for fmt in ("gnu", "posix", "oldgnu"):
        out = tmp_path / f"{fmt}.tar"
        subprocess.run(
            ["tar", f"--format={fmt}", "-C", str(tmp_path / "w"), "-cf", str(out), "."],
            check=True,
        )
        result, _ = _accept(out.read_bytes())
        manifests.append(result.manifest)
    gz = tmp_path / "x.tar.gz"
    subprocess.run(["tar", "-C", str(tmp_path / "w"), "-czf", str(gz), "."], check=True)
    manifests.append(_accept(gz.read_bytes())[0].manifest)
    assert all(m == manifests[0] for m in manifests)
    assert {e.path for e in manifests[0] if e.kind == "file"} == set(TREE)


def test_git_archive_global_header_is_accepted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "repo"
    _write_tree(repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    data = subprocess.run([*git, "archive", "HEAD"], check=True, capture_output=True).stdout
    assert b"pax_global_header" in data  # the case under test: a 'g' header with a comment
    assert _files(_accept(data)[0]) == set(TREE)


def test_normalised_archive_extracts_identically_with_other_tools(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _write_tree(tmp_path / "w")
    subprocess.run(
        ["tar", "-C", str(tmp_path / "w"), "-cf", str(tmp_path / "in.tar"), "."], check=True
    )
    result, normalised = _accept((tmp_path / "in.tar").read_bytes())
    (tmp_path / "norm.tar").write_bytes(normalised)
    for tool in ("gnu", "python"):
        out = tmp_path / tool
        out.mkdir()
        if tool == "gnu":
            subprocess.run(["tar", "-C", str(out), "-xf", str(tmp_path / "norm.tar")], check=True)
        else:
            with tarfile.open(tmp_path / "norm.tar") as tf:
                tf.extractall(out, filter="data")
        for rel, data in TREE.items():
            assert (out / rel).read_bytes() == data
    with tarfile.open(tmp_path / "norm.tar") as tf:
        infos = tf.getmembers()
    assert [i.name for i in infos] == [e.path for e in result.manifest]
    assert all(i.uid == 0 and i.gid == 0 and i.mtime == 0 and i.uname == "" for i in infos)
    assert {i.mode for i in infos} <= {0o644, 0o755}


# --- check(): streams, globs, prefixes ---------------------------------------------------------


def test_seekable_source_is_read_from_its_current_position() -> None:
    data = corpus.tar(corpus.member(b"a.txt", b"hello"))
    source = io.BytesIO(b"JUNK" * 100 + data)
    source.seek(400)
    result = check(source, io.BytesIO())
    assert isinstance(result, Accepted) and _files(result) == {"a.txt"}


def test_honest_gzip_with_a_high_ratio_is_accepted() -> None:
    rng = random.Random(7)
    words = [
        rng.choice(["def", "return", "self", "x", "value", "import", "(", ")"])
        for _ in range(10**6)
    ]
    text = " ".join(words).encode()
    data = gzip.compress(corpus.tar(corpus.member(b"big.py", text)))
    assert len(text) / len(data) > 3
    result, _ = _accept(data)
    assert result.manifest[0].size == len(text)


def test_expansion_ratio_is_configurable() -> None:
    data = gzip.compress(corpus.tar(corpus.member(b"zeros.bin", bytes(4 * 2**20))))
    strict = check(io.BytesIO(data), io.BytesIO())
    assert isinstance(strict, Rejected) and strict.rule == "expansion-ratio"
    loose = FirewallLimits(max_expansion_ratio=10**6)
    assert isinstance(check(io.BytesIO(data), io.BytesIO(), loose), Accepted)


def test_pipe_longer_than_the_archive_cap_is_rejected_without_reading_it_all() -> None:
    head = corpus.header(b"f", size=60 * 2**20)  # then zeros, forever

    class Endless(io.RawIOBase):
        served = 0

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
            chunk = (head[self.served :] if self.served < len(head) else b"") or bytes(len(b))
            chunk = chunk[: len(b)]
            b[: len(chunk)] = chunk
            self.served += len(chunk)
            return len(chunk)

    stream = Endless()
    limits = FirewallLimits(max_archive_bytes=8 * 2**20)
    result = check(stream, io.BytesIO(), limits)  # type: ignore[arg-type]
    assert isinstance(result, Rejected) and result.rule == "archive-size"
    assert stream.served < 16 * 2**20


@pytest.mark.parametrize(
    ("patterns", "kept"),
    [
        (["solution.py"], {"solution.py"}),
        (["**/*.py"], {"solution.py", "src/pkg/__init__.py", "src/pkg/mod.py"}),
        (["src/*.py"], set()),
        (["src/**"], {"src/pkg/__init__.py", "src/pkg/mod.py"}),
        (["src/**/mod.py", "data/*"], {"src/pkg/mod.py", "data/input.txt"}),
        (["caf?/*.txt"], {"caf\u00e9/\u4e2d.txt"}),
        (["[sd]*/**"], {"src/pkg/__init__.py", "src/pkg/mod.py", "data/input.txt", DEEP}),
        (["**"], set(TREE)),
        (["solution.py/**"], set()),
        ([], set()),
    ],
)
def test_artifact_globs(tmp_path, patterns, kept) -> None:  # type: ignore[no-untyped-def]
    _write_tree(tmp_path / "w")
    subprocess.run(["tar", "-C", str(tmp_path / "w"), "-cf", str(tmp_path / "t"), "."], check=True)
    result, normalised = _accept((tmp_path / "t").read_bytes(), artifacts=patterns)
    assert _files(result) == kept
    assert set(result.dropped) == set(TREE) - kept
    dirs = {e.path for e in result.manifest if e.kind == "dir"}
    assert dirs == {"/".join(p.split("/")[:i]) for p in kept for i in range(1, p.count("/") + 1)}
    assert b"input" not in normalised or "data/input.txt" in kept


@pytest.mark.parametrize("bad", ["/abs", "a/../b", "", "a//b", "./a", "a\\b"])
def test_invalid_artifact_pattern_is_a_usage_error(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError):
        check(io.BytesIO(corpus.tar()), io.BytesIO(), artifacts=[bad])


@pytest.mark.parametrize("bad", ["..", "a/../b", "*", ""])
def test_invalid_strip_prefix_is_a_usage_error(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError):
        check(io.BytesIO(corpus.tar()), io.BytesIO(), strip_prefix=bad)


def test_strip_prefix_must_name_a_directory() -> None:
    result = check(io.BytesIO(corpus.tar(corpus.member(b"workspace", b"x"))), io.BytesIO(),
                   strip_prefix="workspace")  # fmt: skip
    assert isinstance(result, Rejected) and result.rule == "strip-prefix"


def test_limits_on_names_are_configurable() -> None:
    data = corpus.tar(corpus.pax([(b"path", b"d/" * 40 + b"f")]), corpus.member(b"f", b"x"))
    assert isinstance(check(io.BytesIO(data), io.BytesIO()), Rejected)
    assert isinstance(check(io.BytesIO(data), io.BytesIO(), FirewallLimits(max_depth=64)), Accepted)


def test_sizes_beyond_ustar_use_a_pax_size_and_read_back() -> None:
    big = 9 * 2**30
    head = header("big.bin", "file", big, 0o644)
    assert b"size=%d" % big in head
    source = SeekableSource(io.BytesIO(head), 0, 2**40)
    member = next(read_members(source, FirewallLimits()))
    assert (member.name, member.size) == ("big.bin", big)


def test_rejected_member_names_are_escaped_for_display() -> None:
    result = check(io.BytesIO(corpus.tar(corpus.member(b"\x1b]0;pwn\x07\xff", b"x"))), io.BytesIO())
    assert isinstance(result, Rejected)
    assert "\x1b" not in result.member and "\\x1b" in result.member and "\\xff" in result.member


# --- materialise ---------------------------------------------------------------------------------


def _normalised() -> bytes:
    return _accept(corpus.tar(corpus.member(b"a/b.txt", b"x")))[1]


def test_materialise_requires_an_existing_empty_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FirewallError):
        materialise(io.BytesIO(_normalised()), tmp_path / "missing")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(FirewallError):
        materialise(io.BytesIO(_normalised()), tmp_path / "full")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(FirewallError):
        materialise(io.BytesIO(_normalised()), tmp_path / "link")
    assert os.listdir(tmp_path / "real") == []
    assert issubclass(FirewallError, AssayError)


def test_materialise_refuses_members_out_of_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    b = header("b.txt", "file", 1, 0o644) + corpus.pad(b"1")
    a = header("a.txt", "file", 1, 0o644) + corpus.pad(b"2")
    with pytest.raises(FirewallError, match="order"):
        materialise(io.BytesIO(b + a + bytes(1024)), tmp_path)


def test_materialise_refuses_a_missing_parent_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = header("a/b.txt", "file", 1, 0o644) + corpus.pad(b"1") + bytes(1024)
    with pytest.raises(FirewallError):
        materialise(io.BytesIO(data), tmp_path)
    assert os.listdir(tmp_path) == []


def test_materialise_refuses_case_collisions_even_in_canonical_form(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = b"".join(header(n, "file", 1, 0o644) + corpus.pad(b"1") for n in ("A", "a")) + bytes(
        1024
    )
    with pytest.raises(FirewallError, match="case-collision"):
        materialise(io.BytesIO(data), tmp_path)


# --- the CLI ---------------------------------------------------------------------------------------


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["firewall", "check", *args])
    return result.exit_code, result.output


def test_cli_accepts_and_prints_the_manifest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "ok.tar"
    archive.write_bytes(
        corpus.tar(corpus.member(b"solution.py", b"x"), corpus.member(b"c.py", b"y"))
    )
    code, out = _cli(str(archive), "--artifacts", "solution.py")
    assert code == 0
    assert out.startswith("accepted: 1 files")
    assert "solution.py" in out and "dropped  c.py" in out
    code, out = _cli(str(archive), "--json")
    body = json.loads(out)
    assert code == 0 and body["status"] == "accepted"
    assert [e["path"] for e in body["manifest"]] == ["c.py", "solution.py"]


def test_cli_rejects_with_the_rule(tmp_path) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "bad.tar"
    archive.write_bytes(corpus.tar(corpus.member(b"../../evil", b"x")))
    code, out = _cli(str(archive))
    assert code == 1 and out.startswith("rejected: dot-dot")
    code, out = _cli(str(archive), "--json")
    assert code == 1 and json.loads(out)["rule"] == "dot-dot"


def test_cli_writes_the_normalised_archive_only_when_accepted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    good, bad = tmp_path / "good.tar", tmp_path / "bad.tar"
    good.write_bytes(corpus.tar(corpus.member(b"a.py", b"x", mode=0o4777, uid=1000)))
    bad.write_bytes(corpus.tar(corpus.member(b"a.py", typeflag=b"2", linkname=b"/etc/passwd")))
    assert _cli(str(good), "--output", str(tmp_path / "out.tar"))[0] == 0
    assert (tmp_path / "out.tar").read_bytes() == _accept(good.read_bytes())[1]
    assert _cli(str(good), "--output", str(tmp_path / "out.tar"))[0] == 2  # never overwrites
    assert _cli(str(bad), "--output", str(tmp_path / "bad-out.tar"))[0] == 1
    assert not (tmp_path / "bad-out.tar").exists()


def test_cli_usage_errors_exit_2(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert _cli(str(tmp_path / "missing.tar"))[0] == 2
    assert _cli(str(tmp_path))[0] == 2  # a directory
    archive = tmp_path / "ok.tar"
    archive.write_bytes(corpus.tar())
    assert _cli(str(archive), "--artifacts", "../x")[0] == 2
    assert _cli()[0] == 2


def test_cli_is_registered_on_the_real_entry_point(tmp_path) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "dev.tar"
    archive.write_bytes(corpus.tar(corpus.member(b"null", typeflag=b"3")))
    proc = subprocess.run(
        [sys.executable, "-m", "assay", "firewall", "check", str(archive)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 1 and "rejected: device" in proc.stdout


def test_every_rule_is_documented() -> None:
    doc = (ROOT / "docs" / "firewall.md").read_text()
    missing = [rule for rule in sorted(RULES) if f"`{rule}`" not in doc]
    assert not missing, missing


# --- names: bytes, and the normalisation work a dropped member may not cost (issue 10) ----------


def _pax_member(name: str, data: bytes = b"x") -> bytes:
    return corpus.pax([(b"path", name.encode())]) + corpus.member(b"n", data)


def test_path_cap_counts_bytes_and_a_longest_directory_round_trips(tmp_path: Path) -> None:
    four = "\U0001f600" * 63  # 252 bytes, under NAME_MAX
    too_long = check(io.BytesIO(corpus.tar(_pax_member("/".join([four] * 5)))), io.BytesIO())
    assert isinstance(too_long, Rejected) and too_long.rule == "path-length", too_long
    assert "1264 bytes" in too_long.detail
    # 1,024 bytes exactly, as a directory: its normalised header adds a '/', still accepted.
    name = "/".join(["d" * 254] * 4) + "/" + "e" * 4
    assert len(name) == 1024
    dir_member = corpus.pax([(b"path", name.encode() + b"/")]) + corpus.header(b"d", typeflag=b"5")
    _, normalised = _accept(corpus.tar(dir_member))
    dest = tmp_path / "out"
    dest.mkdir()
    materialise(io.BytesIO(normalised), dest)


def test_dropped_members_skip_the_normalising_rules_but_kept_ones_do_not() -> None:
    climbs = "\uff0e\uff0e/x.txt"  # '..' only after NFKC
    data = corpus.tar(_pax_member(climbs), corpus.member(b"A.py", b"1"), corpus.member(b"a.py"))
    result, _ = _accept(data, artifacts=["a.py"])
    assert _files(result) == {"a.py"} and set(result.dropped) == {climbs, "A.py"}
    for globs, rule in ((["**"], "dot-dot"), (["*.py"], "case-collision")):
        rejected = check(io.BytesIO(data), io.BytesIO(), artifacts=globs)
        assert isinstance(rejected, Rejected) and rejected.rule == rule, rejected
    # A raw '..' is rejected whether or not the member would be kept.
    raw = check(io.BytesIO(corpus.tar(corpus.member(b"../x.txt"))), io.BytesIO(), artifacts=["a"])
    assert isinstance(raw, Rejected) and raw.rule == "dot-dot"


def test_a_path_first_seen_under_a_dropped_member_is_still_folded_when_kept() -> None:
    data = corpus.tar(
        corpus.member(b"X/skip.txt"), corpus.member(b"X/keep.py"), corpus.member(b"x/keep2.py")
    )
    rejected = check(io.BytesIO(data), io.BytesIO(), artifacts=["**/*.py"])
    assert isinstance(rejected, Rejected) and rejected.rule == "case-collision", rejected


def test_name_budget_counts_normalised_bytes_of_kept_names_only() -> None:
    flood = corpus.tar(*corpus.nfkc_flood(300), corpus.member(b"solution.py", b"x"))
    kept = check(io.BytesIO(flood), io.BytesIO(), FirewallLimits(max_name_bytes=512 * 2**10))
    assert isinstance(kept, Rejected) and kept.rule == "name-bytes", kept
    # 300 names of 1,023 bytes fit 512 KiB as they are: dropped, they are never normalised.
    result, _ = _accept(
        flood, limits=FirewallLimits(max_name_bytes=512 * 2**10), artifacts=["solution.py"]
    )
    assert _files(result) == {"solution.py"} and len(result.dropped) == 300
