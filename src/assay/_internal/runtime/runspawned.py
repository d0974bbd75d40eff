"""`Runtime.run` built on `Runtime.spawn`, for a backend to use (public as
`assay.runtime.run_spawned`): the spawned process's stdin written, its stdout and stderr read
under a deadline and an output cap, its exit status waited for, and a container killed past
either drained so that no writer stays blocked on a full pipe."""

from __future__ import annotations

import os
import selectors
import threading
import time
from collections.abc import Callable

from assay.errors import EngineError

from .base import ExecResult, Runtime, Spawned

READ_CHUNK = 65536
STOP_POLL_S = 1.0
"""How long `run_spawned` reads in silence before it asks whether the container stopped (an
engine may hold a stopped container's stream open)."""
STOPPED_READ_S = 0.5
"""How long the output of a container seen stopped is still read before it counts as whole."""
DRAIN_S = 10.0
"""How long a killed container's pipes are read for their end, killing again meanwhile."""


def run_spawned(
    rt: Runtime,
    spawned: Spawned,
    *,
    stdin: bytes,
    deadline: float,
    output_cap: int,
    t0: float,
) -> ExecResult:
    """`Runtime.run` over `Runtime.spawn`, for a backend to build it on: write `stdin` (then
    close it), read stdout and stderr until both end, until they pass `output_cap` bytes
    together or until `deadline` (a `time.monotonic()` instant), whichever comes first, then
    wait for the main process's exit status. Past the cap or the deadline the container is
    killed (`rt.kill`) and the pipes are read to their end, so that no writer stays blocked
    on a full pipe, and the result has no exit code. `t0` is when the call began. Closes
    `spawned`; raises what `rt.kill` and `rt.wait` raise."""
    out, err = bytearray(), bytearray()
    reads = {spawned.stdout.fileno(): out, spawned.stderr.fileno(): err}
    sel = selectors.DefaultSelector()
    pending = memoryview(stdin)
    timed_out = truncated = False
    try:
        if spawned.stdin is not None:
            if pending:
                os.set_blocking(spawned.stdin.fileno(), False)
                sel.register(spawned.stdin.fileno(), selectors.EVENT_WRITE, None)
            else:
                spawned.stdin.close()
        elif pending:
            raise ValueError("stdin given to a container whose spec reads none")
        for fd, buf in reads.items():
            sel.register(fd, selectors.EVENT_READ, buf)
        quiet_since = time.monotonic()
        stopped_by: float | None = None  # when the output may be taken as complete
        while any(key.data is not None for key in sel.get_map().values()):
            now = time.monotonic()
            if stopped_by is not None and now >= stopped_by:
                break
            left = deadline - now
            if left <= 0:
                timed_out = True
                break
            events = sel.select(timeout=min(left, STOP_POLL_S))
            for key, _ in events:
                if key.data is None:
                    pending = _feed(spawned, sel, key.fd, pending)
                    continue
                chunk = os.read(key.fd, READ_CHUNK)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                key.data.extend(chunk)
                if len(out) + len(err) > output_cap:
                    truncated = True
            if truncated:
                break
            if events:
                quiet_since = time.monotonic()
            elif stopped_by is None and time.monotonic() - quiet_since >= STOP_POLL_S:
                # Silent for a while: a container that stopped with its stream still open
                # (gVisor through an engine) must not be waited on until the deadline. What
                # it wrote last is still read, for a moment.
                if rt.wait(spawned.cid, 0.001) is not None:
                    stopped_by = time.monotonic() + STOPPED_READ_S
                quiet_since = time.monotonic()
        code: int | None = None
        if not (timed_out or truncated):
            code = rt.wait(spawned.cid, max(deadline - time.monotonic(), 0.001))
            timed_out = code is None
        if timed_out or truncated:
            # Read on while the kill lands: an engine may not finish a stop while the
            # container's output waits on a full pipe of ours.
            drain = threading.Thread(
                target=_drain, args=(spawned, DRAIN_S, lambda: rt.kill(spawned.cid)), daemon=True
            )
            drain.start()
            try:
                rt.kill(spawned.cid)
            finally:
                drain.join(DRAIN_S + 1)
            rt.wait(spawned.cid, DRAIN_S)
            code = None
        return ExecResult(
            exit_code=code,
            stdout=bytes(out[:output_cap]),
            stderr=bytes(err[: max(output_cap - len(out), 0)]),
            timed_out=timed_out,
            truncated=truncated,
            duration_s=time.monotonic() - t0,
        )
    finally:
        sel.close()
        spawned.close()


def _feed(
    spawned: Spawned, sel: selectors.BaseSelector, fd: int, pending: memoryview
) -> memoryview:
    """One write of `pending` into the process's stdin; closed once all of it is written, or
    once the process will take no more (what it never read is its own loss)."""
    try:
        pending = pending[os.write(fd, pending[:READ_CHUNK]) :]
    except BlockingIOError:
        return pending
    except OSError:
        pending = pending[:0]
    if not pending:
        sel.unregister(fd)
        assert spawned.stdin is not None
        spawned.stdin.close()
    return pending


def _drain(spawned: Spawned, within_s: float, again: Callable[[], None] | None = None) -> None:
    """Read (and drop) stdout and stderr until both end or `within_s` passes; `again` is
    called every half second meanwhile (a kill that may have come too early)."""
    end = time.monotonic() + within_s
    sel = selectors.DefaultSelector()
    try:
        for stream in (spawned.stdout, spawned.stderr):
            if not stream.closed:
                sel.register(stream.fileno(), selectors.EVENT_READ)
        while sel.get_map() and (left := end - time.monotonic()) > 0:
            events = sel.select(timeout=min(left, 0.5))
            for key, _ in events:
                if not os.read(key.fd, READ_CHUNK):
                    sel.unregister(key.fd)
            if not events and again is not None:
                try:
                    again()
                except EngineError:
                    pass  # the caller's own kill says what the engine did
    except (OSError, ValueError):
        pass  # closed under it: nothing more to read
    finally:
        sel.close()
