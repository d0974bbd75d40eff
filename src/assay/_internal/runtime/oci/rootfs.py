"""Image root filesystems for the runc backend: unpacked once per image id, verified by digest,
shared read-only by every container of that image.

Images still live on the local Docker engine (assay never pulls); this module reads one with
`docker save` and lays it out under `<root>/<hex id>/`:

    rootfs/      the merged layers (0755, owned by root)
    image.json   {"id", "repo_tags", "diff_ids"}
    complete     written last, just before the directory gets its final name

What is checked before any of it is trusted: the config blob hashes to the image id, the
manifest lists as many layers as the config's `rootfs.diff_ids`, and each layer, uncompressed,
hashes to its diff_id, in order. Both `docker save` layouts are read: the legacy one
(`manifest.json`, `<id>.json`, `<v1 id>/layer.tar`; Docker 20.10 here) and the OCI one
(`blobs/sha256/...`, with or without a `manifest.json` beside `index.json`).

The image is a task author's, so its layers are treated as hostile to the host: no member is
written outside the root filesystem. A member name that is absolute or holds `..` is refused,
and every path is resolved one component at a time with O_NOFOLLOW directory descriptors, so a
symlink already in the tree (`etc -> /etc` from an earlier layer) is never followed: a later
member under it (`etc/passwd`) or a whiteout under it ends the unpack with `EngineError`.
Docker's own applier would follow such a link inside a chroot; layers that Docker or BuildKit
produce never name a path through a symlink, so the refusal costs nothing real.

Kept from the layers: numeric owners (no name lookups on the host), modes with their
setuid/setgid/sticky bits, modification times, symlinks, hardlinks inside the tree, FIFOs, and
the `security.capability` and `user.*` extended attributes of regular files. Device nodes are
skipped (counted and logged): the runtime makes /dev itself, and a device file reachable on the
host is not something an image gets to place. Whiteouts follow the OCI spec (AUFS style):
`.wh.<name>` removes `<name>` of the lower layers, `.wh..wh..opq` empties its directory of
lower-layer content, and both apply before the same layer's own members.

Because the trees hold the image's setuid binaries, each `<hex>` directory is 0700: no host user
but root can reach inside it.

Concurrency and crashes: a build happens under an exclusive `flock` on `<root>/<hex>.lock`, in a
private `<root>/.tmp-<pid>-*` directory that is renamed into place only when complete, so a
reader sees a whole tree or none. The builder also holds a `flock` on `owner.lock` inside its
temp directory for as long as it works; the next build (or `prune`) removes any `.tmp-*`
directory whose lock nobody holds and that is more than a minute old (the minute covers the
instant between creating the directory and locking it). A flock is released by the kernel when
its holder dies, in any pid namespace, so unlike a recorded pid it cannot be fooled by pid
reuse or by a builder in another container.
"""

from __future__ import annotations

import bz2
import errno
import fcntl
import gzip
import hashlib
import io
import json
import logging
import lzma
import os
import re
import shutil
import stat
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import docker.errors
import requests.exceptions

from assay._internal.runtime.images import _fix_for
from assay.errors import EngineError, EngineUnavailableError, ImageMissingError

__all__ = ["MAX_SAVE_BYTES", "ROOTFS_CACHE", "RootfsCache"]

ROOTFS_CACHE = Path("/var/lib/assay/oci/images")
MAX_SAVE_BYTES = 16 * 1024**3
"""Cap on the `docker save` stream, and separately on the bytes written into one tree (sparse
or compressed members could otherwise expand without bound)."""

LOG = logging.getLogger("assay")

_HEX = re.compile(r"[0-9a-f]{64}")
_TMP_PREFIX = ".tmp-"
_TMP_GRACE_S = 60.0
_OWNER_LOCK = "owner.lock"
_MAX_JSON_BYTES = 16 * 1024**2
_CHUNK = 1 << 20
_FD_CACHE_MAX = 256
_OPAQUE = ".wh..wh..opq"
_AUFS_META = ".wh..wh."
_WHITEOUT = ".wh."
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_XATTR_PAX = "SCHILY.xattr."
_DECOMPRESSORS: dict[bytes, tuple[str, Callable[[IO[bytes]], io.BufferedIOBase] | None]] = {
    b"\x1f\x8b": ("gzip", lambda f: gzip.GzipFile(fileobj=f, mode="rb")),
    b"BZh": ("bzip2", lambda f: bz2.BZ2File(f, mode="rb")),
    b"\xfd7zXZ\x00": ("xz", lambda f: lzma.LZMAFile(f, mode="rb")),
    # No zstd in this Python's standard library; Docker's own save never writes it.
    b"\x28\xb5\x2f\xfd": ("zstd", None),
}


class RootfsCache:
    """Unpacked root filesystems of local images under `root`, one directory per image id."""

    def __init__(self, client: Any, root: Path = ROOTFS_CACHE, *, max_bytes: int = MAX_SAVE_BYTES):
        self._client = client
        self.root = Path(root)
        self._max_bytes = max_bytes
        self._known: dict[str, Path] = {}
        self._guard = threading.Lock()

    def rootfs(self, image: str) -> tuple[str, Path]:
        """The id of `image` on the engine and its unpacked root filesystem, unpacking it first
        if no complete one is cached. Never pulls: an image not on the engine raises
        `ImageMissingError`; one that fails verification raises `EngineError` and leaves
        nothing in the cache.

        The engine is asked for the id on every call (one inspect, a few ms): a tag may have
        moved since the last one, and only the id says which tree is meant. A tree this object
        has returned once is not looked at on disk again (`verify` looks)."""
        image_id, repo_tags = self._inspect(image)
        with self._guard:
            known = self._known.get(image_id)
        if known is not None:
            return image_id, known
        final = self.root / _hex_of(image_id)
        if not _complete(final, image_id):
            self._ensure_root()
            lock = _lock(self._lock_path(image_id), blocking=True)
            assert lock is not None
            try:
                # Another process may have finished it while this one waited for the lock.
                if not _complete(final, image_id):
                    self._build(image, image_id, repo_tags, final)
            finally:
                os.close(lock)
        path = final / "rootfs"
        with self._guard:
            self._known[image_id] = path
        return image_id, path

    def verify(self, image_id: str) -> None:
        """Raise `EngineError` unless the cached tree of `image_id` is complete and is that
        image's (marker and image.json; the files are not hashed again)."""
        final = self.root / _hex_of(image_id)
        if not _complete(final, image_id):
            with self._guard:
                self._known.pop(image_id, None)
            raise EngineError(
                f"the unpacked root filesystem of image {image_id} is missing or incomplete "
                f"under {final}",
                fix="ask for the image again (it is unpacked anew) or run `assay gc`",
            )

    def prune(self, keep: set[str]) -> int:
        """Remove every cached image whose id ("sha256:..." or bare hex) is not in `keep`; how
        many trees went. An image being unpacked right now is left alone. The caller keeps the
        ids of images a container may still run from: their trees are its root filesystem."""
        if not self.root.is_dir():
            return 0
        kept = {k.removeprefix("sha256:") for k in keep}
        candidates: set[str] = set()
        for entry in os.scandir(self.root):
            name = entry.name.removesuffix(".lock")
            if _HEX.fullmatch(name) and name not in kept:
                candidates.add(name)
        removed = 0
        for hexid in sorted(candidates):
            image_id = f"sha256:{hexid}"
            with self._guard:
                self._known.pop(image_id, None)
            lock_path = self._lock_path(image_id)
            lock = _lock(lock_path, blocking=False)
            if lock is None:
                continue  # a build holds it
            try:
                final = self.root / hexid
                if final.is_dir() and not final.is_symlink():
                    self._discard(final)
                    removed += 1
                # Safe to unlink while held: `_lock` callers recheck the inode they locked.
                lock_path.unlink(missing_ok=True)
            finally:
                os.close(lock)
        self._sweep()
        return removed

    def _lock_path(self, image_id: str) -> Path:
        return self.root / f"{_hex_of(image_id)}.lock"

    def _inspect(self, image: str) -> tuple[str, list[str]]:
        try:
            info = self._client.api.inspect_image(image)
        except docker.errors.ImageNotFound as exc:
            raise ImageMissingError(image, fix=_fix_for(image)) from exc
        except requests.exceptions.ConnectionError as exc:
            raise EngineUnavailableError(
                f"no Docker engine answers ({type(exc).__name__})"
            ) from exc
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise EngineError(
                f"the Docker engine could not inspect image {image!r}: {str(exc)[:300]}"
            ) from exc
        image_id = info.get("Id") if isinstance(info, dict) else None
        if not isinstance(image_id, str) or not _HEX.fullmatch(image_id.removeprefix("sha256:")):
            raise EngineError(f"the Docker engine returned no usable id for image {image!r}")
        if not image_id.startswith("sha256:"):
            raise EngineError(f"image {image!r} has an id that is not sha256: {image_id!r}")
        tags = info.get("RepoTags") or []
        return image_id, [t for t in tags if isinstance(t, str)]

    def _ensure_root(self) -> None:
        if not self.root.is_dir():
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _build(self, image: str, image_id: str, repo_tags: list[str], final: Path) -> None:
        self._sweep()
        if final.exists() or final.is_symlink():
            # Not complete (checked under the lock): debris, e.g. a tree someone emptied.
            self._discard(final)
        tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-", dir=self.root))
        owner = -1
        try:
            owner = os.open(tmp / _OWNER_LOCK, _NEW_FILE, 0o600)
            fcntl.flock(owner, fcntl.LOCK_EX)
            started = time.monotonic()
            save = tmp / "save.tar"
            self._save(image, image_id, save)
            saved = time.monotonic()
            diff_ids, skipped = self._unpack(image_id, save, tmp)
            os.unlink(save)
            meta = {"id": image_id, "repo_tags": repo_tags, "diff_ids": diff_ids}
            (tmp / "image.json").write_text(json.dumps(meta, indent=2) + "\n")
            # The marker must not outlive its files across a power loss: flush them first.
            os.sync()
            _write_synced(tmp / "complete", image_id + "\n")
            os.unlink(tmp / _OWNER_LOCK)
            os.rename(tmp, final)
            _fsync_dir(self.root)
            LOG.info(
                "unpacked image %s (%s) in %.1f s (save %.1f s)%s",
                image_id[:19],
                image,
                time.monotonic() - started,
                saved - started,
                f"; skipped {skipped} device node(s)" if skipped else "",
            )
        except BaseException as exc:
            _remove_tree(tmp)
            if isinstance(exc, OSError | tarfile.TarError | ValueError):
                raise EngineError(
                    f"cannot unpack image {image!r} ({image_id[:19]}): {exc}"
                ) from exc
            raise
        finally:
            if owner >= 0:
                os.close(owner)

    def _save(self, image: str, image_id: str, dest: Path) -> None:
        # By id, not by name: the tag may move between the inspect and the save.
        try:
            chunks = self._client.api.get_image(image_id)
            total = 0
            with open(dest, "xb") as out:
                for chunk in chunks:
                    total += len(chunk)
                    if total > self._max_bytes:
                        close = getattr(chunks, "close", None)
                        if callable(close):
                            close()
                        raise EngineError(
                            f"`docker save` of image {image!r} exceeds its cap of "
                            f"{self._max_bytes} bytes"
                        )
                    out.write(chunk)
        except docker.errors.ImageNotFound as exc:
            raise ImageMissingError(image, fix=_fix_for(image)) from exc
        except requests.exceptions.ConnectionError as exc:
            raise EngineUnavailableError(
                f"the Docker engine stopped answering during `docker save` of {image!r}"
            ) from exc
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise EngineError(f"`docker save` of image {image!r} failed: {str(exc)[:300]}") from exc

    def _unpack(self, image_id: str, save: Path, tmp: Path) -> tuple[list[str], int]:
        """Verify the saved image, then merge its layers into `tmp/rootfs`; the diff_ids and
        how many device nodes were skipped."""
        with tarfile.open(save, "r:") as outer:
            config_name, layer_names = _locate(outer, image_id)
            diff_ids = _diff_ids(_read(outer, config_name, _MAX_JSON_BYTES), image_id)
            if len(layer_names) != len(diff_ids):
                raise EngineError(
                    f"image {image_id[:19]}: the manifest lists {len(layer_names)} layer(s), "
                    f"the config {len(diff_ids)} diff_id(s)"
                )
            # Every layer is checked before any is parsed as a tar.
            sources = [
                self._verify_layer(outer, name, diff_id, tmp / f"layer-{i}.tar", i, len(diff_ids))
                for i, (name, diff_id) in enumerate(zip(layer_names, diff_ids, strict=True))
            ]
            rootfs = tmp / "rootfs"
            os.mkdir(rootfs, 0o700)
            unpacker = _Unpacker(rootfs, self._max_bytes, chown=os.geteuid() == 0)
            try:
                for i, source in enumerate(sources):
                    fileobj = outer.extractfile(source) if isinstance(source, str) else None
                    path = source if isinstance(source, Path) else None
                    with tarfile.open(name=path, fileobj=fileobj, mode="r:") as layer:
                        unpacker.apply(i, layer)
                    if path is not None:
                        path.unlink()
                unpacker.finish()
            finally:
                unpacker.close()
        return diff_ids, unpacker.devices

    def _verify_layer(
        self, outer: tarfile.TarFile, name: str, diff_id: str, spill: Path, i: int, n: int
    ) -> str | Path:
        """Hash one layer as its diff_id is defined (uncompressed); the member name to read it
        from again, or for a compressed one the file it was decompressed into."""
        raw = _open(outer, name)
        head = raw.read(8)
        raw.seek(0)
        kind, opener = next(
            ((k, o) for magic, (k, o) in _DECOMPRESSORS.items() if head.startswith(magic)),
            ("", None),
        )
        digest = hashlib.sha256()
        if not kind:
            while chunk := raw.read(_CHUNK):
                digest.update(chunk)
            source: str | Path = name
        elif opener is None:
            raise EngineError(f"layer {i + 1} of {n} is {kind}-compressed, which is not supported")
        else:
            budget = self._max_bytes
            with opener(raw) as plain, open(spill, "xb") as out:
                while chunk := plain.read(_CHUNK):
                    budget -= len(chunk)
                    if budget < 0:
                        raise EngineError(f"layer {i + 1} of {n} decompresses past its cap")
                    digest.update(chunk)
                    out.write(chunk)
            source = spill
        got = "sha256:" + digest.hexdigest()
        if got != diff_id:
            raise EngineError(
                f"layer {i + 1} of {n} ({name}) hashes to {got}, not its diff_id {diff_id}"
            )
        return source

    def _sweep(self) -> None:
        """Remove the temp directories of builders that died (see the module docstring)."""
        now = time.time()
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return
        for entry in entries:
            if not entry.name.startswith(_TMP_PREFIX):
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if now - entry.stat(follow_symlinks=False).st_mtime < _TMP_GRACE_S:
                    continue
                if _held(Path(entry.path) / _OWNER_LOCK):
                    continue
            except OSError:
                continue
            LOG.info("removing %s, left by an unpack that did not finish", entry.path)
            _remove_tree(Path(entry.path))

    def _discard(self, path: Path) -> None:
        # Renamed away first: a crash halfway through the removal then leaves a `.tmp-*`
        # directory for the sweep, never a half-deleted tree under its image's name.
        grave = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-rm-", dir=self.root))
        os.rename(path, grave / "old")
        _remove_tree(grave)


@dataclass
class _DirAttrs:
    mode: int
    uid: int
    gid: int
    mtime: float | None


class _Unpacker:
    """Merges layer tars into one tree, writing nothing outside it (see the module docstring).

    Directories are created 0700 and get their own mode, owner and time only after the last
    layer: children added later would move the time, and a read-only mode would stop this
    process writing into them when it is not root."""

    def __init__(self, rootfs: Path, budget: int, *, chown: bool) -> None:
        self._root = os.open(rootfs, _DIR_FLAGS)
        self._fds: dict[tuple[str, ...], int] = {}
        self._dirs: dict[tuple[str, ...], _DirAttrs] = {}
        self._budget = budget
        self._chown = chown
        self._layer = 0
        self.devices = 0

    def close(self) -> None:
        self._drop_under(())
        os.close(self._root)

    def apply(self, index: int, layer: tarfile.TarFile) -> None:
        self._layer = index
        plain: list[tuple[tuple[str, ...], tarfile.TarInfo]] = []
        # Whiteouts hide lower layers only, never the same layer's members: all of them go
        # first, whatever their place in the tar.
        for member in layer.getmembers():
            parts = self._parts(member.name)
            if not parts:
                continue  # the root itself: it is made 0755 root-owned at the end
            base = parts[-1]
            if base == _OPAQUE:
                self._opaque(parts[:-1])
            elif base.startswith(_AUFS_META):
                continue  # AUFS bookkeeping (.wh..wh.plnk and the like), no file
            elif base.startswith(_WHITEOUT):
                hidden = base[len(_WHITEOUT) :]
                if hidden in ("", ".", ".."):
                    self._refuse(member.name, "is a whiteout of nothing")
                self._whiteout((*parts[:-1], hidden))
            else:
                plain.append((parts, member))
        for parts, member in plain:
            self._member(parts, member, layer)
        self._drop_under(())

    def finish(self) -> None:
        self._drop_under(())
        # Deepest first: a directory made read-only must have nothing left to receive.
        for parts in sorted(self._dirs, key=len, reverse=True):
            attrs = self._dirs[parts]
            fd = self._walk(parts, create=False)
            if fd is None:
                continue
            if self._chown:
                os.fchown(fd, attrs.uid, attrs.gid)
            os.fchmod(fd, attrs.mode)
            if attrs.mtime is not None:
                os.utime(fd, (attrs.mtime, attrs.mtime))
            if len(self._fds) > _FD_CACHE_MAX:
                self._drop_under(())
        self._drop_under(())
        if self._chown:
            os.fchown(self._root, 0, 0)
        os.fchmod(self._root, 0o755)

    def _parts(self, name: str) -> tuple[str, ...]:
        if name.startswith("/"):
            self._refuse(name, "is an absolute path")
        parts = tuple(p for p in name.split("/") if p not in ("", "."))
        if ".." in parts:
            self._refuse(name, "climbs out with `..`")
        return parts

    def _refuse(self, name: str, why: str) -> None:
        raise EngineError(f"layer {self._layer + 1}: member {name!r} {why}; refused")

    def _walk(self, parts: tuple[str, ...], *, create: bool) -> int | None:
        """A descriptor of directory `parts`, reached without following any symlink; None if
        it does not exist and `create` is false. Missing ones are made when `create` is true,
        root-owned 0755 at the end, as Docker makes a parent a layer does not list."""
        if not parts:
            return self._root
        cached = self._fds.get(parts)
        if cached is not None:
            return cached
        parent = self._walk(parts[:-1], create=create)
        if parent is None:
            return None
        name = parts[-1]
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
            os.mkdir(name, 0o700, dir_fd=parent)
            self._dirs[parts] = _DirAttrs(0o755, 0, 0, None)
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                self._refuse("/".join(parts), "is a symlink or a file where a directory is needed")
            raise
        self._fds[parts] = fd
        return fd

    def _drop_under(self, parts: tuple[str, ...]) -> None:
        """Forget the cached descriptors of `parts` and everything below it (all for ())."""
        n = len(parts)
        for key in [k for k in self._fds if k[:n] == parts]:
            os.close(self._fds.pop(key))

    def _remove(self, parent: int, parts: tuple[str, ...]) -> None:
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            self._drop_under(parts)
            n = len(parts)
            for key in [k for k in self._dirs if k[:n] == parts]:
                del self._dirs[key]
            # The fd-based rmtree: it never follows a symlink it meets inside.
            shutil.rmtree(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)

    def _whiteout(self, parts: tuple[str, ...]) -> None:
        parent = self._walk(parts[:-1], create=False)
        if parent is not None:
            self._remove(parent, parts)

    def _opaque(self, parts: tuple[str, ...]) -> None:
        fd = self._walk(parts, create=False)
        if fd is None:
            return
        for name in os.listdir(fd):
            self._remove(fd, (*parts, name))

    def _spend(self, n: int) -> None:
        self._budget -= n
        if self._budget < 0:
            raise EngineError(f"layer {self._layer + 1}: the tree grows past its cap; refused")

    def _member(
        self, parts: tuple[str, ...], member: tarfile.TarInfo, layer: tarfile.TarFile
    ) -> None:
        if len(self._fds) > _FD_CACHE_MAX:
            self._drop_under(())
        if member.ischr() or member.isblk():
            self.devices += 1
            return
        if not (
            member.isdir() or member.isreg() or member.issym() or member.islnk() or member.isfifo()
        ):
            LOG.debug(
                "layer %d: skipping %r of tar type %r", self._layer + 1, member.name, member.type
            )
            return
        target = self._parts(member.linkname) if member.islnk() else ()
        if member.islnk() and target == parts:
            return  # a hardlink to itself: nothing to do, and clearing the path would lose it
        parent = self._walk(parts[:-1], create=True)
        assert parent is not None
        name = parts[-1]
        mode = member.mode & 0o7777
        if member.isdir():
            try:
                st: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=parent)
                st = None
            if st is None:
                os.mkdir(name, 0o700, dir_fd=parent)
            self._dirs[parts] = _DirAttrs(mode, member.uid, member.gid, member.mtime)
            return
        self._remove(parent, parts)
        if member.isreg():
            self._file(parent, name, member, layer)
        elif member.issym():
            os.symlink(member.linkname, name, dir_fd=parent)
            self._lchown(parent, name, member)
            os.utime(name, (member.mtime, member.mtime), dir_fd=parent, follow_symlinks=False)
        elif member.islnk():
            if not target:
                self._refuse(member.name, "is a hardlink to the root")
            source = self._walk(target[:-1], create=False)
            if source is None:
                self._refuse(member.name, f"is a hardlink to {member.linkname!r}, which is absent")
            # linkat without AT_SYMLINK_FOLLOW: a link to a symlink links the symlink itself.
            os.link(target[-1], name, src_dir_fd=source, dst_dir_fd=parent, follow_symlinks=False)
        else:
            os.mkfifo(name, 0o600, dir_fd=parent)
            self._lchown(parent, name, member)
            # Follows a link, but the name was made a FIFO just now in a tree only we write.
            os.chmod(name, mode, dir_fd=parent)
            os.utime(name, (member.mtime, member.mtime), dir_fd=parent, follow_symlinks=False)

    def _lchown(self, parent: int, name: str, member: tarfile.TarInfo) -> None:
        if self._chown:
            os.chown(name, member.uid, member.gid, dir_fd=parent, follow_symlinks=False)

    def _file(
        self, parent: int, name: str, member: tarfile.TarInfo, layer: tarfile.TarFile
    ) -> None:
        fd = os.open(name, _NEW_FILE, 0o600, dir_fd=parent)
        try:
            data = layer.extractfile(member)
            if data is not None:
                while chunk := data.read(_CHUNK):
                    self._spend(len(chunk))
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
            # chown clears setuid/setgid and file capabilities, so it comes first.
            if self._chown:
                os.fchown(fd, member.uid, member.gid)
            os.fchmod(fd, member.mode & 0o7777)
            self._xattrs(fd, member)
            os.utime(fd, (member.mtime, member.mtime))
        finally:
            os.close(fd)

    def _xattrs(self, fd: int, member: tarfile.TarInfo) -> None:
        for key, value in member.pax_headers.items():
            if not key.startswith(_XATTR_PAX):
                continue
            attr = key[len(_XATTR_PAX) :]
            # trusted.* (overlayfs' own) and security.selinux would mean something to the host.
            if attr != "security.capability" and not attr.startswith("user."):
                continue
            if attr.startswith("security.") and not self._chown:
                continue  # needs CAP_SETFCAP
            try:
                os.setxattr(fd, attr, value.encode("utf-8", "surrogateescape"))
            except OSError as exc:
                if exc.errno not in (errno.ENOTSUP, errno.EPERM):
                    raise
                LOG.warning(
                    "layer %d: %s of %r not kept: %s", self._layer + 1, attr, member.name, exc
                )


def _hex_of(image_id: str) -> str:
    hexid = image_id.removeprefix("sha256:")
    if not _HEX.fullmatch(hexid):
        raise EngineError(f"not an image id: {image_id!r}")
    return hexid


def _complete(final: Path, image_id: str) -> bool:
    try:
        if not (final / "complete").is_file() or not (final / "rootfs").is_dir():
            return False
        meta = json.loads((final / "image.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("id") == image_id


def _lock(path: Path, *, blocking: bool) -> int | None:
    """An exclusive flock on `path`, as an fd to close; None if not blocking and it is held.
    The file may be unlinked by its holder (`prune`): the inode locked is checked to still be
    the one at `path`, and the lock taken again if not."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        mine = os.fstat(fd)
        try:
            there = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            there = None
        if there is not None and (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
            return fd
        os.close(fd)


def _held(path: Path) -> bool:
    """Whether a live process holds the flock on `path` (False if there is no such file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _remove_tree(path: Path) -> None:
    def retry(func: Callable[..., Any], failed: str, _exc: Any) -> None:
        # Not root: a directory the image made read-only is made writable to be emptied.
        try:
            os.chmod(os.path.dirname(failed), 0o700)
            func(failed)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)


def _write_synced(path: Path, text: str) -> None:
    fd = os.open(path, _NEW_FILE, 0o644)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, _DIR_FLAGS)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open(outer: tarfile.TarFile, name: str) -> IO[bytes]:
    try:
        member = outer.getmember(name)
    except KeyError:
        raise EngineError(f"the saved image has no {name!r}") from None
    data = outer.extractfile(member)  # follows the legacy layout's symlinked duplicate layers
    if data is None:
        raise EngineError(f"the saved image's {name!r} is not a file")
    return data


def _read(outer: tarfile.TarFile, name: str, cap: int) -> bytes:
    data = _open(outer, name).read(cap + 1)
    if len(data) > cap:
        raise EngineError(f"the saved image's {name!r} is larger than {cap} bytes")
    return data


def _blob_name(digest: object) -> str:
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        raise EngineError(f"the saved image names a blob by {digest!r}, not a sha256 digest")
    return f"blobs/sha256/{_hex_of(digest)}"


def _locate(outer: tarfile.TarFile, image_id: str) -> tuple[str, list[str]]:
    """The config's member name and the layers' member names, in order, of the image whose
    config hashes to `image_id`."""
    names = set(outer.getnames())
    want = _hex_of(image_id)
    if "manifest.json" in names:
        manifest = json.loads(_read(outer, "manifest.json", _MAX_JSON_BYTES))
        entries = [e for e in manifest if isinstance(e, dict)] if isinstance(manifest, list) else []
        seen: list[str] = []
        for entry in entries:
            config, layers = entry.get("Config"), entry.get("Layers")
            if not isinstance(config, str) or not isinstance(layers, list):
                continue
            digest = hashlib.sha256(_read(outer, config, _MAX_JSON_BYTES)).hexdigest()
            if digest == want:
                if not all(isinstance(layer, str) for layer in layers):
                    raise EngineError("the saved image's manifest.json lists a layer by no name")
                return config, list(layers)
            seen.append(f"sha256:{digest}")
        raise EngineError(
            f"the saved image's config hashes to {', '.join(seen) or 'nothing'}, "
            f"not the image id {image_id}"
        )
    if "index.json" in names:
        index = json.loads(_read(outer, "index.json", _MAX_JSON_BYTES))
        for manifest in _oci_manifests(outer, index, depth=0):
            config = manifest.get("config")
            if isinstance(config, dict) and config.get("digest") == image_id:
                config_name = _blob_name(config["digest"])
                layers = manifest.get("layers")
                if not isinstance(layers, list):
                    raise EngineError("the saved image's OCI manifest has no layer list")
                return config_name, [
                    _blob_name(layer.get("digest") if isinstance(layer, dict) else None)
                    for layer in layers
                ]
        raise EngineError(f"the saved image's index.json has no manifest of {image_id}")
    raise EngineError("the saved image has neither manifest.json nor index.json")


def _oci_manifests(outer: tarfile.TarFile, index: object, depth: int) -> Iterable[dict[str, Any]]:
    """The image manifests an OCI index leads to, through nested indexes (a multi-platform
    image), each blob checked against the digest it was reached by."""
    descriptors = index.get("manifests") if isinstance(index, dict) else None
    for descriptor in descriptors if isinstance(descriptors, list) else []:
        if not isinstance(descriptor, dict):
            continue
        name = _blob_name(descriptor.get("digest"))
        if name not in outer.getnames():
            continue  # a platform this save left out
        blob = _read(outer, name, _MAX_JSON_BYTES)
        if "sha256:" + hashlib.sha256(blob).hexdigest() != descriptor["digest"]:
            raise EngineError(f"the saved image's {name} does not hash to its name")
        doc = json.loads(blob)
        if not isinstance(doc, dict):
            continue
        if "manifests" in doc:
            if depth < 2:
                yield from _oci_manifests(outer, doc, depth + 1)
        elif "config" in doc:
            yield doc


def _diff_ids(config_blob: bytes, image_id: str) -> list[str]:
    got = "sha256:" + hashlib.sha256(config_blob).hexdigest()
    if got != image_id:
        raise EngineError(f"the saved image's config hashes to {got}, not the image id {image_id}")
    config = json.loads(config_blob)
    rootfs = config.get("rootfs") if isinstance(config, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(
        isinstance(d, str) and d.startswith("sha256:") and _HEX.fullmatch(d[7:]) for d in diff_ids
    ):
        raise EngineError(f"image {image_id[:19]}: its config has no usable rootfs.diff_ids")
    return list(diff_ids)
