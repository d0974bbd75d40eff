"""The processes of a runc-backend container, each through the OCI runtime's command line:
`run` in the foreground waited on until its pid file shows the container started (`start`),
or given the main process's stdio as pipes this process holds (`spawn`), and `exec` with its
process file, its output collected under the deadline and the cap, and its failure told apart
from a container that stopped."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from assay.errors import EngineError

from ..base import ExecResult, Spawned
from . import bundle
from .client import STOP_WAIT_S, Client, Flavour, collect, drain_and_reap, log_errors
from .host import Meta
from .populate import NOFILE

START_WAIT_S = 30.0


def wait_started(
    name: str, cid: str, shim: subprocess.Popen[bytes], pid_file: Path, log: Path
) -> None:
    """Wait for the container `cid`, whose `run` is `shim`, to write its pid file; raises
    `EngineError` with what `log` says if `run` ends first, or after `START_WAIT_S`."""
    deadline = time.monotonic() + START_WAIT_S
    delay = 0.0005
    while not pid_file.exists():
        if shim.poll() is not None:
            if pid_file.exists():
                return  # started and already done (a command as PID 1 that exits at once)
            raise EngineError(f"{name} could not start {cid[:12]}: {log_errors(log)}")
        if time.monotonic() > deadline:
            raise EngineError(f"{name} did not start {cid[:12]} within {START_WAIT_S:.0f} s")
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def spawn_piped(
    cli: Client,
    cid: str,
    d: Path,
    *,
    stdin: bool,
    run_flags: tuple[str, ...],
    flags: tuple[str, ...],
    started: Callable[[subprocess.Popen[bytes]], None],
) -> Spawned:
    """`run` the container `cid` of directory `d` with pipes for its main process's stdout,
    stderr and (with `stdin`) stdin; `started` is told of the runtime's process before the
    `Spawned` is made of this process's ends."""
    ours: list[int] = []  # this process's ends
    theirs: list[int] = []  # the runtime's, closed here once it holds them
    try:
        out_r, out_w = os.pipe()
        ours.append(out_r)
        theirs.append(out_w)
        err_r, err_w = os.pipe()
        ours.append(err_r)
        theirs.append(err_w)
        in_r, in_w = os.pipe() if stdin else (subprocess.DEVNULL, -1)
        if in_w >= 0:
            ours.append(in_w)
            theirs.append(in_r)
        shim = cli.run(
            cid, d, d / "run.log", run_flags=run_flags, flags=flags, stdio=(in_r, out_w, err_w)
        )
    except BaseException:
        for fd in ours + theirs:
            os.close(fd)
        raise
    for fd in theirs:
        os.close(fd)
    started(shim)
    return Spawned(
        cid,
        stdin=os.fdopen(in_w, "wb", buffering=0) if in_w >= 0 else None,
        stdout=os.fdopen(out_r, "rb", buffering=0),
        stderr=os.fdopen(err_r, "rb", buffering=0),
    )


def exec_in(
    cli: Client,
    flavour: Flavour,
    kill: Callable[[str], None],
    cid: str,
    d: Path,
    meta: Meta,
    shim: subprocess.Popen[bytes] | None,
    argv: tuple[str, ...],
    *,
    t0: float,
    deadline_s: float,
    output_cap: int,
    env: Mapping[str, str] | None,
    workdir: str | None,
    capture: bool,
    keep_container: bool,
) -> ExecResult:
    """`OciRuntime.exec` in the running container `cid` (directory `d`, its `meta`, `shim` its
    `run` if this process started it) from its start at `t0`; `kill` stops the whole
    container."""
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
        proc = cli.exec(cid, proc_file, log, capture=capture)
        out, err, timed_out, truncated = collect(proc, t0 + deadline_s, output_cap, capture)
        if (timed_out or truncated) and keep_container:
            threading.Thread(target=drain_and_reap, args=(proc,), daemon=True).start()
            return ExecResult(
                None, bytes(out[:output_cap]), bytes(err[:output_cap]),
                timed_out, truncated, time.monotonic() - t0,
            )  # fmt: skip
        if timed_out or truncated:
            kill(cid)
            drain_and_reap(proc)
            return ExecResult(
                None, bytes(out[:output_cap]), bytes(err[: max(output_cap - len(out), 0)]),
                timed_out, truncated, time.monotonic() - t0,
            )  # fmt: skip
        code = proc.wait()
        failure = log_errors(log)
        if failure and flavour.could_not_start(failure):
            # The command could not start (no such binary, no such working directory):
            # the command's failure, as Docker reports it (exit 126, the reason on
            # stderr), not the runtime's.
            return ExecResult(
                126, b"", f"OCI runtime exec failed: {failure}".encode()[:output_cap],
                False, False, time.monotonic() - t0,
            )  # fmt: skip
        if failure:
            if shim is not None and _stopped(flavour, shim, failure):
                return ExecResult(None, b"", b"", False, False, time.monotonic() - t0, exited=True)
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


def _stopped(flavour: Flavour, shim: subprocess.Popen[bytes], failure: str) -> bool:
    """Whether an exec failed (with `failure`) because the container had stopped."""
    word = flavour.dies_first
    if word is not None and shim.poll() is None and word in failure:
        # `runsc exec` learns of a sandbox that died under it (killed at its memory
        # limit) as a broken connection, before `runsc run` has noticed and exited: give
        # it that time.
        try:
            shim.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
    return shim.poll() is not None
