"""The controller's side of the resident judge's protocol (`assay-judge-worker/1`).

The judge container's main process is `_incontainer/judge_worker.py`; the controller holds its
stdin and stdout as pipes. Each request is one frame (a 4-byte big-endian length, then a JSON
object) and gets one framed response: a 4-byte header length, a JSON header, then the step's
stdout and stderr bytes, counted in the header. The worker is trusted code, but its answer
comes out of a container where task code ran on the candidate's bytes, so it is read like any
other bytes from there: with a deadline, a cap on every length before anything is read, exact
header fields, and nothing taken on trust. The in-container worker imports nothing of assay;
tests/unit/test_judge_worker.py holds its constants to these.

Any answer that is not exactly a response to the request (none before the deadline, EOF, a
length past its cap, a header that is not the one expected) is a `WorkerFault`: no result, and
the judge is never used again. A step that ran and failed is a result (its exit code, or
`timed_out`/`truncated` when the worker killed it at its deadline or output cap), as an exec's
was.
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Any, BinaryIO

from ...model.strict_json import StrictJSONError, exact_fields, loads_strict
from ...runtime import ExecResult, RuntimeError_

PROTOCOL = "assay-judge-worker/1"
LENGTH = struct.Struct(">I")
REQUEST_CAP = 64 << 10
HEADER_CAP = 4 << 10
OUTPUT_CAP = 32 << 20
STDERR_CAP = 64 << 10
WORKER_ARGV = ("python3", "-I", "/assay/judge_worker.py")
JUDGE_ARGV = ("python3", "-I", "/assay/judge.py")
"""How the tier writes a judge step; the worker takes the rest (`prepare ...`, `compare ...`)."""
HELLO_DEADLINE_S = 60.0
"""The worker's start: an interpreter and the judge's modules, on a loaded machine."""
GRACE_S = 30.0
"""Past a step's own deadline: the worker's kill of what the step left (5 s at most) and the
emptying of its scratch, before its answer is overdue."""
RESET_DEADLINE_S = 20.0
LOG_TAIL = 4096
HELLO_FIELDS = frozenset({"op", "worker", "confined", "pid"})
STEP_FIELDS = frozenset(
    {"op", "exit_code", "timed_out", "truncated", "clean", "duration_s", "stdout", "stderr"}
)
RESET_FIELDS = frozenset({"op", "clean"})


class WorkerFault(RuntimeError_):
    """The judge's worker died, hung or answered out of frame: no result, and the grading that
    was using it ends without a verdict (an infrastructure error, never a verdict on the
    submission). `gone`: it closed its end before a single byte of the answer, as a worker
    killed with its container does."""

    def __init__(self, message: str, gone: bool = False) -> None:
        super().__init__(f"the judge's worker {message}")
        self.gone = gone


@dataclass(frozen=True)
class Hello:
    confined: bool
    """The worker keeps a uid its steps never have (docs/security.md): only such a judge is
    lent to a second grading."""
    pid: int


@dataclass(frozen=True)
class Stepped:
    result: ExecResult
    clean: bool
    """Every process of the step is gone and its scratch is empty; if not, the judge serves
    this grading to its end and no other."""


class Channel:
    """The controller's two pipes to one worker. Not thread-safe: one grading uses it at a
    time (the pool lends a judge to one grading)."""

    def __init__(self, requests: BinaryIO, responses: BinaryIO, log: BinaryIO | None) -> None:
        """`requests`/`responses`: the worker's stdin and stdout; `log`: its stderr, read
        while an answer is awaited (a worker blocked on a full pipe would never answer), of
        which the last bytes name what went wrong in a fault's message."""
        self._requests, self._responses, self._log = requests, responses, log
        self._wfd, self._rfd = requests.fileno(), responses.fileno()
        self._efd = log.fileno() if log is not None else None
        for fd in (self._wfd, self._rfd, self._efd):
            if fd is not None:
                os.set_blocking(fd, False)
        self.hello: Hello | None = None
        self.broken = False
        self.said = bytearray()
        """The last LOG_TAIL bytes of the worker's stderr."""

    def greet(self) -> Hello:
        """The worker's hello, read once (it is sent before anything else)."""
        if self.hello is None:
            header, payload = self._answer(time.monotonic() + HELLO_DEADLINE_S, 0)
            fields = self._fields(header, HELLO_FIELDS, "hello", payload)
            confined, pid = fields["confined"], fields["pid"]
            if fields["worker"] != PROTOCOL or not isinstance(confined, bool) or not _int(pid):
                raise self._fault(f"said hello as {str(fields['worker'])[:40]!r}")
            self.hello = Hello(confined, pid)
        return self.hello

    def step(
        self, grading: str, argv: tuple[str, ...], deadline_s: float, output_cap: int
    ) -> Stepped:
        """Run the judge's `argv` (`python3 -I /assay/judge.py prepare|compare ...`) as a step
        of `grading`; its result as an exec's would be."""
        if argv[: len(JUDGE_ARGV)] != JUDGE_ARGV or len(argv) <= len(JUDGE_ARGV):
            raise ValueError(f"not a judge step: {argv[:4]!r}")
        if not 0 <= output_cap <= OUTPUT_CAP:
            raise ValueError(f"output cap {output_cap} past the worker's {OUTPUT_CAP}")
        op = argv[len(JUDGE_ARGV)]
        self.greet()
        self._send(
            {"op": op, "grading": grading, "argv": list(argv[len(JUDGE_ARGV) :]),
             "deadline_s": deadline_s, "output_cap": output_cap},
            time.monotonic() + GRACE_S,
        )  # fmt: skip
        header, payload = self._answer(time.monotonic() + deadline_s + GRACE_S, output_cap)
        f = self._fields(header, STEP_FIELDS, op)
        code, n_out, n_err = f["exit_code"], f["stdout"], f["stderr"]
        flags = (f["timed_out"], f["truncated"], f["clean"])
        duration = f["duration_s"]
        if not (
            all(isinstance(x, bool) for x in flags)
            and (code is None or (_int(code) and -64 <= code <= 255))
            and (code is None) == (f["timed_out"] or f["truncated"])
            and _int(n_out) and 0 <= n_out <= output_cap
            and _int(n_err) and 0 <= n_err <= STDERR_CAP
            and n_out + n_err == len(payload)
            and (not f["truncated"] or n_out == output_cap)
            and isinstance(duration, (int, float)) and not isinstance(duration, bool)
            and math.isfinite(duration) and duration >= 0
        ):  # fmt: skip
            raise self._fault(f"answered {op} with an inconsistent header")
        res = ExecResult(
            exit_code=code, stdout=payload[:n_out], stderr=payload[n_out:],
            timed_out=f["timed_out"], truncated=f["truncated"], duration_s=float(duration),
        )  # fmt: skip
        return Stepped(res, f["clean"])

    def reset(self) -> bool:
        """Between two gradings: True when the worker proved nothing of the last one runs and
        every writable place is empty."""
        self.greet()
        self._send({"op": "reset"}, time.monotonic() + GRACE_S)
        header, payload = self._answer(time.monotonic() + RESET_DEADLINE_S, 0)
        clean = self._fields(header, RESET_FIELDS, "reset", payload)["clean"]
        if not isinstance(clean, bool):
            raise self._fault("answered reset with an inconsistent header")
        return clean

    def gone(self) -> bool:
        """Whether the worker has already closed its end, or said something unasked (checked
        before an idle judge is lent: a judge killed between gradings is not)."""
        if self.broken:
            return True
        poll = select.poll()
        poll.register(self._rfd, select.POLLIN)
        return bool(poll.poll(0))

    def close(self) -> None:
        """The controller's ends: the worker reads EOF and exits, if it still runs."""
        self.broken = True
        for fh in (self._requests, self._responses, self._log):
            if fh is None:
                continue
            try:
                fh.close()
            except OSError:
                pass

    # -- frames ---------------------------------------------------------------------------

    def _send(self, request: dict[str, Any], end: float) -> None:
        if self.broken:  # nothing after an answer out of frame can be trusted to line up
            raise WorkerFault("answered out of frame before, or its pipes are closed")
        body = _json(request)
        if len(body) > REQUEST_CAP:
            raise ValueError(f"a judge request of {len(body)} bytes")
        data = memoryview(LENGTH.pack(len(body)) + body)
        while data:
            self._wait(self._wfd, end, write=True)
            try:
                n = os.write(self._wfd, data)
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise self._fault("is gone (its pipe is closed)", gone=True) from None
            except OSError as exc:
                raise self._fault(f"cannot be written to ({exc.strerror})") from None
            data = data[n:]

    def _answer(self, end: float, output_cap: int) -> tuple[Any, bytes]:
        """(header, payload) of the next response, every length checked against its cap
        before the bytes it counts are read."""
        head = self._read(LENGTH.size, end, first=True)
        (size,) = LENGTH.unpack(head)
        most = LENGTH.size + HEADER_CAP + output_cap + STDERR_CAP
        if not LENGTH.size < size <= most:
            raise self._fault(f"answered a frame of {size} bytes (at most {most})")
        body = self._read(size, end)
        (hsize,) = LENGTH.unpack(body[: LENGTH.size])
        if not 0 < hsize <= min(HEADER_CAP, size - LENGTH.size):
            raise self._fault(f"answered a header of {hsize} bytes")
        try:
            header = loads_strict(body[LENGTH.size : LENGTH.size + hsize], max_bytes=HEADER_CAP)
        except StrictJSONError as exc:
            raise self._fault(f"answered a header that is not JSON ({exc.code})") from None
        return header, body[LENGTH.size + hsize :]

    def _read(self, n: int, end: float, first: bool = False) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            self._wait(self._rfd, end)
            try:
                chunk = os.read(self._rfd, min(n - len(buf), 1 << 20))
            except BlockingIOError:
                continue
            except OSError as exc:
                raise self._fault(f"cannot be read from ({exc.strerror})") from None
            if not chunk:
                gone = first and not buf
                raise self._fault("is gone (EOF)" if gone else "cut its answer short", gone)
            buf += chunk
        return bytes(buf)

    def _wait(self, fd: int, end: float, write: bool = False) -> None:
        left = end - time.monotonic()
        if left <= 0:
            raise self._fault("did not answer before its deadline")
        # poll, not select: a controller serving many connections has descriptors past 1024.
        poll = select.poll()
        poll.register(fd, select.POLLOUT if write else select.POLLIN)
        if self._efd is not None:
            poll.register(self._efd, select.POLLIN)
        for ready, _ in poll.poll(max(1, math.ceil(left * 1000))):
            if ready == self._efd:
                self._listen()

    def _listen(self) -> None:
        """Take what the worker wrote on stderr, keeping the last LOG_TAIL bytes."""
        assert self._efd is not None
        try:
            chunk = os.read(self._efd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # its end is closed: nothing more will come
            self._efd = None
            return
        self.said += chunk
        del self.said[:-LOG_TAIL]

    def _fields(
        self, header: Any, fields: frozenset[str], op: str, payload: bytes | None = None
    ) -> dict[str, Any]:
        """The header's fields, exactly `fields`, for `op`; `payload`, when given, must be
        empty (only a step's answer carries bytes)."""
        try:
            obj = exact_fields(header, fields, "the judge worker's answer")
        except StrictJSONError as exc:
            raise self._fault(f"answered {op} with a bad header ({exc.code})") from None
        if obj["op"] != op:
            raise self._fault(f"answered {str(obj['op'])[:20]!r} to {op!r}")
        if payload:
            raise self._fault(f"answered {op} with {len(payload)} bytes it should not have")
        return obj

    def _fault(self, message: str, gone: bool = False) -> WorkerFault:
        self.broken = True  # nothing later in its stream can be trusted to line up
        if self._efd is not None:
            self._listen()
        said = bytes(self.said[-400:]).decode("utf-8", "replace").strip()
        if said:
            message += f"; it said: {said.encode('unicode_escape').decode('ascii')}"
        return WorkerFault(message, gone)


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _json(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()
