"""`Runtime.exec` on the Docker engine: an exec created as the container's exec user, its
demultiplexed output read by a thread under the deadline and the cap (the whole container
killed past either, unless the caller keeps it), an uncaptured one polled for its end, and an
exec record the engine lost told apart from a stopped container. Under a runtime that chowns
its stdio (dockerconfig.chowns_stdio) every exec is attached with a stdin of its own, closed at
once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import docker.errors
import requests.exceptions

from . import dockerattach
from .base import ExecResult, RuntimeError_

Call = Callable[..., Any]
"""The runtime's engine call (`DockerRuntime._call`): `call(what, fn, *args, **kwargs)`, the
engine's errors raised as `EngineError`."""


def exec_in(
    call: Call,
    api: Any,
    kill: Callable[[str], None],
    cid: str,
    argv: tuple[str, ...],
    *,
    user: str,
    t0: float,
    deadline_s: float,
    output_cap: int,
    env: Mapping[str, str] | None,
    workdir: str | None,
    capture: bool,
    keep_container: bool,
    own_stdin: bool = False,
) -> ExecResult:
    """`DockerRuntime.exec` from its start at `t0`: `call` and `api` are the runtime's, `kill`
    stops the whole container, `user` is who the command runs as. `own_stdin`: attach a stdin
    and close it at once, so the engine never hands the runtime the host's /dev/null."""
    exec_id = call(
        "exec",
        api.exec_create,
        cid,
        list(argv),
        stdin=own_stdin,
        stdout=capture,
        stderr=capture,
        environment=dict(env or {}),
        workdir=workdir,
        user=user,
    )["Id"]
    if not capture and not own_stdin:
        call("exec", api.exec_start, exec_id, detach=True)
        return _poll_exec(call, api, cid, exec_id, t0, deadline_s)
    conn = call("exec", api.exec_start, exec_id, socket=True)
    if own_stdin:
        dockerattach.shut_stdin(conn)
    if not capture:
        # The connection stays open until the command ends: the engine kills an exec whose
        # attached client went away.
        threading.Thread(target=_drain, args=(conn,), daemon=True).start()
        return _poll_exec(call, api, cid, exec_id, t0, deadline_s)
    out, err = bytearray(), bytearray()
    truncated = threading.Event()
    stream = dockerattach.frames(conn)

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
        if not _running(call, api, cid):
            # runsc keeps the stream of a sandbox that stopped open until the deadline
            # (the reader ends when the container is removed).
            return _exec_gone(call, api, cid, t0)
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
        kill(cid)
        reader.join(timeout=5)
    else:
        reader.join()
    if timed_out or truncated.is_set():
        exit_code = None  # we killed it; some runtimes (runsc) also drop the exec record
    else:
        record = _exec_record(call, api, exec_id)
        if record is None:
            return _exec_gone(call, api, cid, t0)
        exit_code = record.get("ExitCode")
    return ExecResult(
        exit_code=exit_code if isinstance(exit_code, int) else None,
        stdout=bytes(out[:output_cap]),
        stderr=bytes(err[: max(output_cap - len(out), 0)]),
        timed_out=timed_out,
        truncated=truncated.is_set(),
        duration_s=duration,
    )


def _drain(conn: Any) -> None:
    for _ in dockerattach.frames(conn):
        pass


def _poll_exec(
    call: Call, api: Any, cid: str, exec_id: str, t0: float, deadline_s: float
) -> ExecResult:
    delay = 0.01
    while True:
        info = _exec_record(call, api, exec_id)
        if info is None:
            return _exec_gone(call, api, cid, t0)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return ExecResult(info["ExitCode"], b"", b"", False, False, time.monotonic() - t0)
        if time.monotonic() - t0 >= deadline_s:
            return ExecResult(None, b"", b"", True, False, time.monotonic() - t0)
        time.sleep(delay)
        delay = min(delay * 1.5, 0.1)


def _exec_record(call: Call, api: Any, exec_id: str) -> dict[str, Any] | None:
    """The exec's record, or None once the engine has dropped it."""
    try:
        return dict(call("exec", api.exec_inspect, exec_id))
    except RuntimeError_ as exc:
        if isinstance(exc.__cause__, docker.errors.NotFound):
            return None
        raise


def _running(call: Call, api: Any, cid: str) -> bool:
    state = call("exec", api.inspect_container, cid).get("State") or {}
    return bool(state.get("Running"))


def _exec_gone(call: Call, api: Any, cid: str, t0: float) -> ExecResult:
    """The engine lost an exec's record. runsc does so when its whole sandbox stopped (at
    the memory limit, for one); only a stopped container explains it, and the caller
    then asks why (`oom_killed`). In a running container it is an engine fault."""
    if _running(call, api, cid):
        raise RuntimeError_(f"exec: the engine lost a command in running {cid[:12]}")
    return ExecResult(None, b"", b"", False, False, time.monotonic() - t0, exited=True)
