"""Can the runc backend enforce every limit on this host? Facts are gathered in one place
(`host_facts`) and judged by a pure function (`problems`), so that each refusal is tested
without a machine that lacks the thing.

A backend that cannot enforce a limit is refused before any grading starts: assay never
grades with a limit silently unenforced, and never falls back to another backend on its own.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..cgroup import CGROUP_ROOT
from .host import INIT_BINARIES

NEEDED_CONTROLLERS = ("memory", "pids", "cpu", "freezer", "devices")


@dataclass(frozen=True)
class HostFacts:
    euid: int
    binary: str | None
    """Where the OCI runtime's binary is, or None."""
    v1_controllers: frozenset[str]
    """cgroup v1 hierarchies mounted under /sys/fs/cgroup (empty on a v2-only host)."""
    memsw: bool
    """The v1 memory controller accounts swap (memory.memsw.*): swap can be capped."""
    overlay: bool
    init: str | None


def host_facts(binary: str) -> HostFacts:
    controllers = frozenset(
        c for c in NEEDED_CONTROLLERS if (CGROUP_ROOT / c / "cgroup.procs").is_file()
    )
    try:
        filesystems = Path("/proc/filesystems").read_text()
    except OSError:
        filesystems = ""
    return HostFacts(
        euid=os.geteuid(),
        binary=shutil.which(binary),
        v1_controllers=controllers,
        memsw=(CGROUP_ROOT / "memory" / "memory.memsw.limit_in_bytes").is_file(),
        overlay="\toverlay\n" in filesystems,
        init=next((p for p in INIT_BINARIES if os.path.exists(p)), None),
    )


def problems(facts: HostFacts, binary: str) -> list[str]:
    """Why the backend cannot run here with every limit enforced; empty when it can."""
    found = []
    if facts.euid != 0:
        found.append(
            "it needs root (a rootless host cannot create the cgroups that enforce the limits)"
        )
    if facts.binary is None:
        found.append(f"no `{binary}` binary on PATH (apt-get install {binary})")
    missing = [c for c in NEEDED_CONTROLLERS if c not in facts.v1_controllers]
    if missing:
        found.append(
            "the cgroup v1 controllers it enforces limits with are not mounted: "
            + ", ".join(missing)
            + (" (a cgroup v2-only host)" if not facts.v1_controllers else "")
        )
    elif not facts.memsw:
        found.append(
            "the memory controller does not account swap (memory.memsw.*), so memory could "
            "not be capped without swap (boot with swapaccount=1)"
        )
    if not facts.overlay:
        found.append("the kernel has no overlay filesystem (images' roots are shared through it)")
    if facts.init is None:
        found.append("no static init binary (apt-get install tini: /usr/bin/tini-static)")
    return found
