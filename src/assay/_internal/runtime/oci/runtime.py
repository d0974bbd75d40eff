"""A `Runtime` that drives the OCI runtime (runc, or gVisor's runsc: runsc.py) directly: no
daemon between the controller and the container. This module is the containers' lifecycle;
the runtime's command line is client.py's, archives are archives.py's, what `gc` finds and
removes is gc.py's, and the cgroups are the cgroup layer's (`..cgroup`).

Each container is a bundle under `STATE_ROOT/c/<id>`: its config (bundle.py), an overlay of
the image's shared unpacked root (rootfs.py), and host tmpfs mounts for /tmp and each scratch
directory, so that archives move in and out by reading those host directories (hosttar.py)
instead of through a process in the container. `runc run --keep` in the foreground is the
container's only supervisor (what containerd's shim is to Docker): its exit status is the
main process's, and it holds nothing the controller needs to survive. What `gc` needs after
a SIGKILL of the controller is on disk (`meta.json`, runc's state, the cgroup directories).
"""

from __future__ import annotations

import json
import logging
import os
import resource
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from assay.errors import CensusUnavailableError, EngineError

from ..base import AGENT_UID, ContainerSpec, ExecResult
from ..owner import this_owner
from . import archives, bundle, gc, host
from .client import RUNC, STOP_WAIT_S, Client, Flavour, collect, drain_and_reap, log_errors
from .host import INIT_BINARIES, Meta
from .rootfs import RootfsCache
from .seccomp import docker_default

LOG = logging.getLogger("assay")
START_WAIT_S = 30.0
OVERLAY_UPPER_HARDENED = 16 * 2**20
"""The upper layer of a hardened root only takes runc's mount points (the root is read-only
inside the container)."""
OVERLAY_UPPER_WRITABLE = 1024 * 2**20
"""An unhardened container (a baseline) writes its root into a capped tmpfs, never the disk."""
NOFILE = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], bundle.NOFILE)


class OciRuntime:
    """Containers run by `runc` (the OCI runtime Docker itself uses), without dockerd; by
    another OCI runtime with `flavour` (`runsc.RUNSC`) and its `binary`.

    Images still come from the local Docker engine (`client`): each is unpacked once per
    image id and verified by digest (`RootfsCache`); builds of task environments use the
    engine as before."""

    def __init__(
        self,
        client: Any | None = None,
        *,
        flavour: Flavour = RUNC,
        binary: str | None = None,
        state_root: Path = host.STATE_ROOT,
        cache: RootfsCache | None = None,
    ) -> None:
        binary = binary or flavour.name
        self.flavour = flavour
        self._client = client
        self._binary = shutil.which(binary) or binary
        self.name = f"oci/{Path(binary).name}"
        self._root = state_root
        self._cli = Client(self._binary, state_root / flavour.name, flavour.global_flags)
        self._cache_given = cache
        self._configs: dict[str, tuple[dict[str, str], str]] = {}
        self._images: dict[str, tuple[str, Path]] = {}
        self._metas: dict[str, Meta] = {}
        self._shims: dict[str, subprocess.Popen[bytes]] = {}
        self._paused: set[str] = set()
        self._lock = threading.Lock()
        self._init = next((p for p in INIT_BINARIES if os.path.exists(p)), None)
        self._seccomp: dict[tuple[str, ...], dict[str, Any]] = {}

    @property
    def client(self) -> Any:
        """The docker-py client images come from (what builds a task's environment image),
        connected on first use: `gc` removes containers with no engine at all."""
        if self._client is None:
            from ..dockerengine import connect

            self._client = connect()
        return self._client

    @property
    def _cache(self) -> RootfsCache:
        if self._cache_given is None:
            self._cache_given = RootfsCache(self.client)
        return self._cache_given

    # -- lifecycle -------------------------------------------------------------------------

    def _image(self, image: str) -> tuple[str, Path, dict[str, str], str]:
        # Resolved once per name for this runtime's life, as the Docker backend records an
        # image's digest once: no engine call per container (the tags assay builds are
        # content-addressed; a base image rebuilt under the same tag needs a new runtime).
        if image not in self._images:
            self._images[image] = self._cache.rootfs(image)
        image_id, lower = self._images[image]
        if image_id not in self._configs:
            cfg = (self.client.api.inspect_image(image_id) or {}).get("Config") or {}
            self._configs[image_id] = (
                bundle.image_env(cfg.get("Env")),
                cfg.get("WorkingDir") or "/",
            )
        env, workdir = self._configs[image_id]
        return image_id, lower, env, workdir

    def _seccomp_for(self, caps: tuple[str, ...]) -> dict[str, Any]:
        if caps not in self._seccomp:
            self._seccomp[caps] = docker_default(frozenset(caps))
        return self._seccomp[caps]

    def create(self, spec: ContainerSpec) -> str:
        if spec.switch_user and not spec.hardened:
            raise EngineError("switch_user is only for a hardened container")
        if spec.init and self._init is None:
            raise EngineError(
                "no static init binary on this host (tini-static)",
                fix="apt-get install tini (scripts/setup.sh does)",
            )
        _, lower, env, workdir = self._image(spec.image)
        cid = uuid.uuid4().hex
        d = host.state_dir(cid, self._root)
        # root's alone: `gc` acts on what it finds here, so no one else may plant a meta.json.
        self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self._root, 0o700)
        d.mkdir(parents=True)
        mounts: dict[str, str] = {}
        read_only: list[str] = []
        scratch: dict[str, str] = {}
        extra_binds: list[tuple[str, str, bool]] = []
        try:
            if spec.mounts_of is not None:
                # Docker's volumes_from: the other container's scratch and binds, not its /tmp.
                other = self._meta(spec.mounts_of)
                for target, source in other.mounts.items():
                    if target == "/tmp":
                        continue
                    mounts[target] = source
                    if source.startswith(f"{self._root}/"):
                        scratch[target] = source
                    else:
                        extra_binds.append((source, target, target in other.read_only))
                        if target in other.read_only:
                            read_only.append(target)
            meta = Meta(
                cid=cid, grading_id=spec.grading_id, role=spec.role, owner=this_owner(),
                exec_user=bundle.exec_user(spec), hardened=spec.hardened,
                switch_user=spec.switch_user, workdir=spec.workdir or workdir,
                env={**env, **spec.env}, mounts={}, read_only=[], read_only_root=spec.hardened,
            )  # fmt: skip
            # The meta goes first: a controller killed from here on leaves something `gc` finds.
            (d / "meta.json").write_text(meta.to_json())
            upper_size = OVERLAY_UPPER_HARDENED if spec.hardened else OVERLAY_UPPER_WRITABLE
            self._tmpfs(d / "w", upper_size, "mode=0700")
            (d / "w" / "upper").mkdir()
            (d / "w" / "work").mkdir()
            (d / "root").mkdir()
            host.mount(
                "overlay", d / "root", "overlay", 0,
                f"lowerdir={lower},upperdir={d / 'w' / 'upper'},workdir={d / 'w' / 'work'}",
            )  # fmt: skip
            self._tmpfs(
                d / "tmp", spec.limits.tmp_bytes, "mode=1777", host.MS_NOSUID | host.MS_NODEV
            )
            mounts["/tmp"] = str(d / "tmp")
            for i, s in enumerate(spec.scratch):
                path = d / f"s{i}"
                opts = f"uid={AGENT_UID},gid={AGENT_UID},mode=0755"
                self._tmpfs(path, s.size_bytes, opts, host.MS_NOSUID | host.MS_NODEV)
                scratch[s.target] = mounts[s.target] = str(path)
            for b in spec.binds:
                mounts[b.target] = str(b.source)
                if b.read_only:
                    read_only.append(b.target)
            meta = Meta(**{**meta.__dict__, "mounts": mounts, "read_only": read_only})
            (d / "meta.json").write_text(meta.to_json())
            caps = bundle.exec_caps(spec)
            pids, flavour = spec.limits.pids, self.flavour
            cfg = bundle.config(
                spec,
                bundle.HostPaths(
                    rootfs=str(d / "root"), tmp=str(d / "tmp"), scratch=scratch,
                    extra_binds=extra_binds, init=self._init if spec.init else None,
                ),
                image_env=env, image_workdir=workdir, seccomp=self._seccomp_for(caps),
                cgroups_path=host.cgroup_path(cid), hostname=cid[:12], nofile=NOFILE,
                cgroup_pids=flavour.cgroup_pids(pids),
                nproc=pids if flavour.pids_backstop is not None else None,
            )  # fmt: skip
            (d / "config.json").write_text(json.dumps(cfg))
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
        except BaseException:
            self._destroy(cid)
            raise
        with self._lock:
            self._metas[cid] = meta
        return cid

    def _tmpfs(self, path: Path, size: int, opts: str, flags: int = 0) -> None:
        path.mkdir()
        host.mount("tmpfs", path, "tmpfs", flags, f"size={size},{opts}")

    def _meta(self, cid: str) -> Meta:
        meta = self._metas.get(cid)
        if meta is not None:
            return meta
        try:
            meta = Meta.from_json((host.state_dir(cid, self._root) / "meta.json").read_text())
        except (OSError, ValueError, TypeError) as exc:
            raise EngineError(f"no container {cid[:12]} on this host") from exc
        self._metas[cid] = meta
        return meta

    def _stopped(self, shim: subprocess.Popen[bytes], failure: str) -> bool:
        """Whether an exec failed (with `failure`) because the container had stopped."""
        word = self.flavour.dies_first
        if word is not None and shim.poll() is None and word in failure:
            # `runsc exec` learns of a sandbox that died under it (killed at its memory
            # limit) as a broken connection, before `runsc run` has noticed and exited: give
            # it that time.
            try:
                shim.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
        return shim.poll() is not None

    def start(self, cid: str) -> None:
        d = host.state_dir(cid, self._root)
        self._meta(cid)
        pid_file, log = d / "pid", d / "run.log"
        flags: tuple[str, ...] = ()
        if self.flavour.chooses_network:
            # The network is the sandbox's, chosen when it starts: no network but loopback
            # for a container with its own network namespace (every hardened one), else the
            # host's.
            namespaces = json.loads((d / "config.json").read_text())["linux"]["namespaces"]
            own_netns = any(ns.get("type") == "network" for ns in namespaces)
            flags = ("--network=none" if own_netns else "--network=host",)
        shim = self._cli.run(cid, d, pid_file, log, run_flags=self.flavour.run_flags, flags=flags)
        with self._lock:
            self._shims[cid] = shim
        deadline = time.monotonic() + START_WAIT_S
        delay = 0.0005
        while not pid_file.exists():
            if shim.poll() is not None:
                if pid_file.exists():
                    return  # started and already done (a command as PID 1 that exits at once)
                raise EngineError(f"{self.name} could not start {cid[:12]}: {log_errors(log)}")
            if time.monotonic() > deadline:
                raise EngineError(
                    f"{self.name} did not start {cid[:12]} within {START_WAIT_S:.0f} s"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def wait(self, cid: str, deadline_s: float) -> int | None:
        shim = self._shims.get(cid)
        if shim is None:
            raise EngineError(f"container {cid[:12]} was not started by this controller")
        try:
            return shim.wait(timeout=max(deadline_s, 0.001))
        except subprocess.TimeoutExpired:
            return None

    def kill(self, cid: str) -> None:
        host.cgroup(cid).kill()

    def pause(self, cid: str) -> None:
        self._meta(cid)
        group = host.cgroup(cid)
        try:
            frozen = group.freeze()
        except OSError as exc:
            raise EngineError(f"freeze {cid[:12]}: {exc.strerror}") from exc
        if not frozen:
            group.thaw()
            raise EngineError(f"container {cid[:12]} would not freeze")
        self._paused.add(cid)

    def remove(self, cid: str) -> None:
        self._destroy(cid)

    def _destroy(self, cid: str) -> None:
        """Everything of one container, in an order that survives a half-made one: processes,
        runc's record, cgroups, mounts, directory. Idempotent."""
        self._paused.discard(cid)
        group = host.cgroup(cid)
        group.kill()
        shim = self._shims.pop(cid, None)
        if shim is not None:
            try:
                shim.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                shim.kill()
                shim.wait(timeout=STOP_WAIT_S)
        d = host.state_dir(cid, self._root)
        gc.delete_runtime_state(self._root, cid, self._cli)
        group.remove()
        for point in host.mounted_under(d):
            host.umount(Path(point))
        shutil.rmtree(d, ignore_errors=True)
        with self._lock:
            self._metas.pop(cid, None)
        left = [p for p in (d,) if p.exists()] + group.leftovers()
        left += gc.runtime_state(self._root, cid)
        if left:
            raise EngineError(f"could not remove {cid[:12]}: {', '.join(map(str, left))} remain")

    # -- exec ------------------------------------------------------------------------------

    def exec(
        self,
        cid: str,
        argv: tuple[str, ...],
        *,
        deadline_s: float,
        output_cap: int,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        capture: bool = True,
        keep_container: bool = False,
    ) -> ExecResult:
        t0 = time.monotonic()
        meta = self._meta(cid)
        shim = self._shims.get(cid)
        if shim is not None and shim.poll() is not None:
            raise EngineError(f"exec: container {cid[:12]} is not running")
        d = host.state_dir(cid, self._root)
        tag = uuid.uuid4().hex[:12]
        proc_file, log = d / f"exec-{tag}.json", d / f"exec-{tag}.log"
        spec = bundle.process(
            argv,
            user=meta.exec_user,
            env={**meta.env, **(env or {})},
            cwd=workdir or meta.workdir,
            caps=bundle.SWITCH_CAPS
            if meta.switch_user
            else (() if meta.hardened else bundle.DOCKER_DEFAULT_CAPS),
            no_new_privileges=meta.hardened,
            nofile=NOFILE,
        )
        proc_file.write_text(json.dumps(spec))
        try:
            proc = self._cli.exec(cid, proc_file, log, capture=capture)
            out, err, timed_out, truncated = collect(proc, t0 + deadline_s, output_cap, capture)
            if (timed_out or truncated) and keep_container:
                threading.Thread(target=drain_and_reap, args=(proc,), daemon=True).start()
                return ExecResult(
                    None, bytes(out[:output_cap]), bytes(err[:output_cap]),
                    timed_out, truncated, time.monotonic() - t0,
                )  # fmt: skip
            if timed_out or truncated:
                self.kill(cid)
                drain_and_reap(proc)
                return ExecResult(
                    None, bytes(out[:output_cap]), bytes(err[: max(output_cap - len(out), 0)]),
                    timed_out, truncated, time.monotonic() - t0,
                )  # fmt: skip
            code = proc.wait()
            failure = log_errors(log)
            if failure and self.flavour.could_not_start(failure):
                # The command could not start (no such binary, no such working directory):
                # the command's failure, as Docker reports it (exit 126, the reason on
                # stderr), not the runtime's.
                return ExecResult(
                    126, b"", f"OCI runtime exec failed: {failure}".encode()[:output_cap],
                    False, False, time.monotonic() - t0,
                )  # fmt: skip
            if failure:
                if shim is not None and self._stopped(shim, failure):
                    return ExecResult(
                        None, b"", b"", False, False, time.monotonic() - t0, exited=True
                    )
                raise EngineError(f"exec in {cid[:12]}: {failure}")
            return ExecResult(
                exit_code=code,
                stdout=bytes(out[:output_cap]),
                stderr=bytes(err[: max(output_cap - len(out), 0)]),
                timed_out=False,
                truncated=False,
                duration_s=time.monotonic() - t0,
            )
        finally:
            proc_file.unlink(missing_ok=True)
            log.unlink(missing_ok=True)

    # -- archives and logs -----------------------------------------------------------------

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        archives.put_archive(self._meta(cid), self._host_root(cid), path, data)

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        return archives.get_archive(self._meta(cid), self._host_root(cid), path, sink, cap)

    def _host_root(self, cid: str) -> Path:
        return host.state_dir(cid, self._root) / "root"

    def logs(self, cid: str, cap: int) -> bytes:
        return b""  # the main process's output goes nowhere, as with Docker's "none" driver

    def oom_killed(self, cid: str) -> bool:
        return host.cgroup(cid).limit_events().get("memory", 0) > 0

    def limit_events(self, cid: str) -> dict[str, int]:
        return {k: v for k, v in host.cgroup(cid).limit_events().items() if v}

    def processes(self, cid: str) -> list[tuple[int, str]]:
        self._meta(cid)
        if self.flavour.hidden_processes is not None:
            return self._cli.ps(cid)
        rows = []
        for pid in host.cgroup(cid).procs():
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue  # exited meanwhile
            rows.append((pid, comm))
        return rows

    def census(self, cid: str) -> frozenset[int]:
        self._meta(cid)
        if self.flavour.hidden_processes is not None:
            raise CensusUnavailableError(
                f"{self.flavour.name}: a container's processes cannot be listed from outside "
                f"({self.flavour.hidden_processes})"
            )
        return host.cgroup(cid).census()

    def image_digest(self, image: str) -> str:
        return self._image(image)[0]

    # -- garbage (gc.py) -------------------------------------------------------------------

    def sweep_stale_state(self) -> int:
        """`gc.sweep_stale_state`: the runtimes' records of containers whose directory is
        gone; safe beside running gradings (`assay gc` calls it)."""
        return gc.sweep_stale_state(self._root, self._cli)

    def sweep(self, grading_id: str | None = None) -> int:
        return gc.sweep(self._root, self._cli, self._destroy, grading_id)

    def leftovers(self, grading_id: str | None = None) -> list[str]:
        return gc.leftovers(self._root, grading_id)

    def gradings(self) -> set[str]:
        return gc.gradings(self._root)

    def orphans(self) -> set[str]:
        return gc.orphans(self._root)
