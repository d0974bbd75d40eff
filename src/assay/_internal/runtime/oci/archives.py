"""Archives in and out of a runc-backend container, through the host side of its mounts: a
container path is found in the deepest mount that holds it (else the container's root), and
hosttar.py reads or writes that host directory without following a link. No process in the
container takes part."""

from __future__ import annotations

import io
import posixpath
import tarfile
from pathlib import Path
from typing import BinaryIO

from assay.errors import EngineError

from . import hosttar
from .host import Meta


def _norm(path: str) -> str:
    # normpath keeps a leading "//" (POSIX allows it a meaning), so strip before joining.
    return posixpath.normpath("/" + path.lstrip("/"))


def locate(meta: Meta, root: Path, path: str) -> tuple[Path, str, bool]:
    """(host directory, path inside it, writable) for a container path: the deepest of the
    container's mounts that holds it, else its root (`root`, the host side of it)."""
    norm = _norm(path)
    if ".." in norm.split("/"):
        raise EngineError(f"path {path!r} leaves the container's root")
    best = ""
    for target in meta.mounts:
        inside = norm == target or norm.startswith(target.rstrip("/") + "/")
        if inside and len(target) > len(best):
            best = target
    if best:
        rel = norm[len(best) :].lstrip("/")
        return Path(meta.mounts[best]), rel, best not in meta.read_only
    return root, norm.lstrip("/"), not meta.read_only_root


def put_archive(meta: Meta, root: Path, path: str, data: bytes) -> None:
    norm = _norm(path)
    below = [t for t in meta.mounts if t.startswith(norm.rstrip("/") + "/")]
    parts = split_by_mount(norm, data, below) if below else {norm: data}
    for where, part in parts.items():
        base, rel, writable = locate(meta, root, where)
        if not writable:
            raise EngineError(f"put_archive: {where} is on the container's read-only root")
        hosttar.extract_tar(base, rel, part)


def get_archive(meta: Meta, root: Path, path: str, sink: BinaryIO, cap: int) -> int:
    base, rel, _ = locate(meta, root, path)
    # Docker names the entries after the last component of the container's path.
    norm = _norm(path)
    top = posixpath.basename(norm) if not path.endswith(("/.",)) and norm != "/" else "."
    return hosttar.write_tar(base, rel, sink, cap, name=top)


def split_by_mount(target: str, data: bytes, mounts: list[str]) -> dict[str, bytes]:
    """The tar `data` meant for `target`, cut into one tar per place it lands: members under a
    mount below `target` go to that mount (as the container sees the tree, which is what
    Docker's put_archive writes into), the rest to `target`. The mount point's own entry is
    left out: the mount's root keeps its owner and mode."""
    out: dict[str, tuple[tarfile.TarFile, io.BytesIO]] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as src:
            for member in src:
                name = posixpath.normpath(member.name.lstrip("/"))
                full = posixpath.normpath(posixpath.join(target, name))
                home = max(
                    (m for m in mounts if full == m or full.startswith(m + "/")),
                    key=len,
                    default=target,
                )
                if full == home and home != target:
                    continue
                rel = posixpath.relpath(full, home) if full != home else "."
                if home not in out:
                    buf = io.BytesIO()
                    out[home] = (
                        tarfile.open(fileobj=buf, mode="w:", format=tarfile.PAX_FORMAT),
                        buf,
                    )
                copy = member.replace(name=rel, deep=False)
                if member.islnk():
                    # a hard link's target is relative to the archive's root: keep it so only
                    # when both ends land in the same place (else extract_tar refuses it)
                    link = posixpath.normpath(posixpath.join(target, member.linkname.lstrip("/")))
                    copy.linkname = posixpath.relpath(link, home)
                out[home][0].addfile(copy, src.extractfile(member) if member.isfile() else None)
    except tarfile.TarError as exc:
        raise EngineError(f"put_archive: not a tar archive ({exc})") from exc
    parts = {}
    for home, (tf, buf) in out.items():
        tf.close()
        parts[home] = buf.getvalue()
    return parts
