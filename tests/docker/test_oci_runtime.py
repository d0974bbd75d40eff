"""The runc backend on real containers: the conformance suite, then each protection Docker
gives a grading container, inspected inside a real one (tests/docker: these need runc and
the engine's images, which scripts/setup.sh provides)."""

from __future__ import annotations

import io
import os
import signal
import tarfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

import assay
from assay._internal.runtime.base import Bind, ContainerSpec, Limits, Scratch, ceilings_hit
from assay._internal.runtime.oci import host
from assay._internal.runtime.oci.imagesave import hex_of
from assay._internal.runtime.oci.rootfs import RootfsCache
from assay._internal.runtime.oci.runtime import OciRuntime
from assay._internal.runtime.scope import GradingScope
from assay.errors import EngineError
from assay.runtime.conformance import CHECKS

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def oci(docker_runtime) -> OciRuntime:  # type: ignore[no-untyped-def]
    return OciRuntime(docker_runtime.client)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_oci_conforms(check, oci, base_image) -> None:  # type: ignore[no-untyped-def]
    check(oci, base_image)


def _spec(image: str, gid: str, **kw: object) -> ContainerSpec:
    return ContainerSpec(
        image=image,
        grading_id=gid,
        role="test",
        scratch=(Scratch("/scratch", 4 * 2**20),),
        limits=Limits(memory_bytes=96 * 2**20, pids=32, cpus=0.5, tmp_bytes=2 * 2**20),
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def box(oci: OciRuntime, base_image: str) -> Iterator[tuple[OciRuntime, str, str]]:
    gid = "test-" + uuid.uuid4().hex[:12]
    with GradingScope(oci, gid) as scope:
        cid = scope.container(_spec(base_image, gid))
        yield oci, cid, gid
    assert oci.leftovers(gid) == []
    assert host.cgroup(cid).leftovers() == []
    assert host.mounted_under(host.state_dir(cid)) == []


class Probe:
    """Where a protection is inspected: a command in a keep-alive container (`exec`), or a
    container of its own whose process the command is, started once (`oneshot`: the strict
    candidate's path, on the shared read-only root). `cid` is the container the last command
    ran in (the one-shot's stays, stopped, for its cgroup)."""

    def __init__(self, rt: OciRuntime, scope: GradingScope, image: str, oneshot: bool) -> None:
        self.rt, self.scope, self.image, self.oneshot = rt, scope, image, oneshot
        self.cid = "" if oneshot else scope.container(_spec(image, scope.grading_id))

    def sh(self, script: str, cap: int = 65536) -> tuple[int | None, str]:
        if not self.oneshot:
            return sh(self.rt, self.cid, script, cap)
        spec = _spec(self.image, self.scope.grading_id, command=("sh", "-c", script), spawned=True)
        self.cid = self.scope.container(spec, start=False)
        r = self.rt.run(self.cid, deadline_s=60, output_cap=cap)
        return r.exit_code, (r.stdout + r.stderr).decode(errors="replace")

    def status(self) -> dict[str, str]:
        _, text = self.sh("cat /proc/self/status")
        return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


@pytest.fixture(params=["exec", "oneshot"])
def probe(request: pytest.FixtureRequest, oci: OciRuntime, base_image: str) -> Iterator[Probe]:
    gid = "test-" + uuid.uuid4().hex[:12]
    made: list[str] = []
    with GradingScope(oci, gid) as scope:
        p = Probe(oci, scope, base_image, request.param == "oneshot")
        yield p
        made = [c for c in (p.cid,) if c]
    assert oci.leftovers(gid) == []
    for cid in made:
        assert host.cgroup(cid).leftovers() == []
        assert host.mounted_under(host.state_dir(cid)) == []


def sh(rt: OciRuntime, cid: str, script: str, cap: int = 65536) -> tuple[int | None, str]:
    r = rt.exec(cid, ("sh", "-c", script), deadline_s=60, output_cap=cap)
    return r.exit_code, (r.stdout + r.stderr).decode(errors="replace")


def _status(rt: OciRuntime, cid: str) -> dict[str, str]:
    _, text = sh(rt, cid, "cat /proc/self/status")
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def test_processes_hold_no_capability_and_no_new_privileges(probe: Probe) -> None:
    st = probe.status()
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(st[key], 16) == 0, (key, st[key])
    assert st["NoNewPrivs"] == "1"
    assert st["Seccomp"] == "2"  # a filter, not merely strict mode or none
    assert st["Uid"].split()[0] == "1000"


def test_seccomp_refuses_what_dockers_default_refuses(probe: Probe) -> None:
    # unshare(CLONE_NEWUSER) is allowed by the kernel to any uid, refused by Docker's profile.
    call = "import ctypes; c = ctypes.CDLL(None, use_errno=True); "
    call += "print(c.unshare(0x10000000), ctypes.get_errno())"  # CLONE_NEWUSER
    code, out = probe.sh(f"python3 -c '{call}'")
    assert (code, out.split()) == (0, ["-1", "1"]), out  # EPERM


def test_root_is_read_only_and_proc_sys_are_masked(probe: Probe) -> None:
    for path in ("/usr/owned", "/owned"):
        code, out = probe.sh(f"touch {path}")
        assert code != 0 and "Read-only file system" in out, (path, out)
    _, mounts = probe.sh("cat /proc/self/mountinfo")
    by_point = {line.split()[4]: line.split()[5] for line in mounts.splitlines()}
    assert by_point["/"].startswith("ro")
    for path in ("/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs", "/sys"):
        assert by_point[path].startswith("ro"), path
    masked = [p for p in ("/proc/keys", "/proc/timer_list", "/sys/firmware") if os.path.exists(p)]
    assert masked and all(p in by_point for p in masked), (masked, sorted(by_point))
    code, out = probe.sh("cat /proc/keys | wc -c; ls /sys/firmware | wc -l")
    assert out.split() == ["0", "0"], out


def test_tmp_and_scratch_are_capped_tmpfs(probe: Probe) -> None:
    code, out = probe.sh("head -c 3000000 /dev/zero > /tmp/f")
    assert code != 0 and "No space left" in out, out
    code, out = probe.sh("head -c 5000000 /dev/zero > /scratch/f")
    assert code != 0 and "No space left" in out, out
    _, out = probe.sh("stat -c %u /scratch")
    assert out.strip() == "1000"


def test_network_is_loopback_only(probe: Probe) -> None:
    _, out = probe.sh("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
    assert out.split() == ["lo"], out
    code, out = probe.sh(
        "python3 -c 'import socket; s=socket.socket(); s.settimeout(2); s.connect((\"10.0.0.1\", 80))'",
    )  # fmt: skip
    assert code != 0 and "unreachable" in out.lower(), out


def test_limits_are_set_on_the_containers_cgroup(probe: Probe) -> None:
    assert probe.sh("true")[0] == 0  # a one-shot container's cgroup stays until it is removed
    cid = probe.cid
    mem = host.cgroup(cid).dir("memory")
    assert int((mem / "memory.limit_in_bytes").read_text()) == 96 * 2**20
    assert int((mem / "memory.memsw.limit_in_bytes").read_text()) == 96 * 2**20  # no swap
    assert (host.cgroup(cid).dir("pids") / "pids.max").read_text().strip() == "32"
    cpu = host.cgroup(cid).dir("cpu")
    assert int((cpu / "cpu.cfs_quota_us").read_text()) == 50_000
    assert int((cpu / "cpu.cfs_period_us").read_text()) == 100_000


def test_no_core_dumps(probe: Probe) -> None:
    _, out = probe.sh("ulimit -c; ulimit -Hc")
    assert out.split() == ["0", "0"]


def test_fork_bomb_and_memory_hog_are_reported_as_ceilings(probe: Probe) -> None:
    rt = probe.rt
    probe.sh("for i in $(seq 64); do sleep 5 & done; wait")
    assert "pids" in ceilings_hit(rt, probe.cid)
    probe.sh("python3 -c 'b = bytearray(400 * 2**20)'")
    assert "memory" in ceilings_hit(rt, probe.cid) and rt.oom_killed(probe.cid)


def test_the_cgroup_counts_cpu_memory_and_tasks_of_processes_gone_too(box) -> None:  # type: ignore[no-untyped-def]
    """The cgroup layer's counters of a real container: the CPU time and the memory peak of a
    command that has exited stay counted, and no ceiling was hit."""
    rt, cid, _ = box
    before = host.cgroup(cid).counters()
    script = "b = bytearray(32 * 2**20)\nn = 0\nwhile n < 3 * 10**6: n += 1"
    assert rt.exec(cid, ("python3", "-c", script), deadline_s=60, output_cap=4096).exit_code == 0
    after = host.cgroup(cid).counters()
    assert before.cpu_ns is not None and after.cpu_ns is not None
    assert after.cpu_ns - before.cpu_ns > 10**8
    assert after.memory_peak_bytes is not None and after.memory_peak_bytes >= 32 * 2**20
    assert after.memory_bytes is not None and after.pids is not None and after.pids >= 2
    assert (after.pids_max_hits, after.oom_kills) == (0, 0)


def test_kill_ends_every_process_by_cgroup(box) -> None:  # type: ignore[no-untyped-def]
    rt, cid, _ = box
    sh(rt, cid, "sleep 100 >/dev/null 2>&1 &")
    assert len(host.cgroup(cid).procs()) >= 3
    rt.kill(cid)
    assert rt.wait(cid, 10) is not None
    assert host.cgroup(cid).procs() == []


def test_switch_user_exec_holds_exactly_the_three_caps(oci: OciRuntime, base_image: str) -> None:
    gid = "test-" + uuid.uuid4().hex[:12]
    with GradingScope(oci, gid) as scope:
        cid = scope.container(_spec(base_image, gid, switch_user=True))
        st = _status(oci, cid)
        assert st["Uid"].split()[0] == "0"
        # CAP_SETGID (6), CAP_SETUID (7), CAP_SETPCAP (8)
        assert int(st["CapEff"], 16) == int(st["CapBnd"], 16) == 0b111 << 6
        assert st["NoNewPrivs"] == "1"


def test_archives_never_follow_a_planted_symlink(box, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rt, cid, _ = box
    sh(rt, cid, "ln -s /etc /scratch/out; ln -s /etc/shadow /scratch/pw")
    sink = io.BytesIO()
    rt.pause(cid)
    rt.get_archive(cid, "/scratch", sink, cap=1 << 20)
    sink.seek(0)
    with tarfile.open(fileobj=sink) as tf:
        kinds = {m.name: m.type for m in tf.getmembers()}
    assert kinds["scratch/out"] == tarfile.SYMTYPE and kinds["scratch/pw"] == tarfile.SYMTYPE
    assert not any(name.startswith("scratch/out/") for name in kinds)


def test_a_killed_controllers_containers_are_orphans_and_gc_removes_them(
    oci: OciRuntime, base_image: str, tmp_path: Path
) -> None:
    """State on disk outlives the controller: a child process creates a container and is
    SIGKILLed; `orphans` then names its grading and `sweep` removes every trace."""
    import subprocess
    import sys

    gid = "test-" + uuid.uuid4().hex[:12]
    script = (
        "import os, signal, docker\n"
        "from assay._internal.runtime.base import ContainerSpec\n"
        "from assay._internal.runtime.oci.runtime import OciRuntime\n"
        "rt = OciRuntime(docker.from_env(version='auto'))\n"
        f"cid = rt.create(ContainerSpec(image={base_image!r}, grading_id={gid!r}, role='t'))\n"
        "rt.start(cid)\n"
        "print(cid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    cid = out.stdout.decode().strip()
    assert len(cid) == 32, out
    assert gid in oci.orphans()
    assert host.cgroup(cid).procs(), "the container should outlive its controller"
    assert oci.sweep(gid) == 1
    assert oci.leftovers(gid) == [] and host.cgroup(cid).leftovers() == []
    assert not host.state_dir(cid).exists()
    assert os.path.exists(host.STATE_ROOT)  # the root itself stays for the next controller


def test_a_controller_killed_while_it_makes_a_container_leaves_nothing_after_gc(
    base_image: str,
) -> None:
    """SIGKILLed between naming a container's directory and writing who owns it (CI once found
    an empty directory under a container's name that `gc` could not attribute): what is left
    is a staging directory `assay gc` removes, and then nothing of that container remains."""
    import subprocess
    import sys

    cid = uuid.uuid4().hex
    script = (
        "import os, signal, uuid\n"
        "from assay._internal.runtime.base import ContainerSpec\n"
        "from assay._internal.runtime.oci import host, runtime\n"
        f"runtime.uuid.uuid4 = lambda: uuid.UUID(hex={cid!r})\n"
        "host.os.rename = lambda *a: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"runtime.OciRuntime().create(ContainerSpec(image={base_image!r}, grading_id='t', role='t'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert out.returncode == -signal.SIGKILL, out
    left = [d for d, dead in host.staged() if d.name.endswith(cid)]
    assert len(left) == 1 and not host.state_dir(cid).exists()
    gc = subprocess.run([sys.executable, "-m", "assay", "gc"], capture_output=True, timeout=120)
    assert gc.returncode == 0, gc.stderr
    assert [d for d, _ in host.staged() if d.name.endswith(cid)] == []
    assert not host.state_dir(cid).exists() and host.cgroup(cid).leftovers() == []


def test_put_archive_lands_in_the_mount_the_container_sees(box) -> None:  # type: ignore[no-untyped-def]
    """A tar put at "/" whose members are under a scratch mount goes into that mount (what the
    container sees there), as Docker's put_archive does; a member on the read-only root is
    refused."""
    rt, cid, _ = box
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name in ("scratch/", "scratch/d/", "scratch/d/f.txt"):
            ti = tarfile.TarInfo(name)
            if name.endswith("/"):
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            else:
                ti.size = 2
            tf.addfile(ti, io.BytesIO(b"ok") if ti.isfile() else None)
    rt.put_archive(cid, "/", buf.getvalue())
    assert sh(rt, cid, "cat /scratch/d/f.txt") == (0, "ok")
    assert sh(rt, cid, "stat -c %u /scratch")[1].strip() == "1000"  # the mount's root kept
    bad = io.BytesIO()
    with tarfile.open(fileobj=bad, mode="w") as tf:
        ti = tarfile.TarInfo("etc/owned")
        tf.addfile(ti, io.BytesIO(b""))
    with pytest.raises(EngineError, match="read-only root"):
        rt.put_archive(cid, "/", bad.getvalue())


@pytest.fixture
def private_cache(
    docker_runtime: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RootfsCache]:
    """An image cache of this test's own: its view is made by the code under test, never one
    an earlier test (or process) left mounted, and no other test's containers stand on it."""
    root = tmp_path_factory.mktemp("images")
    cache = RootfsCache(docker_runtime.client, root=root / "images")
    yield cache
    cache.prune(set())
    assert host.mounted_under(root) == []


def test_a_container_runs_on_the_shared_root_that_no_runtime_can_write(
    private_cache: RootfsCache, docker_runtime: Any, base_image: str, tmp_path: Path
) -> None:
    """Issue 38: a hardened container whose every mount point is a top-level directory of the
    image's unpacked root runs on that root itself, through a view of it bound read-only on
    the host (no overlay, no tmpfs of its own for it); one with a mount point the root lacks
    gets an overlay of its own, and nothing is ever made in the shared tree."""
    oci = OciRuntime(docker_runtime.client, cache=private_cache)
    gid = "test-" + uuid.uuid4().hex[:12]
    tmp_path.chmod(0o755)
    with GradingScope(oci, gid) as scope:
        shared = _spec(
            base_image, gid, command=("sh", "-c", "ls -d /candidate; touch /x"), spawned=True,
            binds=(Bind(tmp_path, "/candidate"),), workdir="/candidate",
        )  # fmt: skip
        cid = scope.container(shared, start=False)
        view = Path(oci._meta(cid).root)
        assert view.name == "view" and os.statvfs(view).f_flag & os.ST_RDONLY, view
        assert not (host.state_dir(cid) / "root").exists()
        tree = view.parent / "rootfs"
        before = sorted(os.listdir(tree))
        r = oci.run(cid, deadline_s=60, output_cap=4096)
        assert r.exit_code != 0 and b"Read-only file system" in r.stderr, r
        assert r.stdout == b"/candidate\n", r
        own = _spec(
            base_image, gid, command=("ls", "-d", "/elsewhere"), spawned=True,
            binds=(Bind(tmp_path, "/elsewhere"),),
        )  # fmt: skip
        other = scope.container(own, start=False)
        assert oci._meta(other).root == "" and (host.state_dir(other) / "root").is_dir()
        r = oci.run(other, deadline_s=60, output_cap=4096)
        assert (r.exit_code, r.stdout) == (0, b"/elsewhere\n"), r
        assert sorted(os.listdir(tree)) == before and not (tree / "elsewhere").exists()
        assert not (tree / "x").exists()


def _views_at(view: Path) -> int:
    return host.mounted_under(view).count(str(view))


def test_runtimes_share_one_view_and_gc_takes_down_the_ones_an_older_version_stacked(
    private_cache: RootfsCache, docker_runtime: Any, base_image: str, tmp_path: Path
) -> None:
    """Before 2026-12-06 each runtime instance bound the image's tree at its view once more
    (`os.path.ismount` is False for a bind within one file system): 3,063 mounts stacked on
    one view of a CI machine after a day, and every `runc` call reads the whole mount table.
    Three runtimes now leave one; three binds stacked by hand (what an older version left) go
    down to one with `collapse_views` (`assay gc`), and a container still runs on it."""
    tmp_path.chmod(0o755)

    def run_one(rt: OciRuntime) -> Path:
        gid = "test-" + uuid.uuid4().hex[:12]
        with GradingScope(rt, gid) as scope:
            spec = _spec(
                base_image, gid, command=("ls", "-d", "/candidate"), spawned=True,
                binds=(Bind(tmp_path, "/candidate"),), workdir="/candidate",
            )  # fmt: skip
            cid = scope.container(spec, start=False)
            view = Path(rt._meta(cid).root)
            r = rt.run(cid, deadline_s=60, output_cap=4096)
            assert (r.exit_code, r.stdout) == (0, b"/candidate\n"), r
        return view

    def runtime() -> OciRuntime:
        return OciRuntime(docker_runtime.client, cache=private_cache)

    views = {run_one(runtime()) for _ in range(3)}
    assert len(views) == 1
    view = views.pop()
    assert view.name == "view"
    assert _views_at(view) == 1
    for _ in range(2):  # what each runtime of an older version added
        host.mount(str(view.parent / "rootfs"), view, "", host.MS_BIND, "")
        host.mount("", view, "", host.MS_BIND | host.MS_REMOUNT | host.MS_RDONLY, "")
    assert _views_at(view) == 3
    assert runtime().collapse_views() == 2
    assert _views_at(view) == 1 and os.statvfs(view).f_flag & os.ST_RDONLY
    assert run_one(runtime()) == view
    assert _views_at(view) == 1


@pytest.mark.parametrize("backend", ["runc", "docker"])
def test_a_runs_deadline_counts_from_the_start_not_the_engines_time(
    backend: str, oci: OciRuntime, docker_runtime: Any, base_image: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """An engine slow to attach and start a container (a delay proxy held Docker's attach
    answer 6 s) made a correct program time out at a 5 s deadline it never had: the engine's
    time before the start is not the program's. Here `spawn` takes 1.5 s before it returns,
    and a program needing 0.5 s runs under a 1 s deadline."""
    rt = oci if backend == "runc" else docker_runtime
    real = rt.spawn

    def slow_spawn(cid: str) -> Any:
        time.sleep(1.5)
        return real(cid)

    monkeypatch.setattr(rt, "spawn", slow_spawn)
    gid = "test-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        spec = _spec(base_image, gid, command=("sh", "-c", "sleep 0.5; echo done"), spawned=True)
        cid = scope.container(spec, start=False)
        r = rt.run(cid, deadline_s=1.0, output_cap=4096)
        assert (r.timed_out, r.exit_code, r.stdout) == (False, 0, b"done\n"), r
        hung = scope.container(_spec(base_image, gid, command=("sleep", "30"), spawned=True),
                               start=False)  # fmt: skip
        r = rt.run(hung, deadline_s=1.0, output_cap=4096)
        assert r.timed_out and r.exit_code is None, r


def test_build_languages_makes_each_image_ready_for_a_runtime_once(
    private_cache: RootfsCache, docker_runtime: Any
) -> None:
    """A fresh host's first use of an image by the runc backend unpacks it (10-20 s). A CI
    run on a fresh machine failed on it: `assay serve` checks every language at start, so
    it unpacked all seven before it answered, and the test's server never came up in time.
    `assay build` (and setup.sh through it) now does that ahead, once per image."""
    runtime = OciRuntime(docker_runtime.client, cache=private_cache)
    (first,) = assay.build_languages(["python3"], runtime=runtime)
    assert first.ready_s is not None and first.ready_s > 0
    tree = private_cache.root / hex_of(first.image_id)
    assert (tree / "complete").read_text().strip() == first.image_id
    unpacked = (tree / "rootfs").stat().st_ino
    fresh = OciRuntime(docker_runtime.client, cache=private_cache)
    (again,) = assay.build_languages(["python3"], runtime=fresh)
    assert again.image_id == first.image_id and again.ready_s is not None
    assert (tree / "rootfs").stat().st_ino == unpacked, "the image was unpacked a second time"
    (plain,) = assay.build_languages(["python3"])
    assert plain.ready_s is None


def test_an_image_the_engine_no_longer_has_is_pruned_once_no_container_is_made_of_it(
    private_cache: RootfsCache, docker_runtime: Any, base_image: str, tmp_path: Path
) -> None:
    """`docker rmi` frees the engine's copy of an image, never the runc backend's: after one
    CI run on a fresh machine its store held 18 trees, 12 GB, and nothing removed any.
    `assay gc` now prunes the tree of an image its engine handed out and no longer has,
    unless a container here is made of it. A state root of the test's own: no other test's
    container (or one half made) is in the count."""
    client = docker_runtime.client
    tag = f"assay-test-prune:{uuid.uuid4().hex[:12]}"
    dockerfile = f"FROM {base_image}\nLABEL assay.test={tag}\n".encode()
    image, _ = client.images.build(fileobj=io.BytesIO(dockerfile), tag=tag, rm=True)
    oci = OciRuntime(client, cache=private_cache, state_root=tmp_path / "state")
    gid = "test-" + uuid.uuid4().hex[:12]
    tree = private_cache.root / hex_of(image.id)
    try:
        base_id = oci.image_digest(base_image)
        with GradingScope(oci, gid) as scope:
            scope.container(_spec(tag, gid, command=("true",)), start=False)
            client.images.remove(image.id, force=True)  # `docker rmi`
            assert oci.unused_images() == [], "the tree of a container's image is kept"
            assert oci.prune_images() == 0 and (tree / "complete").is_file()
        assert oci.unused_images() == [image.id]
        assert oci.prune_images() == 1
        assert not tree.exists()
        assert [p.name for p in private_cache.root.iterdir() if p.name.startswith(tree.name)] == []
        private_cache.verify(base_id)  # still on the engine: kept whole
        assert oci.unused_images() == []
    finally:
        try:
            client.images.remove(image.id, force=True)
        except docker.errors.ImageNotFound:
            pass  # removed above, on the way that passes
