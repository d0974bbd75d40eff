"""`assay._internal.fstree` on a real file system: the one no-follow walker and writer while a
racing thread swaps and renames what it works on, at its depth and width bounds, with every
name Linux allows, and each policy's modes and owners. Every test checks that no fd leaks."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
import threading
from collections.abc import Callable, Iterator, Mapping
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
from helpers.fsrace import tar_entries as entries

from assay._internal.fstree.dirfd import (
    MAX_DEPTH,
    Changed,
    Missing,
    Parents,
    Refused,
    descend,
    split,
)
from assay._internal.fstree.policy import CONTAINER, IMAGE, NORMALISED, Policy
from assay._internal.fstree.tarin import Extractor
from assay._internal.fstree.tarout import TarOut
from assay.errors import ArchiveTooLargeError

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="chown needs root")
PASSWD = Path("/etc/passwd").read_bytes()
NON_UTF8 = os.fsdecode(b"caf\xe9-\xff.txt")
LONG = "n" * 255  # NAME_MAX: the longest component Linux allows


@contextlib.contextmanager
def opened(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield fd
    finally:
        os.close(fd)


def read_out(top: Path, name: str | None = None, **settings: object) -> bytes:
    reader = TarOut(**settings)  # type: ignore[arg-type]
    with opened(top) as fd:
        return b"".join(reader.tree(fd, name)) + reader.end()


def write_in(dest: Path, data: bytes, policy: Policy = CONTAINER, **kw: object) -> Extractor:
    with opened(dest) as fd:
        writer = Extractor(fd, policy, **kw)  # type: ignore[arg-type]
        try:
            with tarfile.open(
                fileobj=io.BytesIO(data), mode="r:", encoding="utf-8", errors="surrogateescape"
            ) as tf:
                for m in tf:
                    writer.member(m, tf)
            writer.finish()
        finally:
            writer.close()
    return writer


def tar_of(*members: tuple[str, bytes, Mapping[str, object]]) -> bytes:
    """(name, tar type, fields); a regular file's `data` field is its content."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, given in members:
            fields = dict(given)
            info = tarfile.TarInfo(name)
            info.type = kind
            info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
            data = fields.pop("data", None)
            for key, value in fields.items():
                setattr(info, key, value)
            if isinstance(data, bytes):
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if isinstance(data, bytes) else None)
    return buf.getvalue()


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@contextlib.contextmanager
def racing(action: Callable[[], None]) -> Iterator[list[int]]:
    """A thread running `action` as fast as it can for the duration of the block; how many
    times it ran is in the list it yields (checked by the caller: the race was really run)."""
    stop = threading.Event()
    count = [0]

    def loop() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                action()
                count[0] += 1

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield count
    finally:
        stop.set()
        thread.join()


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("/etc/passwd", "absolute"),
        ("../x", "'..'"),
        ("a/../../x", "'..'"),
        ("a\x00b", "NUL"),
        ("a\ud800", "lone surrogate"),
    ],
)
def test_a_name_that_could_leave_its_top_is_refused(name: str, words: str) -> None:
    with pytest.raises(Refused, match=words):
        split(name)


def test_names_are_split_without_the_top_itself() -> None:
    assert split("") == split(".") == split("./") == ()
    assert split("./a//b/./c/") == ("a", "b", "c")
    assert split(NON_UTF8) == (NON_UTF8,)


def test_non_utf8_long_and_past_path_max_names_round_trip(tmp_path: Path) -> None:
    """Names are bytes as Linux has them, and no full path is ever built: a tree whose paths
    run past PATH_MAX (4,096 bytes) is read out and written back whole."""
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    (src / NON_UTF8).write_bytes(b"latin-1")
    (src / "new\nline").write_bytes(b"newline")
    deep_tree(src, 20, LONG)  # 20 x 256 bytes: past PATH_MAX
    data = read_out(src, None)
    got = entries(data)
    assert got[NON_UTF8][:2] == ("file", b"latin-1")
    assert got["new\nline"][:2] == ("file", b"newline")
    bottom = "/".join([LONG] * 20) + "/bottom.txt"
    assert len(os.fsencode(bottom)) > 4096 and got[bottom][0] == "file"
    write_in(out, data)
    assert read_out(out, None) == data


# -- reading out: the race ------------------------------------------------------------------


@pytest.mark.parametrize("live", [True, False])
def test_reading_while_a_directory_is_swapped_for_a_symlink_never_leaks(
    tmp_path: Path, live: bool
) -> None:
    """A thread swaps `d` with a symlink to /etc: every archive holds `d` as the directory or as
    the link, never what is in /etc. A still tree may say instead that it changed."""
    top = tmp_path / "top"
    (top / "d").mkdir(parents=True)
    (top / "d" / "inner.txt").write_bytes(b"mine")
    os.symlink("/etc", top / "swap")
    seen: set[str] = set()
    changed = 0
    with racing(lambda: exchange(top / "d", top / "swap")) as swaps:
        for _ in rounds(300, lambda: swaps[0] > 10 and {"dir", "symlink"} <= seen):
            try:
                data = read_out(top, None, live=live)
            except Changed:
                changed += 1
                continue
            assert PASSWD not in data
            for name, (kind, content, _m) in entries(data).items():
                assert name.split("/")[0] in ("d", "swap"), name
                assert name.count("/") <= 1 and not name.endswith("passwd"), name
                if kind == "file":
                    assert content == b"mine"
                seen.add(kind)
    assert swaps[0] > 10
    assert {"dir", "symlink"} <= seen  # the race ran against both states
    if live:
        assert changed == 0  # a live tree is described as found, never an error


def test_reading_while_a_directory_is_renamed_back_and_forth(tmp_path: Path) -> None:
    """`a/sub` moves to `b/sub` and back while the tree is read: each archive has it in one
    place or the other (or not at all, between the two listings), whole, and nothing else."""
    top = tmp_path / "top"
    (top / "a" / "sub").mkdir(parents=True)
    (top / "b").mkdir()
    (top / "a" / "sub" / "f.txt").write_bytes(b"f")

    def move() -> None:
        there = top / "a" / "sub"
        if there.exists():
            os.rename(there, top / "b" / "sub")
        else:
            os.rename(top / "b" / "sub", there)

    with racing(move) as moves:
        for _ in rounds(300, lambda: moves[0] > 10):
            names = set(entries(read_out(top, None)))
            assert names <= {"a", "b", "a/sub", "b/sub", "a/sub/f.txt", "b/sub/f.txt"}, names
            for where in ("a", "b"):
                if f"{where}/sub/f.txt" in names:
                    assert f"{where}/sub" in names
    assert moves[0] > 10


# -- reading out: live and still --------------------------------------------------------------


def test_a_file_that_shrinks_is_padded_when_live_and_changed_when_still(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    real_fstat = os.fstat

    class Grown:
        def __init__(self, st: os.stat_result) -> None:
            self._st = st
            self.st_size = 10

        def __getattr__(self, name: str) -> object:
            return getattr(self._st, name)

    def fstat_(fd: int) -> object:
        st = real_fstat(fd)
        return Grown(st) if stat.S_ISREG(st.st_mode) and st.st_size == 3 else st

    monkeypatch.setattr(os, "fstat", fstat_)
    assert entries(read_out(tmp_path, None))["f"][1] == b"abc" + bytes(7)
    with pytest.raises(Changed, match="'f' shrank while it was read"):
        read_out(tmp_path, None, live=False)


def test_a_type_changed_after_the_lstat_is_looked_at_again_when_live_and_changed_when_still(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_bytes(b"")
    real_stat = os.stat
    lies = [0]

    def stat_(path: str, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> object:
        if path == "fifo" and lies[0] % 2 == 0:
            lies[0] += 1
            return real_stat(tmp_path / "file")  # a regular file, says the lstat
        if path == "fifo":
            lies[0] += 1
        return real_stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(os, "stat", stat_)
    assert entries(read_out(tmp_path, None))["fifo"][0] == "fifo"
    with pytest.raises(Changed, match="'fifo' changed while it was read"):
        read_out(tmp_path, None, live=False)


def test_a_file_outside_contents_is_listed_and_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "keep.py").write_bytes(b"kept")
    (tmp_path / "skip.bin").write_bytes(b"x" * 5000)
    real_open = os.open
    opened_names: list[str] = []

    def open_(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        opened_names.append(str(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_)
    got = entries(read_out(tmp_path, None, contents=lambda parts: parts[-1].endswith(".py")))
    assert got["keep.py"][1] == b"kept"
    assert got["skip.bin"][1] == b"" and got["skip.bin"][2].size == 0
    assert "skip.bin" not in opened_names and "keep.py" in opened_names


def test_owners_off_writes_the_mode_alone(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"")
    os.chmod(tmp_path / "f", 0o751)
    os.utime(tmp_path / "f", (1_600_000_000, 1_600_000_000))
    m = entries(read_out(tmp_path, None, owners=False))["f"][2]
    assert (m.mode, m.uid, m.gid, m.mtime) == (0o751, 0, 0, 0)
    m = entries(read_out(tmp_path, None))["f"][2]
    assert (m.mode, m.mtime) == (0o751, 1_600_000_000)


# -- reading out: bounds ----------------------------------------------------------------------


def test_no_directory_is_opened_max_depth_levels_down(tmp_path: Path) -> None:
    deep_tree(tmp_path, 10)
    names = list(entries(read_out(tmp_path, None, max_depth=4)))
    assert max(n.count("/") + 1 for n in names) == 4  # the 4th level: its header alone
    assert not any(n.endswith("bottom.txt") for n in names)
    assert TarOut(max_depth=10 * MAX_DEPTH).max_depth == MAX_DEPTH  # one fd a level, at most


def test_the_default_depth_bound_holds_one_fd_a_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep_tree(tmp_path, MAX_DEPTH + 10)
    peak = [0]
    names = TarOut._names

    def counting(self: TarOut, dir_fd: int, shown: str) -> list[str]:
        peak[0] = max(peak[0], open_fds())
        return names(self, dir_fd, shown)

    monkeypatch.setattr(TarOut, "_names", counting)
    base = open_fds()
    data = read_out(tmp_path, None)
    assert peak[0] - base <= MAX_DEPTH + 1  # the walk's own copy of the top, then a level each
    assert max(n.count("/") + 1 for n in entries(data)) == MAX_DEPTH


def test_a_directory_is_listed_one_name_past_max_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(50):
        (tmp_path / f"{i:02}").touch()
    listed = [0]
    scandir = os.scandir

    @contextlib.contextmanager
    def counted(fd: int) -> Iterator[Iterator[os.DirEntry[str]]]:
        with scandir(fd) as it:

            def each() -> Iterator[os.DirEntry[str]]:
                for entry in it:
                    listed[0] += 1
                    yield entry

            yield each()

    monkeypatch.setattr(os, "scandir", counted)
    got = entries(read_out(tmp_path, None, max_entries=10))
    assert len(got) == 11 and listed[0] == 11  # the consumer refuses the 11th, by count


def test_the_cap_refuses_a_file_before_reading_it_and_a_listing_past_its_room(
    tmp_path: Path,
) -> None:
    with open(tmp_path / "sparse", "wb") as f:
        f.truncate(1 << 40)
    reader = TarOut(cap=1 << 20)
    with opened(tmp_path) as fd, pytest.raises(ArchiveTooLargeError):
        for _ in reader.tree(fd, None):
            pass
    assert reader.count == 0  # not even its header
    os.unlink(tmp_path / "sparse")
    for i in range(30):
        (tmp_path / f"{i:02}").touch()
    with pytest.raises(ArchiveTooLargeError):
        read_out(tmp_path, None, cap=20 * 512)


# -- writing in: the race -------------------------------------------------------------------


def test_writing_while_a_parent_is_swapped_for_a_symlink_never_writes_outside(
    tmp_path: Path,
) -> None:
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    (dest / "d").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, dest / "swap")
    data = tar_of(("d/x.txt", tarfile.REGTYPE, {"data": b"x"}))
    written = refused = 0
    with racing(lambda: exchange(dest / "d", dest / "swap")) as swaps:
        for _ in rounds(500, lambda: swaps[0] > 10 and written > 0 and refused > 0):
            try:
                write_in(dest, data)
                written += 1
            except Refused as exc:
                # Told apart by a second look, which the swap may have undone meanwhile.
                assert str(exc) in ("'d' is a symlink", "'d' is not a directory")
                refused += 1
    assert list(outside.iterdir()) == []
    assert swaps[0] > 10 and written and refused


def test_writing_while_a_parent_is_renamed_keeps_every_file_inside(tmp_path: Path) -> None:
    """The writer holds the parent's fd: a directory moved meanwhile is written where it is now,
    which a rename keeps inside the same tree."""
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    (dest / "a").mkdir(parents=True)
    (dest / "b").mkdir()
    outside.mkdir()
    data = tar_of(*[(f"a/f{i}", tarfile.REGTYPE, {"data": b"x"}) for i in range(20)])

    def move() -> None:
        if (dest / "a").exists():
            os.rename(dest / "a", dest / "b" / "a")
        else:
            os.rename(dest / "b" / "a", dest / "a")

    written = 0
    with racing(move) as moves:
        for _ in rounds(200, lambda: moves[0] > 10 and written > 0):
            # Refused: `a` was being moved as its fd was opened. FileNotFoundError: while `a`
            # was away the writer made a new, empty `a`, and the move back renamed the old one
            # over it, so the directory it holds is gone (hosttar: an engine error, as before).
            with contextlib.suppress(Refused, FileNotFoundError):
                write_in(dest, data)
                written += 1
    assert moves[0] > 10 and written
    assert list(outside.iterdir()) == []
    names = {p.name for p in dest.rglob("*")}
    assert names <= {"a", "b"} | {f"f{i}" for i in range(20)}


# -- writing in: policies -------------------------------------------------------------------


def _modes_tar() -> bytes:
    return tar_of(
        ("dir", tarfile.DIRTYPE, {"mode": 0o3777}),
        ("dir/suid", tarfile.REGTYPE, {"mode": 0o6755, "data": b"x"}),
        ("dir/plain", tarfile.REGTYPE, {"mode": 0o640, "data": b"x"}),
        ("dir/fifo", tarfile.FIFOTYPE, {"mode": 0o4666}),
        ("ro", tarfile.DIRTYPE, {"mode": 0o555}),
        ("ro/f", tarfile.REGTYPE, {"mode": 0o444, "data": b"in a read-only dir"}),
    )


def test_the_container_policy_drops_setuid_and_setgid_and_keeps_the_sticky_bit(
    tmp_path: Path,
) -> None:
    old = os.umask(0o077)  # the controller's umask decides nothing: every mode is set exactly
    try:
        write_in(tmp_path, _modes_tar(), CONTAINER)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "dir") == 0o1777
    assert _mode(tmp_path / "dir" / "suid") == 0o755
    assert _mode(tmp_path / "dir" / "plain") == 0o640
    assert _mode(tmp_path / "dir" / "fifo") == 0o666
    assert stat.S_ISFIFO(os.lstat(tmp_path / "dir" / "fifo").st_mode)
    assert _mode(tmp_path / "ro") == 0o555


def test_the_image_policy_keeps_every_mode_bit(tmp_path: Path) -> None:
    write_in(tmp_path, _modes_tar(), IMAGE, chown=ROOT)
    assert _mode(tmp_path / "dir") == 0o3777
    assert _mode(tmp_path / "dir" / "suid") == 0o6755
    assert _mode(tmp_path / "dir" / "fifo") == 0o4666
    assert _mode(tmp_path / "ro") == 0o555
    assert (tmp_path / "ro" / "f").read_bytes() == b"in a read-only dir"


def test_the_normalised_policy_is_0755_or_0644() -> None:
    assert NORMALISED.mode(0o600, directory=True) == 0o755
    assert NORMALISED.mode(0o6711) == 0o755
    assert NORMALISED.mode(0o6644) == 0o644
    assert CONTAINER.mode(0o7777) == 0o1777 and IMAGE.mode(0o7777) == 0o7777


@needs_root
def test_owners_are_the_members_or_the_override_and_made_parents_the_processes(
    tmp_path: Path,
) -> None:
    # A setgid directory would hand a made parent its group: the parent gets ours instead.
    os.chown(tmp_path, 0, 4242)
    os.chmod(tmp_path, 0o2775)
    data = tar_of(
        ("d", tarfile.DIRTYPE, {"uid": 1234, "gid": 5678}),
        ("d/f", tarfile.REGTYPE, {"uid": 1234, "gid": 5678, "data": b""}),
        ("made/f", tarfile.REGTYPE, {"uid": 1234, "gid": 5678, "data": b""}),
    )
    for policy in (CONTAINER, IMAGE):
        out = tmp_path / policy.name
        out.mkdir()
        write_in(out, data, policy)
        assert (os.lstat(out / "d/f").st_uid, os.lstat(out / "d/f").st_gid) == (1234, 5678)
        assert os.lstat(out / "d").st_uid == 1234
        made = os.lstat(out / "made")
        assert (made.st_uid, made.st_gid, stat.S_IMODE(made.st_mode)) == (0, 0, 0o755)
    out = tmp_path / "override"
    out.mkdir()
    write_in(out, data, CONTAINER, uid=1000, gid=1000)
    for rel in ("d", "d/f", "made", "made/f"):
        assert (os.lstat(out / rel).st_uid, os.lstat(out / rel).st_gid) == (1000, 1000), rel


def test_a_hard_link_names_only_this_archives_files_in_a_shared_tree(tmp_path: Path) -> None:
    (tmp_path / "theirs").write_bytes(b"the container's")
    link = tar_of(("mine", tarfile.LNKTYPE, {"linkname": "theirs"}))
    with pytest.raises(Refused, match="no file extracted before it"):
        write_in(tmp_path, link, CONTAINER)
    write_in(tmp_path, link, IMAGE)  # an image layer links to a lower layer's file
    assert os.lstat(tmp_path / "mine").st_ino == os.lstat(tmp_path / "theirs").st_ino
    with pytest.raises(Refused, match="absent"):
        write_in(tmp_path, tar_of(("x", tarfile.LNKTYPE, {"linkname": "no/such"})), IMAGE)


def test_a_directory_in_the_way_is_removed_only_in_a_private_tree(tmp_path: Path) -> None:
    (tmp_path / "x" / "sub").mkdir(parents=True)
    (tmp_path / "x" / "sub" / "f").write_bytes(b"")
    data = tar_of(("x", tarfile.REGTYPE, {"data": b"file now"}))
    with pytest.raises(Refused, match="a directory is in its place"):
        write_in(tmp_path, data, CONTAINER)
    write_in(tmp_path, data, IMAGE)
    assert (tmp_path / "x").read_bytes() == b"file now"


def test_whiteouts_are_refused_in_a_shared_tree(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with opened(tmp_path) as fd:
        writer = Extractor(fd, CONTAINER)
        try:
            for remove in (writer.remove, writer.empty):
                with pytest.raises(Refused, match="private"):
                    remove(("d",))
        finally:
            writer.close()
    assert (tmp_path / "d").is_dir()


def test_a_whiteout_of_what_is_not_there_makes_nothing(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "f").write_bytes(b"")
    with opened(tmp_path) as fd:
        writer = Extractor(fd, IMAGE)
        try:
            writer.remove(("absent", "deeper", "x"))
            writer.empty(("absent", "deeper"))
            assert sorted(os.listdir(tmp_path)) == ["d"]
            writer.remove(("d", "sub"))
            assert os.listdir(tmp_path / "d") == ["f"]
            writer.empty(("d",))
            assert os.listdir(tmp_path / "d") == []
        finally:
            writer.close()


def test_device_nodes_are_refused_in_a_container_and_skipped_in_an_image(tmp_path: Path) -> None:
    data = tar_of(("null", tarfile.CHRTYPE, {"devmajor": 1, "devminor": 3}))
    with pytest.raises(Refused, match="not a file"):
        write_in(tmp_path, data, CONTAINER)
    assert write_in(tmp_path, data, IMAGE).devices == 1
    assert list(tmp_path.iterdir()) == []


def test_the_budget_refuses_the_chunk_that_passes_it(tmp_path: Path) -> None:
    data = tar_of(
        ("a", tarfile.REGTYPE, {"data": b"x" * 100}), ("b", tarfile.REGTYPE, {"data": b"y" * 100})
    )
    with pytest.raises(Refused, match="past its cap"):
        write_in(tmp_path, data, IMAGE, budget=150)
    assert not (tmp_path / "b").exists() or (tmp_path / "b").read_bytes() == b""


def test_a_planted_symlink_is_replaced_never_written_through(tmp_path: Path) -> None:
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (outside / "target").write_bytes(b"orig")
    for name in ("f", "fifo", "link", "hard"):
        os.symlink(outside / "target", dest / name)
    write_in(
        dest,
        tar_of(
            ("f", tarfile.REGTYPE, {"data": b"new"}),
            ("fifo", tarfile.FIFOTYPE, {}),
            ("link", tarfile.SYMTYPE, {"linkname": "elsewhere"}),
            ("hard", tarfile.LNKTYPE, {"linkname": "f"}),
        ),
    )
    assert (dest / "f").read_bytes() == b"new" and (dest / "hard").read_bytes() == b"new"
    assert stat.S_ISFIFO(os.lstat(dest / "fifo").st_mode)
    assert os.readlink(dest / "link") == "elsewhere"
    assert (outside / "target").read_bytes() == b"orig"


def test_a_symlink_target_with_a_nul_is_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("l")
    info.type = tarfile.SYMTYPE
    info.pax_headers = {"linkpath": "a\x00b"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(info)
    with pytest.raises(Refused, match="NUL"):
        write_in(tmp_path, buf.getvalue())
    assert list(tmp_path.iterdir()) == []


# -- writing in: depth ------------------------------------------------------------------------


def test_the_writer_takes_what_the_reader_gives_and_nothing_deeper(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    deep_tree(src, MAX_DEPTH + 20)
    data = read_out(src, "top")  # "top" and MAX_DEPTH levels below it: its deepest names
    write_in(out, data)
    assert read_out(out / "top", "top") == data
    deeper = "/".join(["d"] * (MAX_DEPTH + 1)) + "/f"
    with pytest.raises(Refused, match=f"deeper than {MAX_DEPTH}"):
        write_in(out, tar_of((deeper, tarfile.REGTYPE, {"data": b""})))


# -- directory descriptors ------------------------------------------------------------------


def test_descend_and_parents_name_what_is_missing_or_a_link(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.symlink(tmp_path / "a", tmp_path / "link")
    with opened(tmp_path) as root:
        with pytest.raises(Missing, match="'a/x' no such path"):
            descend(root, ("a", "x"))
        with pytest.raises(Refused, match="'link' is a symlink"):
            descend(root, ("link", "b"))
        stack = Parents(root)
        try:
            b = stack.enter(("a", "b"))
            assert os.path.samestat(os.fstat(b), os.stat(tmp_path / "a" / "b"))
            before = open_fds()
            stack.forget(("a", "b"))
            assert open_fds() == before - 1  # "a" kept: only what is removed is let go
            with pytest.raises(Missing):
                stack.enter(("a", "nope"))
            with pytest.raises(Refused, match="deeper than"):
                stack.enter(("d",) * (MAX_DEPTH + 1))
        finally:
            stack.close()
