"""Tar archives in and out of a container's host directories (the OCI backend's get_archive and
put_archive): on a real filesystem, with the hostile content a container can leave there."""

from __future__ import annotations

import io
import os
import stat
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.fsrace import (  # noqa: F401  (no_fd_leak, no_hang: autouse fixtures)
    deep_tree,
    exchange,
    no_fd_leak,
    no_hang,
    open_fds,
    rounds,
)
from helpers.fsrace import tar_entries as read

from assay._internal.firewall.check import FirewallLimits, Rejected, check
from assay._internal.fstree.tarout import TarOut
from assay._internal.runtime.oci import hosttar
from assay._internal.runtime.oci.hosttar import MAX_DEPTH, extract_tar, write_tar
from assay.errors import ArchiveTooLargeError, EngineError

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="chown needs root")

NON_UTF8 = os.fsdecode(b"caf\xe9.txt")
NEWLINE = "new\nline.txt"
PASSWD = Path("/etc/passwd").read_bytes()


def archive(base: Path, rel: str, cap: int = 1 << 30) -> bytes:
    sink = io.BytesIO()
    n = write_tar(base, rel, sink, cap)
    assert n == len(sink.getvalue())
    return sink.getvalue()


def snapshot(top: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """relative path -> (kind, content or target, mode) of a tree on disk, links not followed."""
    out: dict[str, tuple[str, bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            key = str(p.relative_to(top))
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("symlink", os.readlink(p), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[key] = ("dir", b"", stat.S_IMODE(st.st_mode))
            else:
                out[key] = ("file", p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for info, content in members:
            if content is not None:
                info.size = len(content)
            tf.addfile(info, io.BytesIO(content) if content is not None else None)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, **fields: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    for key, value in fields.items():
        setattr(info, key, value)
    return info


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """base/ws: directories, files, an empty file, odd names, relative and absolute symlinks."""
    base = tmp_path / "base"
    ws = base / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "empty-dir").mkdir()
    (ws / "a" / "b" / "deep.txt").write_bytes(b"deep\n")
    (ws / "top.txt").write_bytes(b"x" * 1000)
    (ws / "empty.txt").write_bytes(b"")
    (ws / NON_UTF8).write_bytes(b"latin-1 name")
    (ws / NEWLINE).write_bytes(b"newline name")
    (ws / "exec.sh").write_bytes(b"#!/bin/sh\n")
    (ws / "exec.sh").chmod(0o751)
    os.symlink("a/b/deep.txt", ws / "rel-link")
    os.symlink("/etc", ws / "etc-link")
    os.symlink("/nonexistent/dangling", ws / "dangling")
    return base


# -- write_tar ---------------------------------------------------------------------------------


def test_round_trip_of_a_tree(tree: Path, tmp_path: Path) -> None:
    data = archive(tree, "ws")
    got = read(data)
    assert set(got) == {
        "ws",
        "ws/a",
        "ws/a/b",
        "ws/a/b/deep.txt",
        "ws/empty-dir",
        "ws/top.txt",
        "ws/empty.txt",
        f"ws/{NON_UTF8}",
        f"ws/{NEWLINE}",
        "ws/exec.sh",
        "ws/rel-link",
        "ws/etc-link",
        "ws/dangling",
    }
    assert got["ws/top.txt"][:2] == ("file", b"x" * 1000)
    assert got["ws/empty.txt"][:2] == ("file", b"")
    assert got[f"ws/{NON_UTF8}"][:2] == ("file", b"latin-1 name")
    assert got[f"ws/{NEWLINE}"][:2] == ("file", b"newline name")
    assert got["ws/rel-link"][:2] == ("symlink", "a/b/deep.txt")
    assert got["ws/etc-link"][:2] == ("symlink", "/etc")
    assert got["ws/dangling"][:2] == ("symlink", "/nonexistent/dangling")
    exe = got["ws/exec.sh"][2]
    st = (tree / "ws" / "exec.sh").stat()
    assert (exe.mode, exe.uid, exe.gid) == (0o751, st.st_uid, st.st_gid)
    assert exe.mtime == int(st.st_mtime)
    assert PASSWD not in data

    # and back: extracting it gives the same tree
    out = tmp_path / "out"
    out.mkdir()
    extract_tar(out, "", data)
    assert snapshot(out / "ws") == snapshot(tree / "ws")
    assert (out / "ws" / "exec.sh").stat().st_mtime == int(st.st_mtime)
    assert (out / "ws" / "a").stat().st_mtime == int((tree / "ws" / "a").stat().st_mtime)


def test_entry_names_follow_docker(tree: Path) -> None:
    assert "./ws/top.txt" in read(archive(tree, ""))
    assert "." in read(archive(tree, "."))
    assert set(read(archive(tree, "ws/a/b/deep.txt"))) == {"deep.txt"}
    assert set(read(archive(tree, "ws/a/"))) == {"a", "a/b", "a/b/deep.txt"}
    assert set(read(archive(tree, "ws/a/."))) == {".", "./b", "./b/deep.txt"}
    assert set(read(archive(tree, "ws/./a//b"))) == {"b", "b/deep.txt"}


def test_a_symlink_is_archived_as_itself_never_followed(tree: Path) -> None:
    # At the top (Docker archives the link, not what it points to) and inside the tree.
    top = read(archive(tree, "ws/etc-link"))
    assert list(top) == ["etc-link"]
    assert top["etc-link"][:2] == ("symlink", "/etc")
    data = archive(tree, "ws")
    assert not [n for n in read(data) if n.startswith("ws/etc-link/")]
    assert PASSWD not in data


@pytest.mark.parametrize(
    ("rel", "words"),
    [
        ("ws/etc-link/passwd", "'ws/etc-link' is a symlink"),
        ("ws/etc-link/", "'ws/etc-link' is a symlink"),
        ("ws/etc-link/.", "'ws/etc-link' is a symlink"),
        ("ws/top.txt/x", "'ws/top.txt' is not a directory"),
        ("ws/top.txt/", "'ws/top.txt' is not a directory"),
        ("ws/missing", "no such path"),
        ("nope/ws", "no such path 'nope'"),
        ("../base", "'..'"),
        ("ws/../ws", "'..'"),
        ("/etc", "absolute"),
        ("ws\x00", "NUL"),
        ("ws\ud800", "not a file name"),
    ],
)
def test_a_bad_rel_is_an_engine_error(tree: Path, rel: str, words: str) -> None:
    sink = io.BytesIO()
    with pytest.raises(EngineError) as err:
        write_tar(tree, rel, sink, 1 << 20)
    assert words in str(err.value)
    assert repr(rel) in str(err.value)
    assert sink.getvalue() == b""


def test_a_fifo_is_a_header_only_entry_and_a_socket_is_skipped_without_blocking(
    tree: Path,
) -> None:
    """As in Docker's archive: the FIFO is listed (never opened: this would hang otherwise),
    so the firewall sees it and refuses it; a socket cannot be carried by tar at all."""
    import socket

    os.mkfifo(tree / "ws" / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tree / "ws" / "sock"))
        entries = read(archive(tree, "ws"))
    finally:
        sock.close()
    assert "ws/top.txt" in entries
    assert entries["ws/fifo"][0] == "fifo" and "ws/sock" not in entries
    assert read(archive(tree, "ws/fifo"))["fifo"][0] == "fifo"
    with pytest.raises(EngineError, match="is a socket"):
        write_tar(tree, "ws/sock", io.BytesIO(), 1 << 20)


def test_a_fifo_swapped_in_after_the_lstat_is_not_read(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lstat sees a regular file, the open finds a FIFO (O_NONBLOCK: it does not hang),
    # fstat tells, and the next look archives it as what it is: a header-only FIFO entry.
    os.mkfifo(tree / "ws" / "fifo")
    real_stat = os.stat
    lied = []

    def stat_(path: str, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> object:
        if path == "fifo" and not lied:
            lied.append(path)
            return real_stat(tree / "ws" / "top.txt")
        return real_stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(hosttar.os, "stat", stat_)
    entries = read(archive(tree, "ws"))
    assert lied and entries["ws/fifo"][0] == "fifo" and "ws/top.txt" in entries


@pytest.mark.parametrize("reported", [10, 3000])
def test_a_file_that_changes_size_while_read_keeps_its_header_size(
    tree: Path, monkeypatch: pytest.MonkeyPatch, reported: int
) -> None:
    # The size fstat gave is the one the header promised: a file grown since is cut, one
    # shrunk is padded with zeros. The stream stays a valid tar either way.
    real_fstat = os.fstat

    class Resized:
        def __init__(self, st: os.stat_result) -> None:
            self._st = st
            self.st_size = reported

        def __getattr__(self, name: str) -> object:
            return getattr(self._st, name)

    def fstat_(fd: int) -> object:
        st = real_fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_size == 1000:
            return Resized(st)
        return st

    monkeypatch.setattr(hosttar.os, "fstat", fstat_)
    got = read(archive(tree, "ws"))
    expected = (b"x" * 1000)[:reported] + bytes(max(0, reported - 1000))
    assert got["ws/top.txt"][:2] == ("file", expected)
    assert got["ws/empty.txt"][:2] == ("file", b"")


def test_a_second_name_is_a_hard_link_entry_to_the_first(tree: Path) -> None:
    """As in Docker's archive, so the firewall sees (and refuses) the hard link."""
    os.link(tree / "ws" / "top.txt", tree / "ws" / "second-name")
    got = read(archive(tree, "ws"))
    # sorted walk: "second-name" comes first and carries the bytes
    assert got["ws/second-name"][:2] == ("file", b"x" * 1000)
    assert got["ws/top.txt"][:2] == ("hardlink", "ws/second-name")


def test_the_cap_stops_the_archive(tree: Path) -> None:
    (tree / "ws" / "big").write_bytes(b"y" * 5000)
    sink = io.BytesIO()
    with pytest.raises(ArchiveTooLargeError) as err:
        write_tar(tree, "ws", sink, 2048)
    assert err.value.cap == 2048
    assert len(sink.getvalue()) <= 2048

    exact = len(archive(tree, "ws"))
    assert len(archive(tree, "ws", cap=exact)) == exact
    with pytest.raises(ArchiveTooLargeError):
        write_tar(tree, "ws", io.BytesIO(), exact - 1)


def test_a_sparse_huge_file_is_refused_unread(tmp_path: Path) -> None:
    with open(tmp_path / "sparse", "wb") as f:
        f.truncate(1 << 40)
    sink = io.BytesIO()
    with pytest.raises(ArchiveTooLargeError):
        write_tar(tmp_path, "sparse", sink, 1 << 20)
    assert sink.getvalue() == b""


def _open_fds_peak(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record how many fds are open each time the reader lists a directory."""
    seen: list[int] = []
    names = TarOut._names

    def counting(self: TarOut, dir_fd: int, shown: str) -> list[str]:
        seen.append(open_fds())
        return names(self, dir_fd, shown)

    monkeypatch.setattr(TarOut, "_names", counting)
    return seen


@pytest.mark.parametrize("name", ["d" * 200, "a"])
def test_a_tree_deeper_than_the_reader_goes_is_archived_to_its_bound_for_the_firewall(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: a tree past MAX_DEPTH raised EngineError (no verdict) before the firewall saw it.
    It is archived down to the bound, the directory there as its header alone (never opened), so
    the firewall refuses the archive by its `depth` rule, as it does Docker's archive of it."""
    (tmp_path / "ws").mkdir()
    deep_tree(tmp_path / "ws", MAX_DEPTH + 5, name)
    peaks = _open_fds_peak(monkeypatch)
    data = archive(tmp_path, "ws")
    assert max(peaks) - open_fds() <= MAX_DEPTH + 1  # one fd per level, never more
    names = [m.name for m in tarfile.open(fileobj=io.BytesIO(data), mode="r:")]
    depths = [n.count("/") for n in names]
    assert max(depths) == MAX_DEPTH  # "ws" then MAX_DEPTH levels: the last one not descended
    assert not any(n.endswith("bottom.txt") for n in names)
    assert len(names) == MAX_DEPTH + 1
    result = check(io.BytesIO(data), io.BytesIO(), FirewallLimits(), strip_prefix="ws")
    assert isinstance(result, Rejected)
    assert result.rule == ("depth" if len(name) == 1 else "path-length")


def test_the_reader_stops_deeper_than_any_tier_lets_an_archive_go() -> None:
    """The bound's header is what the firewall refuses: its cap must stay far below it."""
    assert FirewallLimits().max_depth < MAX_DEPTH


def test_a_directory_is_listed_no_further_than_the_cap_has_room_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tmpfs holds millions of empty files: the listing stops one name past the cap's room."""
    (tmp_path / "ws").mkdir()
    for i in range(300):
        (tmp_path / "ws" / f"{i:03}").touch()
    read: list[int] = []
    scandir = os.scandir

    def counted(fd: int) -> Iterator[os.DirEntry[str]]:
        with scandir(fd) as entries:
            for entry in entries:
                read.append(1)
                yield entry

    class Scan:
        def __init__(self, fd: int) -> None:
            self.it = counted(fd)

        def __enter__(self) -> Iterator[os.DirEntry[str]]:
            return self.it

        def __exit__(self, *exc: object) -> None:
            self.it.close()  # type: ignore[attr-defined]

    monkeypatch.setattr(os, "scandir", Scan)
    with pytest.raises(ArchiveTooLargeError):
        write_tar(tmp_path, "ws", io.BytesIO(), 20 * 512)
    assert len(read) <= 21


def test_swapping_a_directory_for_a_symlink_never_leaks_its_target(tmp_path: Path) -> None:
    """A thread swaps `d` with a symlink to /etc as fast as it can while the tree is archived:
    each archive holds `d` as the directory or as the symlink, never what is in /etc."""
    base = tmp_path / "base"
    (base / "d").mkdir(parents=True)
    (base / "d" / "inner.txt").write_bytes(b"mine")
    os.symlink("/etc", base / "swap")
    stop = threading.Event()
    swaps = [0]

    def swapper() -> None:
        while not stop.is_set():
            exchange(base / "d", base / "swap")
            swaps[0] += 1

    allowed = {"d", "swap"}
    seen: set[str] = set()
    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        for _ in rounds(300, lambda: swaps[0] > 10 and seen == {"symlink", "dir"}):
            data = archive(base, "")
            assert PASSWD not in data
            for name, (kind, content, _m) in read(data).items():
                parts = name.split("/")
                assert parts[0] == "."
                assert len(parts) == 1 or parts[1] in allowed, name
                assert len(parts) <= 3 and parts[-1] != "passwd", name
                if kind == "file":
                    assert content == b"mine", name
                if kind == "symlink":
                    assert content == "/etc", name
                    seen.add("symlink")
                if kind == "dir" and len(parts) == 2:
                    seen.add("dir")
            for rel in ("d", "d/inner.txt", "d/"):
                try:
                    data = archive(base, rel)
                except EngineError:
                    continue  # "d" a symlink at that moment
                assert PASSWD not in data
                for name, (kind, content, _m) in read(data).items():
                    assert name in ("d", "d/inner.txt", "inner.txt"), name
                    assert kind != "file" or content == b"mine"
    finally:
        stop.set()
        thread.join()
    assert swaps[0] > 10
    assert seen == {"symlink", "dir"}  # the race was really run against both states


# -- extract_tar -------------------------------------------------------------------------------


def test_extract_writes_members_with_modes_and_owners(tmp_path: Path) -> None:
    data = tar_of(
        (member("dir", tarfile.DIRTYPE, mode=0o1777, uid=4321, gid=8765), None),
        (member("dir/f.txt", mode=0o6755, uid=4321, gid=8765), b"hello"),
        (member("implied/parent/g.txt", uid=4321, gid=8765), b"g"),
        (member("dir/link", tarfile.SYMTYPE, linkname="../nowhere", uid=4321, gid=8765), None),
    )
    extract_tar(tmp_path, "", data)
    f = tmp_path / "dir" / "f.txt"
    assert f.read_bytes() == b"hello"
    assert stat.S_IMODE(f.stat().st_mode) == 0o755  # setuid / setgid stripped
    assert stat.S_IMODE((tmp_path / "dir").stat().st_mode) == 0o1777  # sticky kept
    assert stat.S_IMODE((tmp_path / "implied").stat().st_mode) == 0o755
    assert os.readlink(tmp_path / "dir" / "link") == "../nowhere"
    if ROOT:
        for rel in ("dir", "dir/f.txt", "dir/link", "implied/parent/g.txt"):
            st = (tmp_path / rel).lstat()
            assert (st.st_uid, st.st_gid) == (4321, 8765), rel


@needs_root
def test_extract_chowns_everything_it_creates_to_the_given_owner(tmp_path: Path) -> None:
    data = tar_of(
        (member("d", tarfile.DIRTYPE), None),
        (member("d/f"), b"x"),
        (member("p/q/r"), b"y"),
        (member("d/l", tarfile.SYMTYPE, linkname="f"), None),
    )
    extract_tar(tmp_path, "", data, uid=1234, gid=5678)
    for rel in ("d", "d/f", "p", "p/q", "p/q/r", "d/l"):
        st = (tmp_path / rel).lstat()
        assert (st.st_uid, st.st_gid) == (1234, 5678), rel


def test_extract_into_a_subdirectory_merging_an_existing_one(tmp_path: Path) -> None:
    (tmp_path / "scratch" / "keep").mkdir(parents=True)
    (tmp_path / "scratch" / "keep" / "old").write_bytes(b"old")
    data = tar_of(
        (member(".", tarfile.DIRTYPE, mode=0o700), None),
        (member("./keep", tarfile.DIRTYPE), None),
        (member("./keep/new"), b"new"),
    )
    extract_tar(tmp_path, "scratch", data)
    assert (tmp_path / "scratch" / "keep" / "old").read_bytes() == b"old"
    assert (tmp_path / "scratch" / "keep" / "new").read_bytes() == b"new"
    # "." is the destination itself: left as it is, as Docker does
    assert stat.S_IMODE((tmp_path / "scratch").stat().st_mode) != 0o700


def test_extract_never_writes_through_a_planted_directory_symlink(tmp_path: Path) -> None:
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    os.symlink(outside, dest / "sub")
    for name in ("sub/evil.txt", "sub/deeper/evil.txt"):
        with pytest.raises(EngineError, match="'sub' is a symlink") as err:
            extract_tar(dest, "", tar_of((member(name), b"pwned")))
        assert repr(name) in str(err.value)
    with pytest.raises(EngineError, match="'sub' is a symlink"):
        extract_tar(dest, "sub", tar_of((member("evil.txt"), b"pwned")))
    (dest / "realdir").mkdir()
    with pytest.raises(EngineError, match="a directory is in its place"):
        extract_tar(dest, "", tar_of((member("realdir"), b"x")))
    assert list(outside.iterdir()) == []
    assert os.readlink(dest / "sub") == str(outside)


def test_extract_replaces_a_planted_symlink_or_hard_link_without_writing_through(
    tmp_path: Path,
) -> None:
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (outside / "target.txt").write_bytes(b"orig")
    (outside / "victim.txt").write_bytes(b"orig")
    os.symlink(outside / "target.txt", dest / "f.txt")
    os.symlink(outside / "missing.txt", dest / "dangling.txt")
    os.link(outside / "victim.txt", dest / "h.txt")
    os.symlink(outside, dest / "dirlink")  # a non-directory member replaces the link itself
    extract_tar(
        dest,
        "",
        tar_of(
            (member("f.txt"), b"new"),
            (member("dangling.txt"), b"new"),
            (member("h.txt"), b"new"),
            (member("dirlink", tarfile.SYMTYPE, linkname="elsewhere"), None),
        ),
    )
    for name in ("f.txt", "dangling.txt", "h.txt"):
        assert not (dest / name).is_symlink()
        assert (dest / name).read_bytes() == b"new"
    assert os.readlink(dest / "dirlink") == "elsewhere"
    assert (outside / "target.txt").read_bytes() == b"orig"
    assert (outside / "victim.txt").read_bytes() == b"orig"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt", "victim.txt"]


def _nul_member() -> tarfile.TarInfo:
    info = member("ab")
    info.pax_headers = {"path": "a\x00b"}
    return info


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (member("../evil"), "'..'"),
        (member("a/../../evil"), "'..'"),
        (member("/abs/evil"), "absolute"),
        (_nul_member(), "NUL"),
        (member("dev", tarfile.CHRTYPE, devmajor=1, devminor=3), "not a file"),
        (member("blk", tarfile.BLKTYPE, devmajor=7, devminor=0), "not a file"),
        (member("hl", tarfile.LNKTYPE, linkname="/etc/passwd"), "absolute"),
        (member("hl", tarfile.LNKTYPE, linkname="../x"), "'..'"),
        (member("hl", tarfile.LNKTYPE, linkname="never-extracted"), "no file extracted"),
    ],
)
def test_extract_refuses_bad_members(tmp_path: Path, info: tarfile.TarInfo, words: str) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(EngineError) as err:
        extract_tar(dest, "", tar_of((info, b"" if info.isreg() else None)))
    assert words in str(err.value)
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "evil").exists()


def test_extract_makes_a_fifo_member_and_replaces_a_planted_link_with_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "fifo").symlink_to(outside / "target")
    extract_tar(dest, "", tar_of((member("fifo", tarfile.FIFOTYPE), None)))
    assert stat.S_ISFIFO(os.lstat(dest / "fifo").st_mode)
    assert list(outside.iterdir()) == []


def test_extract_links_a_hard_link_member_to_an_earlier_file(tmp_path: Path) -> None:
    extract_tar(
        tmp_path,
        "",
        tar_of(
            (member("d/f"), b"data"),
            (member("g", tarfile.LNKTYPE, linkname="d/f"), None),
        ),
    )
    assert (tmp_path / "g").read_bytes() == b"data"
    assert (tmp_path / "g").stat().st_ino == (tmp_path / "d" / "f").stat().st_ino


@pytest.mark.parametrize(
    ("rel", "words"),
    [("missing", "no such path"), ("f", "is not a directory"), ("link", "is a symlink")],
)
def test_extract_destination_must_be_a_real_directory(tmp_path: Path, rel: str, words: str) -> None:
    (tmp_path / "f").write_bytes(b"")
    os.symlink(tmp_path, tmp_path / "link")
    with pytest.raises(EngineError, match=words):
        extract_tar(tmp_path, rel, tar_of((member("x"), b"x")))
    assert not (tmp_path / "x").exists()


def test_extract_of_an_empty_body_or_garbage(tmp_path: Path) -> None:
    extract_tar(tmp_path, "", b"")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(EngineError, match="no tar"):
        extract_tar(tmp_path, "", b"this is not a tar archive" * 40)


def test_extract_racing_a_symlink_swap_never_writes_outside(tmp_path: Path) -> None:
    base, outside = tmp_path / "base", tmp_path / "outside"
    (base / "d").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, base / "swap")
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            exchange(base / "d", base / "swap")

    data = tar_of((member("x.txt"), b"x"), (member("sub/y.txt"), b"y"))
    deep = tar_of((member("d/z.txt"), b"z"))
    written = refused = 0
    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        for _ in rounds(500, lambda: written > 0 and refused > 0):
            for rel, tar in (("d", data), ("", deep)):
                try:
                    extract_tar(base, rel, tar)
                    written += 1
                except EngineError:
                    refused += 1
    finally:
        stop.set()
        thread.join()
    assert list(outside.iterdir()) == []
    assert written and refused


def test_extract_racing_a_replanted_symlink_never_writes_through_it(tmp_path: Path) -> None:
    """A thread plants a symlink at the member's name again each time it is unlinked: the
    create (O_CREAT | O_EXCL | O_NOFOLLOW) then fails instead of opening the target."""
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (outside / "target.txt").write_bytes(b"orig")
    stop = threading.Event()

    def planter() -> None:
        while not stop.is_set():
            try:
                os.symlink(outside / "target.txt", dest / "f.txt")
            except FileExistsError:
                time.sleep(0)  # let the extraction run: it is the one to race

    data = tar_of((member("f.txt"), b"pwned"))
    written = refused = 0
    thread = threading.Thread(target=planter)
    thread.start()
    try:
        for _ in rounds(500, lambda: written > 0):
            try:
                extract_tar(dest, "", data)
                written += 1
            except EngineError as exc:
                assert "kept being recreated" in str(exc)
                refused += 1
    finally:
        stop.set()
        thread.join()
    assert (outside / "target.txt").read_bytes() == b"orig"
    assert written


def test_a_thousand_files_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "src" / "ws"
    for i in range(1000):
        d = src / f"d{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_bytes(f"file {i}\n".encode() * (i % 7))
    data = archive(tmp_path / "src", "ws")
    assert sum(1 for kind, _, _ in read(data).values() if kind == "file") == 1000
    out = tmp_path / "out"
    out.mkdir()
    extract_tar(out, "", data)
    assert snapshot(out / "ws") == snapshot(src)
