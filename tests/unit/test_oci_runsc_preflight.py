"""The runsc backend refuses a host where it cannot enforce every limit, naming what is missing:
the runc backend's own refusals, and a runsc whose `runsc exec` processes get no seccomp filter
(any command could then escape the pids limit through a user namespace)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from assay._internal.runtime import engine
from assay._internal.runtime.engine import BACKENDS, DEFAULT_BACKEND, open_runtime
from assay._internal.runtime.oci import runsc
from assay._internal.runtime.oci.preflight import NEEDED_CONTROLLERS, HostFacts
from assay._internal.runtime.oci.runsc import RunscFacts, release_of, runsc_problems
from assay.errors import BackendUnavailableError

HOST = HostFacts(
    euid=0,
    binary="/usr/bin/runsc",
    v1_controllers=frozenset(NEEDED_CONTROLLERS),
    memsw=True,
    overlay=True,
    init="/usr/bin/tini-static",
)
NEW = RunscFacts(HOST, "runsc version release-20260406.0\nspec: 1.1.0-rc.1\n")
DEBIAN = RunscFacts(HOST, "runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n")


def test_runsc_is_a_backend_and_runc_stays_the_default() -> None:
    assert "runsc" in BACKENDS and "docker-runsc" in BACKENDS and DEFAULT_BACKEND == "runc"


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("runsc version release-20260330.0\nspec: 1.1.0\n", 20260330),
        ("runsc version 0.0~20221219.0\n", 20221219),
        ("runsc version google-123456789\n", None),
        ("", None),
    ],
)
def test_release_of(text: str, release: int | None) -> None:
    assert release_of(text) == release


def test_a_runsc_that_filters_execs_has_no_problem() -> None:
    assert runsc_problems(NEW) == []


def test_a_runsc_that_does_not_filter_execs_is_refused_for_the_pids_limit() -> None:
    (found,) = runsc_problems(DEBIAN)
    assert "0.0~20221219.0 cannot enforce the pids limit" in found
    assert "user namespace" in found and "release-20260330.0" in found


@pytest.mark.parametrize(
    ("facts", "named"),
    [
        (RunscFacts(replace(HOST, binary=None), None), "no `runsc` binary"),
        (RunscFacts(HOST, None), "does not run"),
        (RunscFacts(HOST, "runsc version custom\n"), "cannot tell the release"),
        (replace(NEW, host=replace(HOST, memsw=False)), "swap"),
        (replace(NEW, host=replace(HOST, euid=1000)), "needs root"),
    ],
)
def test_each_missing_part_is_named(facts: RunscFacts, named: str) -> None:
    found = runsc_problems(facts)
    assert len(found) == 1 and named in found[0], found


def test_open_runtime_refuses_runsc_with_exit_2_and_names_docker_runsc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runsc, "runsc_facts", lambda b="runsc": DEBIAN)
    with pytest.raises(BackendUnavailableError) as err:
        open_runtime("runsc")
    assert err.value.exit_code == 2
    assert "the runsc backend cannot run here" in str(err.value)
    assert "--runtime docker-runsc" in err.value.diagnostics()
    assert engine.oci_problems("runsc") == runsc_problems(DEBIAN)


def test_stale_runtime_state_is_swept_and_a_live_record_is_not(tmp_path: Path) -> None:
    """A runtime record whose container directory is gone (a removal that failed half-way) is
    a leftover `assay gc` removes; one whose directory exists belongs to a container that may
    still run, and stays."""
    from assay._internal.runtime.oci.runtime import OciRuntime

    live, stale = "a" * 32, "b" * 32
    (tmp_path / "c" / live).mkdir(parents=True)
    # A container's directory always holds its meta (`host.make_state_dir`).
    (tmp_path / "c" / live / "meta.json").write_text("{}")
    for cid in (live, stale):
        (tmp_path / "runc" / cid).mkdir(parents=True)
        (tmp_path / "runc" / cid / "state.json").write_text("{}")
    (tmp_path / "runsc").mkdir()
    (tmp_path / "runsc" / f"{stale}_sandbox:{stale}.state").write_text("{}")
    rt = OciRuntime(binary="/nonexistent/runc", state_root=tmp_path)
    assert f"state:{tmp_path / 'runc' / stale}" in rt.leftovers()
    assert rt.sweep_stale_state() == 1
    assert sorted(p.name for p in (tmp_path / "runc").iterdir()) == [live]
    assert list((tmp_path / "runsc").iterdir()) == []
