"""A `Runtime` that drives the OCI runtime (runc) directly: no daemon between the controller
and the container.

Each container is a bundle under `STATE_ROOT/c/<id>`: its config (bundle.py), an overlay of
the image's shared unpacked root (rootfs.py), and host tmpfs mounts for /tmp and each scratch
directory, so that archives move in and out by reading those host directories (hosttar.py)
instead of through a process in the container. `runc run --keep` in the foreground is the
container's only supervisor (what containerd's shim is to Docker): its exit status is the
main process's, and it holds nothing the controller needs to survive. What `gc` needs after
a SIGKILL of the controller is on disk (`meta.json`, runc's state, the cgroup directories).
"""

from __future__ import annotations

import io
import json
import logging
import os
import posixpath
import resource
import selectors
import shutil
import subprocess
import tarfile
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from assay.errors import EngineError, EngineUnavailableError

from ..base import AGENT_UID, ContainerSpec, ExecResult
from ..owner import owner_is_dead, this_owner
from . import bundle, host, hosttar
from .host import Meta
from .rootfs import RootfsCache
from .seccomp import docker_default

LOG = logging.getLogger("assay")
INIT_BINARIES = ("/usr/bin/tini-static", "/usr/bin/docker-init")
START_WAIT_S = 30.0
STOP_WAIT_S = 10.0
OVERLAY_UPPER_HARDENED = 16 * 2**20
"""The upper layer of a hardened root only takes runc's mount points (the root is read-only
inside the container)."""
OVERLAY_UPPER_WRITABLE = 1024 * 2**20
"""An unhardened container (a baseline) writes its root into a capped tmpfs, never the disk."""
READ_CHUNK = 65536
NOFILE = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], bundle.NOFILE)


class OciRuntime:
    """Containers run by `runc` (the OCI runtime Docker itself uses), without dockerd.

    Images still come from the local Docker engine (`client`): each is unpacked once per
    image id and verified by digest (`RootfsCache`); builds of task environments use the
    engine as before."""

    def __init__(
        self,
        client: Any | None = None,
        *,
        binary: str = "runc",
        state_root: Path = host.STATE_ROOT,
        cache: RootfsCache | None = None,
    ) -> None:
        self._client = client
        self._binary = shutil.which(binary) or binary
        self.name = f"oci/{Path(binary).name}"
        self._root = state_root
        self._runc_root = state_root / "runc"
        self._cache_given = cache
        self._configs: dict[str, tuple[dict[str, str], str]] = {}
        self._images: dict[str, tuple[str, Path]] = {}
        self._metas: dict[str, Meta] = {}
        self._shims: dict[str, subprocess.Popen[bytes]] = {}
        self._paused: set[str] = set()
        self._lock = threading.Lock()
        self._init = next((p for p in INIT_BINARIES if os.path.exists(p)), None)
        self._seccomp: dict[tuple[str, ...], dict[str, Any]] = {}

    @property
    def client(self) -> Any:
        """The docker-py client images come from (what builds a task's environment image),
        connected on first use: `gc` removes containers with no engine at all."""
        if self._client is None:
            from ..docker import connect

            self._client = connect()
        return self._client

    @property
    def _cache(self) -> RootfsCache:
        if self._cache_given is None:
            self._cache_given = RootfsCache(self.client)
        return self._cache_given

    # -- lifecycle -------------------------------------------------------------------------

    def _image(self, image: str) -> tuple[str, Path, dict[str, str], str]:
        # Resolved once per name for this runtime's life, as the Docker backend records an
        # image's digest once: no engine call per container (the tags assay builds are
        # content-addressed; a base image rebuilt under the same tag needs a new runtime).
        if image not in self._images:
            self._images[image] = self._cache.rootfs(image)
        image_id, lower = self._images[image]
        if image_id not in self._configs:
            cfg = (self.client.api.inspect_image(image_id) or {}).get("Config") or {}
            self._configs[image_id] = (
                bundle.image_env(cfg.get("Env")),
                cfg.get("WorkingDir") or "/",
            )
        env, workdir = self._configs[image_id]
        return image_id, lower, env, workdir

    def _seccomp_for(self, caps: tuple[str, ...]) -> dict[str, Any]:
        if caps not in self._seccomp:
            self._seccomp[caps] = docker_default(frozenset(caps))
        return self._seccomp[caps]

    def create(self, spec: ContainerSpec) -> str:
        if spec.switch_user and not spec.hardened:
            raise EngineError("switch_user is only for a hardened container")
        if spec.init and self._init is None:
            raise EngineError(
                "no static init binary on this host (tini-static)",
                fix="apt-get install tini (scripts/setup.sh does)",
            )
        _, lower, env, workdir = self._image(spec.image)
        cid = uuid.uuid4().hex
        d = host.state_dir(cid, self._root)
        # root's alone: `gc` acts on what it finds here, so no one else may plant a meta.json.
        self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self._root, 0o700)
        d.mkdir(parents=True)
        mounts: dict[str, str] = {}
        read_only: list[str] = []
        scratch: dict[str, str] = {}
        extra_binds: list[tuple[str, str, bool]] = []
        try:
            if spec.mounts_of is not None:
                # Docker's volumes_from: the other container's scratch and binds, not its /tmp.
                other = self._meta(spec.mounts_of)
                for target, source in other.mounts.items():
                    if target == "/tmp":
                        continue
                    mounts[target] = source
                    if source.startswith(f"{self._root}/"):
                        scratch[target] = source
                    else:
                        extra_binds.append((source, target, target in other.read_only))
                        if target in other.read_only:
                            read_only.append(target)
            meta = Meta(
                cid=cid, grading_id=spec.grading_id, role=spec.role, owner=this_owner(),
                exec_user=bundle.exec_user(spec), hardened=spec.hardened,
                switch_user=spec.switch_user, workdir=spec.workdir or workdir,
                env={**env, **spec.env}, mounts={}, read_only=[], read_only_root=spec.hardened,
            )  # fmt: skip
            # The meta goes first: a controller killed from here on leaves something `gc` finds.
            (d / "meta.json").write_text(meta.to_json())
            upper_size = OVERLAY_UPPER_HARDENED if spec.hardened else OVERLAY_UPPER_WRITABLE
            self._tmpfs(d / "w", upper_size, "mode=0700")
            (d / "w" / "upper").mkdir()
            (d / "w" / "work").mkdir()
            (d / "root").mkdir()
            host.mount(
                "overlay", d / "root", "overlay", 0,
                f"lowerdir={lower},upperdir={d / 'w' / 'upper'},workdir={d / 'w' / 'work'}",
            )  # fmt: skip
            self._tmpfs(
                d / "tmp", spec.limits.tmp_bytes, "mode=1777", host.MS_NOSUID | host.MS_NODEV
            )
            mounts["/tmp"] = str(d / "tmp")
            for i, s in enumerate(spec.scratch):
                path = d / f"s{i}"
                opts = f"uid={AGENT_UID},gid={AGENT_UID},mode=0755"
                self._tmpfs(path, s.size_bytes, opts, host.MS_NOSUID | host.MS_NODEV)
                scratch[s.target] = mounts[s.target] = str(path)
            for b in spec.binds:
                mounts[b.target] = str(b.source)
                if b.read_only:
                    read_only.append(b.target)
            meta = Meta(**{**meta.__dict__, "mounts": mounts, "read_only": read_only})
            (d / "meta.json").write_text(meta.to_json())
            caps = bundle.exec_caps(spec)
            cfg = bundle.config(
                spec,
                bundle.HostPaths(
                    rootfs=str(d / "root"), tmp=str(d / "tmp"), scratch=scratch,
                    extra_binds=extra_binds, init=self._init if spec.init else None,
                ),
                image_env=env, image_workdir=workdir, seccomp=self._seccomp_for(caps),
                cgroups_path=host.cgroup_path(cid), hostname=cid[:12], nofile=NOFILE,
            )  # fmt: skip
            (d / "config.json").write_text(json.dumps(cfg))
        except BaseException:
            self._destroy(cid)
            raise
        with self._lock:
            self._metas[cid] = meta
        return cid

    def _tmpfs(self, path: Path, size: int, opts: str, flags: int = 0) -> None:
        path.mkdir()
        host.mount("tmpfs", path, "tmpfs", flags, f"size={size},{opts}")

    def _meta(self, cid: str) -> Meta:
        meta = self._metas.get(cid)
        if meta is not None:
            return meta
        try:
            meta = Meta.from_json((host.state_dir(cid, self._root) / "meta.json").read_text())
        except (OSError, ValueError, TypeError) as exc:
            raise EngineError(f"no container {cid[:12]} on this host") from exc
        self._metas[cid] = meta
        return meta

    def _runc(self, *args: str, log: Path | None = None) -> list[str]:
        argv = [self._binary, "--root", str(self._runc_root)]
        if log is not None:
            argv += ["--log", str(log), "--log-format", "json"]
        return [*argv, *args]

    def _run_argv(self, cid: str, d: Path, pid_file: Path, log: Path) -> list[str]:
        """The supervisor's command line: runc keeps its state after the main process ends,
        for `wait` and `_destroy`."""
        return self._runc(
            "run", "--keep", "--bundle", str(d), "--pid-file", str(pid_file), cid, log=log
        )

    def _could_not_start(self, failure: str) -> bool:
        """Whether the runtime's logged `failure` of an exec is the command's own (no such
        binary or working directory: exit 126, as Docker reports it)."""
        return "unable to start container process" in failure

    def _stopped(self, shim: subprocess.Popen[bytes], failure: str) -> bool:
        """Whether an exec failed (with `failure`) because the container had stopped."""
        return shim.poll() is not None

    def start(self, cid: str) -> None:
        d = host.state_dir(cid, self._root)
        self._meta(cid)
        pid_file, log = d / "pid", d / "run.log"
        argv = self._run_argv(cid, d, pid_file, log)
        try:
            shim = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C is the controller's to handle
            )
        except OSError as exc:
            raise EngineUnavailableError(
                f"cannot run {self._binary}: {exc.strerror}",
                fix=f"apt-get install {Path(self._binary).name}",
            ) from exc
        with self._lock:
            self._shims[cid] = shim
        deadline = time.monotonic() + START_WAIT_S
        delay = 0.0005
        while not pid_file.exists():
            if shim.poll() is not None:
                if pid_file.exists():
                    return  # started and already done (a command as PID 1 that exits at once)
                raise EngineError(f"{self.name} could not start {cid[:12]}: {_runc_error(log)}")
            if time.monotonic() > deadline:
                raise EngineError(
                    f"{self.name} did not start {cid[:12]} within {START_WAIT_S:.0f} s"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def wait(self, cid: str, deadline_s: float) -> int | None:
        shim = self._shims.get(cid)
        if shim is None:
            raise EngineError(f"container {cid[:12]} was not started by this controller")
        try:
            return shim.wait(timeout=max(deadline_s, 0.001))
        except subprocess.TimeoutExpired:
            return None

    def kill(self, cid: str) -> None:
        host.kill_cgroup(cid)

    def pause(self, cid: str) -> None:
        self._meta(cid)
        if not host.freeze(cid):
            host.thaw(cid)
            raise EngineError(f"container {cid[:12]} would not freeze")
        self._paused.add(cid)

    def remove(self, cid: str) -> None:
        self._destroy(cid)

    def _destroy(self, cid: str) -> None:
        """Everything of one container, in an order that survives a half-made one: processes,
        runc's record, cgroups, mounts, directory. Idempotent."""
        self._paused.discard(cid)
        host.kill_cgroup(cid)
        shim = self._shims.pop(cid, None)
        if shim is not None:
            try:
                shim.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                shim.kill()
                shim.wait(timeout=STOP_WAIT_S)
        d = host.state_dir(cid, self._root)
        _delete_runtime_state(self._root, cid, self._binary)
        host.remove_cgroups(cid)
        for point in host.mounted_under(d):
            host.umount(Path(point))
        shutil.rmtree(d, ignore_errors=True)
        with self._lock:
            self._metas.pop(cid, None)
        left = [p for p in (d,) if p.exists()] + host.cgroup_leftovers(cid)
        left += runtime_state(self._root, cid)
        if left:
            raise EngineError(f"could not remove {cid[:12]}: {', '.join(map(str, left))} remain")

    # -- exec ------------------------------------------------------------------------------

    def exec(
        self,
        cid: str,
        argv: tuple[str, ...],
        *,
        deadline_s: float,
        output_cap: int,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        capture: bool = True,
        keep_container: bool = False,
    ) -> ExecResult:
        t0 = time.monotonic()
        meta = self._meta(cid)
        shim = self._shims.get(cid)
        if shim is not None and shim.poll() is not None:
            raise EngineError(f"exec: container {cid[:12]} is not running")
        d = host.state_dir(cid, self._root)
        tag = uuid.uuid4().hex[:12]
        proc_file, log = d / f"exec-{tag}.json", d / f"exec-{tag}.log"
        spec = bundle.process(
            argv,
            user=meta.exec_user,
            env={**meta.env, **(env or {})},
            cwd=workdir or meta.workdir,
            caps=bundle.SWITCH_CAPS
            if meta.switch_user
            else (() if meta.hardened else bundle.DOCKER_DEFAULT_CAPS),
            no_new_privileges=meta.hardened,
            nofile=NOFILE,
        )
        proc_file.write_text(json.dumps(spec))
        out_target = subprocess.PIPE if capture else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(
                self._runc("exec", "--process", str(proc_file), cid, log=log),
                stdin=subprocess.DEVNULL, stdout=out_target, stderr=out_target,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            proc_file.unlink(missing_ok=True)
            raise EngineUnavailableError(f"cannot run {self._binary}: {exc.strerror}") from exc
        try:
            out, err, timed_out, truncated = _collect(proc, t0 + deadline_s, output_cap, capture)
            if (timed_out or truncated) and keep_container:
                threading.Thread(target=_drain_and_reap, args=(proc,), daemon=True).start()
                return ExecResult(
                    None, bytes(out[:output_cap]), bytes(err[:output_cap]),
                    timed_out, truncated, time.monotonic() - t0,
                )  # fmt: skip
            if timed_out or truncated:
                self.kill(cid)
                _drain_and_reap(proc)
                return ExecResult(
                    None, bytes(out[:output_cap]), bytes(err[: max(output_cap - len(out), 0)]),
                    timed_out, truncated, time.monotonic() - t0,
                )  # fmt: skip
            code = proc.wait()
            failure = _runc_error(log)
            if failure and self._could_not_start(failure):
                # The command could not start (no such binary, no such working directory):
                # the command's failure, as Docker reports it (exit 126, the reason on
                # stderr), not the runtime's.
                return ExecResult(
                    126, b"", f"OCI runtime exec failed: {failure}".encode()[:output_cap],
                    False, False, time.monotonic() - t0,
                )  # fmt: skip
            if failure:
                if shim is not None and self._stopped(shim, failure):
                    return ExecResult(
                        None, b"", b"", False, False, time.monotonic() - t0, exited=True
                    )
                raise EngineError(f"exec in {cid[:12]}: {failure}")
            return ExecResult(
                exit_code=code,
                stdout=bytes(out[:output_cap]),
                stderr=bytes(err[: max(output_cap - len(out), 0)]),
                timed_out=False,
                truncated=False,
                duration_s=time.monotonic() - t0,
            )
        finally:
            proc_file.unlink(missing_ok=True)
            log.unlink(missing_ok=True)

    # -- archives and logs -----------------------------------------------------------------

    def _locate(self, cid: str, path: str) -> tuple[Path, str, bool]:
        """(host directory, path inside it, writable) for a container path: the deepest of
        its mounts that holds it, else its root."""
        meta = self._meta(cid)
        # normpath keeps a leading "//" (POSIX allows it a meaning), so strip before joining.
        norm = posixpath.normpath("/" + path.lstrip("/"))
        if ".." in norm.split("/"):
            raise EngineError(f"path {path!r} leaves the container's root")
        best = ""
        for target in meta.mounts:
            inside = norm == target or norm.startswith(target.rstrip("/") + "/")
            if inside and len(target) > len(best):
                best = target
        if best:
            rel = norm[len(best) :].lstrip("/")
            return Path(meta.mounts[best]), rel, best not in meta.read_only
        root = host.state_dir(cid, self._root) / "root"
        return root, norm.lstrip("/"), not meta.read_only_root

    def put_archive(self, cid: str, path: str, data: bytes) -> None:
        norm = posixpath.normpath("/" + path.lstrip("/"))
        below = [t for t in self._meta(cid).mounts if t.startswith(norm.rstrip("/") + "/")]
        parts = _split_by_mount(norm, data, below) if below else {norm: data}
        for where, part in parts.items():
            base, rel, writable = self._locate(cid, where)
            if not writable:
                raise EngineError(f"put_archive: {where} is on the container's read-only root")
            hosttar.extract_tar(base, rel, part)

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        base, rel, _ = self._locate(cid, path)
        # Docker names the entries after the last component of the container's path.
        norm = posixpath.normpath("/" + path.lstrip("/"))
        top = posixpath.basename(norm) if not path.endswith(("/.",)) and norm != "/" else "."
        return hosttar.write_tar(base, rel, sink, cap, name=top)

    def logs(self, cid: str, cap: int) -> bytes:
        return b""  # the main process's output goes nowhere, as with Docker's "none" driver

    def oom_killed(self, cid: str) -> bool:
        return host.limit_events(cid).get("memory", 0) > 0

    def limit_events(self, cid: str) -> dict[str, int]:
        return {k: v for k, v in host.limit_events(cid).items() if v}

    def processes(self, cid: str) -> list[tuple[int, str]]:
        self._meta(cid)
        rows = []
        for pid in host.procs(cid):
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue  # exited meanwhile
            rows.append((pid, comm))
        return rows

    def census(self, cid: str) -> frozenset[int]:
        self._meta(cid)
        return frozenset(host.frozen_procs(cid))

    def image_digest(self, image: str) -> str:
        return self._image(image)[0]

    # -- garbage ---------------------------------------------------------------------------

    def _of(self, grading_id: str | None) -> list[Meta | str]:
        return [
            m
            for m in host.all_metas(self._root)
            if grading_id is None or (isinstance(m, Meta) and m.grading_id == grading_id)
        ]

    def sweep_stale_state(self) -> int:
        """Remove each OCI runtime's record of a container whose directory is gone (a removal
        that failed half-way): a container is made with its directory before the runtime
        records it, and loses it only after, so nothing runs under such a record. Returns how
        many records it removed; safe beside running gradings (`assay gc` calls it)."""
        stale = {
            cid
            for cid in (_state_cid(p) for p in runtime_state(self._root))
            if not host.state_dir(cid, self._root).exists()
        }
        for cid in stale:
            _delete_runtime_state(self._root, cid, self._binary)
        return len(stale)

    def sweep(self, grading_id: str | None = None) -> int:
        n, failures = 0, []
        if grading_id is None:
            self.sweep_stale_state()
        for m in self._of(grading_id):
            cid = m.cid if isinstance(m, Meta) else m
            try:
                self._destroy(cid)
                n += 1
            except EngineError as exc:
                failures.append(str(exc))
        if failures:
            raise EngineError(
                f"{len(failures)} container(s) could not be removed: " + "; ".join(failures[:3]),
                fix="`assay gc --all` retries",
            )
        return n

    def leftovers(self, grading_id: str | None = None) -> list[str]:
        names = [
            f"container:{(m.cid if isinstance(m, Meta) else m)[:12]}" for m in self._of(grading_id)
        ]
        if grading_id is None:
            names += [f"mount:{p}" for p in host.mounted_under(self._root / "c")]
            names += [f"cgroup:{p}" for p in host.cgroup_leftovers()]
            names += [f"state:{p}" for p in runtime_state(self._root)]
        return names

    def gradings(self) -> set[str]:
        return {m.grading_id for m in host.all_metas(self._root) if isinstance(m, Meta)}

    def orphans(self) -> set[str]:
        found: dict[str, bool] = {}
        for m in host.all_metas(self._root):
            if isinstance(m, Meta):
                dead = owner_is_dead(m.owner) is True
                found[m.grading_id] = found.get(m.grading_id, True) and dead
        return {gid for gid, dead in found.items() if dead}


RUNTIME_BINARIES = {"runc": "runc", "runsc": "runsc"}
"""The OCI runtimes whose state lives under `STATE_ROOT/<name>`: each backend removes the
other's containers too (`assay gc` opens the runc backend only)."""


def runtime_state(root: Path, cid: str | None = None) -> list[Path]:
    """What the OCI runtimes keep of one container (or of every container) under `root`:
    runc's state directory, runsc's state and lock files (`<cid>_sandbox:<cid>.state`)."""
    found: list[Path] = []
    for name in RUNTIME_BINARIES:
        base = root / name
        if not base.is_dir():
            continue
        if cid is not None:
            found += sorted(base.glob(f"{cid}*"))
        else:
            found += sorted(base.iterdir())
    return [p for p in found if cid is None or _state_cid(p) == cid]


def _state_cid(path: Path) -> str:
    return path.name.split("_sandbox:", 1)[0]


def _delete_runtime_state(root: Path, cid: str, own: str) -> None:
    """Have each OCI runtime that holds a record of `cid` delete it (its processes are already
    killed through the cgroup), then remove what the runtime leaves (runsc keeps its lock
    file). `own` is the calling backend's binary, used for its own runtime's records."""
    for name, binary in RUNTIME_BINARIES.items():
        mine = [p for p in runtime_state(root, cid) if p.parent.name == name]
        if not mine:
            continue
        exe = own if Path(own).name == name else shutil.which(binary)
        if exe is not None:
            try:
                subprocess.run(
                    [exe, "--root", str(root / name), "delete", "--force", cid],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, check=False, timeout=STOP_WAIT_S,
                )  # fmt: skip
            except (subprocess.TimeoutExpired, OSError):
                pass  # its processes are dead already: the record is removed below
        # Listed again: runsc's delete itself leaves a lock file beside the state it removes.
        for p in (p for p in runtime_state(root, cid) if p.parent.name == name):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def _split_by_mount(target: str, data: bytes, mounts: list[str]) -> dict[str, bytes]:
    """The tar `data` meant for `target`, cut into one tar per place it lands: members under a
    mount below `target` go to that mount (as the container sees the tree, which is what
    Docker's put_archive writes into), the rest to `target`. The mount point's own entry is
    left out: the mount's root keeps its owner and mode."""
    out: dict[str, tuple[tarfile.TarFile, io.BytesIO]] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as src:
            for member in src:
                name = posixpath.normpath(member.name.lstrip("/"))
                full = posixpath.normpath(posixpath.join(target, name))
                home = max(
                    (m for m in mounts if full == m or full.startswith(m + "/")),
                    key=len,
                    default=target,
                )
                if full == home and home != target:
                    continue
                rel = posixpath.relpath(full, home) if full != home else "."
                if home not in out:
                    buf = io.BytesIO()
                    out[home] = (
                        tarfile.open(fileobj=buf, mode="w:", format=tarfile.PAX_FORMAT),
                        buf,
                    )
                copy = member.replace(name=rel, deep=False)
                if member.islnk():
                    # a hard link's target is relative to the archive's root: keep it so only
                    # when both ends land in the same place (else extract_tar refuses it)
                    link = posixpath.normpath(posixpath.join(target, member.linkname.lstrip("/")))
                    copy.linkname = posixpath.relpath(link, home)
                out[home][0].addfile(copy, src.extractfile(member) if member.isfile() else None)
    except tarfile.TarError as exc:
        raise EngineError(f"put_archive: not a tar archive ({exc})") from exc
    parts = {}
    for home, (tf, buf) in out.items():
        tf.close()
        parts[home] = buf.getvalue()
    return parts


def _runc_error(log: Path) -> str:
    """runc's own error lines from its JSON log ("" if it logged none): what separates a
    failure of the runtime from the exit status of the command it ran."""
    try:
        text = log.read_text(errors="replace")[-8192:]
    except OSError:
        return ""
    msgs = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("level") in ("error", "fatal"):
            msgs.append(str(entry.get("msg", ""))[:500])
    return "; ".join(msgs)


def _collect(
    proc: subprocess.Popen[bytes], deadline: float, cap: int, capture: bool
) -> tuple[bytearray, bytearray, bool, bool]:
    """Read stdout and stderr until both close, the deadline passes or their sum passes cap."""
    out, err = bytearray(), bytearray()
    if not capture:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
            return out, err, False, False
        except subprocess.TimeoutExpired:
            return out, err, True, False
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return out, err, True, False
            for key, _ in sel.select(timeout=left):
                chunk = os.read(key.fd, READ_CHUNK)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if len(out) + len(err) > cap:
                    return out, err, False, True
        left = deadline - time.monotonic()
        try:
            proc.wait(timeout=max(left, 0))
        except subprocess.TimeoutExpired:
            return out, err, True, False
        return out, err, False, False
    finally:
        sel.close()


def _drain_and_reap(proc: subprocess.Popen[bytes]) -> None:
    """Read a left-running exec's pipes to their end (a writer blocked on a full pipe must
    not keep its container from dying) and reap the runc process."""
    readers = [
        threading.Thread(target=_drain, args=(s,), daemon=True)
        for s in (proc.stdout, proc.stderr)
        if s is not None
    ]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    proc.wait()


def _drain(stream: BinaryIO) -> None:
    try:
        while stream.read(READ_CHUNK):
            pass
    except (OSError, ValueError):
        pass
    finally:
        stream.close()
