"""What the runc backend leaves on the host, found from its state on disk alone (so `assay gc`
finds what a controller killed with SIGKILL left): each container's directory and meta, the
OCI runtimes' own records, mounts and cgroups; and their removal."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from assay.errors import EngineError

from .. import cgroup
from ..owner import owner_is_dead
from . import host
from .client import Client
from .host import Meta

RUNTIME_BINARIES = ("runc", "runsc")
"""The OCI runtimes whose state lives under `STATE_ROOT/<name>`: each backend removes the
other's containers too (`assay gc` opens the runc backend only)."""


def runtime_state(root: Path, cid: str | None = None) -> list[Path]:
    """What the OCI runtimes keep of one container (or of every container) under `root`:
    runc's state directory, runsc's state and lock files (`<cid>_sandbox:<cid>.state`)."""
    found: list[Path] = []
    for name in RUNTIME_BINARIES:
        base = root / name
        if not base.is_dir():
            continue
        if cid is not None:
            found += sorted(base.glob(f"{cid}*"))
        else:
            found += sorted(base.iterdir())
    return [p for p in found if cid is None or _state_cid(p) == cid]


def _state_cid(path: Path) -> str:
    return path.name.split("_sandbox:", 1)[0]


def delete_runtime_state(root: Path, cid: str, own: Client) -> None:
    """Have each OCI runtime that holds a record of `cid` delete it (its processes are already
    killed through the cgroup), then remove what the runtime leaves (runsc keeps its lock
    file). `own` is the calling backend's runtime, used for its own records."""
    for name in RUNTIME_BINARIES:
        mine = [p for p in runtime_state(root, cid) if p.parent.name == name]
        if not mine:
            continue
        exe = own.binary if Path(own.binary).name == name else shutil.which(name)
        if exe is not None:
            # Its processes are dead already: a record the runtime would not delete is
            # removed below.
            Client(exe, root / name).delete(cid)
        # Listed again: runsc's delete itself leaves a lock file beside the state it removes.
        for p in (p for p in runtime_state(root, cid) if p.parent.name == name):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def forget_stopped(root: Path, cid: str) -> bool:
    """What `runc delete` does for a container whose `run --keep` has exited, done here with
    no runtime process: remove the cgroup of every hierarchy runc's state names (each must be
    `.../assay/<cid>` under the cgroup root) and runc's state directory. False, with nothing
    done, when the state cannot be read as runc writes it: `delete_runtime_state` then asks
    runc itself."""
    state = root / "runc" / cid
    try:
        raw = json.loads((state / "state.json").read_text())
        paths = raw["cgroup_paths"]
        if not isinstance(paths, dict):
            return False
        groups = [Path(p) for p in paths.values() if isinstance(p, str)]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    base = cgroup.CGROUP_ROOT
    if any(
        not (g.is_relative_to(base) and g.parts[-2:] == (host.CGROUP_PARENT, cid)) for g in groups
    ):
        return False
    for g in groups:
        try:
            g.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            return False  # still busy: runc's own delete, which retries and kills
    shutil.rmtree(state, ignore_errors=True)
    return True


def sweep_stale_state(root: Path, own: Client) -> int:
    """Remove what no container owns: each OCI runtime's record of a container whose
    directory is gone (a removal that failed half-way: a container is made with its
    directory before the runtime records it, and loses it only after, so nothing runs under
    such a record); the staging directory of a maker that died before it became a container
    (it holds a meta at most); an empty container directory (a removal killed at its last
    step). Returns how many it removed; safe beside running gradings (`assay gc` calls it)."""
    stale = {
        cid
        for cid in (_state_cid(p) for p in runtime_state(root))
        if not host.state_dir(cid, root).exists()
    }
    for cid in stale:
        delete_runtime_state(root, cid, own)
    n = len(stale)
    for d, dead in host.staged(root):
        if dead:
            shutil.rmtree(d, ignore_errors=True)
            n += not d.exists()
    for m in host.all_metas(root):
        if isinstance(m, str):
            try:
                # Only ever empty for a moment of a live removal, which then finds it gone.
                host.state_dir(m, root).rmdir()
                n += 1
            except OSError:
                pass  # not empty: an older version's, left for `assay gc --all`
    return n


def _of(root: Path, grading_id: str | None) -> list[Meta | str]:
    return [
        m
        for m in host.all_metas(root)
        if grading_id is None or (isinstance(m, Meta) and m.grading_id == grading_id)
    ]


def _cid(m: Meta | str) -> str:
    return m.cid if isinstance(m, Meta) else m


def sweep(
    root: Path, own: Client, destroy: Callable[[str], None], grading_id: str | None = None
) -> int:
    """`destroy` every container of the grading (of every grading: None) found on disk, and
    with None the stale runtime records too; one failure does not stop the rest, and every
    failure is raised together at the end."""
    n, failures = 0, []
    if grading_id is None:
        sweep_stale_state(root, own)
    for m in _of(root, grading_id):
        try:
            destroy(_cid(m))
            n += 1
        except EngineError as exc:
            failures.append(str(exc))
    if failures:
        raise EngineError(
            f"{len(failures)} container(s) could not be removed: " + "; ".join(failures[:3]),
            fix="`assay gc --all` retries",
        )
    return n


def leftovers(root: Path, grading_id: str | None = None) -> list[str]:
    names = [f"container:{_cid(m)[:12]}" for m in _of(root, grading_id)]
    if grading_id is None:
        names += [f"mount:{p}" for p in host.mounted_under(root / "c")]
        names += [f"cgroup:{p}" for p in cgroup.groups_under(host.CGROUP_PARENT)]
        names += [f"state:{p}" for p in runtime_state(root)]
        names += [f"staging:{d.name}" for d, _ in host.staged(root)]
    return names


def images_in_use(root: Path) -> set[str] | None:
    """The ids of the images whose unpacked trees the containers under `root` are made of,
    those being made included; None when one cannot say (its meta is unreadable, or an older
    assay wrote it without the image's id): then no tree is known to be free."""
    used: set[str] = set()
    made: list[Meta | str] = []
    # Staging first: one renamed into place after this look is in the listing that follows.
    for d, dead in host.staged(root):
        if dead is True:
            continue  # never started: it holds no tree (`sweep_stale_state` removes it)
        try:
            made.append(Meta.from_json((d / "meta.json").read_text()))
        except FileNotFoundError:
            if d.exists():
                return None  # its maker is about to write the meta
        except (OSError, ValueError, TypeError):
            return None
    made += host.all_metas(root)
    for m in made:
        if not isinstance(m, Meta) or not m.image_id:
            return None
        used.add(m.image_id)
    return used


def gradings(root: Path) -> set[str]:
    return {m.grading_id for m in host.all_metas(root) if isinstance(m, Meta)}


def orphans(root: Path) -> set[str]:
    """Grading ids whose every container belongs to a controller that is certainly dead."""
    found: dict[str, bool] = {}
    for m in host.all_metas(root):
        if isinstance(m, Meta):
            dead = owner_is_dead(m.owner) is True
            found[m.grading_id] = found.get(m.grading_id, True) and dead
    return {gid for gid, dead in found.items() if dead}
