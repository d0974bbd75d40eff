"""The runc backend's image cache (`assay._internal.runtime.oci.rootfs`) on fake `docker save`
streams built here: the merged tree, verification by digest, and that no layer writes outside
the tree however it is crafted."""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker.errors
import pytest

from assay._internal.runtime.oci import engines
from assay._internal.runtime.oci.rootfs import RootfsCache
from assay.errors import EngineError, ImageMissingError

ROOT_USER = os.geteuid() == 0
MTIME = 1_600_000_000


@dataclass
class E:
    """One layer member."""

    name: str
    kind: str = "file"  # file, dir, symlink, hardlink, fifo, chr
    data: bytes = b""
    mode: int = 0o644
    uid: int = 0
    gid: int = 0
    link: str = ""


_TYPES = {
    "file": tarfile.REGTYPE,
    "dir": tarfile.DIRTYPE,
    "symlink": tarfile.SYMTYPE,
    "hardlink": tarfile.LNKTYPE,
    "fifo": tarfile.FIFOTYPE,
    "chr": tarfile.CHRTYPE,
}


def layer(*entries: E) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for e in entries:
            info = tarfile.TarInfo(e.name)
            info.type = _TYPES[e.kind]
            info.mode = e.mode if e.kind != "dir" or e.mode != 0o644 else 0o755
            info.uid, info.gid, info.mtime = e.uid, e.gid, MTIME
            info.linkname = e.link
            if e.kind == "chr":
                info.devmajor, info.devminor = 1, 3
            info.size = len(e.data) if e.kind == "file" else 0
            tf.addfile(info, io.BytesIO(e.data) if e.kind == "file" else None)
    return buf.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tar(files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return buf.getvalue()


def docker_save(
    layers: list[bytes],
    *,
    layout: str = "legacy",
    tags: tuple[str, ...] = ("task:1",),
    diff_ids: list[str] | None = None,
) -> tuple[str, bytes]:
    """(image id, the bytes `docker save` would stream) in one of three layouts: `legacy`
    (Docker 20.10: duplicate layers are symlinks to the first copy), `oci` (Docker 25:
    manifest.json pointing into blobs/), `oci-index` (index.json only, gzip layers)."""
    diffs = diff_ids or [f"sha256:{_sha(data)}" for data in layers]
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": diffs},
        }
    ).encode()
    image_id = f"sha256:{_sha(config)}"
    files: dict[str, bytes] = {}
    links: dict[str, str] = {}
    if layout == "legacy":
        files[f"{_sha(config)}.json"] = config
        names, first = [], {}
        for i, data in enumerate(layers):
            v1 = _sha(f"v1-{i}".encode() + data)
            names.append(f"{v1}/layer.tar")
            files[f"{v1}/VERSION"] = b"1.0"
            if data in first:
                links[f"{v1}/layer.tar"] = f"../{first[data]}/layer.tar"
            else:
                first[data] = v1
                files[f"{v1}/layer.tar"] = data
        manifest = [{"Config": f"{_sha(config)}.json", "RepoTags": list(tags), "Layers": names}]
        files["manifest.json"] = json.dumps(manifest).encode()
        return image_id, _tar(files, links)
    blobs = [gzip.compress(data, mtime=0) if layout == "oci-index" else data for data in layers]
    files[f"blobs/sha256/{_sha(config)}"] = config
    for blob in blobs:
        files[f"blobs/sha256/{_sha(blob)}"] = blob
    oci_manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"digest": image_id, "size": len(config)},
            "layers": [{"digest": f"sha256:{_sha(b)}", "size": len(b)} for b in blobs],
        }
    ).encode()
    files[f"blobs/sha256/{_sha(oci_manifest)}"] = oci_manifest
    files["oci-layout"] = b'{"imageLayoutVersion": "1.0.0"}'
    files["index.json"] = json.dumps(
        {"schemaVersion": 2, "manifests": [{"digest": f"sha256:{_sha(oci_manifest)}"}]}
    ).encode()
    if layout == "oci":
        entry = {
            "Config": f"blobs/sha256/{_sha(config)}",
            "RepoTags": list(tags),
            "Layers": [f"blobs/sha256/{_sha(b)}" for b in blobs],
        }
        files["manifest.json"] = json.dumps([entry]).encode()
    return image_id, _tar(files)


class FakeAPI:
    def __init__(self) -> None:
        self.known: dict[str, tuple[str, list[str], bytes]] = {}
        self.saves = 0
        self.save_delay = 0.0

    def add(self, name: str, image_id: str, blob: bytes, tags: list[str] | None = None) -> None:
        entry = (image_id, tags if tags is not None else [name], blob)
        self.known[name] = self.known[image_id] = entry

    def inspect_image(self, image: str) -> dict[str, object]:
        if image not in self.known:
            raise docker.errors.ImageNotFound(f"No such image: {image}")
        image_id, tags, _ = self.known[image]
        return {"Id": image_id, "RepoTags": tags}

    def get_image(self, image: str, chunk_size: int = 2 << 20) -> Iterator[bytes]:
        self.saves += 1
        blob = self.known[image][2]
        time.sleep(self.save_delay)
        for start in range(0, len(blob), 65536):
            yield blob[start : start + 65536]

    def images(self, all: bool = False, quiet: bool = False) -> object:
        assert all and quiet
        return sorted({entry[0] for entry in self.known.values()})

    def remove(self, image_id: str) -> None:
        """`docker rmi`: the image and every name of it go."""
        self.known = {k: v for k, v in self.known.items() if v[0] != image_id}


class FakeClient:
    def __init__(self, engine: object = "KEY1:AB", data_root: object = "/var/lib/docker") -> None:
        self.api = FakeAPI()
        self.engine = engine
        self.data_root = data_root

    def info(self) -> dict[str, object]:
        return {"ID": self.engine, "DockerRootDir": self.data_root}


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "images"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host directory a hostile layer aims at."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "keep").write_text("host\n")
    (out / "secret").write_text("host secret\n")
    return out


def _untouched(outside: Path) -> None:
    assert sorted(os.listdir(outside)) == ["keep", "secret"]
    assert (outside / "keep").read_text() == "host\n"
    assert (outside / "secret").read_text() == "host secret\n"
    assert os.stat(outside / "secret").st_nlink == 1


def _no_tree(root: Path) -> None:
    """Nothing a failed build leaves but its image's (empty) lock file."""
    if root.exists():
        assert [p.name for p in root.iterdir() if not p.name.endswith(".lock")] == []


LOWER = layer(
    E("etc", "dir"),
    E("etc/keep", data=b"v1\n"),
    E("etc/gone", data=b"whited out\n"),
    E("etc/shadow", data=b"root:*:\n", mode=0o640, gid=42),
    E("opt", "dir"),
    E("opt/old", "dir"),
    E("opt/old/a", data=b"a"),
    E("opt/old/sub", "dir"),
    E("opt/old/sub/b", data=b"b"),
    E("opt/to-file", "dir"),
    E("opt/to-file/child", data=b"c"),
    E("opt/to-dir", data=b"file"),
    E("usr", "dir"),
    E("usr/bin", "dir"),
    E("usr/bin/dash", data=b"#!dash\n", mode=0o755),
    E("usr/bin/sh", "symlink", link="dash"),
    E("usr/bin/passwd", data=b"ELF passwd", mode=0o4755),
    E("usr/bin/wall", data=b"ELF wall", mode=0o2755, gid=5),
    E("usr/bin/pw", "hardlink", link="usr/bin/passwd"),
    E("home", "dir"),
    E("home/u", "dir", mode=0o750, uid=1000, gid=1000),
    E("home/u/f", data=b"mine", mode=0o600, uid=1000, gid=1000),
    E("tmp", "dir", mode=0o1777),
    E("dev", "dir"),
    E("dev/null", "chr", mode=0o666),
    E("run", "dir"),
    E("run/fifo", "fifo", mode=0o620),
    E("ro", "dir", mode=0o555),
    E("ro/f", data=b"in a read-only dir"),
)
UPPER = layer(
    E("etc/.wh.gone"),
    E("etc/keep", data=b"v2\n"),
    # The same layer's member is not hidden by its whiteout, wherever that stands.
    E("etc/same-layer", data=b"stays"),
    E("etc/.wh.same-layer"),
    E("opt/old", "dir"),
    E("opt/old/.wh..wh..opq"),
    E("opt/old/new", data=b"new"),
    E("opt/to-file", data=b"now a file"),
    E("opt/to-dir", "dir"),
    E("opt/to-dir/child", data=b"now under a dir"),
    E("usr/bin/dash2", "hardlink", link="usr/bin/dash"),
    E("new/deep/file", data=b"parents not listed"),
    E("etc/.wh..wh.plnk"),
)


def _check_merged(image_id: str, path: Path, root: Path) -> None:
    hexid = image_id.removeprefix("sha256:")
    assert path == root / hexid / "rootfs"
    assert (path / "etc/keep").read_bytes() == b"v2\n"
    assert not os.path.lexists(path / "etc/gone")
    assert (path / "etc/same-layer").read_bytes() == b"stays"
    assert sorted(os.listdir(path / "opt/old")) == ["new"]
    assert (path / "opt/to-file").read_bytes() == b"now a file"
    assert (path / "opt/to-dir/child").read_bytes() == b"now under a dir"
    assert os.readlink(path / "usr/bin/sh") == "dash"
    # Setuid and setgid kept: this is the image's own passwd.
    assert stat.S_IMODE(os.stat(path / "usr/bin/passwd").st_mode) == 0o4755
    assert stat.S_IMODE(os.stat(path / "usr/bin/wall").st_mode) == 0o2755
    assert os.stat(path / "usr/bin/pw").st_ino == os.stat(path / "usr/bin/passwd").st_ino
    assert os.stat(path / "usr/bin/dash2").st_ino == os.stat(path / "usr/bin/dash").st_ino
    assert stat.S_IMODE(os.stat(path / "tmp").st_mode) == 0o1777
    assert stat.S_IMODE(os.stat(path / "home/u").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(path / "etc/shadow").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(path / "ro").st_mode) == 0o555
    assert stat.S_ISFIFO(os.stat(path / "run/fifo").st_mode)
    assert stat.S_IMODE(os.stat(path / "run/fifo").st_mode) == 0o620
    assert os.listdir(path / "dev") == []  # device nodes are skipped
    assert (path / "new/deep/file").read_bytes() == b"parents not listed"
    assert stat.S_IMODE(os.stat(path / "new/deep").st_mode) == 0o755
    assert not any(n.startswith(".wh.") for _, ds, fs in os.walk(path) for n in ds + fs)
    assert os.stat(path / "usr/bin/passwd").st_mtime == MTIME
    assert os.stat(path / "opt").st_mtime == MTIME  # after its children changed
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700  # host users cannot reach it
    if ROOT_USER:
        assert (os.stat(path).st_uid, os.stat(path).st_gid) == (0, 0)
        assert (os.stat(path / "home/u/f").st_uid, os.stat(path / "home/u/f").st_gid) == (
            1000,
            1000,
        )
        assert os.stat(path / "home/u").st_uid == 1000
        assert os.stat(path / "etc/shadow").st_gid == 42
        assert os.lstat(path / "usr/bin/sh").st_uid == 0
    meta = json.loads((path.parent / "image.json").read_text())
    assert meta["id"] == image_id
    assert len(meta["diff_ids"]) == 2
    assert (path.parent / "complete").is_file()
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("layout", ["legacy", "oci", "oci-index"])
def test_layers_merge_into_one_tree(client: FakeClient, root: Path, layout: str) -> None:
    image_id, blob = docker_save([LOWER, UPPER], layout=layout)
    client.api.add("task:1", image_id, blob)
    cache = RootfsCache(client, root)
    got_id, path = cache.rootfs("task:1")
    assert got_id == image_id
    _check_merged(image_id, path, root)
    assert json.loads((path.parent / "image.json").read_text())["repo_tags"] == ["task:1"]


def test_a_second_call_costs_no_unpack(client: FakeClient, root: Path) -> None:
    image_id, blob = docker_save([LOWER, UPPER])
    client.api.add("task:1", image_id, blob)
    cache = RootfsCache(client, root)
    first = cache.rootfs("task:1")
    assert cache.rootfs("task:1") == first
    assert cache.rootfs(image_id) == first
    assert RootfsCache(client, root).rootfs("task:1") == first  # found on disk
    assert client.api.saves == 1


def test_legacy_duplicate_layers_are_read_through_their_symlink(
    client: FakeClient, root: Path
) -> None:
    a = layer(E("f", data=b"a"))
    b = layer(E("f", data=b"b"), E("g", data=b"g"))
    image_id, blob = docker_save([a, b, a])
    assert (
        tarfile.open(fileobj=io.BytesIO(blob))
        .getmember(
            json.loads(tarfile.open(fileobj=io.BytesIO(blob)).extractfile("manifest.json").read())[
                0
            ]["Layers"][2]  # type: ignore[union-attr]
        )
        .issym()
    )
    client.api.add("dup:1", image_id, blob)
    _, path = RootfsCache(client, root).rootfs("dup:1")
    assert (path / "f").read_bytes() == b"a"
    assert (path / "g").read_bytes() == b"g"


def test_a_layer_that_does_not_hash_to_its_diff_id_leaves_nothing(
    client: FakeClient, root: Path
) -> None:
    tampered = layer(E("etc/keep", data=b"tampered\n"))
    real_diffs = [f"sha256:{_sha(LOWER)}", f"sha256:{_sha(UPPER)}"]
    image_id, blob = docker_save([LOWER, tampered], diff_ids=real_diffs)
    client.api.add("task:1", image_id, blob)
    with pytest.raises(EngineError, match=r"layer 2 of 2 .* not its diff_id"):
        RootfsCache(client, root).rootfs("task:1")
    _no_tree(root)


def test_a_config_that_is_not_the_image_id_is_refused(client: FakeClient, root: Path) -> None:
    _, blob = docker_save([LOWER])
    client.api.add("task:1", "sha256:" + "ab" * 32, blob)
    with pytest.raises(EngineError, match="not the image id"):
        RootfsCache(client, root).rootfs("task:1")
    _no_tree(root)


def test_a_manifest_and_config_that_disagree_on_the_layer_count_are_refused(
    client: FakeClient, root: Path
) -> None:
    image_id, blob = docker_save([LOWER], diff_ids=[f"sha256:{_sha(LOWER)}"] * 2)
    client.api.add("task:1", image_id, blob)
    with pytest.raises(EngineError, match="1 layer"):
        RootfsCache(client, root).rootfs("task:1")
    _no_tree(root)


def test_a_missing_image_is_never_pulled(client: FakeClient, root: Path) -> None:
    with pytest.raises(ImageMissingError, match=r"python:3\.12"):
        RootfsCache(client, root).rootfs("python:3.12")
    assert client.api.saves == 0
    assert not root.exists()


def test_the_save_stream_has_a_cap(client: FakeClient, root: Path) -> None:
    image_id, blob = docker_save([LOWER, UPPER])
    client.api.add("task:1", image_id, blob)
    with pytest.raises(EngineError, match="exceeds its cap"):
        RootfsCache(client, root, max_bytes=len(blob) // 2).rootfs("task:1")
    _no_tree(root)


# Each plants a symlink to a host directory and then writes, removes or links through it.
ATTACKS = {
    "absolute symlink, later layer": lambda out: [
        layer(E("etc", "symlink", link=str(out))),
        layer(E("etc/passwd", data=b"pwned")),
    ],
    "relative symlink, later layer": lambda out: [
        layer(E("etc", "symlink", link="../" * 30 + str(out).lstrip("/"))),
        layer(E("etc/passwd", data=b"pwned")),
    ],
    "symlink and member in one layer": lambda out: [
        layer(E("etc", "symlink", link=str(out)), E("etc/passwd", data=b"pwned")),
    ],
    "nested: a dir under the link": lambda out: [
        layer(E("etc", "symlink", link=str(out))),
        layer(E("etc/sub", "dir"), E("etc/sub/x", data=b"pwned")),
    ],
    "symlink planted over a lower dir": lambda out: [
        layer(E("etc", "dir"), E("etc/a", data=b"a")),
        layer(E("etc", "symlink", link=str(out)), E("etc/passwd", data=b"pwned")),
    ],
    "whiteout through the link": lambda out: [
        layer(E("etc", "symlink", link=str(out))),
        layer(E("etc/.wh.keep")),
    ],
    "opaque dir through the link": lambda out: [
        layer(E("etc", "symlink", link=str(out))),
        layer(E("etc/.wh..wh..opq")),
    ],
    "hardlink to a host file through the link": lambda out: [
        layer(E("etc", "symlink", link=str(out))),
        layer(E("stolen", "hardlink", link="etc/secret")),
    ],
    "symlink over a file, then written": lambda out: [
        layer(E("passwd", "symlink", link=str(out / "keep"))),
        layer(E("passwd/x", data=b"pwned")),
    ],
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_nothing_is_written_through_a_symlink_in_the_tree(
    client: FakeClient, root: Path, outside: Path, attack: str
) -> None:
    image_id, blob = docker_save(ATTACKS[attack](outside))
    client.api.add("evil:1", image_id, blob)
    with pytest.raises(EngineError, match="refused"):
        RootfsCache(client, root).rootfs("evil:1")
    _untouched(outside)
    _no_tree(root)


def test_a_file_replacing_a_symlink_replaces_the_link_not_its_target(
    client: FakeClient, root: Path, outside: Path
) -> None:
    layers = [
        layer(E("keep", "symlink", link=str(outside / "keep"))),
        layer(E("keep", data=b"the image's own")),
        layer(E("s", "symlink", link=str(outside / "secret")), E("h", "hardlink", link="s")),
    ]
    image_id, blob = docker_save(layers)
    client.api.add("img:1", image_id, blob)
    _, path = RootfsCache(client, root).rootfs("img:1")
    assert (path / "keep").read_bytes() == b"the image's own"
    # A hardlink to a symlink is a second name of the link, not of the host file.
    assert os.lstat(path / "h").st_ino == os.lstat(path / "s").st_ino
    assert os.readlink(path / "h") == str(outside / "secret")
    _untouched(outside)


@pytest.mark.parametrize(
    "member",
    [
        E("../x", data=b"pwned"),
        E("a/../../x", data=b"pwned"),
        E("/x", data=b"pwned"),
        E("../.wh.outside"),
        E("y", "hardlink", link="../outside/secret"),
        E("y", "hardlink", link="/etc/passwd"),
    ],
    ids=lambda m: f"{m.name}->{m.link}" if m.link else m.name,
)
def test_a_member_climbing_out_is_refused(
    client: FakeClient, root: Path, outside: Path, tmp_path: Path, member: E
) -> None:
    image_id, blob = docker_save([layer(E("a", "dir"), member)])
    client.api.add("evil:1", image_id, blob)
    with pytest.raises(EngineError, match="refused"):
        RootfsCache(client, root).rootfs("evil:1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["images", "outside"]
    _untouched(outside)
    _no_tree(root)


def test_two_builders_of_one_image_unpack_it_once(client: FakeClient, root: Path) -> None:
    image_id, blob = docker_save([LOWER, UPPER])
    client.api.add("task:1", image_id, blob)
    client.api.save_delay = 0.3
    results: list[tuple[str, Path]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def build() -> None:
        start.wait()
        try:
            results.append(RootfsCache(client, root).rootfs("task:1"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(results)) == 1
    assert client.api.saves == 1
    _check_merged(image_id, results[0][1], root)


def test_a_dead_builders_temp_dir_is_swept_and_a_live_ones_kept(
    client: FakeClient, root: Path
) -> None:
    root.mkdir(mode=0o700)
    old = time.time() - 3600
    dead = root / ".tmp-99999-dead"
    (dead / "rootfs/usr").mkdir(parents=True)
    (dead / "owner.lock").touch()
    live = root / ".tmp-12345-live"
    (live / "rootfs").mkdir(parents=True)
    (live / "owner.lock").touch()
    fresh = root / ".tmp-12345-fresh"  # just made, its owner not yet holding the lock
    fresh.mkdir()
    for d in (dead, live):
        os.utime(d, (old, old))
    with open(live / "owner.lock") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        image_id, blob = docker_save([LOWER, UPPER])
        client.api.add("task:1", image_id, blob)
        RootfsCache(client, root).rootfs("task:1")
        left = sorted(p.name for p in root.iterdir() if p.name.startswith(".tmp-"))
    assert left == [".tmp-12345-fresh", ".tmp-12345-live"]


def test_verify_checks_the_marker_and_the_id(client: FakeClient, root: Path) -> None:
    image_id, blob = docker_save([LOWER, UPPER])
    client.api.add("task:1", image_id, blob)
    cache = RootfsCache(client, root)
    _, path = cache.rootfs("task:1")
    cache.verify(image_id)
    meta = path.parent / "image.json"
    meta.write_text(json.dumps({"id": "sha256:" + "0" * 64}))
    with pytest.raises(EngineError, match="missing or incomplete"):
        cache.verify(image_id)
    (path.parent / "complete").unlink()
    with pytest.raises(EngineError, match="missing or incomplete"):
        cache.verify(image_id)
    # The incomplete tree is not served again: it is rebuilt.
    assert cache.rootfs("task:1") == (image_id, path)
    assert client.api.saves == 2
    cache.verify(image_id)
    with pytest.raises(EngineError, match="not an image id"):
        cache.verify("../../etc")


def test_prune_removes_what_is_not_kept(client: FakeClient, root: Path) -> None:
    one, blob1 = docker_save([LOWER])
    two, blob2 = docker_save([LOWER, UPPER])
    client.api.add("one:1", one, blob1)
    client.api.add("two:1", two, blob2)
    cache = RootfsCache(client, root)
    _, path1 = cache.rootfs("one:1")
    _, path2 = cache.rootfs("two:1")
    assert cache.prune({one}) == 1
    assert path1.is_dir()
    assert not path2.parent.exists()
    h1 = one.removeprefix("sha256:")
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [h1, h1 + ".lock", h1 + ".engine." + engines.engine_id(client)]
    )
    with pytest.raises(EngineError):
        cache.verify(two)
    assert cache.rootfs("two:1") == (two, path2)  # unpacked again, not served from memory
    assert client.api.saves == 3
    assert cache.prune(set()) == 2
    assert list(root.iterdir()) == []
    assert RootfsCache(client, root / "never-made").prune(set()) == 0


def test_a_tree_is_pruned_for_an_engine_only_if_no_other_engine_handed_it_out(
    root: Path,
) -> None:
    """Trees are keyed by image id, so two engines on one host share one. `assay gc` asks one
    engine which images it still has: a tree another engine handed out (the fault tests run
    a private engine beside the host's) stays, however that engine answers. Docker 20.10's
    engines of one host share their ID (the host key's), as these two: CI28 failed when the
    private engine's `gc` took the host engine's trees, so the data root names one too."""
    shared, blob1 = docker_save([LOWER])
    mine, blob2 = docker_save([LOWER, UPPER])
    a, b = FakeClient("KEY:1", "/var/lib/docker"), FakeClient("KEY:1", "/tmp/fault/data")
    ea, eb = engines.engine_id(a), engines.engine_id(b)
    assert ea != eb
    a.api.add("shared:1", shared, blob1)
    a.api.add("mine:1", mine, blob2)
    b.api.add("shared:1", shared, blob1)
    ca, cb = RootfsCache(a, root), RootfsCache(b, root)
    ca.rootfs("shared:1")
    _, path = ca.rootfs("mine:1")
    cb.rootfs("shared:1")
    a.api.remove(shared)
    a.api.remove(mine)
    gone = engines.engine_images(a)
    assert gone == set()
    assert ca.unused(gone, engine=ea) == [mine]
    assert ca.prune(gone, engine=ea) == 1
    assert not path.parent.exists()
    names = sorted(p.name for p in root.iterdir())
    assert not any(n.startswith(mine.removeprefix("sha256:")) for n in names), names
    assert cb.verify(shared) is None  # B's tree is still there, whole
    assert cb.prune(engines.engine_images(b), engine=eb) == 0  # B still has it


def test_an_unmarked_tree_is_pruned_only_when_asked(client: FakeClient, root: Path) -> None:
    """A tree an older assay unpacked says no engine: `gc` keeps it unless told (--all)."""
    image_id, blob = docker_save([LOWER])
    client.api.add("old:1", image_id, blob)
    cache = RootfsCache(client, root)
    cache.rootfs("old:1")
    for mark in root.glob("*.engine.*"):
        mark.unlink()
    client.api.remove(image_id)
    mine = engines.engine_id(client)
    assert cache.unused(set(), engine=mine, unmarked=False) == []
    assert cache.prune(set(), engine=mine, unmarked=False) == 0
    assert cache.prune(set(), engine=mine, unmarked=True) == 1
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("ident", "data_root"), [("", "/d"), (None, "/d"), (7, "/d"), ("K", ""), ("K", None)]
)
def test_an_engine_with_no_usable_id_is_an_error(
    root: Path, ident: object, data_root: object
) -> None:
    """What names the engine beside the trees is never empty or made up."""
    with pytest.raises(EngineError, match="no usable ID or data root"):
        RootfsCache(FakeClient(ident, data_root), root).engine_id()


def test_an_engines_name_is_a_plain_file_name_whatever_it_says() -> None:
    name = engines.engine_id(FakeClient("../../etc/x", "/a/../b"))
    assert len(name) == 32 and name.isalnum()


@pytest.mark.parametrize("answer", [None, "sha256:" + "a" * 64, ["../x"], [7]])
def test_an_image_list_that_is_not_ids_is_an_error(root: Path, answer: object) -> None:
    client = FakeClient()
    client.api.images = lambda **_: answer  # type: ignore[method-assign]
    with pytest.raises(EngineError, match="not a list of ids"):
        engines.engine_images(client)


def test_a_tree_a_container_was_made_of_since_the_look_stays(
    client: FakeClient, root: Path
) -> None:
    """`prune` asks again, under the image's lock, whether a container is made of it: one
    made between `assay gc`'s first look at the containers and the removal keeps its tree."""
    image_id, blob = docker_save([LOWER])
    client.api.add("busy:1", image_id, blob)
    cache = RootfsCache(client, root)
    _, path = cache.rootfs("busy:1")
    asked: list[str] = []

    def still_used(i: str) -> bool:
        asked.append(i)
        return True

    assert cache.prune(set(), engine=engines.engine_id(client), still_used=still_used) == 0
    assert asked == [image_id] and path.is_dir()
    assert cache.prune(set(), engine=engines.engine_id(client), still_used=lambda _: False) == 1
