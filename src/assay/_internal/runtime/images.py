"""Which base image grading runs on, and a check that it is on the engine before anything starts.

The image itself is built by `scripts/setup.sh` (debootstrap + `docker import`, no registry
needed), which tags each recipe as `assay-base:<suite>-<recipe hash>` and points
`assay-base:latest` at the current one; the recipe lives only in that script.
"""

from __future__ import annotations

from typing import Protocol

import docker.errors
import requests.exceptions

from assay.errors import EngineUnavailableError, ImageMissingError, InfrastructureError

DEFAULT_BASE_IMAGE = "assay-base:latest"
SETUP_FIX = "run `bash scripts/setup.sh` (it builds the assay base image offline)"
_OWN_REPOSITORY = "assay-base:"


class _Image(Protocol):
    @property
    def id(self) -> str: ...


class _ImageCollection(Protocol):
    def get(self, name: str) -> _Image: ...


class ImageClient(Protocol):
    """The part of a docker-py `DockerClient` this module uses."""

    @property
    def images(self) -> _ImageCollection: ...


def _fix_for(name: str) -> str:
    if name.startswith(_OWN_REPOSITORY):
        return SETUP_FIX
    # Someone else's image (e.g. python:3.12-slim via --base-image): setup.sh cannot build it.
    return (
        f"`docker pull {name}` where a registry is reachable, or drop --base-image / "
        f"ASSAY_BASE_IMAGE to use {DEFAULT_BASE_IMAGE} ({SETUP_FIX})"
    )


def ensure_image_present(client: ImageClient, name: str) -> str:
    """Return the image id of `name`, or raise InfrastructureError saying how to get it.

    Never pulls: grading must not depend on a registry, and a silent pull would grade on
    whatever that tag means today.
    """
    try:
        image = client.images.get(name)
    except docker.errors.ImageNotFound as exc:
        raise ImageMissingError(name, fix=_fix_for(name)) from exc
    except requests.exceptions.ConnectionError as exc:
        raise EngineUnavailableError(
            f"no Docker engine answers ({type(exc).__name__})", fix=SETUP_FIX
        ) from exc
    except docker.errors.DockerException as exc:
        # APIError and friends; the message is the engine's and may be long, so it is cut.
        raise InfrastructureError(
            f"the Docker engine could not inspect image {name!r}: {str(exc)[:300]}"
        ) from exc
    image_id = image.id
    if not isinstance(image_id, str) or not image_id.startswith("sha256:"):
        raise InfrastructureError(f"the Docker engine returned no usable id for image {name!r}")
    return image_id
