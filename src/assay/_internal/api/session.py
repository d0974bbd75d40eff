"""`Session`: an agent container driven from the host, one tool call at a time, then graded.

Real harnesses (Inspect AI, SWE-agent) keep the model loop on the host and execute its tool
calls in a sandbox. A session is that sandbox: the agent container the CLI's agent phase starts
(`tiers.intake.start_agent`), and at `grade` the same freeze-and-take-through-the-firewall step
(`tiers.intake.collect_agent`) before the task's tier grades what the workspace holds.
"""

from __future__ import annotations

import base64
import io
import secrets
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from types import TracebackType

from assay.errors import ArchiveTooLargeError, EngineError, InfrastructureError, UsageError

from ..model.task import Task
from ..model.verdict import Verdict
from ..runtime import ExecResult as RawExec
from ..runtime import GradingScope, Runtime
from ..runtime.base import AGENT_UID, ceilings_hit
from ..runtime.scope import new_grading_id
from ..tiers.core.controller import Source, check_agent_inputs, task_image
from ..tiers.core.intake import Refused, Submission, collect_agent, start_agent
from ..tiers.dispatch import pick_tier, run_tier
from .graded import Graded

OUTPUT_CAP = 10 * 2**20
"""Bytes of stdout + stderr one `exec` returns (Inspect's own sandboxes cap at 10 MiB)."""
INPUT_CAP = 8 * 2**20
"""Bytes of stdin one `exec` takes (staged in the container's capped /tmp)."""
READ_CAP = 100 * 2**20
_ARG_CHUNK = 96 * 1024  # base64 bytes per staging exec: under Linux's 128 KiB per argument
_CONTROL_S = 30.0  # deadline of the session's own short commands (checks, kills, staging)
# Runs the command in a new process group whose id it writes to a file first, so that a command
# past its limit, and everything it started, can be killed without killing the container.
_WRAP = (
    'p=$1; i=$2; shift 2; printf %s "$$" >"$p"; '
    'if [ -n "$i" ]; then "$@" <"$i"; else "$@"; fi; s=$?; rm -f -- "$p" ${i:+"$i"}; exit $s'
)
_KILL = 'g=$(cat -- "$0") && [ -n "$g" ] && kill -KILL -"$g" && rm -f -- "$0" "$1"'
# Walks the path inside the workspace as the agent's user: a symlink anywhere on it is refused.
_PROBE_KINDS = frozenset(
    {"symlink", "missing", "notdir", "dir", "other", "unreadable", "readonly", "file"}
)
_PROBE = """
d=$1; shift; n=$#; i=0
for c in "$@"; do
  i=$((i+1)); d="$d/$c"
  if [ -L "$d" ]; then echo symlink; exit 0; fi
  if [ ! -e "$d" ]; then echo missing; exit 0; fi
  if [ "$i" -lt "$n" ] && [ ! -d "$d" ]; then echo notdir; exit 0; fi
done
if [ -d "$d" ]; then echo dir; elif [ ! -f "$d" ]; then echo other
elif [ ! -r "$d" ]; then echo unreadable; elif [ ! -w "$d" ]; then echo readonly; else echo file; fi
"""


@dataclass(frozen=True)
class ExecResult:
    """What one `Session.exec` returned. `exit_code` is None when the command did not finish
    (timed out, or its output went over the cap: either way it was killed)."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    truncated: bool = False
    """stdout + stderr went over `assay.Session.output_cap`; the command was killed there."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class Session:
    """An agent container for a loop on the host: `exec` runs its tool calls, `read_file` and
    `write_file` move files in and out of /workspace, `grade` freezes the container, takes the
    task's declared artifacts through the archive firewall and grades them on the task's tier
    (or `tier`). Use it as a context manager: leaving the block, by any path (an exception,
    Ctrl-C), removes the container and everything the session created.

    The container is the one the CLI's agent phase runs: the task's inputs read-only at /task,
    a writable /workspace capped at the task's artifact limit, no network, the task's limits.
    """

    output_cap: int = OUTPUT_CAP

    def __init__(
        self,
        runtime: Callable[[], Runtime],
        task: Task,
        image: str,
        sign: Callable[[Verdict], bytes],
        build: Callable[[Runtime, Task], object] | None = None,
    ) -> None:
        self.task = task
        self._runtime = runtime
        self._image = image
        self._sign = sign
        self._build = build
        self.grading_id = new_grading_id()
        self._scope: GradingScope | None = None
        self._cid: str | None = None
        self._state = "new"  # new -> live -> (graded | closed)
        self._agent_image: str | None = None

    # -- lifetime ----------------------------------------------------------------------------

    def start(self) -> Session:
        """Start the agent container (`with` does this). Raises `assay.errors.UnsafeInputsError`
        for inputs that would leak answers, `InfrastructureError` if it cannot start."""
        if self._state != "new":
            raise UsageError(f"this session was already started (it is {self._state})")
        check_agent_inputs(self.task)
        rt = self._runtime()
        self._state = "live"
        self._scope = GradingScope(rt, self.grading_id, self._record_image)
        try:
            if self._build is not None:
                self._build(rt, self.task)
            image = task_image(rt, self.task, self._image)
            self._cid = start_agent(self._scope, self.task, image, None)
        except BaseException:
            self.close()
            raise
        return self

    def _record_image(self, spec: object) -> None:
        self._agent_image = getattr(spec, "image", None)

    def close(self) -> None:
        """Remove the container and temp files (idempotent; `with` calls it)."""
        if self._state in ("live", "new"):
            self._state = "closed"
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.close()

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _live(self, what: str) -> tuple[Runtime, str]:
        if self._state != "live" or self._scope is None or self._cid is None:
            ended = {"new": "was not started", "graded": "was graded", "closed": "has ended"}
            raise UsageError(f"{what}: the session {ended.get(self._state, self._state)}")
        return self._scope.runtime, self._cid

    # -- tool calls --------------------------------------------------------------------------

    def exec(
        self,
        cmd: Sequence[str] | str,
        *,
        input: str | bytes | None = None,
        timeout: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `cmd` (an argv list, or a string for `sh -c`) as the agent's user, in
        /workspace or `cwd` (relative to it). `timeout` (default: the task's agent timeout)
        is enforced here: past it, the command and every process it started in its process
        group are killed and `timed_out` is set. stdout + stderr are capped at `output_cap`.

        Raises `UsageError` after `grade` or once the session ended, and
        `InfrastructureError` if the container is gone (a session never passes by dying)."""
        rt, cid = self._live("exec")
        argv = ("sh", "-c", cmd) if isinstance(cmd, str) else tuple(cmd)
        if not argv or not all(isinstance(a, str) for a in argv):
            raise UsageError("exec: cmd is a non-empty list of str, or a str")
        limit = self.task.config.limits.agent_timeout if timeout is None else float(timeout)
        if limit <= 0:
            raise UsageError("exec: timeout must be positive")
        root = self.task.workdir
        workdir = _resolve(cwd, root) if cwd is not None else root
        token = secrets.token_hex(8)
        group_file = f"/tmp/.assay-exec-{token}"
        staged = "" if input is None else self._stage_input(rt, cid, input, token)
        wrapped = ("setsid", "-w", "sh", "-c", _WRAP, "assay-exec", group_file, staged, *argv)
        res = self._raw(
            rt, cid, wrapped, limit, self.output_cap, env=env, workdir=workdir, keep=True
        )
        if res.timed_out or res.truncated:
            self._kill_group(rt, cid, group_file, staged)
        return ExecResult(
            exit_code=res.exit_code,
            stdout=res.stdout[: self.output_cap],
            stderr=res.stderr[: max(self.output_cap - len(res.stdout), 0)],
            timed_out=res.timed_out,
            truncated=res.truncated,
        )

    def _raw(
        self,
        rt: Runtime,
        cid: str,
        argv: tuple[str, ...],
        deadline_s: float,
        cap: int,
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        keep: bool = False,
    ) -> RawExec:
        try:
            res = rt.exec(
                cid, argv, deadline_s=deadline_s, output_cap=cap, env=env, workdir=workdir,
                keep_container=True,
            )  # fmt: skip
        except EngineError as exc:
            self._dead()
            raise InfrastructureError(f"the session's container failed: {exc}") from exc
        if res.exited:
            self._dead()
            raise InfrastructureError("the session's container stopped")
        if not keep and (res.timed_out or res.truncated):
            # One of the session's own short commands could not finish. At a ceiling the
            # agent's processes hit (a fork bomb: runc cannot start a thread of its exec in
            # the container's cgroup, and its crash dump fills the output), that is the agent's
            # doing, answered as such while `grade` names the limit; at none, it is the
            # container's fault, and the session ends.
            if hit := ceilings_hit(rt, cid):
                raise UsageError(f"the container is at its {hit[0]} limit: try again later")
            self._dead()
            raise InfrastructureError("the session's container stopped answering")
        return res

    def _dead(self) -> None:
        # Nothing it held can be graded: end the session so that `grade` cannot pass it.
        self._state = "closed"
        self.close()

    def _kill_group(self, rt: Runtime, cid: str, group_file: str, staged: str) -> None:
        # The command may not have written its group yet (it was starting): retry a while.
        for attempt in range(20):
            argv = ("sh", "-c", _KILL, group_file, staged or group_file)
            try:
                if self._raw(rt, cid, argv, _CONTROL_S, 4096).exit_code == 0:
                    return
            except UsageError:
                return  # at a ceiling of its own making: what it left is the agent's, to grade
            time.sleep(0.05 * (attempt + 1))
        # Its group is unknown (the agent removed the file?): only the container is a safe stop.
        self._dead()
        raise InfrastructureError("exec: a command past its limit could not be stopped")

    def _stage_input(self, rt: Runtime, cid: str, data: str | bytes, token: str) -> str:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        if len(raw) > INPUT_CAP:
            raise UsageError(f"exec: input is larger than {INPUT_CAP} bytes")
        path = f"/tmp/.assay-stdin-{token}"
        b64 = base64.b64encode(raw).decode()
        chunks = [b64[i : i + _ARG_CHUNK] for i in range(0, len(b64), _ARG_CHUNK)] or [""]
        for chunk in chunks:
            res = self._raw(
                rt, cid, ("sh", "-c", 'printf %s "$1" | base64 -d >>"$0"', path, chunk),
                _CONTROL_S, 4096,
            )  # fmt: skip
            if res.exit_code != 0:
                raise InfrastructureError(f"exec: could not stage input: {res.stderr[:200]!r}")
        return path

    # -- files -------------------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        """The bytes of a regular file in /workspace (`path` relative to it, or absolute under
        it). Raises `UsageError` for a path outside the workspace or through a symlink, and
        `FileNotFoundError`, `IsADirectoryError`, `PermissionError` as `open` would."""
        rt, cid = self._live("read_file")
        parts = _parts(path, self.task.workdir)
        if (refusal := _unreadable(self._probe(rt, cid, parts), path)) is not None:
            raise refusal
        spool = io.BytesIO()
        try:
            rt.get_archive(cid, f"{self.task.workdir}/{'/'.join(parts)}", spool, READ_CAP + 4096)
        except ArchiveTooLargeError as exc:
            raise UsageError(f"read_file {path!r}: larger than {READ_CAP} bytes") from exc
        except EngineError as exc:
            # The agent's commands run beside this call and may have moved the path since the
            # probe: the path as it is now answers, and only a dead container (the probe's
            # own InfrastructureError) is no answer at all.
            now = _unreadable(self._probe(rt, cid, parts), path)
            changed = UsageError(f"read_file {path!r}: the path changed while it was read")
            raise now or changed from exc
        except Exception as exc:
            # Only the cap means "too large": anything else is named as what it is.
            raise InfrastructureError(
                f"read_file {path!r}: {type(exc).__name__}: {str(exc)[:300]}"
            ) from exc
        return _single_file(spool.getvalue(), path)

    def write_file(self, path: str, data: str | bytes) -> None:
        """Write `data` to a file in /workspace, creating parent directories. Refused
        (`UsageError`) outside the workspace or through a symlink on the path."""
        rt, cid = self._live("write_file")
        parts = _parts(path, self.task.workdir)
        raw = data.encode() if isinstance(data, str) else bytes(data)
        if len(raw) > self.task.config.limits.artifact_bytes:
            raise UsageError(f"write_file {path!r}: larger than the task's artifact limit")
        kind = self._probe(rt, cid, parts)
        if kind == "dir":
            raise IsADirectoryError(f"{path}: is a directory")
        if kind in ("unreadable", "readonly"):
            raise PermissionError(f"{path}: not writable by the agent's user")
        if kind not in ("file", "missing"):
            raise UsageError(f"write_file {path!r}: refused ({kind} on the path)")
        parent = f"{self.task.workdir}/{'/'.join(parts[:-1])}".rstrip("/")
        if len(parts) > 1:
            res = self._raw(rt, cid, ("mkdir", "-p", "--", parent), _CONTROL_S, 4096)
            if res.exit_code != 0:
                raise UsageError(f"write_file {path!r}: cannot create {parent}")
            # The walk again: a directory made by mkdir -p is real, but check nothing raced in.
            if self._probe(rt, cid, parts[:-1]) != "dir":
                raise UsageError(f"write_file {path!r}: refused (the path changed)")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
            info = tarfile.TarInfo(parts[-1])
            info.size, info.mode, info.uid, info.gid = len(raw), 0o644, AGENT_UID, AGENT_UID
            tf.addfile(info, io.BytesIO(raw))
        try:
            rt.put_archive(cid, parent, buf.getvalue())
        except EngineError as exc:
            # A full workspace, or a path the agent's commands changed since the probe: the
            # agent's doing, answered as a refused write while the container lives (a dead
            # one makes the probe raise InfrastructureError).
            self._probe(rt, cid, parts)
            raise UsageError(
                f"write_file {path!r}: not written (the workspace is full, or the path changed "
                "while it was written)"
            ) from exc

    def _probe(self, rt: Runtime, cid: str, parts: list[str]) -> str:
        argv = ("sh", "-c", _PROBE, "probe", self.task.workdir, *parts)
        res = self._raw(rt, cid, argv, _CONTROL_S, 4096)
        kind = res.stdout.decode("ascii", "replace").strip()
        if res.exit_code != 0 or kind not in _PROBE_KINDS:
            # The probe itself did not run. At a ceiling the agent's processes hit, runc may
            # fail to start the exec at all (a fork bomb: "read init-p: connection reset by
            # peer", exit 126, printed where the probe's answer would be): that is the
            # agent's doing, said as such, never read as a kind of path.
            if hit := ceilings_hit(rt, cid):
                raise UsageError(f"the container is at its {hit[0]} limit: try again later")
            raise UsageError(f"the path probe failed (exit {res.exit_code}): {kind[:200]!r}")
        return kind

    # -- grading -----------------------------------------------------------------------------

    def grade(self, *, tier: str | None = None) -> Graded:
        """Freeze the container, take the declared artifacts from /workspace through the
        archive firewall, grade them on `tier` (default: the task's) and sign the verdict.
        The session ends here. Raises `InfrastructureError` if no verdict could be produced
        (the container died at no limit, the engine failed)."""
        rt, cid = self._live("grade")
        chosen = pick_tier(self.task, tier, unsafe_baseline=False)
        self._state = "graded"

        def collect(
            scope: GradingScope, same_links: frozenset[tuple[str, str]]
        ) -> Submission | Refused:
            return collect_agent(
                scope, self.task, cid, False, stopped_is_error=True, same_links=same_links
            )

        source = Source(collect=collect, agent_image=self._agent_image)
        try:
            judged, _ = run_tier(
                rt, self.task, source, chosen, self._image, grading_id=self.grading_id
            )
        finally:
            self.close()
        verdict = judged.verdict
        return Graded(verdict, self._sign(verdict), diagnostics=judged.diagnostics)


def _parts(path: str, root: str) -> list[str]:
    """`path` as components under `root` (the task's workdir, /workspace unless its
    `[environment]` names another); refuses anything that could leave it."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise UsageError(f"{path!r}: not a file path")
    p = PurePosixPath(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            raise UsageError(f"{path!r} is outside {root}") from None
    parts = [c for c in p.parts if c != "."]
    if not parts or ".." in parts:
        raise UsageError(f"{path!r} is outside {root} (or names it)")
    return parts


def _resolve(cwd: str, root: str) -> str:
    """A working directory: relative ones are under `root`. An absolute one may be
    anywhere (the command could `cd` there itself: it is not a boundary)."""
    if cwd.startswith("/"):
        return cwd
    return f"{root}/{'/'.join(_parts(cwd, root))}" if cwd not in ("", ".") else root


def _unreadable(kind: str, path: str) -> Exception | None:
    """What `read_file` raises for a path the probe found to be `kind`; None for a file."""
    if kind == "missing" or kind == "notdir":
        return FileNotFoundError(f"{path}: no such file")
    if kind == "dir":
        return IsADirectoryError(f"{path}: is a directory")
    if kind == "unreadable":
        return PermissionError(f"{path}: not readable by the agent's user")
    if kind not in ("file", "readonly"):
        return UsageError(f"read_file {path!r}: refused ({kind} on the path)")
    return None


def _single_file(data: bytes, path: str) -> bytes:
    """The one regular file in a tar the engine returned for `path` (hostile bytes: the agent
    could have swapped the file since the probe; anything but one regular file is refused)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
            members = []
            for m in tf:
                members.append(m)
                if len(members) > 1:
                    break
            if len(members) != 1 or not members[0].isreg() or members[0].size > READ_CAP:
                raise UsageError(f"read_file {path!r}: not one regular file")
            fh = tf.extractfile(members[0])
            if fh is None:
                raise UsageError(f"read_file {path!r}: not one regular file")
            return fh.read(READ_CAP + 1)[:READ_CAP]
    except tarfile.TarError as exc:
        raise UsageError(f"read_file {path!r}: unreadable archive") from exc
