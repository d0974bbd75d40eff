"""The runc backend's command-line client (`oci/client.py`) and the flavours it is given: the
exact command lines runc and runsc get, read back from a stand-in binary that records them, the
runtime's JSON log, `ps`, and what each flavour decides."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from assay._internal.runtime.oci import client
from assay._internal.runtime.oci.client import RUNC, Client
from assay._internal.runtime.oci.runsc import RUNSC, host_pids
from assay.errors import EngineError, EngineUnavailableError

PS = "UID PID PPID C STIME TIME CMD\n0 1 0 0 12:00 00:00:00 /dev/init\n1000 7 1 0 12:00 0 /usr/bin/python3\n"


def _binary(tmp_path: Path, out: str = "", code: int = 0) -> tuple[str, Path]:
    """A stand-in runtime binary: writes its argv (one per line) to a file and prints `out`."""
    record = tmp_path / "argv"
    exe = tmp_path / "runtime"
    exe.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do echo "$a"; done > {record}\n'
        f"printf '%s' '{out}'\n"
        f"exit {code}\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe), record


def _run_argv(tmp_path: Path, flavour: client.Flavour, flags: tuple[str, ...]) -> list[str]:
    exe, record = _binary(tmp_path)
    cli = Client(exe, tmp_path / flavour.name, flavour.global_flags)
    proc = cli.run(
        "cid", Path("/b"), Path("/b/log"), pid_file=Path("/b/pid"), run_flags=flavour.run_flags,
        flags=flags,
    )  # fmt: skip
    assert proc.wait(timeout=10) == 0
    assert stat.S_IMODE(os.stat(tmp_path / flavour.name).st_mode) == 0o700
    return record.read_text().splitlines()


def test_runc_and_runsc_get_their_own_run_command_lines(tmp_path: Path) -> None:
    root = str(tmp_path / "runc")
    log = ["--log", "/b/log", "--log-format", "json"]
    run = ["--bundle", "/b", "--pid-file", "/b/pid", "cid"]
    assert _run_argv(tmp_path, RUNC, ()) == ["--root", root, *log, "run", "--keep", *run]
    root = str(tmp_path / "runsc")
    assert _run_argv(tmp_path, RUNSC, ("--network=none",)) == [
        "--root", root, "--oci-seccomp", "--network=none", *log, "run", *run,
    ]  # fmt: skip


def test_a_spawned_run_has_no_pid_file_and_hands_its_stdio_on(tmp_path: Path) -> None:
    """`spawn`'s `run`: nothing polls for a pid file, and the runtime's stdio are the pipes
    the lifecycle gives it (the main process's, passed through)."""
    exe, record = _binary(tmp_path, out="out")
    r, w = os.pipe()
    try:
        proc = Client(exe, tmp_path / "runc").run(
            "cid", Path("/b"), Path("/b/log"), run_flags=("--keep",),
            stdio=(subprocess.DEVNULL, w, w),
        )  # fmt: skip
        os.close(w)
        assert proc.wait(timeout=10) == 0
        assert os.read(r, 100) == b"out"
    finally:
        os.close(r)
    root = str(tmp_path / "runc")
    assert record.read_text().splitlines() == [
        "--root", root, "--log", "/b/log", "--log-format", "json",
        "run", "--keep", "--bundle", "/b", "cid",
    ]  # fmt: skip


def test_exec_and_delete_command_lines(tmp_path: Path) -> None:
    exe, record = _binary(tmp_path)
    cli = Client(exe, tmp_path / "runc")
    proc = cli.exec("cid", Path("/b/p.json"), Path("/b/l"), capture=True)
    assert proc.communicate(timeout=10) == (b"", b"")
    root = str(tmp_path / "runc")
    assert record.read_text().splitlines() == [
        "--root", root, "--log", "/b/l", "--log-format", "json",
        "exec", "--process", "/b/p.json", "cid",
    ]  # fmt: skip
    cli.delete("cid")
    assert record.read_text().splitlines() == ["--root", root, "delete", "--force", "cid"]


def test_a_missing_binary_is_an_unavailable_engine_and_delete_shrugs(tmp_path: Path) -> None:
    cli = Client(str(tmp_path / "nothing"), tmp_path / "runc")
    with pytest.raises(EngineUnavailableError, match="cannot run"):
        cli.run("cid", tmp_path, tmp_path / "log", pid_file=tmp_path / "pid")
    cli.delete("cid")  # the caller removes the record itself
    assert client.version(str(tmp_path / "nothing")) is None


def test_ps_lists_pid_and_command_and_a_failure_is_an_engine_error(tmp_path: Path) -> None:
    exe, _ = _binary(tmp_path, out=PS)
    assert Client(exe, tmp_path / "runsc").ps("cid") == [(1, "init"), (7, "python3")]
    (tmp_path / "bad").mkdir()
    bad, _ = _binary(tmp_path / "bad", code=1)
    with pytest.raises(EngineError, match="ps cid"):
        Client(bad, tmp_path / "runsc").ps("cid")


def test_the_log_gives_the_runtimes_own_errors_only(tmp_path: Path) -> None:
    log = tmp_path / "log"
    lines = [
        {"level": "info", "msg": "fine"},
        {"level": "error", "msg": "exec failed: unable to start container process"},
        {"level": "fatal", "msg": "and this"},
    ]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    assert client.log_errors(log) == ("exec failed: unable to start container process; and this")
    assert client.log_errors(tmp_path / "none") == ""


def test_each_flavour_knows_a_command_that_could_not_start() -> None:
    assert RUNC.could_not_start("exec failed: unable to start container process: no such file")
    assert not RUNC.could_not_start("container not running")
    assert RUNSC.could_not_start('executing command: error finding executable "nope"')
    assert not RUNSC.could_not_start("error finding executable")  # not an exec's
    assert not RUNSC.could_not_start("executing command: connection reset by sandbox")


def test_runsc_limits_pids_inside_with_a_host_backstop_and_runc_on_the_cgroup() -> None:
    assert RUNC.cgroup_pids(32) == 32 and RUNC.pids_backstop is None
    assert RUNSC.cgroup_pids(32) == host_pids(32) == 1024 + 32 * 32
    assert RUNSC.makes_cgroups and RUNSC.chooses_network and not RUNC.makes_cgroups
