"""What the Docker engine is asked to create for one `ContainerSpec`: pure. All hardening of a
Docker-backend container is decided here, one argument each (what oci/bundle.py is to the
runc backend); docker.py only sends it."""

from __future__ import annotations

from typing import Any

import docker.types
from docker.types import LogConfig, Mount

from .base import AGENT_UID, LABEL, ROLE_LABEL, ContainerSpec, Scratch
from .owner import OWNER_LABEL

EXEC_USER_LABEL = "assay.exec-user"
STDIN_LABEL = "assay.stdin"
"""On a spawned container: "1" when its main process reads the controller's stdin. Under a
runtime that `chowns_stdio` every container's stdin is open, so the engine's `OpenStdin` does
not say."""
SWITCH_CAPS = ("SETUID", "SETGID", "SETPCAP")
"""All a `switch_user` container holds: the two to switch uids and the one to empty the
bounding set first. Held by its root processes only: init and keep-alive (which no other uid
can signal, trace or open through /proc) and the runner until it drops them. The engine gives
a root exec capabilities only in a container whose own user is root, and runc refuses a
privileged exec under no-new-privileges, so init stays root (measured on Docker 20.10)."""


def chowns_stdio(oci_runtime: str | None) -> bool:
    """The runtime chowns the stdio it is given to its sandbox's user (`nobody`), a device
    too (runsc; runc skips /dev/null since 1.1.5, opencontainers/runc#3707). The engine gives
    a container or exec with no stdin the host's /dev/null, so under such a runtime every
    container is created with its stdin open (a spawned one's closed by `spawn` at once, a
    keep-alive's main process never reads it) and every exec is attached with a stdin that
    is closed at once (dockerexec.py): commands still read end-of-file, and the runtime never
    sees the host's /dev/null. Not for runc: closing an attach stream's write side is a
    half-close some proxies in front of an engine do not pass on."""
    return oci_runtime == "runsc"


def exec_user(spec: ContainerSpec) -> str:
    """The user every exec runs as (`EXEC_USER_LABEL`): the spec's, root only in a
    `switch_user` container, whose runner gives root up itself."""
    return "0:0" if spec.switch_user else spec.user


def labels(spec: ContainerSpec, owner: str) -> dict[str, str]:
    """The labels of the container and of its scratch volumes: what `sweep`, `leftovers`,
    `gradings` and `orphans` find them by, and the exec user."""
    found = {
        LABEL: spec.grading_id,
        ROLE_LABEL: spec.role,
        OWNER_LABEL: owner,
        EXEC_USER_LABEL: exec_user(spec),
    }
    if spec.spawned:
        found[STDIN_LABEL] = "1" if spec.stdin else "0"
    return found


def scratch_volume(s: Scratch) -> dict[str, Any]:
    """The `volumes.create` arguments of a scratch directory: a size-capped tmpfs owned by the
    agent's uid (labels apart)."""
    return {
        "driver": "local",
        "driver_opts": {
            "type": "tmpfs",
            "device": "tmpfs",
            "o": f"size={s.size_bytes},uid={AGENT_UID},gid={AGENT_UID},mode=0755",
        },
    }


def binds(spec: ContainerSpec) -> list[Mount]:
    return [
        Mount(target=b.target, source=str(b.source), type="bind", read_only=b.read_only)
        for b in spec.binds
    ]


def create_args(
    spec: ContainerSpec,
    *,
    labels: dict[str, str],
    mounts: list[Mount],
    seccomp: str,
    oci_runtime: str | None,
) -> dict[str, Any]:
    """`containers.create`'s keyword arguments for `spec` (the image apart). `seccomp` is the
    `seccomp=<profile JSON>` security option of a hardened container."""
    if spec.switch_user and not spec.hardened:
        raise ValueError("switch_user is only for a hardened container")
    if spec.stdin and not spec.spawned:
        raise ValueError("stdin is only for a spawned container")
    lim = spec.limits
    kwargs: dict[str, Any] = {
        "command": list(spec.command),
        "labels": labels,
        "mounts": mounts,
        "environment": dict(spec.env),
        "working_dir": spec.workdir,
        "init": spec.init,
        # Not detached when the main process reads the controller's stdin: only then does the
        # engine close that stdin once the attached controller has closed its end
        # (`StdinOnce`); the container is still started by `start`, never by this call.
        # Under a runtime that `chowns_stdio`, every container's stdin is open (see there).
        "detach": not (spec.stdin or (spec.spawned and chowns_stdio(oci_runtime))),
        "stdin_open": spec.stdin or chowns_stdio(oci_runtime),
        "mem_limit": lim.memory_bytes,
        "memswap_limit": lim.memory_bytes,
        "pids_limit": lim.pids,
        "nano_cpus": int(lim.cpus * 1e9),
        # Nothing a container prints is ever read: with any other driver, a flood
        # written to init's stdout costs the engine host CPU outside every quota.
        "log_config": LogConfig(type="none"),
    }
    if spec.hardened:
        kwargs.update(
            # Init and its keep-alive run as root with no capabilities, so the
            # candidate's uid cannot open their fds through /proc (a flood into
            # the engine's stdout pipe) or kill them to end the container. Every
            # exec names the spec's user instead (see `exec`). A container whose
            # command is its init (`init=False`) or the work (`spawned`) has no
            # keep-alive to protect: its command runs as the spec's user (the strict
            # candidate's runner as root, with the three it spends), and the container
            # ends with it.
            user="0:0" if (spec.init and not spec.spawned) or spec.switch_user else spec.user,
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges", seccomp],
            network_mode="none",
            # "exec": the engine adds noexec unless told otherwise, and the runc backend
            # mounts /tmp exec; a task must grade the same on both.
            tmpfs={"/tmp": f"size={lim.tmp_bytes},mode=1777,exec,nosuid,nodev"},
            ulimits=[docker.types.Ulimit(name="core", soft=0, hard=0)],
        )
        if spec.switch_user:
            kwargs["cap_add"] = list(SWITCH_CAPS)
    else:
        kwargs.update(user=spec.user, network_mode=spec.network)
    if spec.mounts_of is not None:
        kwargs["volumes_from"] = [spec.mounts_of]
    if oci_runtime:
        kwargs["runtime"] = oci_runtime
    if oci_runtime == "runsc":
        # Debian's runsc (2022-12) fails to start any container given a pids cgroup
        # limit. Inside gVisor every task lives in the one sandbox process, so the
        # memory limit bounds a fork bomb instead (docs/security.md).
        del kwargs["pids_limit"]
    return kwargs
