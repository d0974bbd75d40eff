"""The judge's resident worker on the fake runtime: `judge_worker.py`'s protocol, spoken by a
thread, with each step run as the fake runs an exec of `python3 -I /assay/judge.py STEP...`
(the program a test registers under `python3`). Installed for every test by tests/conftest.py,
so every strict grading on `FakeRuntime` goes through `judgepool.Resident` as on an engine.

`FakeWorker` is the honest worker; a test that needs a worker that dies, hangs or answers out
of frame subclasses it (`answer`) and installs it with `install(monkeypatch, cls)`.
"""

from __future__ import annotations

import json
import os
import struct
import threading
from typing import Any

import pytest

from assay._internal.runtime.base import Spawned
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.strict.judgewire import JUDGE_ARGV, PROTOCOL, WORKER_ARGV

LENGTH = struct.Struct(">I")


def frame(header: dict[str, Any], payload: bytes = b"") -> bytes:
    head = json.dumps(header).encode()
    body = LENGTH.pack(len(head)) + head + payload
    return LENGTH.pack(len(body)) + body


class FakeWorker:
    """One worker: reads requests from `rfd`, writes answers to `wfd`."""

    confined = True
    clean = True  # what its steps say of what they left

    def __init__(self, rt: FakeRuntime, c: FakeContainer, rfd: int, wfd: int) -> None:
        self.rt, self.c, self.rfd, self.wfd = rt, c, rfd, wfd
        self.steps = 0

    def serve(self) -> None:
        try:
            self.send(frame({"op": "hello", "worker": PROTOCOL, "confined": self.confined,
                             "pid": 2}))  # fmt: skip
            while (req := self.request()) is not None:
                out = self.answer(req)
                if out is None:  # the worker dies
                    return
                self.send(out)
        except OSError:
            pass
        finally:
            for fd in (self.rfd, self.wfd):
                os.close(fd)
            self.rt._ended(self.c, 0, 0.0)

    def request(self) -> dict[str, Any] | None:
        head = self.read(LENGTH.size)
        if head is None:
            return None
        body = self.read(LENGTH.unpack(head)[0])
        assert body is not None
        return json.loads(body)  # type: ignore[no-any-return]

    def read(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            chunk = os.read(self.rfd, n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view) :]

    def answer(self, req: dict[str, Any]) -> bytes | None:
        """The honest answer; None: the worker dies without one."""
        if req["op"] == "reset":
            return frame({"op": "reset", "clean": True})
        self.steps += 1
        code, out, err, seconds = self.rt._run(self.c, (*JUDGE_ARGV, *req["argv"]), {})
        cap = req["output_cap"]
        timed_out, truncated = seconds > req["deadline_s"], len(out) > cap
        if timed_out or truncated:
            code, out = None, out[:cap]
        err = err[-(64 << 10) :]
        header = {
            "op": req["op"], "exit_code": code, "timed_out": timed_out, "truncated": truncated,
            "clean": self.clean, "duration_s": 0.0, "stdout": len(out), "stderr": len(err),
        }  # fmt: skip
        return frame(header, out + err)


_original_spawn = FakeRuntime.spawn


def install(monkeypatch: pytest.MonkeyPatch, worker: type[FakeWorker] = FakeWorker) -> None:
    """Every `FakeRuntime.spawn` of the judge's worker runs `worker` on a thread."""

    def spawn(self: FakeRuntime, cid: str) -> Spawned:
        c = self._get(cid)
        if c.spec.command != WORKER_ARGV:
            return _original_spawn(self, cid)
        self._spawnable(cid)
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        os.close(err_w)  # the fake worker says nothing on stderr
        w = worker(self, c, in_r, out_w)
        threading.Thread(target=w.serve, daemon=True).start()
        return Spawned(
            cid,
            stdin=os.fdopen(in_w, "wb", buffering=0),
            stdout=os.fdopen(out_r, "rb", buffering=0),
            stderr=os.fdopen(err_r, "rb", buffering=0),
        )

    monkeypatch.setattr(FakeRuntime, "spawn", spawn)
