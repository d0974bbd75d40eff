"""What `OciRuntime.create` makes in a new container's directory `d`: the mounts its spec
names (with `mounts_of`, another container's too), its `meta.json` first, its root (an overlay
of the image's unpacked root with a capped tmpfs upper layer, or the image's shared read-only
root), its /tmp and scratch tmpfs mounts, its `config.json` with the seccomp profile in its
place, and the cgroups of a runtime that keeps none it made (runsc)."""

from __future__ import annotations

import json
import resource
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..base import AGENT_UID, ContainerSpec
from ..owner import this_owner
from . import bundle, host
from .client import Flavour
from .host import Meta

OVERLAY_UPPER_HARDENED = 16 * 2**20
"""The upper layer of a hardened root only takes runc's mount points (the root is read-only
inside the container)."""
OVERLAY_UPPER_WRITABLE = 1024 * 2**20
"""An unhardened container (a baseline) writes its root into a capped tmpfs, never the disk."""
NOFILE = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], bundle.NOFILE)
SECCOMP_SLOT: dict[str, Any] = {"assay-slot": "seccomp"}
"""What `create` puts in the config's seccomp place, then swaps for the profile's JSON."""
SECCOMP_JSON_SLOT = json.dumps(SECCOMP_SLOT)


def populate(
    d: Path,
    cid: str,
    spec: ContainerSpec,
    *,
    other: Meta | None,
    state_root: Path,
    image_id: str,
    lower: Path,
    env: dict[str, str],
    workdir: str,
    shared_root: Callable[[Mapping[str, str], str], Path | None],
    seccomp_json: Callable[[tuple[str, ...]], str],
    flavour: Flavour,
    init: str | None,
) -> Meta:
    """Make and fill `d` for container `cid` and return its meta: `other` is the meta of
    `spec.mounts_of`, `image_id` the image's id, `lower`, `env` and `workdir` its unpacked
    root, environment and working directory, `shared_root` the image's shared root when the
    container can run on it with these mounts and working directory, `seccomp_json` the
    profile's text for a set of capabilities, `init` the host's static init. What it made,
    the caller removes if it raises."""
    mounts: dict[str, str] = {}
    read_only: list[str] = []
    scratch: dict[str, str] = {}
    extra_binds: list[tuple[str, str, bool]] = []
    if other is not None:
        # Docker's volumes_from: the other container's scratch and binds, not its /tmp.
        for target, source in other.mounts.items():
            if target == "/tmp":
                continue
            mounts[target] = source
            if source.startswith(f"{state_root}/"):
                scratch[target] = source
            else:
                extra_binds.append((source, target, target in other.read_only))
                if target in other.read_only:
                    read_only.append(target)
    mounts["/tmp"] = str(d / "tmp")
    for i, s in enumerate(spec.scratch):
        scratch[s.target] = mounts[s.target] = str(d / f"s{i}")
    for b in spec.binds:
        mounts[b.target] = str(b.source)
        if b.read_only:
            read_only.append(b.target)
    cwd = spec.workdir or workdir
    shared = shared_root(mounts, cwd)
    root = shared or d / "root"
    meta = Meta(
        cid=cid, grading_id=spec.grading_id, role=spec.role, owner=this_owner(),
        exec_user=bundle.exec_user(spec), hardened=spec.hardened,
        switch_user=spec.switch_user, workdir=cwd, env={**env, **spec.env},
        mounts=mounts, read_only=read_only, read_only_root=spec.hardened,
        spawned=spec.spawned, stdin=spec.stdin, root=str(shared or ""), image_id=image_id,
    )  # fmt: skip
    # `d` is made with its meta in one step: a controller killed from here on leaves
    # something `gc` can attribute, and every mount made below is under `d`.
    host.make_state_dir(d, meta)
    if shared is None:
        upper_size = OVERLAY_UPPER_HARDENED if spec.hardened else OVERLAY_UPPER_WRITABLE
        _tmpfs(d / "w", upper_size, "mode=0700")
        (d / "w" / "upper").mkdir()
        (d / "w" / "work").mkdir()
        root.mkdir()
        host.mount(
            "overlay", root, "overlay", 0,
            f"lowerdir={lower},upperdir={d / 'w' / 'upper'},workdir={d / 'w' / 'work'}",
        )  # fmt: skip
    _tmpfs(d / "tmp", spec.limits.tmp_bytes, "mode=1777", host.MS_NOSUID | host.MS_NODEV)
    for i, s in enumerate(spec.scratch):
        opts = f"uid={AGENT_UID},gid={AGENT_UID},mode=0755"
        _tmpfs(d / f"s{i}", s.size_bytes, opts, host.MS_NOSUID | host.MS_NODEV)
    caps = bundle.exec_caps(spec)
    pids = spec.limits.pids
    cfg = bundle.config(
        spec,
        bundle.HostPaths(
            rootfs=str(root), tmp=str(d / "tmp"), scratch=scratch,
            extra_binds=extra_binds, init=init if spec.init else None,
        ),
        image_env=env, image_workdir=workdir, seccomp=SECCOMP_SLOT,
        cgroups_path=host.cgroup_path(cid), hostname=cid[:12], nofile=NOFILE,
        cgroup_pids=flavour.cgroup_pids(pids),
        nproc=pids if flavour.pids_backstop is not None else None,
    )  # fmt: skip
    # The seccomp profile is most of the file and the same for every container with
    # these capabilities: serialised once, put in its place here.
    text = json.dumps(cfg)
    if text.count(SECCOMP_JSON_SLOT) == 1:  # (a string value would hold it escaped)
        text = text.replace(SECCOMP_JSON_SLOT, seccomp_json(caps))
    else:
        cfg["linux"]["seccomp"] = json.loads(seccomp_json(caps))
        text = json.dumps(cfg)
    (d / "config.json").write_text(text)
    if flavour.makes_cgroups:
        # runsc removes the cgroups it created when its sandbox ends, the OOM-kill and
        # pids counters with them, before the controller can read why it ended. It
        # leaves a cgroup it found (and sets no limit in it): these two are made, and
        # limited, here, and removed with the container.
        group, memory = host.cgroup(cid), spec.limits.memory_bytes
        group.make(
            "memory",
            {"memory.limit_in_bytes": memory, "memory.memsw.limit_in_bytes": memory},
        )
        group.make("pids", {"pids.max": flavour.cgroup_pids(pids)})
    return meta


def _tmpfs(path: Path, size: int, opts: str, flags: int = 0) -> None:
    path.mkdir()
    host.mount("tmpfs", path, "tmpfs", flags, f"size={size},{opts}")
