"""The runc backend's config.json, field by field: each protection a grading container gets
from Docker is written into the OCI config (the real containers are inspected in
tests/docker/test_oci_runtime.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay._internal.runtime.base import Bind, ContainerSpec, Limits, Scratch
from assay._internal.runtime.oci import bundle

HOST = bundle.HostPaths(
    rootfs="/r/root", tmp="/r/tmp", scratch={"/scratch": "/r/s0"}, init="/usr/bin/tini-static"
)
SECCOMP = {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": []}


def cfg(**kw: Any) -> dict[str, Any]:
    spec = ContainerSpec(
        image="img",
        grading_id="g-1",
        role="candidate",
        scratch=(Scratch("/scratch", 1 << 20),),
        limits=Limits(memory_bytes=256 * 2**20, pids=64, cpus=1.5, tmp_bytes=1 << 20),
        **kw,
    )
    return bundle.config(
        spec, HOST, image_env={"PATH": "/bin"}, image_workdir="/w", seccomp=SECCOMP,
        cgroups_path="/assay/x", hostname="x",
    )  # fmt: skip


def test_hardened_container_has_no_caps_nnp_and_a_read_only_root() -> None:
    c = cfg()
    proc = c["process"]
    assert all(proc["capabilities"][k] == [] for k in proc["capabilities"])
    assert proc["noNewPrivileges"] is True
    assert c["root"] == {"path": "/r/root", "readonly": True}
    assert {"type": "RLIMIT_CORE", "hard": 0, "soft": 0} in proc["rlimits"]
    assert c["linux"]["seccomp"] == SECCOMP


def test_init_runs_as_root_keepalive_under_tini_and_command_as_init_runs_as_user() -> None:
    c = cfg()
    assert c["process"]["args"] == [bundle.INIT_PATH, "--", "sleep", "infinity"]
    assert c["process"]["user"]["uid"] == 0
    c = cfg(init=False, command=("sh", "-c", "true"))
    assert c["process"]["args"] == ["sh", "-c", "true"]
    assert (c["process"]["user"]["uid"], c["process"]["user"]["gid"]) == (1000, 1000)


def test_network_namespace_unless_an_unhardened_host_network() -> None:
    def kinds(c: dict[str, Any]) -> set[str]:
        return {n["type"] for n in c["linux"]["namespaces"]}

    assert {"network", "pid", "ipc", "uts", "mount"} <= kinds(cfg())
    # A hardened container has no network whatever `network` says.
    assert "network" in kinds(cfg(network="host"))
    assert "network" not in kinds(cfg(network="host", hardened=False))


def test_limits_memory_without_swap_pids_cpu() -> None:
    res = cfg()["linux"]["resources"]
    assert res["memory"] == {"limit": 256 * 2**20, "swap": 256 * 2**20}
    assert res["pids"] == {"limit": 64}
    assert res["cpu"] == {"quota": 150_000, "period": 100_000}
    assert res["devices"][0] == {"allow": False, "access": "rwm"}


def test_a_runtime_that_limits_pids_inside_gets_a_backstop_and_rlimit_nproc() -> None:
    """runsc's bundle (oci/runsc.py): the host cgroup's pids is a backstop, and the tasks are
    limited by RLIMIT_NPROC at the spec's pids; runc's has neither."""
    spec = ContainerSpec(image="img", grading_id="g", role="r", limits=Limits(pids=64))
    args: dict[str, Any] = dict(
        image_env={}, image_workdir="/", seccomp=SECCOMP, cgroups_path="/a/x", hostname="x"
    )
    c = bundle.config(spec, HOST, cgroup_pids=3072, nproc=64, **args)
    assert c["linux"]["resources"]["pids"] == {"limit": 3072}
    assert c["process"]["rlimits"][-1] == {"type": "RLIMIT_NPROC", "hard": 64, "soft": 64}
    plain = bundle.config(spec, HOST, **args)
    assert plain["linux"]["resources"]["pids"] == {"limit": 64}
    assert all(r["type"] != "RLIMIT_NPROC" for r in plain["process"]["rlimits"])


def test_masked_and_read_only_paths_are_dockers() -> None:
    linux = cfg()["linux"]
    assert set(linux["maskedPaths"]) >= {"/proc/kcore", "/proc/keys", "/sys/firmware"}
    assert set(linux["readonlyPaths"]) >= {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq"}


def test_mounts_tmp_scratch_binds_and_init() -> None:
    c = cfg(binds=(Bind(Path("/h/tests"), "/tests"), Bind(Path("/h/out"), "/out", read_only=False)))
    by_dest = {m["destination"]: m for m in c["mounts"]}
    assert by_dest["/tmp"]["source"] == "/r/tmp"
    assert by_dest["/scratch"]["source"] == "/r/s0"
    assert "ro" in by_dest["/tests"]["options"] and "rw" in by_dest["/out"]["options"]
    assert by_dest[bundle.INIT_PATH]["options"] == ["bind", "ro"]
    assert "ro" in by_dest["/sys"]["options"] and "ro" in by_dest["/sys/fs/cgroup"]["options"]
    for point in ("/proc", "/dev/shm", "/dev/mqueue"):
        assert {"nosuid", "noexec", "nodev"} <= set(by_dest[point]["options"]), point


def test_switch_user_and_unhardened_caps() -> None:
    spec = ContainerSpec(image="i", grading_id="g", role="r", switch_user=True)
    assert bundle.exec_caps(spec) == bundle.SWITCH_CAPS and bundle.exec_user(spec) == "0:0"
    # The runner as the container's own process (under init): root with exactly the three,
    # in every set but the inheritable and ambient ones, and no new privileges.
    runner = ("python3", "-I", "/assay/runner.py")
    proc = cfg(switch_user=True, command=runner)["process"]
    assert proc["args"] == [bundle.INIT_PATH, "--", *runner]
    assert (proc["user"]["uid"], proc["user"]["gid"]) == (0, 0)
    for kind in ("bounding", "effective", "permitted"):
        assert proc["capabilities"][kind] == list(bundle.SWITCH_CAPS), kind
    assert proc["capabilities"]["inheritable"] == proc["capabilities"]["ambient"] == []
    assert proc["noNewPrivileges"] is True
    loose = ContainerSpec(image="i", grading_id="g", role="r", hardened=False)
    assert bundle.exec_caps(loose) == bundle.DOCKER_DEFAULT_CAPS
    with pytest.raises(ValueError):
        cfg(switch_user=True, hardened=False)


def test_user_must_be_numeric() -> None:
    assert bundle.user_ids("1000:1000") == (1000, 1000)
    assert bundle.user_ids("7") == (7, 7)
    with pytest.raises(ValueError):
        bundle.user_ids("nobody")


def test_image_env_keeps_a_path() -> None:
    assert bundle.image_env(["A=1", "B=x=y", "junk"]) == {
        "A": "1", "B": "x=y",
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    }  # fmt: skip
    assert bundle.image_env(["PATH=/only"])["PATH"] == "/only"
