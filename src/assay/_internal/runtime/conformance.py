"""The conformance suite every `Runtime` backend must pass (after Inspect AI's `self_check`).

Each check takes a runtime and an image and raises AssertionError on a deviation.
The commands used are the small vocabulary the fake understands, so the same
checks prove the fake is a faithful stand-in for the real engine.
"""

from __future__ import annotations

import io
import tarfile
import time
import uuid
from collections.abc import Callable

from .base import CensusUnavailable, ContainerSpec, Limits, Runtime, Scratch
from .scope import GradingScope

Check = Callable[[Runtime, str], None]


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
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("echo", "hello"), deadline_s=30, output_cap=1024)
        assert (r.exit_code, r.stdout, r.timed_out, r.truncated) == (0, b"hello\n", False, False)
        r = rt.exec(cid, ("sh", "-c", "exit 7"), deadline_s=30, output_cap=1024)
        assert r.exit_code == 7, r


def check_runs_as_non_root(rt: Runtime, image: str) -> None:
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("id", "-u"), deadline_s=30, output_cap=1024)
        assert r.stdout.strip() == b"1000", r


def check_deadline_stops_exec(rt: Runtime, image: str) -> None:
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("sleep", "30"), deadline_s=1.0, output_cap=1024)
        assert r.timed_out and r.exit_code is None, r
        assert r.duration_s < 10, r


def check_output_cap_stops_flood(rt: Runtime, image: str) -> None:
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("sh", "-c", "yes"), deadline_s=30, output_cap=4096)
        assert r.truncated and r.exit_code is None, r
        assert len(r.stdout) <= 4096


def check_keep_container_survives_limits(rt: Runtime, image: str) -> None:
    """`keep_container`: past the deadline or the cap the result says so and the container
    lives on (a host-driven session stops the command itself)."""
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        r = rt.exec(cid, ("sleep", "30"), deadline_s=1.0, output_cap=1024, keep_container=True)
        assert r.timed_out and r.exit_code is None, r
        flood = ("sh", "-c", "yes | head -c 100000")
        r = rt.exec(cid, flood, deadline_s=30, output_cap=4096, keep_container=True)
        assert r.truncated and r.exit_code is None and len(r.stdout) <= 4096, r
        r = rt.exec(cid, ("echo", "alive"), deadline_s=30, output_cap=1024)
        assert (r.exit_code, r.stdout) == (0, b"alive\n"), r


def check_root_is_read_only_scratch_is_writable(rt: Runtime, image: str) -> None:
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        bad = rt.exec(cid, ("sh", "-c", "printf %s x > /etc/owned"), deadline_s=30, output_cap=1024)
        assert bad.exit_code not in (0, None), bad
        ok = rt.exec(
            cid, ("sh", "-c", "printf %s data > /scratch/f"), deadline_s=30, output_cap=1024
        )
        assert ok.exit_code == 0, ok
        r = rt.exec(cid, ("cat", "/scratch/f"), deadline_s=30, output_cap=1024)
        assert r.stdout == b"data", r


def check_archive_round_trip(rt: Runtime, image: str) -> None:
    gid = _gid()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        ti = tarfile.TarInfo("in.txt")
        ti.size = 5
        tf.addfile(ti, io.BytesIO(b"12345"))
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        rt.put_archive(cid, "/scratch", buf.getvalue())
        assert (
            rt.exec(cid, ("cat", "/scratch/in.txt"), deadline_s=30, output_cap=64).stdout
            == b"12345"
        )
        rt.pause(cid)
        out = io.BytesIO()
        rt.get_archive(cid, "/scratch", out, cap=1 << 20)
        out.seek(0)
        with tarfile.open(fileobj=out) as tf:
            member = tf.extractfile("scratch/in.txt")
            assert member is not None and member.read() == b"12345"


def check_put_archive_refused_on_read_only_root(rt: Runtime, image: str) -> None:
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        cid = scope.container(_spec(image, gid))
        try:
            rt.put_archive(cid, "/etc", b"")
        except Exception:
            return
        raise AssertionError("put_archive into a read-only root was accepted")


def check_get_archive_cap(rt: Runtime, image: str) -> None:
    from .base import ArchiveTooLarge

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
        except ArchiveTooLarge:
            return
        raise AssertionError("get_archive ignored its cap")


def check_nothing_left_after_scope(rt: Runtime, image: str) -> None:
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        scope.container(_spec(image, gid))
        scope.container(_spec(image, gid), start=False)
        assert len(rt.leftovers(gid)) >= 2
    assert rt.leftovers(gid) == [], rt.leftovers(gid)


def check_cleanup_on_exception(rt: Runtime, image: str) -> None:
    gid = _gid()
    try:
        with GradingScope(rt, gid) as scope:
            scope.container(_spec(image, gid))
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert rt.leftovers(gid) == [], rt.leftovers(gid)


def check_gradings_lists_a_live_grading(rt: Runtime, image: str) -> None:
    gid = _gid()
    with GradingScope(rt, gid) as scope:
        scope.container(_spec(image, gid), start=False)
        assert gid in rt.gradings(), rt.gradings()
        # Its controller (this process) is alive: gc must not take it.
        assert gid not in rt.orphans()
    assert gid not in rt.gradings()


def check_census_sees_a_process_left_running(rt: Runtime, image: str) -> None:
    """Either the backend lists a container's processes from outside, exactly, or it says it
    cannot (CensusUnavailable); a judge is reused only on an exact list."""
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
        except CensusUnavailable:
            return
        assert len(before) == 2 and rt.census(cid) == before, before  # init and keep-alive
        rt.exec(cid, ("sh", "-c", "sleep 60 >/dev/null 2>&1 &"), deadline_s=30, output_cap=1024)
        after = rt.census(cid)
        assert before < after and len(after) == len(before) + 1, (before, after)
        # Thawed again: the container still runs commands.
        assert rt.exec(cid, ("true",), deadline_s=30, output_cap=1024).exit_code == 0


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
            assert rt.wait(tid, 60) == code
            scope.discard(tid)
        r = rt.exec(holder, ("cat", "/scratch/x"), deadline_s=30, output_cap=1024)
        assert r.stdout == b"shared", r


CHECKS: tuple[Check, ...] = (
    check_exec_output_and_exit_code,
    check_runs_as_non_root,
    check_deadline_stops_exec,
    check_output_cap_stops_flood,
    check_keep_container_survives_limits,
    check_root_is_read_only_scratch_is_writable,
    check_archive_round_trip,
    check_put_archive_refused_on_read_only_root,
    check_get_archive_cap,
    check_nothing_left_after_scope,
    check_cleanup_on_exception,
    check_gradings_lists_a_live_grading,
    check_census_sees_a_process_left_running,
    check_command_as_init_shares_mounts_and_ends_with_its_command,
)


def self_check(rt: Runtime, image: str) -> dict[str, str]:
    """Run every check; map each name to "ok" or the failure. Used by tests and `assay doctor`."""
    results: dict[str, str] = {}
    for check in CHECKS:
        try:
            check(rt, image)
            results[check.__name__] = "ok"
        except Exception as exc:
            results[check.__name__] = f"{type(exc).__name__}: {exc}"
    return results
