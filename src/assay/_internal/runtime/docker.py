"""The Docker backend (docker-py): the engine calls of the `Runtime` contract. What a
container is created with, all its hardening, is decided in dockerconfig.py; what a grading
leaves on the engine is found and removed by dockergc.py; its cgroup is the cgroup layer's; an
exec's output is read by dockerexec.py, a spawned container's attach split by dockerattach.py."""

from __future__ import annotations

import calendar
import logging
import time
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, BinaryIO, ParamSpec, TypeVar

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import _create_container_args
from docker.types import Mount

from assay.errors import EngineUnavailableError

from . import cgroup, dockerattach, dockerconfig, dockerexec, dockergc
from .base import (
    ArchiveTooLarge,
    CensusUnavailable,
    ContainerSpec,
    ContainerStuckError,
    ExecResult,
    RuntimeError_,
    Spawned,
)
from .dockerconfig import EXEC_USER_LABEL, STDIN_LABEL
from .dockerengine import STUCK_FIX, connect, lost_or_stuck
from .images import ensure_image_present
from .oci.seccomp import profile_text
from .owner import this_owner
from .runspawned import run_spawned

REMOVE_WAIT_S = 10

LOG = logging.getLogger("assay")
CGROUP_PARENT = "docker"
"""The engine's cgroupfs layout: a container's group is /sys/fs/cgroup/<controller>/docker/<id>
(a local engine on a cgroup v1 host; elsewhere there are no such files)."""


def _cgroup(cid: str) -> cgroup.Cgroup:
    return cgroup.Cgroup(CGROUP_PARENT, cid)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _engine_loss(what: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A lost connection in a method that talks to the engine outside `_call` is still
    `EngineUnavailableError`, so a batch stops at the first one instead of recording every
    remaining job as an internal error (the dockerd-restart fault, docs/security.md)."""

    def wrap(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @wraps(fn)
        def inner(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return fn(*args, **kwargs)
            except requests.exceptions.RequestException as exc:
                rt = args[0]
                assert isinstance(rt, DockerRuntime)
                raise rt._lost_or_stuck(what, exc) from exc

        return inner

    return wrap


class DockerRuntime:
    """Containers on a local or remote Docker engine; `oci_runtime` picks runc or runsc (gVisor)."""

    def __init__(self, client: Any | None = None, oci_runtime: str | None = None) -> None:
        self._client = client if client is not None else connect()
        self._api = self._client.api
        self._oci_runtime = oci_runtime
        self.name = f"docker/{oci_runtime or 'runc'}"
        self._digests: dict[str, str] = {}
        self._paused: set[str] = set()
        self._users: dict[str, str] = {}
        self._stdin: dict[str, bool] = {}
        # The engine's own default is whatever its version shipped (Debian 12's Docker 20.10
        # still allows io_uring); this is the current one, the runc backend's too.
        self._seccomp = "seccomp=" + profile_text()

    @property
    def client(self) -> Any:
        """The docker-py client (what builds a task's environment image)."""
        return self._client

    # -- lifecycle -------------------------------------------------------------------------

    def create(self, spec: ContainerSpec) -> str:
        if spec.switch_user and not spec.hardened:
            raise RuntimeError_("switch_user is only for a hardened container")
        labels = dockerconfig.labels(spec, this_owner())
        mounts = dockerconfig.binds(spec)
        try:
            for s in spec.scratch:
                vol = self._client.volumes.create(**dockerconfig.scratch_volume(s), labels=labels)
                mounts.append(Mount(target=s.target, source=vol.name, type="volume"))
            kwargs = dockerconfig.create_args(
                spec, labels=labels, mounts=mounts, seccomp=self._seccomp,
                oci_runtime=self._oci_runtime,
            )  # fmt: skip
            # What `containers.create` does, without its inspect of the new container: one
            # engine call less per container.
            kwargs.update(image=spec.image, version=self._api._version)
            cid = str(self._api.create_container(**_create_container_args(kwargs))["Id"])
        except docker.errors.ImageNotFound as exc:
            raise RuntimeError_(
                f"image {spec.image!r} is not on this engine",
                fix="run `bash scripts/setup.sh` to build the base image, or pass --base-image",
            ) from exc
        except docker.errors.APIError as exc:
            raise RuntimeError_(f"could not create the {spec.role} container: {exc}") from exc
        self._users[cid] = dockerconfig.exec_user(spec)
        if spec.spawned:
            self._stdin[cid] = spec.stdin
        return cid

    def _exec_user(self, cid: str) -> str:
        """The user every exec in cid runs as: the spec's, never the container's root init;
        root only in a `switch_user` container, whose runner gives root up itself."""
        if cid not in self._users:
            labels = self._call("exec", self._api.inspect_container, cid)["Config"]["Labels"]
            user = (labels or {}).get(EXEC_USER_LABEL)
            if not user:
                raise RuntimeError_(f"container {cid[:12]} carries no {EXEC_USER_LABEL} label")
            self._users[cid] = user
        return self._users[cid]

    def start(self, cid: str) -> None:
        self._call("start", self._api.start, cid)

    def spawn(self, cid: str) -> Spawned:
        # Attached before the start: with no log driver, output written before an attach is
        # lost (dockerattach.py).
        if cid in self._users and cid not in self._stdin:
            raise RuntimeError_(f"container {cid[:12]} was not created to be spawned")
        stdin = self._stdin.pop(cid, None)
        if stdin is None:  # created by another controller
            info = self._call("attach", self._api.inspect_container, cid)
            said = ((info["Config"] or {}).get("Labels") or {}).get(STDIN_LABEL)
            # A container made before the label existed says it by `OpenStdin` alone.
            stdin = said == "1" if said is not None else bool(info["Config"]["OpenStdin"])
        # Under a runtime that chowns its stdio, stdin is always attached; a spec that reads
        # none has it closed at once, so its main process reads end-of-file.
        attach_stdin = stdin or dockerconfig.chowns_stdio(self._oci_runtime)
        params = {"stdout": 1, "stderr": 1, "stream": 1, "stdin": int(attach_stdin)}
        conn = self._call("attach", self._api.attach_socket, cid, params)
        spawned = dockerattach.start_attached(
            cid, conn, attach_stdin, lambda: self._call("start", self._api.start, cid)
        )
        if not stdin and spawned.stdin is not None:
            spawned.stdin.close()
            spawned.stdin = None
        return spawned

    def run(
        self, cid: str, *, deadline_s: float, output_cap: int, stdin: bytes = b""
    ) -> ExecResult:
        t0 = time.monotonic()
        if stdin and not self._stdin.get(cid, True):
            raise ValueError("stdin given to a container whose spec reads none")
        spawned = self.spawn(cid)  # the deadline counts from the start, not the engine's
        return run_spawned(
            self, spawned, stdin=stdin, deadline=time.monotonic() + deadline_s,
            output_cap=output_cap, t0=t0,
        )  # fmt: skip

    @_engine_loss("kill")
    def kill(self, cid: str) -> None:
        try:
            self._api.kill(cid)
        except docker.errors.APIError:
            pass  # already stopped: the goal state holds

    def pause(self, cid: str) -> None:
        # The cgroup freezer can give up while a fork bomb or a busy loop runs; it usually
        # succeeds on a later try.
        for attempt in range(10):
            try:
                self._call("pause", self._api.pause, cid)
                break
            except ContainerStuckError:
                raise  # a minute each: asking again only holds the grading longer
            except RuntimeError_:
                if attempt == 9:
                    raise
                time.sleep(0.1 * (attempt + 1))
        self._paused.add(cid)

    @_engine_loss("remove")
    def remove(self, cid: str) -> None:
        try:
            self._remove(cid)
            return
        except requests.exceptions.ReadTimeout as exc:
            stuck = self._lost_or_stuck(f"remove {cid[:12]}", exc)
            # A stuck container's own processes are killed by PID from its cgroup: what the
            # engine's `kill` does through the OCI runtime, when that runtime is what stopped
            # answering.
            if not isinstance(stuck, ContainerStuckError) or not (n := _cgroup(cid).kill()):
                raise stuck from exc
        LOG.warning(
            "container %s: the engine did not stop it within its timeout; "
            "killed its %d process(es) by PID from its cgroup",
            cid[:12], n,
        )  # fmt: skip
        # The runtime was waiting on the container's own processes (a wedged gVisor sandbox
        # makes `runsc kill` wait for good); with them gone, the engine can finish.
        try:
            self._remove(cid)
        except requests.exceptions.ReadTimeout as exc:
            what = f"remove {cid[:12]}, after killing its processes"
            raise self._lost_or_stuck(what, exc) from exc
        raise ContainerStuckError(
            f"remove {cid[:12]}: the engine could not stop it; it was removed after its {n} "
            "process(es) were killed by PID",
            fix=STUCK_FIX,
            removed=True,
        )

    def _remove(self, cid: str) -> None:
        self._users.pop(cid, None)
        self._stdin.pop(cid, None)
        # A controller killed mid-census must not leave it frozen behind the engine.
        _cgroup(cid).thaw()
        if cid in self._paused:
            # Removing a frozen container makes some runtimes wait out a stop timeout.
            self._paused.discard(cid)
            try:
                self._api.unpause(cid)
            except docker.errors.APIError:
                pass
        # Kill, then let the engine see the exit before removing: force-removing a container
        # whose exit is still being processed can skip the cleanup that unmounts its
        # tmpfs volumes (seen with runsc), leaving them "in use" until dockerd restarts.
        try:
            self._api.kill(cid)
        except docker.errors.APIError:
            pass  # not running: nothing to wait for
        else:
            try:
                self._api.wait(cid, timeout=REMOVE_WAIT_S)
            except (requests.exceptions.RequestException, docker.errors.APIError):
                pass  # removal below still forces it
        try:
            self._api.remove_container(cid, v=True, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            # A paused container must be unpaused by some engines before removal.
            if "paused" in str(exc).lower():
                self._api.unpause(cid)
                self._api.remove_container(cid, v=True, force=True)
            else:
                raise RuntimeError_(f"could not remove container {cid[:12]}: {exc}") from exc

    def wait(self, cid: str, deadline_s: float) -> int | None:
        try:
            res = self._api.wait(cid, timeout=max(deadline_s, 0.001))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            return None
        return int(res.get("StatusCode", -1))

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
        return dockerexec.exec_in(
            self._call, self._api, self.kill, cid, argv, user=self._exec_user(cid), t0=t0,
            deadline_s=deadline_s, output_cap=output_cap, env=env, workdir=workdir,
            capture=capture, keep_container=keep_container,
            own_stdin=dockerconfig.chowns_stdio(self._oci_runtime),
        )  # fmt: skip

    # -- archives and logs -----------------------------------------------------------------

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        ok = self._call("put_archive", self._api.put_archive, cid, path, data)
        if not ok:
            raise RuntimeError_(f"the engine refused an archive for {path}")

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        stream, _stat = self._call("get_archive", self._api.get_archive, cid, path)
        n = 0
        for chunk in stream:
            n += len(chunk)
            if n > cap:
                raise ArchiveTooLarge(cap)
            sink.write(chunk)
        return n

    @_engine_loss("logs")
    def logs(self, cid: str, cap: int) -> bytes:
        info = self._call("inspect", self._api.inspect_container, cid)
        if info["HostConfig"]["LogConfig"]["Type"] == "none":
            return b""  # what `create` sets: the engine keeps no output to read
        buf = bytearray()
        for chunk in self._api.logs(cid, stream=True, follow=False, stdout=True, stderr=True):
            buf.extend(chunk)
            if len(buf) >= cap:
                break
        return bytes(buf[:cap])

    def oom_killed(self, cid: str) -> bool:
        state = self._call("inspect", self._api.inspect_container, cid).get("State", {})
        if state.get("OOMKilled"):
            return True
        if state.get("Running") or not state.get("StartedAt"):
            return False
        return self._oom_event_logged(cid, str(state["StartedAt"]))

    def _oom_event_logged(self, cid: str, started_at: str) -> bool:
        """Whether the engine logged an `oom` event for the container. Docker 20.10 sets
        `OOMKilled` only if containerd's OOM event arrives before the task's exit; a runsc
        sandbox killed whole at its memory limit can exit first (under a 1-minute load of 8,
        1 run in 12 here: events `die` then `oom`, and `OOMKilled` false for good), while the
        event itself is still logged. Asked only of a stopped container that shows no OOM
        kill, so only the memory-bomb path pays for it."""
        try:
            since = calendar.timegm(time.strptime(started_at[:19], "%Y-%m-%dT%H:%M:%S")) - 1
        except ValueError:
            return False
        events = self._call(
            "events",
            self._api.events,
            since=since,
            until=f"{time.time():.3f}",  # a future `until` would hold the stream open
            filters={"container": cid, "event": "oom"},
            decode=True,
        )
        try:
            for n, event in enumerate(events):
                if isinstance(event, dict) and event.get("Action") == "oom":
                    return True
                if n > 16:
                    break
        except requests.exceptions.RequestException as exc:
            raise self._lost_or_stuck("events", exc) from exc
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        return False

    def limit_events(self, cid: str) -> dict[str, int]:
        """How often the container hit its pids and memory ceilings, read from the host's
        cgroup files. Only a local engine exposes them; elsewhere this returns {} and the
        verdict names the symptom (time, crash) instead of the limit."""
        return cgroup.limit_events(CGROUP_PARENT, cid)

    def processes(self, cid: str) -> list[tuple[int, str]]:
        # `docker top` runs ps on the host over the container's cgroup: the candidate cannot
        # answer for itself, and it works on a frozen container.
        top = self._call("top", self._api.top, cid, ps_args="-o pid,comm")
        rows = top.get("Processes") if isinstance(top, dict) else None
        if not isinstance(rows, list):
            raise RuntimeError_(f"the engine listed no processes for {cid[:12]}")
        out: list[tuple[int, str]] = []
        for row in rows:
            if not (isinstance(row, list) and len(row) >= 2 and str(row[0]).isdigit()):
                raise RuntimeError_(f"the engine's process list for {cid[:12]} is malformed")
            out.append((int(row[0]), str(row[1])))
        return out

    def census(self, cid: str) -> frozenset[int]:
        if self._oci_runtime == "runsc":
            # Inside gVisor every task lives in the sandbox; `docker top` does not list them
            # (Debian's runsc 2022-12 shows its own helpers), so there is no outside view.
            raise CensusUnavailable("runsc: a container's processes cannot be listed from outside")
        group = _cgroup(cid)
        if group.freezable():
            return group.census()
        # No local cgroup files (a remote engine, cgroup v2): the engine freezes and lists.
        self.pause(cid)
        try:
            return frozenset(pid for pid, _ in self.processes(cid))
        finally:
            self._call("unpause", self._api.unpause, cid)
            self._paused.discard(cid)

    def image_digest(self, image: str) -> str:
        if image not in self._digests:
            self._digests[image] = ensure_image_present(self._client, image)
        return self._digests[image]

    # -- garbage (dockergc.py) -------------------------------------------------------------

    @_engine_loss("sweep")
    def sweep(self, grading_id: str | None = None) -> int:
        return dockergc.sweep(self._api, self.remove, grading_id)

    @_engine_loss("gradings")
    def gradings(self) -> set[str]:
        return dockergc.gradings(self._api)

    @_engine_loss("orphans")
    def orphans(self) -> set[str]:
        return dockergc.orphans(self._api)

    @_engine_loss("leftovers")
    def leftovers(self, grading_id: str | None = None) -> list[str]:
        return dockergc.leftovers(self._api, grading_id)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except docker.errors.NotFound as exc:
            raise RuntimeError_(f"{what}: container vanished: {exc}") from exc
        except docker.errors.APIError as exc:
            raise RuntimeError_(f"{what} failed: {exc}") from exc
        except requests.exceptions.RequestException as exc:
            raise self._lost_or_stuck(what, exc) from exc

    def _lost_or_stuck(self, what: str, exc: Exception) -> RuntimeError_ | EngineUnavailableError:
        return lost_or_stuck(self._api, what, exc)
