"""What the runc backend's image cache (`RootfsCache`) asks the Docker engine, and which
engines handed out each image it unpacked.

Trees are keyed by image id alone, so the engines of one host share them (the fault tests run
a private engine beside the host's). `assay gc` asks one engine which images it still has; a
tree is free for it only if no other engine handed it out. The record is an empty file
`<hex>.engine.<engine id>` beside the tree, made on the first use by each process."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import docker.errors
import requests.exceptions

from assay._internal.runtime.images import _fix_for
from assay.errors import EngineError, EngineUnavailableError, ImageMissingError

from .imagesave import HEX

MARK = ".engine."


def inspect(client: Any, image: str) -> tuple[str, list[str]]:
    """The id ("sha256:...") of `image` on the engine and its tags. Raises ImageMissingError
    when the engine does not have it (never pulled), EngineUnavailableError when no engine
    answers, EngineError when the answer has no usable id."""
    try:
        info = _ask(lambda: client.api.inspect_image(image), f"inspect image {image!r}")
    except EngineError as exc:
        if isinstance(exc.__cause__, docker.errors.ImageNotFound):
            raise ImageMissingError(image, fix=_fix_for(image)) from exc.__cause__
        raise
    image_id = info.get("Id") if isinstance(info, dict) else None
    if not isinstance(image_id, str) or not HEX.fullmatch(image_id.removeprefix("sha256:")):
        raise EngineError(f"the Docker engine returned no usable id for image {image!r}")
    if not image_id.startswith("sha256:"):
        raise EngineError(f"image {image!r} has an id that is not sha256: {image_id!r}")
    tags = info.get("RepoTags") or []
    return image_id, [t for t in tags if isinstance(t, str)]


def engine_id(client: Any) -> str:
    """A name of the engine, fit for a file name: its ID and its data root (`docker info`),
    hashed. Not the ID alone: Docker 20.10's is its host key's (`/etc/docker/key.json`), the
    same for every engine on the host, and a private engine's `gc` then took the host
    engine's trees (CI28). Two engines of one host cannot share a data root, and engines of
    two hosts have two keys. Raises EngineUnavailableError when no engine answers,
    EngineError when it names itself with no usable ID or data root."""
    info = _ask(client.info, "say who it is")
    ident = info.get("ID") if isinstance(info, dict) else None
    data = info.get("DockerRootDir") if isinstance(info, dict) else None
    if not (isinstance(ident, str) and ident and isinstance(data, str) and data):
        raise EngineError("the Docker engine names itself with no usable ID or data root")
    return hashlib.sha256(f"{ident}\0{data}".encode()).hexdigest()[:32]


def engine_images(client: Any) -> set[str]:
    """The ids of every image the engine has, intermediate ones included. Raises
    EngineUnavailableError when no engine answers, EngineError when its answer is not a list
    of ids (then no image is known to be gone)."""
    ids = _ask(lambda: client.api.images(all=True, quiet=True), "list its images")
    if not isinstance(ids, list) or not all(
        isinstance(i, str) and HEX.fullmatch(i.removeprefix("sha256:")) for i in ids
    ):
        raise EngineError("the Docker engine's list of images is not a list of ids")
    return set(ids)


def mark(root: Path, hexid: str, engine: str) -> None:
    """Record that `engine` handed out the tree of image `hexid`."""
    path = root / f"{hexid}{MARK}{engine}"
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))


def marks(root: Path, hexid: str) -> set[str]:
    """The engines recorded to have handed out the tree of image `hexid`."""
    prefix = f"{hexid}{MARK}"
    return {e.name[len(prefix) :] for e in os.scandir(root) if e.name.startswith(prefix)}


def unmark(root: Path, hexid: str) -> None:
    for engine in marks(root, hexid):
        (root / f"{hexid}{MARK}{engine}").unlink(missing_ok=True)


def free(root: Path, hexid: str, engine: str | None, unmarked: bool) -> bool:
    """Whether `engine` may prune the tree of image `hexid`: no other engine handed it out,
    and, unless `unmarked`, `engine` did (a tree an older assay unpacked says no engine).
    None: any engine, whoever handed it out."""
    if engine is None:
        return True
    found = marks(root, hexid)
    return found <= {engine} and (unmarked or bool(found))


def _ask(call: Any, what: str) -> Any:
    try:
        return call()
    except requests.exceptions.ConnectionError as exc:
        raise EngineUnavailableError(f"no Docker engine answers ({type(exc).__name__})") from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineError(f"the Docker engine could not {what}: {str(exc)[:300]}") from exc
