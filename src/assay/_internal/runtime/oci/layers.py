"""An image's verified layers merged into one root filesystem: the OCI layer format's own
rules (whiteouts, opaque directories) on `assay._internal.fstree`'s tar writer, whose `IMAGE`
policy says what of a member is kept and why.

The image is a task author's, so its layers are treated as hostile to the host: no member is
written outside the root filesystem. A member name that is absolute or holds `..` is refused,
and every path is reached one component at a time with O_NOFOLLOW directory descriptors, so a
symlink already in the tree (`etc -> /etc` from an earlier layer) is never followed: a later
member under it (`etc/passwd`) or a whiteout under it ends the unpack with `EngineError`.
Docker's own applier would follow such a link inside a chroot; layers that Docker or BuildKit
produce never name a path through a symlink, so the refusal costs nothing real.

Kept from the layers (`fstree.IMAGE`): numeric owners (no name lookups on the host), modes with
their setuid/setgid/sticky bits, modification times, symlinks, hardlinks inside the tree, FIFOs,
and the `security.capability` and `user.*` extended attributes of regular files. Device nodes
are skipped (counted and logged). Whiteouts follow the OCI spec (AUFS style): `.wh.<name>`
removes `<name>` of the lower layers, `.wh..wh..opq` empties its directory of lower-layer
content, and both apply before the same layer's own members.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import NoReturn

from assay._internal.fstree.dirfd import DIR, TreeError, split
from assay._internal.fstree.policy import IMAGE
from assay._internal.fstree.tarin import Extractor
from assay.errors import EngineError

__all__ = ["LayerApplier"]

_OPAQUE = ".wh..wh..opq"
_AUFS_META = ".wh..wh."
_WHITEOUT = ".wh."


class LayerApplier:
    """Merges layer tars, lowest first, into the empty directory `rootfs`, writing nothing
    outside it. Directories get their own mode, owner and time only after the last layer
    (`finish`): children added later would move the time, and a read-only mode would stop this
    process writing into them when it is not root. `budget` caps the bytes written into the
    tree (a compressed or sparse member could otherwise expand without bound)."""

    def __init__(self, rootfs: Path, budget: int, *, chown: bool) -> None:
        self._root = os.open(rootfs, DIR)
        self._chown = chown
        self._writer = Extractor(self._root, IMAGE, chown=chown, budget=budget)
        self._layer = 0

    @property
    def devices(self) -> int:
        """Device nodes skipped: the runtime makes /dev itself."""
        return self._writer.devices

    def close(self) -> None:
        self._writer.close()
        os.close(self._root)

    def apply(self, index: int, layer: tarfile.TarFile) -> None:
        self._layer = index
        plain: list[tarfile.TarInfo] = []
        # Whiteouts hide lower layers only, never the same layer's members: all of them go
        # first, whatever their place in the tar.
        for member in layer.getmembers():
            parts = self._parts(member.name)
            if not parts:
                continue  # the root itself: it is made 0755 root-owned at the end
            base = parts[-1]
            if base == _OPAQUE:
                self._whiteout(member.name, parts[:-1], opaque=True)
            elif base.startswith(_AUFS_META):
                continue  # AUFS bookkeeping (.wh..wh.plnk and the like), no file
            elif base.startswith(_WHITEOUT):
                hidden = base[len(_WHITEOUT) :]
                if hidden in ("", ".", ".."):
                    self._refuse(member.name, "is a whiteout of nothing")
                self._whiteout(member.name, (*parts[:-1], hidden), opaque=False)
            else:
                plain.append(member)
        for member in plain:
            try:
                self._writer.member(member, layer)
            except TreeError as exc:
                self._refuse(member.name, str(exc))

    def finish(self) -> None:
        self._writer.finish()
        if self._chown:
            os.fchown(self._root, 0, 0)
        os.fchmod(self._root, 0o755)

    def _whiteout(self, name: str, parts: tuple[str, ...], *, opaque: bool) -> None:
        try:
            if opaque:
                self._writer.empty(parts)
            else:
                self._writer.remove(parts)
        except TreeError as exc:
            self._refuse(name, str(exc))

    def _parts(self, name: str) -> tuple[str, ...]:
        try:
            return split(name)
        except TreeError as exc:
            self._refuse(name, str(exc))

    def _refuse(self, name: str, why: str) -> NoReturn:
        raise EngineError(f"layer {self._layer + 1}: member {name!r}: {why}; refused")
