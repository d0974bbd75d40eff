"""The runc backend refuses a host where it cannot enforce every limit, naming what is missing
(a pure function over the host's facts, so each refusal is tested without such a host)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assay._internal.runtime.engine import open_runtime
from assay._internal.runtime.oci import preflight
from assay._internal.runtime.oci.preflight import HostFacts, problems
from assay.errors import BackendUnavailableError, UsageError

GOOD = HostFacts(
    euid=0,
    binary="/usr/sbin/runc",
    v1_controllers=frozenset(preflight.NEEDED_CONTROLLERS),
    memsw=True,
    overlay=True,
    init="/usr/bin/tini-static",
)


def test_a_host_with_everything_has_no_problem() -> None:
    assert problems(GOOD, "runc") == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"euid": 1000}, "needs root"),
        ({"binary": None}, "no `runc` binary"),
        ({"v1_controllers": frozenset()}, "cgroup v2-only host"),
        ({"v1_controllers": frozenset({"memory", "cpu", "freezer", "devices"})}, "pids"),
        ({"memsw": False}, "swap"),
        ({"overlay": False}, "overlay"),
        ({"init": None}, "tini"),
    ],
)
def test_each_missing_part_is_named(change: dict[str, object], named: str) -> None:
    found = problems(replace(GOOD, **change), "runc")  # type: ignore[arg-type]
    assert len(found) == 1 and named in found[0], found


def test_open_runtime_refuses_with_exit_2_and_names_a_backend_that_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(preflight, "host_facts", lambda b: replace(GOOD, binary=None))
    with pytest.raises(BackendUnavailableError) as err:
        open_runtime("runc")
    assert err.value.exit_code == 2
    assert "no `runc` binary" in str(err.value) and "--runtime docker" in err.value.diagnostics()


def test_an_unknown_backend_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown runtime backend 'crun'"):
        open_runtime("crun")
