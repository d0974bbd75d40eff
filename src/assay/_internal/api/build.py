"""`assay.build_environment`: a task's `[environment]` image on the local engine, ahead of
grading (what `assay build` runs; `Grader.build` is the same on a grader's own engine), and
`assay.build_languages`: the images a `stdio` task's programs compile and run in."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..environment import EnvImage, ensure_environment
from ..environment.languages import LanguageImage, ensure_all
from ..model.languages import ALL_LANGUAGES
from ..runtime.docker import DockerRuntime
from ..runtime.engine import engine_client
from ..tiers.dispatch import is_repository
from ..tiers.repo.grade import check_repository
from .grader import TaskLike, _task

__all__ = ["LanguageImage", "build_environment", "build_languages"]


def build_environment(
    task: TaskLike, *, progress: Callable[[str], None] | None = None
) -> EnvImage | None:
    """Build the task's `[environment]` image with the local Docker engine (never pulling),
    unless an unchanged build context already has one; `progress` is given each line of the
    build log. Returns the image (`ref`, `image_id`, `built`: whether this call built it,
    `build_s`), or None for a task without `[environment]`.

    Raises `assay.errors.TaskError` for a bad task, `assay.errors.EnvironmentBuildError`
    (with the build log's tail) when the Dockerfile fails, `assay.errors.TaskEnvironmentError`
    when a base image or `image =` is not on the engine or the image has no python3 >= 3.11,
    and `assay.errors.EngineUnavailableError` when no engine answers. For a repository task it
    also checks what every grading would find wrong with the task itself (the repository read
    through the firewall as a task tree, the test patch applying to it): `TaskError` again."""
    loaded = _task(task)
    if loaded.environment is None:
        return None
    client = engine_client()
    env = ensure_environment(client, loaded, progress=progress)
    if env is not None and is_repository(loaded):
        check_repository(DockerRuntime(client=client), loaded, env.ref)
    return env


def build_languages(
    names: Iterable[str] | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    done: Callable[[LanguageImage], None] | None = None,
) -> list[LanguageImage]:
    """Build the image of each language in `names` (None: all seven) with the local Docker
    engine, FROM assay's base image plus the toolchain's Debian packages (never pulling),
    unless the image for this recipe and base image is already there. `progress` is given each
    line of the build logs (prefixed `[language]`), `done` each image once it is there.
    Returns the images in order (`language`, `ref`, `image_id`, `built`: whether this call
    built it, `build_s`, `size_bytes`).

    Raises `assay.errors.UsageError` for an unknown language (before building any),
    `assay.errors.TaskEnvironmentError` when the base image is not on the engine,
    `assay.errors.EnvironmentBuildError` (with the build log's tail) when a build fails, and
    `assay.errors.EngineUnavailableError` when no engine answers."""
    wanted = ALL_LANGUAGES if names is None else tuple(names)
    return ensure_all(engine_client(), wanted, progress, done=done)
