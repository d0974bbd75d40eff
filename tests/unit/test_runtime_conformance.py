from __future__ import annotations

import subprocess
import sys

import pytest

from assay._internal.runtime.fake import FakeRuntime
from assay.runtime.conformance import CHECKS, run_conformance, self_check


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_fake_conforms(check) -> None:  # type: ignore[no-untyped-def]
    check(FakeRuntime(), "fake-image")


def test_run_conformance_reports_every_check_and_names_a_failure() -> None:
    """The entry point a third party runs: one result per check, in order; a backend that
    breaks the contract is named with the check it fails, and the other checks still run."""

    class RunsAsRoot(FakeRuntime):
        def exec(self, cid, argv, **kw):  # type: ignore[no-untyped-def]
            if argv == ("id", "-u"):
                argv = ("echo", "0")
            return super().exec(cid, argv, **kw)

    good = run_conformance(FakeRuntime(), "fake-image")
    assert [r.name for r in good] == [c.__name__ for c in CHECKS]
    assert all(r.passed and r.detail == "ok" for r in good)
    bad = {r.name: r for r in run_conformance(RunsAsRoot(), "fake-image")}
    assert not bad["check_runs_as_non_root"].passed
    assert bad["check_runs_as_non_root"].detail.startswith("AssertionError")
    assert [n for n, r in bad.items() if not r.passed] == ["check_runs_as_non_root"]
    assert self_check(RunsAsRoot(), "fake-image")["check_runs_as_non_root"] != "ok"


def test_checks_fail_under_python_O_too() -> None:
    """`python -O` strips `assert`: a third party's run must still see its backend fail."""
    code = (
        "from assay._internal.runtime.fake import FakeRuntime\n"
        "from assay.runtime.conformance import run_conformance\n"
        "class Root(FakeRuntime):\n"
        "    def exec(self, cid, argv, **kw):\n"
        "        return super().exec(cid, ('echo', '0') if argv == ('id', '-u') else argv, **kw)\n"
        "print([r.name for r in run_conformance(Root(), 'img') if not r.passed])\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['check_runs_as_non_root']"


class RunOverSpawn(FakeRuntime):
    """A backend that builds `run` on its `spawn` with `run_spawned`, as the real ones do."""

    def run(self, cid, *, deadline_s, output_cap, stdin=b""):  # type: ignore[no-untyped-def]
        import time

        from assay.runtime import run_spawned

        t0 = time.monotonic()
        spawned = self.spawn(cid)
        return run_spawned(
            self, spawned, stdin=stdin, deadline=t0 + deadline_s, output_cap=output_cap, t0=t0
        )


# The fake's `sleep` takes no time: the deadline is the real backends' to prove.
SPAWN_CHECKS = [
    c
    for c in CHECKS
    if c.__name__.startswith(("check_run_", "check_spawn"))
    and c.__name__ != "check_run_deadline_stops_the_container"
]


@pytest.mark.parametrize("check", SPAWN_CHECKS, ids=lambda c: c.__name__)
def test_run_spawned_over_a_spawn_conforms(check) -> None:  # type: ignore[no-untyped-def]
    """`assay.runtime.run_spawned`, the `run` a backend builds on its `spawn`: its stdin,
    outputs, exit status and cap on real pipes (the fake's process writes from a thread)."""
    check(RunOverSpawn(), "fake-image")
