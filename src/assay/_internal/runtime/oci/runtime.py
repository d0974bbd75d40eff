"""A `Runtime` that drives the OCI runtime (runc, or gVisor's runsc: runsc.py) directly: no
daemon between the controller and the container. This module is the containers' lifecycle;
the runtime's command line is client.py's, what `create` makes in a container's directory is
populate.py's, its processes' start, pipes and execs are launch.py's, archives are
archives.py's, what `gc` finds and removes is gc.py's, and the cgroups are the cgroup layer's
(`..cgroup`).

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
import shutil
import stat
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from assay.errors import CensusUnavailableError, EngineError

from ..base import ContainerSpec, ExecResult, Spawned
from ..cgroup import Cgroup
from ..runspawned import run_spawned
from . import archives, bundle, engines, gc, host, launch
from .client import RUNC, STOP_WAIT_S, Client, Flavour, log_errors
from .host import INIT_BINARIES, Meta
from .populate import populate
from .rootfs import RootfsCache
from .seccomp import docker_default

LOG = logging.getLogger("assay")


def _own_mounts(d: Path, meta: Meta) -> list[str]:
    """The mounts `create` made under the container's directory `d`, deepest first: the
    overlay and its tmpfs (none on the shared root), /tmp and each scratch directory."""
    points = [] if meta.root else [str(d / "root"), str(d / "w")]
    return points + [v for v in meta.mounts.values() if Path(v).parent == d]


def _is_dir_in(root: Path, path: str) -> bool:
    """Whether `path` is a directory of the tree at `root`, every component a directory (no
    link followed)."""
    here = root
    for part in path.strip("/").split("/"):
        if part in ("", ".", ".."):
            return False
        here = here / part
        try:
            if not stat.S_ISDIR(os.lstat(here).st_mode):
                return False
        except OSError:
            return False
    return True


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
        self._cli = Client(
            self._binary, state_root / flavour.name, flavour.global_flags,
            private_stdio=flavour.chowns_stdio,
        )  # fmt: skip
        self._cache_given = cache
        self._configs: dict[str, tuple[dict[str, str], str]] = {}
        self._images: dict[str, tuple[str, Path]] = {}
        self._metas: dict[str, Meta] = {}
        self._shims: dict[str, subprocess.Popen[bytes]] = {}
        self._paused: set[str] = set()
        self._lock = threading.Lock()
        self._init = next((p for p in INIT_BINARIES if os.path.exists(p)), None)
        self._seccomp: dict[tuple[str, ...], str] = {}
        self._views: dict[str, tuple[Path, frozenset[str]] | None] = {}
        self._root_made = False

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

    def _seccomp_json(self, caps: tuple[str, ...]) -> str:
        if caps not in self._seccomp:
            self._seccomp[caps] = json.dumps(docker_default(frozenset(caps)))
        return self._seccomp[caps]

    def _shared_root(
        self, image_id: str, spec: ContainerSpec, mounts: Mapping[str, str], cwd: str
    ) -> Path | None:
        """The image's shared root, read-only, when a container can run on it directly: a
        hardened one (its root is read-only) whose every mount point is a directory of the
        root's top level (so the runtime has nothing to make in the root), and whose working
        directory is one of them or a directory of the image. Else None: an overlay of its
        own, as every container had before."""
        if not (spec.hardened and self.flavour.shares_root):
            return None
        if image_id not in self._views:
            try:
                self._views[image_id] = self._cache.shared_root(image_id)
            except EngineError as exc:
                LOG.warning("image %s: no shared read-only root (%s)", image_id[:19], exc)
                self._views[image_id] = None
        found = self._views[image_id]
        if found is None:
            return None
        view, dirs = found
        points = [t.strip("/") for t in mounts]
        if not all(p in dirs for p in points):
            return None  # a mount point the root lacks, or one below another
        if cwd.strip("/") and cwd.strip("/") not in points and not _is_dir_in(view, cwd):
            return None
        return view

    def create(self, spec: ContainerSpec) -> str:
        if spec.switch_user and not spec.hardened:
            raise EngineError("switch_user is only for a hardened container")
        if spec.init and self._init is None:
            raise EngineError(
                "no static init binary on this host (tini-static)",
                fix="apt-get install tini (scripts/setup.sh does)",
            )
        image_id, lower, env, workdir = self._image(spec.image)
        cid = uuid.uuid4().hex
        d = host.state_dir(cid, self._root)
        if not (self._root_made and d.parent.is_dir()):
            # root's alone: `gc` acts on what it finds here, so no one else may plant a
            # meta.json. Made once per runtime, and again if it went.
            d.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self._root, 0o700)
            self._root_made = True
        try:
            other = self._meta(spec.mounts_of) if spec.mounts_of is not None else None
            meta = populate(
                d, cid, spec, other=other, state_root=self._root, image_id=image_id,
                lower=lower, env=env,
                workdir=workdir, flavour=self.flavour, init=self._init,
                shared_root=lambda mounts, cwd: self._shared_root(image_id, spec, mounts, cwd),
                seccomp_json=self._seccomp_json,
            )  # fmt: skip
            # After the meta, which `prune_images` reads: a tree it removed meanwhile is
            # caught here, before anything runs on it.
            self._cache.verify(image_id)
        except BaseException:
            self._destroy(cid)
            raise
        with self._lock:
            self._metas[cid] = meta
        return cid

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

    def _run_flags(self, d: Path) -> tuple[str, ...]:
        if not self.flavour.chooses_network:
            return ()
        # The network is the sandbox's, chosen when it starts: no network but loopback for a
        # container with its own network namespace (every hardened one), else the host's.
        namespaces = json.loads((d / "config.json").read_text())["linux"]["namespaces"]
        own_netns = any(ns.get("type") == "network" for ns in namespaces)
        return ("--network=none" if own_netns else "--network=host",)

    def _unstarted(self, cid: str) -> tuple[Path, Meta]:
        if cid in self._shims:
            raise EngineError(f"container {cid[:12]} was started already")
        return host.state_dir(cid, self._root), self._meta(cid)

    def _started(self, cid: str, shim: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._shims[cid] = shim

    def start(self, cid: str) -> None:
        d, _ = self._unstarted(cid)
        pid_file, log = d / "pid", d / "run.log"
        shim = self._cli.run(
            cid, d, log, pid_file=pid_file, run_flags=self.flavour.run_flags,
            flags=self._run_flags(d),
        )  # fmt: skip
        self._started(cid, shim)
        launch.wait_started(self.name, cid, shim, pid_file, log)

    def spawn(self, cid: str) -> Spawned:
        # No pid file and no polling for it: nothing here needs the main process's pid (the
        # cgroup names every process), and its output says when it runs.
        d, meta = self._unstarted(cid)
        if not meta.spawned:
            raise EngineError(f"container {cid[:12]} was not created to be spawned")
        return launch.spawn_piped(
            self._cli, cid, d, stdin=meta.stdin, run_flags=self.flavour.run_flags,
            flags=self._run_flags(d), started=lambda shim: self._started(cid, shim),
        )  # fmt: skip

    def run(
        self, cid: str, *, deadline_s: float, output_cap: int, stdin: bytes = b""
    ) -> ExecResult:
        t0 = time.monotonic()
        if stdin and not self._meta(cid).stdin:
            raise ValueError("stdin given to a container whose spec reads none")
        spawned = self.spawn(cid)  # the deadline counts from the start, not the engine's
        res = run_spawned(
            self, spawned, stdin=stdin, deadline=time.monotonic() + deadline_s,
            output_cap=output_cap, t0=t0,
        )  # fmt: skip
        if res.exit_code not in (None, 0):
            # The runtime's own failure to start the container exits non-zero too: told apart
            # by the reason it logged, which a main process that ran never makes it log.
            failure = log_errors(host.state_dir(cid, self._root) / "run.log")
            if failure:
                raise EngineError(f"{self.name} could not start {cid[:12]}: {failure}")
        return res

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
        shim = self._shims.pop(cid, None)
        # A container whose `run` this process saw exit has no process left: they all end
        # with its PID namespace's init, before the runtime's wait for that init returns.
        ended = shim is not None and shim.poll() is not None
        if not ended:
            group.kill()
            if shim is not None:
                try:
                    shim.wait(timeout=STOP_WAIT_S)
                except subprocess.TimeoutExpired:
                    shim.kill()
                    shim.wait(timeout=STOP_WAIT_S)
        d = host.state_dir(cid, self._root)
        meta = self._metas.get(cid)
        if not (ended and self.flavour.forgets_by_hand and gc.forget_stopped(self._root, cid)):
            gc.delete_runtime_state(self._root, cid, self._cli)
        group.remove()
        # The mounts `create` made, when this process made them; else (a container of a
        # controller that died) whatever the mount table holds under its directory.
        points = _own_mounts(d, meta) if meta is not None else host.mounted_under(d)
        for point in points:
            host.umount(Path(point))
        host.remove_state_dir(d)
        left = self._left(cid, d, group)
        if left and meta is not None:
            # Once more the slow way: every process killed, the mount table read.
            group.kill()
            gc.delete_runtime_state(self._root, cid, self._cli)
            group.remove()
            for point in host.mounted_under(d):
                host.umount(Path(point))
            host.remove_state_dir(d)
            left = self._left(cid, d, group)
        with self._lock:
            self._metas.pop(cid, None)
        if left:
            raise EngineError(f"could not remove {cid[:12]}: {', '.join(map(str, left))} remain")

    def _left(self, cid: str, d: Path, group: Cgroup) -> list[Path]:
        left = [p for p in (d,) if p.exists()] + group.leftovers()
        return left + gc.runtime_state(self._root, cid)

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
        return launch.exec_in(
            self._cli, self.flavour, self.kill, cid, host.state_dir(cid, self._root), meta, shim,
            argv, t0=t0, deadline_s=deadline_s, output_cap=output_cap, env=env,
            workdir=workdir, capture=capture, keep_container=keep_container,
        )  # fmt: skip

    # -- archives and logs -----------------------------------------------------------------

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        archives.put_archive(self._meta(cid), self._host_root(cid), path, data)

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        return archives.get_archive(self._meta(cid), self._host_root(cid), path, sink, cap)

    def _host_root(self, cid: str) -> Path:
        root = self._meta(cid).root
        return Path(root) if root else host.state_dir(cid, self._root) / "root"

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
        """`gc.sweep_stale_state`: what no container owns (the runtimes' records of
        containers whose directory is gone, a dead maker's staging directory, an empty
        container directory); safe beside running gradings (`assay gc` calls it)."""
        return gc.sweep_stale_state(self._root, self._cli)

    def collapse_views(self) -> int:
        """`RootfsCache.collapse_views`: the image views an older version stacked, taken down
        to one each; how many went. Safe beside running gradings (`assay gc` calls it)."""
        # Views need no engine (gc runs without one): a cache of no client is enough.
        cache = self._cache_given if self._cache_given is not None else RootfsCache(None)
        return cache.collapse_views()

    def unused_images(self, *, unmarked: bool = False) -> list[str] | None:
        """The ids of the images unpacked for this backend that its engine handed out, no
        longer has, and no other engine handed out, and that no container here (made, or
        being made) is made of: what `prune_images` removes. `unmarked`: also the trees an
        older assay unpacked, which do not say which engine they came from. None when a
        container cannot say which image it is made of (an older assay's): then none is known
        to be free. Raises EngineUnavailableError or EngineError when the engine cannot list
        its images or say who it is."""
        keep = self._keep()
        if keep is None:
            return None
        return self._cache.unused(keep, engine=self._cache.engine_id(), unmarked=unmarked)

    def prune_images(self, *, unmarked: bool = False) -> int | None:
        """Remove the trees `unused_images` names (one an unpacking holds stays); how many
        went, None as there. `docker rmi` frees the engine's copy, this the backend's, which
        no grading through that engine can reach any more: each new one asks it first, and a
        runtime that resolved the image before fails in `create`, as the Docker backend
        would. Beside running gradings: a container's meta is written before its root is
        made and `create` checks the tree after that, so one made while its tree goes fails
        (an infrastructure error); the window left is between this method's last look at
        the metas, under the image's lock, and its rename of the tree. Raises as
        `unused_images`."""
        keep = self._keep()
        if keep is None:
            return None

        def still_used(image_id: str) -> bool:
            used = gc.images_in_use(self._root)
            return used is None or image_id in used

        return self._cache.prune(
            keep, engine=self._cache.engine_id(), unmarked=unmarked, still_used=still_used
        )

    def _keep(self) -> set[str] | None:
        used = gc.images_in_use(self._root)
        return None if used is None else engines.engine_images(self.client) | used

    def sweep(self, grading_id: str | None = None) -> int:
        return gc.sweep(self._root, self._cli, self._destroy, grading_id)

    def leftovers(self, grading_id: str | None = None) -> list[str]:
        return gc.leftovers(self._root, grading_id)

    def gradings(self) -> set[str]:
        return gc.gradings(self._root)

    def orphans(self) -> set[str]:
        return gc.orphans(self._root)
