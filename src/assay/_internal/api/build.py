"""`assay.build_environment`: a task's `[environment]` image on the local engine, ahead of
grading (what `assay build` runs; `Grader.build` is the same on a grader's own engine), and
`assay.build_languages`: the images a `stdio` task's programs compile and run in."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TypeVar

from ..environment import EnvImage, ensure_environment
from ..environment.languages import LanguageImage, ensure_all
from ..model.languages import ALL_LANGUAGES
from ..runtime.base import Runtime
from ..runtime.docker import DockerRuntime
from ..runtime.engine import engine_client
from ..tiers.dispatch import is_repository
from ..tiers.repo.grade import check_repository
from .grader import TaskLike, _task

__all__ = ["LanguageImage", "build_environment", "build_languages"]

_Image = TypeVar("_Image", EnvImage, LanguageImage)


def build_environment(
    task: TaskLike,
    *,
    progress: Callable[[str], None] | None = None,
    runtime: Runtime | None = None,
) -> EnvImage | None:
    """Build the task's `[environment]` image with the local Docker engine (never pulling),
    unless an unchanged build context already has one; `progress` is given each line of the
    build log. With `runtime`, the image is then made ready for it (`ready`). Returns the
    image (`ref`, `image_id`, `built`: whether this call built it, `build_s`, `ready_s`), or
    None for a task without `[environment]`.

    Raises `assay.errors.TaskError` for a bad task, `assay.errors.EnvironmentBuildError`
    (with the build log's tail) when the Dockerfile fails, `assay.errors.TaskEnvironmentError`
    when a base image or `image =` is not on the engine or the image has no python3 >= 3.11,
    and `assay.errors.EngineUnavailableError` when no engine answers. For a repository task it
    also checks what every grading would find wrong with the task itself (the repository read
    through the firewall as a task tree, the test patch applying to it): `TaskError` again.
    With `runtime`, also what `ready` raises."""
    loaded = _task(task)
    if loaded.environment is None:
        return None
    client = engine_client()
    env = ensure_environment(client, loaded, progress=progress)
    if env is not None and is_repository(loaded):
        check_repository(DockerRuntime(client=client), loaded, env.ref)
    return env if env is None or runtime is None else ready(runtime, env)


def build_languages(
    names: Iterable[str] | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    done: Callable[[LanguageImage], None] | None = None,
    runtime: Runtime | None = None,
) -> list[LanguageImage]:
    """Build the image of each language in `names` (None: all seven) with the local Docker
    engine, FROM assay's base image plus the toolchain's Debian packages (never pulling),
    unless the image for this recipe and base image is already there. With `runtime`, each
    image is then made ready for it (`ready`). `progress` is given each line of the build logs
    (prefixed `[language]`), `done` each image once it is there (and ready). Returns the
    images in order (`language`, `ref`, `image_id`, `built`: whether this call built it,
    `build_s`, `size_bytes`, `ready_s`).

    Raises `assay.errors.UsageError` for an unknown language (before building any),
    `assay.errors.TaskEnvironmentError` when the base image is not on the engine,
    `assay.errors.EnvironmentBuildError` (with the build log's tail) when a build fails, and
    `assay.errors.EngineUnavailableError` when no engine answers; with `runtime`, also what
    `ready` raises."""
    wanted = ALL_LANGUAGES if names is None else tuple(names)
    found: list[LanguageImage] = []

    def one(image: LanguageImage) -> None:
        found.append(image if runtime is None else ready(runtime, image))
        if done is not None:
            done(found[-1])

    ensure_all(engine_client(), wanted, progress, done=one)
    return found


def ready(runtime: Runtime, image: _Image) -> _Image:
    """The image made ready for `runtime`, with `ready_s` the seconds that took. A backend
    with an image store of its own (runc, runsc) unpacks an image the first time a grading
    names it, about 10-20 s for a language image; doing it here keeps that out of the first
    grading's (or `assay serve`'s start-up) time.

    Raises `assay.errors.ImageMissingError` if the engine no longer has the image, and
    `assay.errors.EngineError` if the backend cannot unpack it."""
    started = time.monotonic()
    runtime.image_digest(image.ref)
    return replace(image, ready_s=time.monotonic() - started)
