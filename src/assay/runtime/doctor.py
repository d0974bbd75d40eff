"""Which backends work on this host, and why not (what `assay doctor` prints)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from assay._internal.runtime.base import ContainerSpec
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.runtime.engine import BACKENDS, open_runtime
from assay._internal.runtime.scope import GradingScope, new_grading_id
from assay.errors import AssayError, BackendUnavailableError, EngineError
from assay.runtime.conformance import run_conformance

__all__ = ["BackendStatus", "diagnose"]


@dataclass(frozen=True)
class BackendStatus:
    """What `diagnose` found about one backend on this host."""

    name: str
    works: bool
    why_not: tuple[str, ...]
    """Empty when it works; else each thing missing or failing."""
    probe_s: float | None = None
    """Seconds to create, start, run `true` in and remove one container (None if not tried)."""
    failed_checks: tuple[str, ...] = ()
    """Conformance checks that failed, when they ran."""


def diagnose(image: str, *, conformance: bool = False) -> list[BackendStatus]:
    """Which backends work on this host and why not, each tried for real with one container
    of `image` (and, with `conformance`, the whole conformance suite). Raises nothing for a
    backend that does not work: that is what the status says."""
    found = []
    for name in BACKENDS:
        try:
            rt = open_runtime(name)
            if (
                isinstance(rt, DockerRuntime)
                and name == "docker-runsc"
                and ("runsc" not in (rt.client.info().get("Runtimes") or {}))
            ):
                raise BackendUnavailableError("runsc is not registered with the Docker engine")
            t0 = time.monotonic()
            gid = new_grading_id()
            with GradingScope(rt, gid) as scope:
                cid = scope.container(ContainerSpec(image=image, grading_id=gid, role="doctor"))
                r = rt.exec(cid, ("true",), deadline_s=60, output_cap=1024)
                if r.exit_code != 0:
                    raise EngineError(f"`true` in a container exited {r.exit_code}")
            probe = time.monotonic() - t0
        except AssayError as exc:
            found.append(BackendStatus(name, False, (str(exc),)))
            continue
        failed: tuple[str, ...] = ()
        if conformance:
            failed = tuple(str(c) for c in run_conformance(rt, image) if not c.passed)
        found.append(BackendStatus(name, not failed, failed, probe, failed))
    return found
