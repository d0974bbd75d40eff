"""The conformance suite every `assay.runtime.Runtime` backend must pass (after Inspect AI's
sandbox `self_check`).

Run it against your backend and an image of yours that has `sh`, `echo`, `cat`, `id`,
`sleep`, `yes`, `grep`, `head` and `tail` on its PATH:

    from assay.runtime.conformance import run_conformance

    results = run_conformance(MyRuntime(), "my-image:latest")
    assert all(r.passed for r in results), [str(r) for r in results if not r.passed]

or one pytest test per check:

    import pytest
    from assay.runtime.conformance import CHECKS

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
    def test_my_backend_conforms(check):
        check(MyRuntime(), "my-image:latest")

Each check takes a runtime and an image, creates its containers under a fresh grading id,
removes them whatever happens, and raises AssertionError on a deviation (or whatever the
backend raised). The Docker backend (runc and gVisor's runsc) and assay's in-memory fake pass
every check (`tests/unit/test_runtime_conformance.py`); the commands used are the small vocabulary
the fake understands, so the same checks prove the fake is a faithful stand-in for the engine.
"""

from __future__ import annotations

import io
import os
import selectors
import tarfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from assay._internal.runtime.base import (
    AGENT_UID,
    ContainerSpec,
    Limits,
    Runtime,
    Scratch,
    stopped_ceilings,
)
from assay._internal.runtime.fake import MEMORY_HOG, STATUS_SCRIPT
from assay._internal.runtime.scope import GradingScope
from assay.errors import ArchiveTooLargeError, CensusUnavailableError

__all__ = ["CHECKS", "Check", "CheckResult", "run_conformance", "self_check"]

Check = Callable[[Runtime, str], None]
"""One check: called with the runtime and an image; returns if the backend conforms."""


def _require(holds: bool, seen: object = None) -> None:
    # Not `assert`: `python -O` strips asserts, and a check that cannot fail proves nothing.
    if not holds:
        raise AssertionError(repr(seen) if seen is not None else "")


def _spec(image: str, gid: str, **kw: object) -> ContainerSpec:
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="conformance",
        scratch=(Scratch("/scratch", 4 * 2**20),),
        limits=Limits(memory_bytes=128 * 2**20, pids=32),
        **kw,  # type: ignore[arg-type]
    )


def _gid() -> str:
    return "conf-" + uuid.uuid4().hex[:12]


def check_exec_output_and_exit_code(rt: Runtime, image: str) -> None:
    """`exec` returns the command's stdout and its exit status."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("echo", "hello"), deadline_s=30, output_cap=1024)
        _require((r.exit_code, r.stdout, r.timed_out, r.truncated) == (0, b"hello\n", False, False))
        r = rt.exec(cid, ("sh", "-c", "exit 7"), deadline_s=30, output_cap=1024)
        _require(r.exit_code == 7, r)


def check_runs_as_non_root(rt: Runtime, image: str) -> None:
    """Commands run as the spec's unprivileged user (uid 1000), never root."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("id", "-u"), deadline_s=30, output_cap=1024)
        _require(r.stdout.strip() == str(AGENT_UID).encode(), r)


def check_deadline_stops_exec(rt: Runtime, image: str) -> None:
    """A command past `deadline_s` is stopped: `timed_out`, no exit code, no long wait."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("sleep", "30"), deadline_s=1.0, output_cap=1024)
        _require(r.timed_out and r.exit_code is None, r)
        _require(r.duration_s < 10, r)


def check_output_cap_stops_flood(rt: Runtime, image: str) -> None:
    """A command writing past `output_cap` is stopped: `truncated`, at most the cap kept."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("sh", "-c", "yes"), deadline_s=30, output_cap=4096)
        _require(r.truncated and r.exit_code is None, r)
        _require(len(r.stdout) <= 4096)


def check_keep_container_survives_limits(rt: Runtime, image: str) -> None:
    """`keep_container`: past the deadline or the cap the result says so and the container
    lives on (a host-driven session stops the command itself)."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("sleep", "30"), deadline_s=1.0, output_cap=1024, keep_container=True)
        _require(r.timed_out and r.exit_code is None, r)
        flood = ("sh", "-c", "yes | head -c 100000")
        r = rt.exec(cid, flood, deadline_s=30, output_cap=4096, keep_container=True)
        _require(r.truncated and r.exit_code is None and len(r.stdout) <= 4096, r)
        r = rt.exec(cid, ("echo", "alive"), deadline_s=30, output_cap=1024)
        _require((r.exit_code, r.stdout) == (0, b"alive\n"), r)


def check_root_is_read_only_scratch_is_writable(rt: Runtime, image: str) -> None:
    """A hardened container's root refuses writes; its scratch directory takes them."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        bad = rt.exec(cid, ("sh", "-c", "printf %s x > /etc/owned"), deadline_s=30, output_cap=1024)
        _require(bad.exit_code not in (0, None), bad)
        ok = rt.exec(
            cid, ("sh", "-c", "printf %s data > /scratch/f"), deadline_s=30, output_cap=1024
        )
        _require(ok.exit_code == 0, ok)
        r = rt.exec(cid, ("cat", "/scratch/f"), deadline_s=30, output_cap=1024)
        _require(r.stdout == b"data", r)


def check_tmp_runs_programs(rt: Runtime, image: str) -> None:
    """A program written to /tmp runs there (exec, as on every backend): a task that installs a
    tool into /tmp or $HOME=/tmp must grade the same whichever backend runs it."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        script = "printf '#!/bin/sh\\necho ran\\n' > /tmp/p && chmod +x /tmp/p && /tmp/p"
        r = rt.exec(cid, ("sh", "-c", script), deadline_s=30, output_cap=1024)
        _require((r.exit_code, r.stdout) == (0, b"ran\n"), r)


def check_archive_round_trip(rt: Runtime, image: str) -> None:
    """`put_archive` unpacks a tar into the container; `get_archive` of a paused one reads it
    back."""
    gid = _gid()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        ti = tarfile.TarInfo("in.txt")
        ti.size = 5
        tf.addfile(ti, io.BytesIO(b"12345"))
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        rt.put_archive(cid, "/scratch", buf.getvalue())
        _require(
            rt.exec(cid, ("cat", "/scratch/in.txt"), deadline_s=30, output_cap=64).stdout
            == b"12345"
        )
        rt.pause(cid)
        out = io.BytesIO()
        rt.get_archive(cid, "/scratch", out, cap=1 << 20)
        out.seek(0)
        with tarfile.open(fileobj=out) as tf:
            member = tf.extractfile("scratch/in.txt")
            _require(member is not None and member.read() == b"12345")


def check_put_archive_refused_on_read_only_root(rt: Runtime, image: str) -> None:
    """`put_archive` into a read-only root raises."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        try:
            rt.put_archive(cid, "/etc", b"")
        except Exception:
            return
        raise AssertionError("put_archive into a read-only root was accepted")


def check_get_archive_cap(rt: Runtime, image: str) -> None:
    """`get_archive` raises `ArchiveTooLargeError` past its cap."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        rt.exec(
            cid,
            ("sh", "-c", "printf %s " + "x" * 5000 + " > /scratch/big"),
            deadline_s=30,
            output_cap=1024,
        )
        try:
            rt.get_archive(cid, "/scratch", io.BytesIO(), cap=2048)
        except ArchiveTooLargeError:
            return
        raise AssertionError("get_archive ignored its cap")


def check_nothing_left_after_scope(rt: Runtime, image: str) -> None:
    """Everything a grading created, started or not, is gone when its scope closes."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        scope.container(_spec(image, gid))
        scope.container(_spec(image, gid), start=False)
        _require(len(rt.leftovers(gid)) >= 2)
    _require(rt.leftovers(gid) == [], rt.leftovers(gid))


def check_cleanup_on_exception(rt: Runtime, image: str) -> None:
    """Also when the scope is left by an exception (here Ctrl-C)."""
    gid = _gid()
    try:
        with GradingScope(rt, gid) as scope:
            scope.container(_spec(image, gid))
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    _require(rt.leftovers(gid) == [], rt.leftovers(gid))


def check_gradings_lists_a_live_grading(rt: Runtime, image: str) -> None:
    """`gradings` lists a grading while it has containers; `orphans` never lists a live one."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        scope.container(_spec(image, gid), start=False)
        _require(gid in rt.gradings(), rt.gradings())
        # Its controller (this process) is alive: gc must not take it.
        _require(gid not in rt.orphans())
    _require(gid not in rt.gradings())


def check_census_sees_a_process_left_running(rt: Runtime, image: str) -> None:
    """Either the backend lists a container's processes from outside, exactly, or it says it
    cannot (CensusUnavailableError); a judge is reused only on an exact list."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        try:
            before = rt.census(cid)
            # Just after `start` the keep-alive may not run yet (init forks it): the pool waits
            # for it too (JudgePool._first_census).
            for _ in range(500):
                if len(before) >= 2:
                    break
                time.sleep(0.01)
                before = rt.census(cid)
        except CensusUnavailableError:
            return
        _require(len(before) == 2 and rt.census(cid) == before, before)  # init and keep-alive
        rt.exec(cid, ("sh", "-c", "sleep 60 >/dev/null 2>&1 &"), deadline_s=30, output_cap=1024)
        after = rt.census(cid)
        _require(before < after and len(after) == len(before) + 1, (before, after))
        # Thawed again: the container still runs commands.
        _require(rt.exec(cid, ("true",), deadline_s=30, output_cap=1024).exit_code == 0)


def check_command_as_init_shares_mounts_and_ends_with_its_command(rt: Runtime, image: str) -> None:
    """`init=False`: the command is the container's PID 1 and the container stops with it,
    giving its exit code; `mounts_of`: it writes into another container's scratch."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        holder = scope.container(_spec(image, gid))
        for script, code in (("printf %s shared > /scratch/x", 0), ("exit 7", 7)):
            spec = ContainerSpec(
                image=image, grading_id=gid, role="conformance", command=("sh", "-c", script),
                limits=Limits(memory_bytes=128 * 2**20, pids=32), init=False, mounts_of=holder,
            )  # fmt: skip
            tid = scope.container(spec)
            exit_code = rt.wait(tid, 60)
            _require(exit_code == code, exit_code)
            scope.discard(tid)
        r = rt.exec(holder, ("cat", "/scratch/x"), deadline_s=30, output_cap=1024)
        _require(r.stdout == b"shared", r)


def _spawned(scope: GradingScope, image: str, command: tuple[str, ...], **kw: object) -> str:
    """A `spawned` container whose main process is `command`, created, not started."""
    spec = _spec(image, scope.grading_id, command=command, spawned=True, **kw)
    return scope.container(spec, start=False)


def _read_to_end(stream: BinaryIO, within_s: float) -> bytes:
    """Everything `stream` gives until its end, or what came within `within_s`."""
    end, got = time.monotonic() + within_s, bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(stream.fileno(), selectors.EVENT_READ)
        while (left := end - time.monotonic()) > 0:
            if sel.select(timeout=left):
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    break
                got.extend(chunk)
    return bytes(got)


def check_run_output_and_exit_code(rt: Runtime, image: str) -> None:
    """`run` starts a `spawned` container once, its command as its own process (no exec), and
    returns what it wrote and its exit status: 128 + N when signal N ended it; given `stdin`,
    the process reads it. The container stays, stopped, until it is removed."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = _spawned(scope, image, ("echo", "hello"))
        r = rt.run(cid, deadline_s=30, output_cap=1024)
        _require((r.exit_code, r.stdout, r.timed_out, r.truncated) == (0, b"hello\n", 0, 0), r)
        _require(rt.wait(cid, 10) == 0 and len(rt.leftovers(gid)) >= 1, rt.leftovers(gid))
        for script, code in (("exit 7", 7), ("kill -9 $$", 128 + 9)):
            r = rt.run(_spawned(scope, image, ("sh", "-c", script)), deadline_s=30, output_cap=64)
            _require(r.exit_code == code, (script, r))
        cid = _spawned(scope, image, ("cat",), stdin=True)
        r = rt.run(cid, deadline_s=30, output_cap=1024, stdin=b"ping")
        _require((r.exit_code, r.stdout) == (0, b"ping"), r)


def check_spawn_gives_the_main_process_stdio_as_pipes(rt: Runtime, image: str) -> None:
    """`spawn`: what is written to the main process's stdin comes back from its stdout, the
    end of stdin is the end of `cat`, and `wait` gives the exit status."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = _spawned(scope, image, ("cat",), stdin=True)
        proc = rt.spawn(cid)
        try:
            _require(proc.cid == cid and proc.stdin is not None, proc)
            assert proc.stdin is not None
            proc.stdin.write(b"ping")
            proc.stdin.close()
            _require(_read_to_end(proc.stdout, 30) == b"ping")
            _require(rt.wait(cid, 30) == 0)
        finally:
            proc.close()


def check_run_deadline_stops_the_container(rt: Runtime, image: str) -> None:
    """Past `deadline_s` the container is killed: `timed_out`, no exit code, no long wait."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = _spawned(scope, image, ("sleep", "30"))
        r = rt.run(cid, deadline_s=1.0, output_cap=1024)
        _require(r.timed_out and r.exit_code is None and r.duration_s < 10, r)
        _require(rt.wait(cid, 10) is not None)


def check_run_output_cap_stops_the_container(rt: Runtime, image: str) -> None:
    """A main process writing past `output_cap` is killed: `truncated`, at most the cap kept."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = _spawned(scope, image, ("sh", "-c", "yes"))
        r = rt.run(cid, deadline_s=30, output_cap=4096)
        _require(r.truncated and r.exit_code is None and len(r.stdout) <= 4096, r)
        _require(rt.wait(cid, 10) is not None)


def check_run_ceilings_are_read_after_it_ended(rt: Runtime, image: str) -> None:
    """The ceiling a spawned container hit is still named once it has stopped (the strict
    runner's memory limit is read after its run), and nothing of it is left after its
    grading."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = _spawned(scope, image, ("sh", "-c", MEMORY_HOG))
        r = rt.run(cid, deadline_s=60, output_cap=1024)
        _require(r.exit_code not in (0, None), r)
        _require("memory" in stopped_ceilings(rt, cid), rt.limit_events(cid))
        scope.discard(cid)
    _require(rt.leftovers(gid) == [], rt.leftovers(gid))


def check_spawned_ids_and_capabilities(rt: Runtime, image: str) -> None:
    """A spawned container's main process runs as the spec's user with no capability; with
    `switch_user` (the strict runner) as root holding exactly CAP_SETUID, CAP_SETGID and
    CAP_SETPCAP; never with new privileges."""
    gid = _gid()
    switch = (1 << 6) | (1 << 7) | (1 << 8)  # CAP_SETGID, CAP_SETUID, CAP_SETPCAP
    with GradingScope(rt, gid) as scope:
        for switch_user, uid, caps in ((False, str(AGENT_UID), 0), (True, "0", switch)):
            cid = _spawned(scope, image, ("sh", "-c", STATUS_SCRIPT), switch_user=switch_user)
            r = rt.run(cid, deadline_s=30, output_cap=4096)
            _require(r.exit_code == 0, r)
            lines = r.stdout.decode(errors="replace").splitlines()
            status = {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}
            _require(status.get("Uid", "").split()[:1] == [uid], (switch_user, status))
            for cap in ("CapEff", "CapBnd"):
                _require(int(status.get(cap, "-1"), 16) == caps, (switch_user, cap, status))
            # gVisor's status has no NoNewPrivs line.
            _require(status.get("NoNewPrivs", "1") == "1", status)


CHECKS: tuple[Check, ...] = (
    check_exec_output_and_exit_code,
    check_runs_as_non_root,
    check_deadline_stops_exec,
    check_output_cap_stops_flood,
    check_keep_container_survives_limits,
    check_root_is_read_only_scratch_is_writable,
    check_tmp_runs_programs,
    check_archive_round_trip,
    check_put_archive_refused_on_read_only_root,
    check_get_archive_cap,
    check_nothing_left_after_scope,
    check_cleanup_on_exception,
    check_gradings_lists_a_live_grading,
    check_census_sees_a_process_left_running,
    check_command_as_init_shares_mounts_and_ends_with_its_command,
    check_run_output_and_exit_code,
    check_spawn_gives_the_main_process_stdio_as_pipes,
    check_run_deadline_stops_the_container,
    check_run_output_cap_stops_the_container,
    check_run_ceilings_are_read_after_it_ended,
    check_spawned_ids_and_capabilities,
)


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome: `detail` is "ok", or the failure as `Type: message`."""

    name: str
    passed: bool
    detail: str

    def __str__(self) -> str:
        return f"{self.name}: {self.detail}"


def run_conformance(
    runtime: Runtime, image: str, *, checks: Sequence[Check] | None = None
) -> list[CheckResult]:
    """Run `checks` (default: every check) against `runtime` with containers of `image`, one
    after another, and return one `CheckResult` each, in order. A check that fails does not
    stop the others; nothing is raised for a failed check (a `KeyboardInterrupt` still
    propagates). Every container a check created is removed before the next one starts."""
    results = []
    for check in CHECKS if checks is None else checks:
        try:
            check(runtime, image)
            results.append(CheckResult(check.__name__, True, "ok"))
        except Exception as exc:
            results.append(CheckResult(check.__name__, False, f"{type(exc).__name__}: {exc}"))
    return results


def self_check(rt: Runtime, image: str) -> dict[str, str]:
    """Every check's name mapped to "ok" or its failure (Inspect AI's `self_check` shape)."""
    return {r.name: r.detail for r in run_conformance(rt, image)}
