"""Tars between a Harbor box and the host, for `assay.integrations.harbor`. What comes out of a
box is hostile bytes: it is either judged by the firewall (`rerooted`'s output) or written to the
host as regular files and directories only, inside the target (`extract`)."""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import IO, BinaryIO, cast

from assay.runtime import Runtime

TRANSFER_CAP = 256 << 20
"""Bytes of one archive out of a box."""


def rerooted(raw: IO[bytes], top: str, uid: int | None) -> tuple[bytes, int]:
    """The tar `raw` (a runtime's archive of a directory named `top`) with names relative to
    that directory, and, with `uid`, every member owned by it. Members are copied as they are
    (links included): whoever receives the result judges them."""
    out = io.BytesIO()
    count = 0
    with tarfile.open(fileobj=raw, mode="r|") as src, tarfile.open(fileobj=out, mode="w") as dst:
        for m in src:
            name = m.name.rstrip("/")
            if name in (top, f"./{top}", "."):
                continue
            for prefix in (f"{top}/", f"./{top}/"):
                if name.startswith(prefix):
                    name = name[len(prefix) :]
                    break
            m.name = name
            if uid is not None:
                m.uid = m.gid = uid
                m.uname = m.gname = ""
            dst.addfile(m, src.extractfile(m) if m.isreg() else None)
            count += 1
    return out.getvalue(), count


def host_tar(source: Path, name: str, uid: int) -> bytes:
    """A host file or directory as a tar (its contents at `name`, "" for a directory's own
    contents): regular files and directories only, owned by `uid` so the box's user can
    change them (Harbor chmods what it uploads)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tf:

        def add(path: Path, arc: str) -> None:
            st = path.lstat()
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                return
            info = tarfile.TarInfo(arc)
            info.mode = (st.st_mode & 0o777) | 0o600
            info.uid = info.gid = uid
            info.mtime = int(st.st_mtime)
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                if arc:
                    tf.addfile(info)
                for child in sorted(path.iterdir()):
                    add(child, f"{arc}/{child.name}" if arc else child.name)
            else:
                info.size = st.st_size
                with path.open("rb") as fh:
                    tf.addfile(info, fh)

        add(source, name)
    return out.getvalue()


def extract(data: IO[bytes], top: str, target: Path, single: bool) -> None:
    """A box's archive (hostile bytes) onto the host: regular files and directories only,
    no name outside `target` (tarfile's data filter), `top` stripped. `single`: the one
    regular file it holds becomes `target` itself."""
    with tarfile.open(fileobj=data, mode="r|") as tf:
        for m in tf:
            if not (m.isreg() or m.isdir()):
                continue
            name = m.name.rstrip("/")
            if single:
                if m.isreg():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    src = tf.extractfile(m)
                    with open(target, "wb") as fh:
                        shutil.copyfileobj(cast(IO[bytes], src), fh)
                    return
                continue
            rel = name[len(top) + 1 :] if name.startswith(f"{top}/") else ""
            if not rel:
                continue
            m.name = rel
            tf.extract(m, target, filter="data")
    if single:
        raise FileNotFoundError(f"no regular file in the box at {top}")


def archive(rt: Runtime, cid: str, path: str) -> IO[bytes]:
    raw = tempfile.SpooledTemporaryFile(max_size=8 << 20)
    rt.get_archive(cid, path, cast(BinaryIO, raw), TRANSFER_CAP)
    raw.seek(0)
    return cast(IO[bytes], raw)
