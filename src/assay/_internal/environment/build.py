"""A task's `[environment]` as an image on the local engine: built from its context, reused
while the context is unchanged, never pulled.

`ensure_environment` is the one entry: `assay build`, `Grader.grade` (build on first use) and
the command line's grade call it; the tiers only name the image (`model.envcontext`).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

import docker.errors
import requests.exceptions

from assay.errors import (
    EngineUnavailableError,
    EnvironmentBuildError,
    InfrastructureError,
    TaskEnvironmentError,
)

from ..model.envcontext import environment_ref, write_context
from ..model.task import Task
from ..runtime.base import ContainerSpec, RuntimeError_
from ..runtime.docker import DockerRuntime
from ..runtime.owner import OWNER_LABEL, this_owner
from ..runtime.scope import GradingScope, new_grading_id
from .dockerfile import DockerfileError, base_images

CONTEXT_LABEL = "assay.env.context"
BASES_LABEL = "assay.env.bases"
TASK_LABEL = "assay.env.task"
PROXY_ARGS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
"""Docker's predefined build args: passed from the host so a build behind a proxy reaches the
package mirrors; they do not change the context digest, nor (Docker's rule) the build cache."""
LOG_TAIL_LINES = 30
BUILD_TIMEOUT_S = 3600
CHECK_TIMEOUT_S = 60.0
PYTHON_CHECK = (
    "import sys; sys.exit(0 if sys.version_info >= (3, 11) else 3)",
    "import sys, pytest; sys.exit(0 if sys.version_info >= (3, 11) else 3)",
)
"""What assay's in-container runner (or, for a pytest task, the compat tier) needs."""


@dataclass(frozen=True)
class EnvImage:
    """The image a task's agent and candidate run, as the engine has it."""

    ref: str
    image_id: str
    workdir: str
    built: bool
    """True when this call built it; False when an unchanged context found its image."""
    build_s: float = 0.0
    ready_s: float | None = None
    """Seconds `build_environment(runtime=...)` took to make it ready for that runtime (see
    `LanguageImage.ready_s`); None when no runtime was named."""


def _task_path(task: Task) -> str:
    return str(task.root / "task.toml")


def get_image(client: Any, ref: str) -> Any | None:
    """The engine's image named `ref`, or None when it has none (never pulled)."""
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    except requests.exceptions.ConnectionError as exc:
        raise EngineUnavailableError(f"no Docker engine answers ({type(exc).__name__})") from exc
    except docker.errors.DockerException as exc:
        detail = str(exc)[:300]
        raise InfrastructureError(f"the engine could not inspect {ref!r}: {detail}") from exc


def ensure_environment(
    client: Any,
    task: Task,
    *,
    build: bool = True,
    progress: Callable[[str], None] | None = None,
) -> EnvImage | None:
    """The task's environment image on `client`'s engine, or None for a task without
    `[environment]`. With `build` False, a Dockerfile task whose image is missing is an error
    naming `assay build` instead of a build.

    Raises `TaskEnvironmentError` (exit 2) for a missing image or base image, or an image
    without python3 >= 3.11 (and pytest for a pytest task); `EnvironmentBuildError` (exit 2,
    with the build log's tail) for a Dockerfile that fails.
    """
    env = task.environment
    ref = environment_ref(task)
    if env is None or ref is None:
        return None
    if env.image is not None:
        image = get_image(client, ref)
        if image is None:
            raise TaskEnvironmentError(
                _task_path(task),
                f"environment.image {ref!r} is not on this Docker engine (assay never pulls)",
                fix="load it (`docker load`) or build it locally, or use environment.dockerfile "
                "and `assay build TASK`",
            )
        _check_runner(client, task, image.id)
        return EnvImage(ref, image.id, _workdir(task, image), built=False)
    bases = _bases(client, task)
    image = get_image(client, ref)
    if image is not None and _labels(image).get(BASES_LABEL) == bases:
        return EnvImage(ref, image.id, _workdir(task, image), built=False)
    if not build:
        raise TaskEnvironmentError(
            _task_path(task),
            f"the environment image {ref} of task {task.id!r} is not built"
            + (" (its base image changed)" if image is not None else ""),
            fix=f"assay build {task.root}",
        )
    t0 = time.monotonic()
    image_id = _build(client, task, ref, bases, progress)
    workdir = _workdir(task, client.images.get(image_id))
    return EnvImage(ref, image_id, workdir, built=True, build_s=time.monotonic() - t0)


def _workdir(task: Task, image: Any) -> str:
    """The task's workdir; for `workdir = "image"`, the image's own WORKDIR, now recorded on
    the task (refused when unset, / or over the verifier's paths)."""
    config = image.attrs.get("Config") or {}
    found = config.get("WorkingDir") if isinstance(config, dict) else None
    task.resolve_workdir(found if isinstance(found, str) else "")
    return task.workdir


def _labels(image: Any) -> Mapping[str, str]:
    labels = (image.attrs.get("Config") or {}).get("Labels") or {}
    return labels if isinstance(labels, dict) else {}


def _bases(client: Any, task: Task) -> str:
    """The ids of every image the Dockerfile needs, all present (else exit 2 naming it)."""
    env = task.environment
    assert env is not None and env.dockerfile is not None
    path = task.root / env.dockerfile
    try:
        needed = base_images(path.read_text(encoding="utf-8"))
    except (DockerfileError, UnicodeDecodeError) as exc:
        raise TaskEnvironmentError(str(path), str(exc)) from None
    return ",".join(
        f"{base.ref}={base_image_id(client, base.ref, str(path), f'line {base.line}: ')}"
        for base in needed
    )


def base_image_id(client: Any, ref: str, path: str, where: str = "") -> str:
    """The id of the base image `ref`, which must be on the engine (else exit 2 naming it)."""
    image = get_image(client, ref)
    if image is None:
        raise TaskEnvironmentError(
            path,
            f"{where}base image {ref!r} is not on this Docker engine, and assay never pulls",
            fix="build or load it locally first (assay's own base: `bash scripts/setup.sh`"
            " builds assay-base:latest)",
        )
    return str(image.id)


def _proxy_args() -> dict[str, str]:
    return {k: v for k in PROXY_ARGS if (v := os.environ.get(k))}


def _build(
    client: Any, task: Task, ref: str, bases: str, progress: Callable[[str], None] | None
) -> str:
    env = task.environment
    assert env is not None and env.dockerfile is not None
    context_dir = task.build_context
    assert context_dir is not None
    path = str(task.root / env.dockerfile)
    with tempfile.TemporaryFile() as tar:
        digest = write_context(task, tar)
        tar.seek(0)
        image_id = build_image(
            client,
            ref,
            tar,
            os.path.basename(env.dockerfile),
            {CONTEXT_LABEL: digest, BASES_LABEL: bases, TASK_LABEL: task.id},
            progress,
            failed=lambda tail: EnvironmentBuildError(
                path, f"the environment of task {task.id!r} failed to build", tail
            ),
        )
    tag_checked(client, image_id, ref, lambda: _check_runner(client, task, image_id))
    return image_id


def build_image(
    client: Any,
    ref: str,
    context: IO[bytes],
    dockerfile: str,
    labels: Mapping[str, str],
    progress: Callable[[str], None] | None,
    *,
    failed: Callable[[str], EnvironmentBuildError],
) -> str:
    """Build the tar `context` with the engine (never pulling, the host's proxy settings passed
    on, `labels` and the owner label set) and return the image's id, untagged. A failed build
    raises `failed(the build log's last lines)`; a lost engine, `EngineUnavailableError`."""
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    try:
        stream = client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile=dockerfile,
            pull=False,
            rm=True,
            forcerm=True,
            buildargs=_proxy_args(),
            labels={**labels, OWNER_LABEL: this_owner()},
            decode=True,
            timeout=BUILD_TIMEOUT_S,
        )
        image_id = _follow(stream, tail, progress)
    except requests.exceptions.ConnectionError as exc:
        raise EngineUnavailableError(f"lost the Docker engine while building {ref}") from exc
    except docker.errors.APIError as exc:
        tail.append(str(exc.explanation or exc)[:2000])
        image_id = None
    if image_id is None:
        raise failed("\n".join(tail))
    return image_id


def tag_checked(client: Any, image_id: str, ref: str, check: Callable[[], None]) -> None:
    """Tag the built image as `ref` once `check` passes: a tag means a usable image. An image
    `check` refuses (`TaskEnvironmentError`) is removed, untagged."""
    try:
        check()
    except TaskEnvironmentError:
        _forget(client, image_id)
        raise
    repo, tag = ref.split(":", 1)
    client.images.get(image_id).tag(repo, tag)


def _forget(client: Any, image_id: str) -> None:
    """Remove an image this build made and refused (untagged, so nothing else names it)."""
    try:
        client.images.remove(image_id, noprune=False)
    except docker.errors.DockerException:
        pass  # in use or already gone; untagged, it names nothing a grading could use


def _follow(
    stream: Iterable[Any], tail: deque[str], progress: Callable[[str], None] | None
) -> str | None:
    """Read the engine's build stream; the built image's id, or None when the build failed."""
    image_id: str | None = None
    for chunk in stream:
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk or "errorDetail" in chunk:
            detail = chunk.get("errorDetail") or {}
            msg = chunk.get("error") or (detail.get("message") if isinstance(detail, dict) else "")
            tail.append(str(msg)[:2000])
            return None
        aux = chunk.get("aux")
        if isinstance(aux, dict) and isinstance(aux.get("ID"), str):
            image_id = aux["ID"]
        text = chunk.get("stream")
        if isinstance(text, str):
            for line in text.splitlines():
                if line.strip():
                    tail.append(line[:2000])
                    if progress is not None:
                        progress(line)
    return image_id


_checked: set[tuple[str, bool]] = set()


def _python_status(client: Any, image_id: str, code: str) -> int | str | None:
    """Exit status of `python3 -c code` in the image, hardened and offline like any grading
    container (through the runtime, the one place containers are made); a string when python3
    could not be started at all."""
    rt = DockerRuntime(client=client)
    try:
        with GradingScope(rt, f"env-check-{new_grading_id()}") as scope:
            cid = scope.container(
                ContainerSpec(image=image_id, grading_id=scope.grading_id, role="env-check")
            )
            res = rt.exec(cid, ("python3", "-c", code), deadline_s=CHECK_TIMEOUT_S, output_cap=4096)
            return res.exit_code
    except RuntimeError_ as exc:
        # No python3 (or no shell to keep the container alive) in the image: never usable.
        return f"cannot start: {str(exc)[:200]}"


def _check_runner(client: Any, task: Task, image_id: str) -> None:
    """assay's runner (or pytest, on the compat tier) must work in the image, or the task is
    refused before any grading (fail closed)."""
    needs_pytest = task.config.kind == "pytest"
    if (image_id, needs_pytest) in _checked:
        return
    check_image(
        client,
        image_id,
        PYTHON_CHECK[needs_pytest],
        path=_task_path(task),
        what="python3 >= 3.11 with pytest" if needs_pytest else "python3 >= 3.11",
        fix="install python3 in the Dockerfile (Debian: `apt-get install -y python3`"
        + (" python3-pytest" if needs_pytest else "")
        + "), or start FROM assay-base:latest",
    )
    _checked.add((image_id, needs_pytest))


def check_image(
    client: Any,
    image_id: str,
    code: str,
    *,
    path: str,
    what: str,
    fix: str,
    kind: str = "environment",
) -> None:
    """`python3 -c code` must exit 0 in the image (hardened and offline), or the image is
    refused: `TaskEnvironmentError` saying that the `kind` image lacks `what`."""
    status = _python_status(client, image_id, code)
    if status != 0:
        raise TaskEnvironmentError(
            path,
            f"the {kind} image lacks {what} ({status}): assay's in-container runner needs it",
            fix=fix,
        )
