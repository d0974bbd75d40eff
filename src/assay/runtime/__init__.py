"""The container runtime contract: what a backend implements so that assay grades on it.

assay never touches a container except through a `Runtime`: create one from a
`ContainerSpec`, start it, run commands in it (`exec`, returning an `ExecResult`), or start a
`spawned` one whose own process is the work (`spawn`, its stdio as pipes in a `Spawned`; `run`,
once, to its end, an `ExecResult` too; `run_spawned` builds `run` on `spawn` for a backend),
move tar archives in and out, freeze, kill and remove it, and find everything a grading left
behind by its label. The Docker engine (runc, or gVisor's runsc) is the reference backend, and what
`assay.Grader()` uses unless given another:

    grader = assay.Grader(runtime=MyRuntime())

A backend must keep the contract's promises, each of which a grading's safety rests on:

- a hardened `ContainerSpec` (every real tier's) runs its commands as `spec.user`, never
  root, with no capabilities, a read-only root, no network and every ceiling in its
  `Limits`; its only writable places are /tmp, its `Scratch` directories and binds given
  `read_only=False`;
- `exec` and `run` enforce their deadline and output cap themselves and never wait past
  them; a `spawned` container's main process runs as `spec.user` (the `switch_user`
  runner: root with exactly CAP_SETUID, CAP_SETGID and CAP_SETPCAP), and the container
  stays, stopped, with its ceilings readable, until `remove`;
- `get_archive` stops at its cap (`assay.errors.ArchiveTooLargeError`);
- everything `create` makes carries `LABEL` with its grading id, so `sweep` removes it and
  `leftovers` is empty after a grading;
- a failure the backend cannot vouch for raises `assay.errors.EngineError` (never a
  made-up result): the grading then has no verdict, never a pass.

Each method of `Runtime` says what it takes, returns and raises. Prove a backend keeps the
contract with `assay.runtime.conformance` (`run_conformance(runtime, image)`, or its
`CHECKS` as pytest cases). The errors a backend raises live in `assay.errors`.

`BACKENDS` are the backends assay ships (`Grader(oci_runtime=...)`, `--runtime`): "runc"
drives the OCI runtime directly with no daemon (`DEFAULT_BACKEND`), "docker" and
"docker-runsc" go through the Docker engine (with runc, or gVisor's runsc); `open_runtime`
opens one by name and refuses one that cannot enforce its limits on this host
(`assay.errors.BackendUnavailableError`). `OCI_RUNTIMES` is the old name of `BACKENDS`.
`diagnose` tries each on this host (what `assay doctor` prints).
`DEFAULT_BASE_IMAGE` is the image grading runs on unless told otherwise, and
`START_DOCKER_FIX` what to do when no Docker engine answers.
"""

from __future__ import annotations

from assay._internal.runtime.base import (
    LABEL,
    UNPRIVILEGED_USER,
    Bind,
    ContainerSpec,
    ExecResult,
    Limits,
    Runtime,
    Scratch,
    Spawned,
)
from assay._internal.runtime.dockerengine import START_DOCKER_FIX
from assay._internal.runtime.engine import BACKENDS, DEFAULT_BACKEND, OCI_RUNTIMES, open_runtime
from assay._internal.runtime.images import DEFAULT_BASE_IMAGE
from assay._internal.runtime.runspawned import run_spawned

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "DEFAULT_BASE_IMAGE",
    "LABEL",
    "OCI_RUNTIMES",
    "START_DOCKER_FIX",
    "UNPRIVILEGED_USER",
    "BackendStatus",
    "Bind",
    "ContainerSpec",
    "ExecResult",
    "Limits",
    "Runtime",
    "Scratch",
    "Spawned",
    "diagnose",
    "open_runtime",
    "run_spawned",
]

# Last: doctor imports the conformance suite, which imports this package's siblings.
from assay.runtime.doctor import BackendStatus, diagnose
