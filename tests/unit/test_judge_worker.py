"""The judge's resident worker (`_incontainer/judge_worker.py`), run for real as a local process
(`--local`: no uid switch and no `kill(-1)` outside a container; the isolation that needs a
container is shown in tests/docker/test_judgepool_docker.py), with a judge.py of the test's own
beside it; and the controller's side of its protocol (`judgewire.Channel`) against workers that
die, hang or answer out of frame.

What a grading leaves must not reach the next: each step runs in a child forked from a worker
that never loaded task code, everything the step started is killed after it, its scratch
emptied, and `reset` empties the grading's own places too.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay._incontainer import judge_worker
from assay._internal.tiers.strict import judgewire
from assay._internal.tiers.strict.judgewire import JUDGE_ARGV, Channel, WorkerFault

WORKER = Path(judge_worker.__file__)
LENGTH = struct.Struct(">I")

# A judge.py of the test's own: each flag of `compare` does one thing a step may do.
FAKE_JUDGE = r"""
import os, signal, subprocess, sys, time

SEEN = []  # module state: a step that finds something here inherited it


def main():
    argv = sys.argv[1:]
    op, flags = argv[0], argv[1:]
    places = os.environ["PLACES"]
    report = {
        "op": op,
        "seen": list(SEEN),
        "env": os.environ.get("PLANTED"),
        "files": {d: sorted(os.listdir(os.path.join(places, d)))
                  for d in ("tmp", "shm", "state", "exchange")},
        "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
        "stdin": os.readlink("/proc/self/fd/0"),
        "argv0": sys.argv[0],
    }
    if "--alive" in flags:
        pid = int(flags[flags.index("--alive") + 1])
        try:
            with open(f"/proc/{pid}/stat") as fh:
                report["alive"] = fh.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            report["alive"] = False
    if "--plant" in flags:
        SEEN.append("planted")
        os.environ["PLANTED"] = "yes"
        for d in ("tmp", "shm", "state", "exchange"):
            os.makedirs(os.path.join(places, d, "sub", "deeper"))
            with open(os.path.join(places, d, "sub", "deeper", "f"), "w") as fh:
                fh.write("planted")
            os.chmod(os.path.join(places, d, "sub"), 0o500)  # the worker empties it anyway
        bg = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        report["background"] = bg.pid
    if "--stderr" in flags:
        sys.stderr.write("e" * int(flags[flags.index("--stderr") + 1]))
    if "--flood" in flags:
        sys.stdout.write("x" * int(flags[flags.index("--flood") + 1]))
        sys.stdout.flush()
        return
    if "--sleep" in flags:
        time.sleep(float(flags[flags.index("--sleep") + 1]))
    if "--signal" in flags:
        os.kill(os.getpid(), signal.SIGKILL)
    if "--raise" in flags:
        raise ValueError("a judge bug")
    import json
    sys.stdout.write(json.dumps(report))
    if "--exit" in flags:
        sys.exit(int(flags[flags.index("--exit") + 1]))
"""


class Local:
    """A worker started as the controller starts one, on pipes, beside FAKE_JUDGE."""

    def __init__(self, root: Path) -> None:
        here = root / "assay"
        here.mkdir()
        shutil.copy(WORKER, here / "judge_worker.py")
        (here / "judge.py").write_text(FAKE_JUDGE)
        self.places = root / "places"
        for d in ("tmp", "shm", "state", "exchange"):
            (self.places / d).mkdir(parents=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(here / "judge_worker.py"), "--local", str(self.places)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PLACES": str(self.places)}, cwd=root,
        )  # fmt: skip
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self.channel = Channel(self.proc.stdin, self.proc.stdout, self.proc.stderr)

    def step(self, *argv: str, grading: str = "g-1", cap: int = 1 << 20, deadline: float = 20):
        return self.channel.step(grading, (*JUDGE_ARGV, *argv), deadline, cap)

    def report(self, *argv: str, grading: str = "g-1") -> dict[str, Any]:
        stepped = self.step(*argv, grading=grading)
        assert stepped.result.exit_code == 0, stepped.result.stderr
        return json.loads(stepped.result.stdout)  # type: ignore[no-any-return]

    def raw(self, data: bytes) -> tuple[int, bytes]:
        """Write `data` to the worker as it is, close its stdin: its exit status, what it
        answered after its hello."""
        assert self.proc.stdin and self.proc.stdout
        self.channel.greet()
        os.set_blocking(self.proc.stdin.fileno(), True)
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        os.set_blocking(self.proc.stdout.fileno(), True)
        out = self.proc.stdout.read()
        return self.proc.wait(20), out

    def close(self) -> int:
        self.channel.close()
        return self.proc.wait(20)


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Local]:
    w = Local(tmp_path)
    try:
        yield w
    finally:
        w.channel.close()
        if w.proc.poll() is None:
            w.proc.kill()
        w.proc.wait()


def _request(obj: Any) -> bytes:
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return LENGTH.pack(len(body)) + body


STEP = {"op": "compare", "grading": "g-1", "argv": ["compare"], "deadline_s": 5, "output_cap": 64}


def test_the_worker_and_the_controller_agree_on_the_protocol() -> None:
    for name in ("PROTOCOL", "REQUEST_CAP", "HEADER_CAP", "OUTPUT_CAP", "STDERR_CAP"):
        assert getattr(judge_worker, name) == getattr(judgewire, name), name
    assert judge_worker.LENGTH.format == judgewire.LENGTH.format
    assert judgewire.WORKER_ARGV[-1] == "/assay/judge_worker.py"
    assert judgewire.JUDGE_ARGV[-1] == "/assay/judge.py"
    # The controller asks no more of a step than the worker may send back.
    from assay._internal.tiers.strict.grade import MAX_INPUTS_BYTES, MAX_REPORT_BYTES

    assert max(MAX_INPUTS_BYTES, MAX_REPORT_BYTES) <= judgewire.OUTPUT_CAP


def test_a_step_runs_judge_py_in_a_child_and_answers_its_bytes(worker: Local) -> None:
    hello = worker.channel.greet()
    assert hello.confined is False and hello.pid == worker.proc.pid  # --local: no uid switch
    stepped = worker.step("compare", "--stderr", "5")
    res = stepped.result
    assert (res.exit_code, res.timed_out, res.truncated, stepped.clean) == (0, False, False, True)
    report = json.loads(res.stdout)
    assert res.stderr == b"eeeee"
    # judge.py runs as `python3 -I /assay/judge.py compare ...` would: its own argv ...
    assert report["op"] == "compare" and report["argv0"].endswith("judge.py")
    # ... on /dev/null, holding nothing but its stdin, stdout and stderr (not the worker's
    # request and response pipes), plus the one `listdir` opened.
    assert report["stdin"] == "/dev/null"
    assert len(report["fds"]) == 4 and report["fds"][:3] == [0, 1, 2]
    assert worker.close() == 0  # EOF between frames: a clean exit


def test_exit_codes_signals_and_exceptions_are_the_steps_own(worker: Local) -> None:
    assert worker.step("compare", "--exit", "3").result.exit_code == 3
    assert worker.step("compare", "--signal").result.exit_code == -9
    raised = worker.step("compare", "--raise").result
    assert raised.exit_code == 1 and b"ValueError: a judge bug" in raised.stderr
    # The worker is unharmed: a step after them answers as ever.
    assert worker.report("compare")["seen"] == []


def test_a_step_past_its_output_cap_is_killed_and_cut_at_the_cap(worker: Local) -> None:
    res = worker.step("compare", "--flood", str(5 << 20), cap=1 << 20).result
    assert (res.exit_code, res.truncated, len(res.stdout)) == (None, True, 1 << 20)
    exact = worker.step("compare", "--flood", str(1 << 20), cap=1 << 20).result
    assert (exact.exit_code, exact.truncated, len(exact.stdout)) == (0, False, 1 << 20)
    big = worker.step("compare", "--flood", str(9 << 20), cap=16 << 20).result
    assert big.exit_code == 0 and big.stdout == b"x" * (9 << 20)


def test_a_step_past_its_deadline_is_killed_and_says_so(worker: Local) -> None:
    t0 = time.monotonic()
    res = worker.step("compare", "--sleep", "60", deadline=0.5).result
    assert (res.exit_code, res.timed_out) == (None, True) and time.monotonic() - t0 < 10


def test_stderr_is_its_last_bytes_only(worker: Local) -> None:
    res = worker.step("compare", "--stderr", str(1 << 20)).result
    assert res.exit_code == 0 and res.stderr == b"e" * judge_worker.STDERR_CAP


def test_nothing_a_step_leaves_reaches_the_next(worker: Local) -> None:
    """Memory (a module's state), the environment, a background process, files in every place:
    the next step, of the same grading or of the next, sees none of it, except what a grading
    keeps for itself between its prepare and its compare (/state, /exchange) until `reset`."""
    planted = worker.report("compare", "--plant")
    assert planted["seen"] == [] and planted["env"] is None
    pid = planted["background"]
    same = worker.report("compare", "--alive", str(pid))
    assert same["seen"] == [] and same["env"] is None and same["alive"] is False
    assert same["files"] == {"tmp": [], "shm": [], "state": ["sub"], "exchange": ["sub"]}
    assert worker.channel.reset() is True
    nxt = worker.report("compare", grading="g-2")
    assert nxt["files"] == {"tmp": [], "shm": [], "state": [], "exchange": []}
    assert nxt["seen"] == [] and nxt["env"] is None


def test_what_appears_in_an_idle_judge_is_gone_before_the_next_grading(worker: Local) -> None:
    """The reset at a grading's end is proven to the controller; the worker resets again at
    the next grading's first request, so even what started in the idle judge meanwhile (only
    an exec of the controller's could) never reaches it."""
    worker.report("compare", grading="g-1")
    assert worker.channel.reset() is True
    for d in ("tmp", "state", "exchange"):
        (worker.places / d / "left").write_text("x")
    first = worker.report("prepare", grading="g-2")
    assert first["files"] == {"tmp": [], "shm": [], "state": [], "exchange": []}
    # Within a grading its own places carry from prepare to compare.
    (worker.places / "state" / "cases.json").write_text("[]")
    assert worker.report("compare", grading="g-2")["files"]["state"] == ["cases.json"]


def test_a_worker_serves_one_grading_between_two_resets(worker: Local) -> None:
    worker.report("compare", grading="g-1")
    with pytest.raises(WorkerFault, match="gone"):
        worker.step("compare", grading="g-2")
    assert worker.proc.wait(20) == 2
    assert b"another grading before a reset" in worker.channel.said


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            _request(b'{"op": "reset"}'.ljust(judge_worker.REQUEST_CAP + 1)), id="oversize"
        ),
        pytest.param(LENGTH.pack(0), id="empty"),
        pytest.param(LENGTH.pack(1 << 31), id="huge-length"),
        pytest.param(b"\x00\x00", id="length-cut-short"),
        pytest.param(LENGTH.pack(100) + b'{"op": "reset"}', id="body-cut-short"),
        pytest.param(_request(b"\xff\xfe not json"), id="garbage"),
        pytest.param(_request(b'{"op": "reset", "op": "reset"}'), id="duplicate-key"),
        pytest.param(_request([1, 2]), id="not-an-object"),
        pytest.param(_request({"op": "exec", "argv": ["sh"]}), id="unknown-op"),
        pytest.param(_request({"op": "reset", "x": 1}), id="reset-with-more"),
        pytest.param(_request({**STEP, "extra": 1}), id="extra-key"),
        pytest.param(_request({**STEP, "argv": ["prepare"]}), id="argv-not-its-op"),
        pytest.param(_request({**STEP, "argv": ["compare", 1]}), id="argv-not-strings"),
        pytest.param(_request({**STEP, "argv": ["compare", "a\0b"]}), id="argv-with-nul"),
        pytest.param(_request({**STEP, "argv": ["compare"] * 65}), id="argv-too-long"),
        pytest.param(_request({**STEP, "grading": ""}), id="no-grading"),
        pytest.param(_request({**STEP, "deadline_s": 0}), id="no-deadline"),
        pytest.param(_request({**STEP, "deadline_s": True}), id="deadline-bool"),
        pytest.param(
            _request(
                b'{"op": "compare", "grading": "g", "argv": ["compare"], '
                b'"deadline_s": NaN, "output_cap": 1}'
            ),
            id="deadline-nan",
        ),
        pytest.param(_request({**STEP, "output_cap": judge_worker.OUTPUT_CAP + 1}), id="cap"),
        pytest.param(_request({**STEP, "output_cap": -1}), id="negative-cap"),
    ],
)
def test_a_request_out_of_frame_ends_the_worker_without_an_answer(
    worker: Local, data: bytes
) -> None:
    code, answered = worker.raw(data)
    assert (code, answered) == (2, b"")


def test_eof_between_frames_is_a_clean_end(worker: Local) -> None:
    worker.report("compare")
    assert worker.raw(b"") == (0, b"")


# -- the controller's side: a worker that dies, hangs or answers out of frame -------------


class Scripted:
    """A 'worker' that answers each request with the bytes a test scripted, on real pipes."""

    def __init__(self, answers: list[bytes | None], hello: bytes | None = None) -> None:
        self.in_r, in_w = os.pipe()
        out_r, self.out_w = os.pipe()
        err_r, self.err_w = os.pipe()
        self.channel = Channel(
            os.fdopen(in_w, "wb", 0), os.fdopen(out_r, "rb", 0), os.fdopen(err_r, "rb", 0)
        )
        self.answers = answers
        first = hello if hello is not None else _frame(_hello())
        self.thread = threading.Thread(target=self.serve, args=(first,), daemon=True)
        self.thread.start()

    def serve(self, first: bytes) -> None:
        try:
            os.write(self.out_w, first)
            for answer in self.answers:
                head = os.read(self.in_r, 4)
                if len(head) < 4:
                    return
                os.read(self.in_r, LENGTH.unpack(head)[0])
                if answer is None:  # hang: never answer, keep the pipe open
                    time.sleep(30)
                    return
                os.write(self.err_w, b"worker says hi\n")
                os.write(self.out_w, answer)
        except OSError:
            pass
        finally:
            for fd in (self.in_r, self.out_w, self.err_w):
                try:
                    os.close(fd)
                except OSError:
                    pass


def _hello(**over: Any) -> dict[str, Any]:
    return {"op": "hello", "worker": judgewire.PROTOCOL, "confined": True, "pid": 2, **over}


def _answer(out: bytes = b"{}", err: bytes = b"", **over: Any) -> dict[str, Any]:
    return {"op": "compare", "exit_code": 0, "timed_out": False, "truncated": False,
            "clean": True, "duration_s": 0.1, "stdout": len(out), "stderr": len(err), **over}  # fmt: skip


def _frame(header: Any, payload: bytes = b"", hlen: int | None = None) -> bytes:
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    body = LENGTH.pack(len(head) if hlen is None else hlen) + head + payload
    return LENGTH.pack(len(body)) + body


def _compare(w: Scripted, cap: int = 1024, deadline: float = 5) -> judgewire.Stepped:
    return w.channel.step("g-1", (*JUDGE_ARGV, "compare"), deadline, cap)


def test_an_honest_answer_is_read_whole() -> None:
    w = Scripted([_frame(_answer(b'{"a": 1}', b"warn"), b'{"a": 1}warn')])
    stepped = _compare(w)
    assert stepped.result.stdout == b'{"a": 1}' and stepped.result.stderr == b"warn"
    assert stepped.result.exit_code == 0 and stepped.clean


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        pytest.param(LENGTH.pack(1 << 31), "frame of", id="length-past-any-cap"),
        pytest.param(LENGTH.pack(4 + 4096 + 1024 + (64 << 10) + 1), "frame of", id="too-much"),
        pytest.param(LENGTH.pack(3) + b"abc", "frame of", id="too-short"),
        pytest.param(_frame(_answer(), b"{}", hlen=5000), "header of", id="header-too-long"),
        pytest.param(_frame(b"not json", b""), "not JSON", id="garbage"),
        pytest.param(_frame(b'{"op": "compare", "op": "x"}'), "not JSON", id="duplicate-key"),
        pytest.param(_frame({**_answer(), "x": 1}, b"{}"), "bad header", id="extra-field"),
        pytest.param(_frame({**_answer(), "op": "prepare"}, b"{}"), "'prepare'", id="other-op"),
        pytest.param(_frame(_answer(b"{}", stdout=3), b"{}"), "inconsistent", id="count"),
        pytest.param(_frame(_answer(b"x" * 2000), b"x" * 2000), "inconsistent", id="over-cap"),
        pytest.param(_frame(_answer(exit_code=None), b"{}"), "inconsistent", id="no-exit"),
        pytest.param(_frame(_answer(truncated=True), b"{}"), "inconsistent", id="cut-with-exit"),
        pytest.param(_frame(_answer(exit_code=True), b"{}"), "inconsistent", id="exit-bool"),
        pytest.param(_frame(_answer(clean="yes"), b"{}"), "inconsistent", id="clean-not-bool"),
        pytest.param(_frame(_answer(duration_s=-1), b"{}"), "inconsistent", id="negative-time"),
        pytest.param(_frame(_answer(b"{}"), b"{}")[:-1], "cut its answer short", id="cut-short"),
        pytest.param(b"", "gone", id="eof"),
    ],
)
def test_an_answer_out_of_frame_is_a_fault_never_a_result(
    answer: bytes, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judgewire, "GRACE_S", 1.0)  # a fault read as a hang shows in seconds
    w = Scripted([answer])
    t0 = time.monotonic()
    with pytest.raises(WorkerFault, match=why) as caught:
        _compare(w)
    assert time.monotonic() - t0 < 3  # refused at once, nothing waited for
    assert caught.value.gone == (why == "gone")
    assert w.channel.broken and w.channel.gone()
    if why != "gone":
        assert "worker says hi" in str(caught.value)  # its stderr, for the operator


@pytest.mark.parametrize(
    "hello",
    [
        _frame(_hello(worker="assay-judge-worker/0")),
        _frame(_hello(confined="yes")),
        _frame({"op": "reset", "clean": True}),
        _frame(_hello(), b"extra"),
        b"",
    ],
)
def test_a_bad_hello_is_a_fault(hello: bytes) -> None:
    w = Scripted([], hello=hello)
    with pytest.raises(WorkerFault):
        w.channel.greet()


def test_a_worker_that_never_answers_is_a_fault_at_its_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judgewire, "GRACE_S", 0.3)
    w = Scripted([None])
    t0 = time.monotonic()
    with pytest.raises(WorkerFault, match="deadline") as caught:
        _compare(w, deadline=0.2)
    assert 0.4 < time.monotonic() - t0 < 5 and not caught.value.gone


def test_a_reset_that_is_not_clean_says_so_and_one_out_of_frame_is_a_fault() -> None:
    w = Scripted([_frame({"op": "reset", "clean": False}), _frame({"op": "reset"})])
    assert w.channel.reset() is False
    with pytest.raises(WorkerFault):
        w.channel.reset()


def test_the_controller_sends_only_judge_steps_within_the_workers_caps() -> None:
    w = Scripted([])
    with pytest.raises(ValueError):
        w.channel.step("g-1", ("sh", "-c", "true"), 5, 10)
    with pytest.raises(ValueError):
        w.channel.step("g-1", (*JUDGE_ARGV, "compare"), 5, judgewire.OUTPUT_CAP + 1)
    with pytest.raises(ValueError):
        w.channel.step("g-1", (*JUDGE_ARGV, "compare", "x" * (64 << 10)), 5, 10)
