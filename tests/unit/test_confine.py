"""The runner's confinement (`_incontainer/confine.py`) off the engine: what it refuses, and
the shape of its seccomp program. Its effect inside real containers is checked by
tests/docker/test_hardening_docker.py and tests/docker/test_runner_state_docker.py."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from assay._incontainer import confine

CONFINE = Path(confine.__file__)


def test_the_runner_will_not_confine_itself_outside_its_container() -> None:
    """On a host (a root shell holds every capability; anyone else is not root) it refuses
    before touching any id: run there, its kill_others() would reach the host user's
    processes."""
    code = f"import runpy; runpy.run_path({str(CONFINE)!r})['take_own_uid']()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1, proc
    assert proc.stderr.startswith("runner: must start"), proc.stderr


def test_no_filter_for_an_unknown_architecture() -> None:
    with pytest.raises(confine.Refused):
        confine.sysv_filter("sparc64")


@pytest.mark.parametrize("machine", sorted(confine.SYSV_IPC))
def test_every_sysv_call_and_foreign_abi_jumps_to_enosys(machine: str) -> None:
    code = confine.sysv_filter(machine)
    prog = [struct.unpack("HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
    arch, numbers = confine.SYSV_IPC[machine]
    assert prog[:3] == [(0x20, 0, 0, 4), (0x15, 1, 0, arch), (0x06, 0, 0, confine.RET_ENOSYS)]
    assert prog[-2:] == [(0x06, 0, 0, confine.RET_ALLOW), (0x06, 0, 0, confine.RET_ENOSYS)]
    denied = set()
    for i, (op, jt, _jf, k) in enumerate(prog[4:-2], start=4):
        assert i + 1 + jt == len(prog) - 1, (i, jt)  # every match lands on ENOSYS
        denied.add((op, k))
    assert {k for op, k in denied if op == 0x15} == set(numbers)
    assert ((0x35, confine.X32_BIT) in denied) == (machine == "x86_64")
