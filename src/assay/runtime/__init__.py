"""The container runtime contract: what a backend implements so that assay grades on it.

assay never touches a container except through a `Runtime`: create one from a
`ContainerSpec`, start it, run commands in it (`exec`, returning an `ExecResult`), move tar
archives in and out, freeze, kill and remove it, and find everything a grading left behind
by its label. The Docker engine (runc, or gVisor's runsc) is the reference backend, and what
`assay.Grader()` uses unless given another:

    grader = assay.Grader(runtime=MyRuntime())

A backend must keep the contract's promises, each of which a grading's safety rests on:

- a hardened `ContainerSpec` (every real tier's) runs its commands as `spec.user`, never
  root, with no capabilities, a read-only root, no network and every ceiling in its
  `Limits`; its only writable places are /tmp, its `Scratch` directories and binds given
  `read_only=False`;
- `exec` enforces its deadline and output cap itself and never waits past them;
- `get_archive` stops at its cap (`assay.errors.ArchiveTooLargeError`);
- everything `create` makes carries `LABEL` with its grading id, so `sweep` removes it and
  `leftovers` is empty after a grading;
- a failure the backend cannot vouch for raises `assay.errors.EngineError` (never a
  made-up result): the grading then has no verdict, never a pass.

Each method of `Runtime` says what it takes, returns and raises. Prove a backend keeps the
contract with `assay.runtime.conformance` (`run_conformance(runtime, image)`, or its
`CHECKS` as pytest cases). The errors a backend raises live in `assay.errors`.

`OCI_RUNTIMES` are the OCI runtimes the Docker backend takes (`Grader(oci_runtime=...)`,
`--runtime`), `DEFAULT_BASE_IMAGE` the image grading runs on unless told otherwise, and
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
)
from assay._internal.runtime.docker import START_DOCKER_FIX
from assay._internal.runtime.engine import OCI_RUNTIMES
from assay._internal.runtime.images import DEFAULT_BASE_IMAGE

__all__ = [
    "DEFAULT_BASE_IMAGE",
    "LABEL",
    "OCI_RUNTIMES",
    "START_DOCKER_FIX",
    "UNPRIVILEGED_USER",
    "Bind",
    "ContainerSpec",
    "ExecResult",
    "Limits",
    "Runtime",
    "Scratch",
]
