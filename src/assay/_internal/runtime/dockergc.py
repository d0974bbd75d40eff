"""What the Docker backend leaves on an engine, found by label (`LABEL`, valued with the
grading id): containers, scratch volumes, networks; and their removal. docker.py wraps each of
these so that a lost engine is `EngineUnavailableError`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import docker.errors

from .base import LABEL, ContainerStuckError, RuntimeError_
from .owner import OWNER_LABEL, owner_is_dead


def _filters(grading_id: str | None) -> dict[str, str]:
    return {"label": f"{LABEL}={grading_id}" if grading_id else LABEL}


def sweep(api: Any, remove: Callable[[str], None], grading_id: str | None = None) -> int:
    """Remove everything labelled for the grading (`remove` for each container); one stuck
    object does not stop the rest, and every failure is reported together at the end."""
    n, failures = 0, []
    for c in api.containers(all=True, filters=_filters(grading_id)):
        try:
            remove(c["Id"])
            n += 1
        except ContainerStuckError as exc:
            if exc.removed:
                n += 1  # gone all the same; `remove` logged how
            else:
                failures.append(str(exc))
        except RuntimeError_ as exc:
            failures.append(str(exc))
    vols = api.volumes(filters=_filters(grading_id)).get("Volumes") or []
    for v in vols:
        try:
            remove_volume(api, v["Name"])
            n += 1
        except RuntimeError_ as exc:
            failures.append(str(exc))
    if failures:
        raise RuntimeError_(
            f"{len(failures)} object(s) could not be removed: " + "; ".join(failures[:3]),
            fix="see the engine's log; `assay gc --all` retries",
        )
    return n


def remove_volume(api: Any, name: str) -> None:
    # gVisor unmounts a sandbox's volumes a moment after the container is gone.
    for attempt in range(50):
        try:
            api.remove_volume(name, force=True)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if "active mounts" not in str(exc) or attempt == 49:
                raise RuntimeError_(f"could not remove volume {name[:12]}: {exc}") from exc
            time.sleep(0.1)


def _labelled(api: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.containers(all=True, filters=_filters(None))
    items += api.volumes(filters=_filters(None)).get("Volumes") or []
    return items


def gradings(api: Any) -> set[str]:
    return {gid for item in _labelled(api) if (gid := (item.get("Labels") or {}).get(LABEL))}


def orphans(api: Any) -> set[str]:
    """Grading ids whose every labelled container or volume belongs to a dead controller."""
    found: dict[str, bool] = {}
    for item in _labelled(api):
        labels = item.get("Labels") or {}
        gid = labels.get(LABEL)
        if gid:
            dead = owner_is_dead(labels.get(OWNER_LABEL, ""))
            found[gid] = found.get(gid, True) and dead is True
    return {gid for gid, dead in found.items() if dead}


def leftovers(api: Any, grading_id: str | None = None) -> list[str]:
    f = _filters(grading_id)
    names = [f"container:{c['Id'][:12]}" for c in api.containers(all=True, filters=f)]
    vols = api.volumes(filters=f).get("Volumes") or []
    names += [f"volume:{v['Name'][:12]}" for v in vols]
    names += [f"network:{n['Name']}" for n in api.networks(filters=f)]
    return names
