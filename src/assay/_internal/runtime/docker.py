"""The Docker backend (docker-py). All hardening of real containers is decided here."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from functools import wraps
from pathlib import Path
from typing import Any, BinaryIO, ParamSpec, TypeVar

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import _create_container_args
from docker.types import LogConfig, Mount

from assay.errors import EngineUnavailableError

from .base import (
    AGENT_UID,
    LABEL,
    ROLE_LABEL,
    ArchiveTooLarge,
    CensusUnavailable,
    ContainerSpec,
    ContainerStuckError,
    ExecResult,
    RuntimeError_,
)
from .freezer import freeze
from .images import ensure_image_present
from .oci.seccomp import profile_text
from .owner import OWNER_LABEL, owner_is_dead, this_owner

_CGROUP_EVENTS = (
    ("pids", "pids/docker/{cid}/pids.events", "max"),
    ("memory", "memory/docker/{cid}/memory.oom_control", "oom_kill"),
)
REMOVE_WAIT_S = 10
EXEC_USER_LABEL = "assay.exec-user"
SWITCH_CAPS = ("SETUID", "SETGID", "SETPCAP")
"""All a `switch_user` container holds: the two to switch uids and the one to empty the
bounding set first. Held by its root processes only: init and keep-alive (which no other uid
can signal, trace or open through /proc) and the runner until it drops them. The engine gives
a root exec capabilities only in a container whose own user is root, and runc refuses a
privileged exec under no-new-privileges, so init stays root (measured on Docker 20.10)."""
START_DOCKER_FIX = "run `bash scripts/setup.sh` (installs Docker if needed and starts dockerd)"
STUCK_FIX = (
    "a container's runtime shim stopped answering (see the engine's log); the engine frees it "
    "when dockerd restarts, and `assay gc` then removes what is left"
)


LOG = logging.getLogger("assay")
FREEZER = Path("/sys/fs/cgroup/freezer/docker")


def _cgroup_census(cid: str) -> frozenset[int] | None:
    """The container's processes from the local cgroup v1 freezer: frozen (a process cannot
    fork past the list while it is read), listed, thawed. About a millisecond, against ~60 ms
    for the engine's pause, top and unpause. None where the files do not exist."""
    group = FREEZER / cid
    state = group / "freezer.state"
    if not state.is_file():
        return None
    try:
        if not _freeze(state):  # a process that will not freeze: no census
            raise RuntimeError_(f"container {cid[:12]} would not freeze for its census")
        procs = (group / "cgroup.procs").read_text().split()
    except OSError as exc:
        raise RuntimeError_(f"census of {cid[:12]}: {exc.strerror}") from exc
    finally:
        _thaw(cid)
    return frozenset(int(p) for p in procs)


_freeze = freeze


def _kill_cgroup(cid: str) -> int:
    """SIGKILL, by PID, every process in the container's own cgroup (what the engine's `kill`
    does through the OCI runtime, when that runtime is what stopped answering); how many. The
    group is frozen while it is listed and signalled, so no listed process can exit and have
    its PID reused in between; a group that will not freeze is signalled all the same, a
    moment after it was listed."""
    group = FREEZER / cid
    killed = 0
    try:
        _freeze(group / "freezer.state")
        for pid in (int(p) for p in (group / "cgroup.procs").read_text().split()):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    except (OSError, ValueError):
        pass  # no local cgroup (a remote engine, cgroup v2), or gone already
    finally:
        _thaw(cid)  # a frozen task dies of its SIGKILL once thawed
    return killed


def _thaw(cid: str) -> None:
    try:
        (FREEZER / cid / "freezer.state").write_text("THAWED")
    except OSError:
        pass  # gone, or never frozen here


def connect(timeout: int = 60, max_pool_size: int = 10) -> Any:
    try:
        client = docker.from_env(version="auto", timeout=timeout, max_pool_size=max_pool_size)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineUnavailableError(
            f"no Docker engine answers ({type(exc).__name__})", fix=START_DOCKER_FIX
        ) from exc
    return client


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
        exec_user = "0:0" if spec.switch_user else spec.user
        labels = {
            LABEL: spec.grading_id,
            ROLE_LABEL: spec.role,
            OWNER_LABEL: this_owner(),
            EXEC_USER_LABEL: exec_user,
        }
        mounts = [
            Mount(target=b.target, source=str(b.source), type="bind", read_only=b.read_only)
            for b in spec.binds
        ]
        try:
            for s in spec.scratch:
                vol = self._client.volumes.create(
                    driver="local",
                    driver_opts={
                        "type": "tmpfs",
                        "device": "tmpfs",
                        "o": f"size={s.size_bytes},uid={AGENT_UID},gid={AGENT_UID},mode=0755",
                    },
                    labels=labels,
                )
                mounts.append(Mount(target=s.target, source=vol.name, type="volume"))
            lim = spec.limits
            kwargs: dict[str, Any] = {
                "command": list(spec.command),
                "labels": labels,
                "mounts": mounts,
                "environment": dict(spec.env),
                "working_dir": spec.workdir,
                "init": spec.init,
                "detach": True,
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
                    # command is its init (`init=False`) has no keep-alive to protect: its
                    # command runs as the spec's user, and the container ends with it.
                    user="0:0" if spec.init else spec.user,
                    read_only=True,
                    cap_drop=["ALL"],
                    security_opt=["no-new-privileges", self._seccomp],
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
            if self._oci_runtime:
                kwargs["runtime"] = self._oci_runtime
            if self._oci_runtime == "runsc":
                # Debian's runsc (2022-12) fails to start any container given a pids cgroup
                # limit. Inside gVisor every task lives in the one sandbox process, so the
                # memory limit bounds a fork bomb instead (docs/security.md).
                del kwargs["pids_limit"]
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
        self._users[cid] = exec_user
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
            if not isinstance(stuck, ContainerStuckError) or not (n := _kill_cgroup(cid)):
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
        _thaw(cid)  # a controller killed mid-census must not leave it frozen behind the engine
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
        exec_id = self._call(
            "exec",
            self._api.exec_create,
            cid,
            list(argv),
            stdout=capture,
            stderr=capture,
            environment=dict(env or {}),
            workdir=workdir,
            user=self._exec_user(cid),
        )["Id"]
        if not capture:
            self._call("exec", self._api.exec_start, exec_id, detach=True)
            return self._poll_exec(cid, exec_id, t0, deadline_s)
        out, err = bytearray(), bytearray()
        truncated = threading.Event()
        stream: Iterator[tuple[bytes | None, bytes | None]] = self._call(
            "exec", self._api.exec_start, exec_id, stream=True, demux=True
        )

        settled = threading.Event()  # the stream ended, or went over the cap

        def pump() -> None:
            try:
                for o, e in stream:
                    if truncated.is_set():
                        # Keep draining after the cap: a writer blocked on a full pipe can keep
                        # a runsc sandbox from exiting on kill, and the engine then never
                        # unmounts its volumes.
                        continue
                    if o:
                        out.extend(o)
                    if e:
                        err.extend(e)
                    if len(out) + len(err) > output_cap:
                        truncated.set()
                        settled.set()
            except (requests.exceptions.RequestException, OSError, docker.errors.APIError):
                pass  # the container was killed under us: the exit state tells the rest
            finally:
                settled.set()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        while not settled.wait(timeout=min(max(deadline_s - (time.monotonic() - t0), 0), 1.0)):
            if time.monotonic() - t0 >= deadline_s:
                break
            if not self._running(cid):
                # runsc keeps the stream of a sandbox that stopped open until the deadline
                # (the reader ends when the container is removed).
                return self._exec_gone(cid, t0)
        timed_out = not settled.is_set()
        duration = time.monotonic() - t0
        if keep_container and (timed_out or truncated.is_set()):
            # The caller stops the command (each stream is cut at the cap on its own, so the
            # caller still sees what the command wrote first on stderr); the reader drains
            # until the stream closes.
            return ExecResult(
                None, bytes(out[:output_cap]), bytes(err[:output_cap]),
                timed_out, truncated.is_set(), duration,
            )  # fmt: skip
        if timed_out or truncated.is_set():
            # Past the deadline or over the cap: the only safe stop is the whole container.
            self.kill(cid)
            reader.join(timeout=5)
        else:
            reader.join()
        if timed_out or truncated.is_set():
            exit_code = None  # we killed it; some runtimes (runsc) also drop the exec record
        else:
            record = self._exec_record(exec_id)
            if record is None:
                return self._exec_gone(cid, t0)
            exit_code = record.get("ExitCode")
        return ExecResult(
            exit_code=exit_code if isinstance(exit_code, int) else None,
            stdout=bytes(out[:output_cap]),
            stderr=bytes(err[: max(output_cap - len(out), 0)]),
            timed_out=timed_out,
            truncated=truncated.is_set(),
            duration_s=duration,
        )

    def _poll_exec(self, cid: str, exec_id: str, t0: float, deadline_s: float) -> ExecResult:
        delay = 0.01
        while True:
            info = self._exec_record(exec_id)
            if info is None:
                return self._exec_gone(cid, t0)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return ExecResult(info["ExitCode"], b"", b"", False, False, time.monotonic() - t0)
            if time.monotonic() - t0 >= deadline_s:
                return ExecResult(None, b"", b"", True, False, time.monotonic() - t0)
            time.sleep(delay)
            delay = min(delay * 1.5, 0.1)

    def _exec_record(self, exec_id: str) -> dict[str, Any] | None:
        """The exec's record, or None once the engine has dropped it."""
        try:
            return dict(self._call("exec", self._api.exec_inspect, exec_id))
        except RuntimeError_ as exc:
            if isinstance(exc.__cause__, docker.errors.NotFound):
                return None
            raise

    def _running(self, cid: str) -> bool:
        state = self._call("exec", self._api.inspect_container, cid).get("State") or {}
        return bool(state.get("Running"))

    def _exec_gone(self, cid: str, t0: float) -> ExecResult:
        """The engine lost an exec's record. runsc does so when its whole sandbox stopped (at
        the memory limit, for one); only a stopped container explains it, and the caller
        then asks why (`oom_killed`). In a running container it is an engine fault."""
        if self._running(cid):
            raise RuntimeError_(f"exec: the engine lost a command in running {cid[:12]}")
        return ExecResult(None, b"", b"", False, False, time.monotonic() - t0, exited=True)

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
        return bool(state.get("OOMKilled"))

    def limit_events(self, cid: str) -> dict[str, int]:
        """How often the container hit its pids and memory ceilings, read from the host's
        cgroup files. Only a local engine exposes them; elsewhere this returns {} and the
        verdict names the symptom (time, crash) instead of the limit."""
        events: dict[str, int] = {}
        for name, rel, key in _CGROUP_EVENTS:
            for pattern in (f"/sys/fs/cgroup/{rel}", f"/sys/fs/cgroup/{rel.split('/', 1)[1]}"):
                path = Path(pattern.format(cid=cid))
                try:
                    text = path.read_text()
                except OSError:
                    continue
                for line in text.splitlines():
                    k, _, v = line.partition(" ")
                    if k == key and v.strip().isdigit():
                        events[name] = int(v)
                break
        return events

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
        frozen = _cgroup_census(cid)
        if frozen is not None:
            return frozen
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

    # -- garbage ---------------------------------------------------------------------------

    def _filters(self, grading_id: str | None) -> dict[str, str]:
        return {"label": f"{LABEL}={grading_id}" if grading_id else LABEL}

    @_engine_loss("sweep")
    def sweep(self, grading_id: str | None = None) -> int:
        """Remove everything labelled for the grading; one stuck object does not stop the rest,
        and every failure is reported together at the end."""
        n, failures = 0, []
        for c in self._api.containers(all=True, filters=self._filters(grading_id)):
            try:
                self.remove(c["Id"])
                n += 1
            except ContainerStuckError as exc:
                if exc.removed:
                    n += 1  # gone all the same; `remove` logged how
                else:
                    failures.append(str(exc))
            except RuntimeError_ as exc:
                failures.append(str(exc))
        vols = self._api.volumes(filters=self._filters(grading_id)).get("Volumes") or []
        for v in vols:
            try:
                self._remove_volume(v["Name"])
                n += 1
            except RuntimeError_ as exc:
                failures.append(str(exc))
        if failures:
            raise RuntimeError_(
                f"{len(failures)} object(s) could not be removed: " + "; ".join(failures[:3]),
                fix="see the engine's log; `assay gc --all` retries",
            )
        return n

    def _remove_volume(self, name: str) -> None:
        # gVisor unmounts a sandbox's volumes a moment after the container is gone.
        for attempt in range(50):
            try:
                self._api.remove_volume(name, force=True)
                return
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as exc:
                if "active mounts" not in str(exc) or attempt == 49:
                    raise RuntimeError_(f"could not remove volume {name[:12]}: {exc}") from exc
                time.sleep(0.1)

    @_engine_loss("gradings")
    def gradings(self) -> set[str]:
        items = self._api.containers(all=True, filters=self._filters(None))
        items += self._api.volumes(filters=self._filters(None)).get("Volumes") or []
        return {gid for item in items if (gid := (item.get("Labels") or {}).get(LABEL))}

    @_engine_loss("orphans")
    def orphans(self) -> set[str]:
        """Grading ids whose every labelled container or volume belongs to a dead controller."""
        found: dict[str, bool] = {}
        items = self._api.containers(all=True, filters=self._filters(None))
        items += self._api.volumes(filters=self._filters(None)).get("Volumes") or []
        for item in items:
            labels = item.get("Labels") or {}
            gid = labels.get(LABEL)
            if gid:
                dead = owner_is_dead(labels.get(OWNER_LABEL, ""))
                found[gid] = found.get(gid, True) and dead is True
        return {gid for gid, dead in found.items() if dead}

    @_engine_loss("leftovers")
    def leftovers(self, grading_id: str | None = None) -> list[str]:
        f = self._filters(grading_id)
        names = [f"container:{c['Id'][:12]}" for c in self._api.containers(all=True, filters=f)]
        vols = self._api.volumes(filters=f).get("Volumes") or []
        names += [f"volume:{v['Name'][:12]}" for v in vols]
        names += [f"network:{n['Name']}" for n in self._api.networks(filters=f)]
        return names

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
        """A call that ran out of time while the engine still answers a ping is one container
        stuck in the engine, not a lost engine: that grading fails and a batch goes on, where a
        lost engine stops it."""
        if isinstance(exc, requests.exceptions.ReadTimeout):
            try:
                answers = bool(self._api.ping())
            except (requests.exceptions.RequestException, docker.errors.DockerException):
                answers = False
            if answers:
                return ContainerStuckError(
                    f"{what}: the engine answers, but not this call within its timeout "
                    f"({type(exc).__name__}): a container is stuck in the engine",
                    fix=STUCK_FIX,
                )
        return EngineUnavailableError(
            f"{what}: lost the Docker engine ({type(exc).__name__})", fix=START_DOCKER_FIX
        )
