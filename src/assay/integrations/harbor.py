"""Harbor runs its agents; assay owns the box and the verdict.

    # not Python: Harbor's CLI, in an environment with Harbor and assay
    harbor run -p TASK -a oracle \\
        --env assay.integrations.harbor:AssayEnvironment \\
        --verifier assay.integrations.harbor:AssayVerifier

`AssayVerifier` verifies a trial as `assay grade` does on the harbor tier: the agent's final
workdir is taken out of its box (frozen first, when the box is an `AssayEnvironment`), crosses
the archive firewall, and is restored into a fresh offline container from the task's image
where `tests/test.sh` runs under assay's init; the reward is read through the firewall after
every process of the tests has ended. The trial's rewards are the signed verdict's, and the
verdict, its DSSE envelope and the diagnostics are written to the trial's verifier directory.
Anything that stops a verdict being made raises `AssayVerifierError`: a Harbor error for the
trial, never a reward of 0. A multi-step task's steps are verified one by one, each as its own
assay task (`assay.import_harbor(..., step=)`), taken live from the box the agent goes on in.

`AssayEnvironment` is the agent's box on assay's runtime (runc by default, `ASSAY_RUNTIME`):
assay's hardening (no network, no capabilities, a read-only root, every command as uid 1000),
writable only at the task's workdir, /tmp and the directories Harbor writes (/logs/*,
/solution, /tests, /installed-agent). What Harbor asks that it cannot honour (GPUs, a compose
file, a network allowlist, Windows) fails the trial at `start` naming it. `--ek hardened=false`
gives a box shaped like Harbor's Docker environment (root, writable root, still offline): the
baseline the proof runs Harbor's stock verifier in (docs/integrations.md).

Needs Harbor (Python >= 3.12): `pip install harbor assay` in one environment.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import re
import secrets
import shlex
import shutil
import tempfile
import threading
import tomllib
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO, cast

from harbor.environments.base import BaseEnvironment
from harbor.environments.base import ExecResult as HarborExec
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier

import assay
from assay.errors import AssayError
from assay.runtime import UNPRIVILEGED_USER, Bind, ContainerSpec, Limits, Runtime, Scratch

from ._harbor_tar import TRANSFER_CAP, archive, extract, host_tar, rerooted

__all__ = [
    "AssayEnvironment",
    "AssayVerifier",
    "AssayVerifierError",
    "VerifierOutputParseError",
    "assay_task",
    "steps_of",
]

HARBOR_DIRS = {
    "/logs/agent": 64 << 20,
    "/logs/verifier": 16 << 20,
    "/logs/artifacts": 64 << 20,
    "/solution": 64 << 20,
    "/tests": 64 << 20,
    "/installed-agent": 512 << 20,
}
"""Where Harbor's agents, oracle and stock verifier write in the box, with each one's room."""
OUTPUT_CAP = 10 << 20
"""Bytes of stdout + stderr one `exec` returns (Harbor's own sandboxes cap output too)."""
DEFAULT_EXEC_S = 6 * 3600.0
"""A command Harbor gives no timeout: it cancels it at its phase's timeout instead."""
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
_AGENT_UID = int(UNPRIVILEGED_USER.split(":")[0])


class AssayVerifierError(RuntimeError):
    """No verdict could be made (a task assay cannot honour, an engine failure): the trial ends
    with this error and no reward."""


class VerifierOutputParseError(AssayVerifierError):
    """What `AssayVerifier` raises. Harbor decides what an error means by its class's name
    alone (`harbor.models.trial.error_policy`): under this name a step's error leaves the
    trial with no valid reward and is not retried; under a name Harbor does not know, a
    multi-step trial would keep the other steps' mean as if the step had not existed."""


_grader: assay.Grader | None = None
_grader_lock = threading.Lock()


def _the_grader() -> assay.Grader:
    """One grader per Harbor process (its trials run in threads): its signing key (assay's
    per-user key) and runtime."""
    global _grader
    with _grader_lock:
        if _grader is None:
            _grader = assay.Grader()
        return _grader


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(b"L" + rel.encode() + b"\0" + os.readlink(path).encode() + b"\0")
        elif path.is_file():
            h.update(b"F" + rel.encode() + b"\0" + path.read_bytes() + b"\0")
        elif path.is_dir():
            h.update(b"D" + rel.encode() + b"\0")
    return h.hexdigest()[:24]


def steps_of(harbor_task_dir: str | Path) -> list[str]:
    """The step names of a multi-step Harbor task, in order; [] for a single-step one."""
    raw = tomllib.loads((Path(harbor_task_dir) / "task.toml").read_text(encoding="utf-8"))
    steps = raw.get("steps") or []
    return [s["name"] for s in steps if isinstance(s, dict) and isinstance(s.get("name"), str)]


def assay_task(harbor_task_dir: str | Path, step: str | None = None) -> Path:
    """The assay task for a Harbor task directory (with `step`, that step of a multi-step
    task), imported once per content (under $ASSAY_HARBOR_TASKS, default
    ~/.cache/assay/harbor-tasks). Raises `assay.errors.UsageError` naming what assay cannot
    honour."""
    src = Path(harbor_task_dir).resolve()
    cache = Path(os.environ.get("ASSAY_HARBOR_TASKS", "~/.cache/assay/harbor-tasks"))
    part = "" if step is None else f".{step}"
    out = cache.expanduser() / f"{src.name}{part}-{_tree_digest(src)}"
    if (out / "task.toml").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{secrets.token_hex(6)}"
    try:
        assay.import_harbor(src, tmp, step)
        try:
            tmp.rename(out)
        except OSError:
            if not (out / "task.toml").is_file():  # another trial's import won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# -- the box ------------------------------------------------------------------------------------


class AssayEnvironment(BaseEnvironment):  # type: ignore[misc]
    """The agent's box on assay's runtime (module docstring). `--ek hardened=false`: the
    Harbor-shaped baseline (root, writable root, offline)."""

    def __init__(self, *args: Any, hardened: bool | str = True, **kwargs: Any) -> None:
        self.hardened = str(hardened).lower() not in ("false", "0", "no")
        super().__init__(*args, **kwargs)
        self._rt: Runtime | None = None
        self._cid: str | None = None
        # The trial's name in the grading id: `assay gc` and a leftover check name the trial.
        trial = re.sub(r"[^a-z0-9]+", "-", str(self.session_id).lower()).strip("-")[:48]
        self._gid = f"harbor-{trial}-{secrets.token_hex(4)}"
        self._task: assay.Task | None = None
        self._frozen = False

    @staticmethod
    def type() -> str:
        return "assay"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # GPUs, allowlists and compose are claimed so that Harbor lets the trial reach
        # `start`, where each is refused by name for this trial alone (an error in the
        # constructor would end the whole job).
        return EnvironmentCapabilities(
            disable_internet=True, gpus=True, network_allowlist=True,
            network_allowlist_hostnames=True, network_allowlist_wildcard_hostnames=True,
            network_allowlist_ipv4_addresses=True, network_allowlist_ipv6_addresses=True,
            network_allowlist_ipv4_cidrs=True, network_allowlist_ipv6_cidrs=True,
            docker_compose=True,
        )  # fmt: skip

    def _validate_definition(self) -> None:
        if not (Path(self.environment_dir) / "Dockerfile").is_file():
            if not self.task_env_config.docker_image:
                raise FileNotFoundError(f"{self.environment_dir}: no Dockerfile")

    def _refusals(self) -> list[str]:
        env = self.task_env_config
        found = []
        if (env.gpus or 0) > 0:
            found.append("GPUs ([environment] gpus): assay's box has none")
        if any((Path(self.environment_dir) / n).exists() for n in COMPOSE_FILES):
            found.append("a compose file (sidecar services): assay runs one container")
        if self._network_is_allowlist:
            found.append(
                "a network allowlist: assay's box has no network at all (ADR 0001), and "
                "opening egress to named hosts is not offered"
            )
        if str(getattr(env, "os", "linux")).lower().endswith("windows"):
            found.append("a Windows container")
        return found

    async def start(self, force_build: bool) -> None:
        if refused := self._refusals():
            raise AssayVerifierError("assay cannot honour this task: " + "; ".join(refused))
        if not self._network_disabled:
            # Said where the trial's log shows it: the task allows a network, the box has none.
            self.logger.warning(
                "assay: the box has no network (ADR 0001); this task's network policy is "
                f"{self.network_policy.network_mode.value!r}, run offline"
            )
        await asyncio.to_thread(self._start)
        await self.ensure_dirs(self._mount_targets(writable_only=True))
        await self._upload_environment_dir_after_start()

    def _start(self) -> None:
        grader = _the_grader()
        # One box for every step of a multi-step task: the first step's task gives its image,
        # workdir and limits (the steps differ in instructions and tests only).
        harbor_dir = Path(self.environment_dir).parent
        task = assay.load_task(assay_task(harbor_dir, next(iter(steps_of(harbor_dir)), None)))
        self._task = task
        image = grader.build(task) or grader.image
        rt = self._rt = grader.runtime()
        lim = task.config.limits
        workdir = task.workdir
        spec = ContainerSpec(
            image=image,
            grading_id=self._gid,
            role="agent",
            user=UNPRIVILEGED_USER if self.hardened else "0:0",
            env=dict(self._startup_env()),
            binds=(Bind(task.inputs_dir, "/task"),),
            scratch=(
                Scratch(workdir, lim.artifact_bytes),
                *(Scratch(d, n) for d, n in HARBOR_DIRS.items() if d != workdir),
            ),
            limits=Limits(
                memory_bytes=max(lim.memory_mb, 512) * 2**20, pids=max(lim.pids, 256),
                cpus=lim.cpus,
            ),
            workdir=workdir,
            hardened=self.hardened,
        )  # fmt: skip
        self.logger.info(f"assay: the box is grading {self._gid} on {rt.name}")
        self._cid = rt.create(spec)
        rt.start(self._cid)
        self._seed(rt, image, workdir, lim.artifact_bytes)

    def _seed(self, rt: Runtime, image: str, workdir: str, cap: int) -> None:
        """The image's files at the workdir into the box's (a tmpfs), owned by the box's user:
        the agent starts from the environment as Harbor's own box would."""
        seed = rt.create(ContainerSpec(image=image, grading_id=self._gid, role="seed"))
        try:
            with tempfile.SpooledTemporaryFile(max_size=8 << 20) as raw:
                try:
                    rt.get_archive(seed, workdir, cast(BinaryIO, raw), cap * 2 + (1 << 20))
                except AssayError:
                    return  # nothing there in the image
                raw.seek(0)
                uid = _AGENT_UID if self.hardened else 0
                data, count = rerooted(cast(IO[bytes], raw), PurePosixPath(workdir).name, uid)
        finally:
            rt.remove(seed)
        if count:
            assert self._cid is not None
            rt.put_archive(self._cid, workdir, data)

    async def stop(self, delete: bool) -> None:
        # Never raises (Harbor records a stop's exception as the trial's): a container that
        # could not be removed is left for `assay gc`, which the log names.
        rt, cid, self._cid = self._rt, self._cid, None
        if rt is None:
            return
        try:
            await asyncio.to_thread(rt.sweep, self._gid)
        except Exception as exc:
            self.logger.warning(f"assay: could not remove box {cid}: {exc}; run `assay gc`")

    def _live(self) -> tuple[Runtime, str]:
        if self._rt is None or self._cid is None:
            raise RuntimeError("the assay box is not running")
        if self._frozen:
            raise RuntimeError("the assay box was frozen for verification")
        return self._rt, self._cid

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> HarborExec:
        # `user` is not honoured by design: every command runs as the box's one user (uid 1000
        # in a hardened box, root in the baseline); a hardened box never runs root.
        rt, cid = self._live()
        token = secrets.token_hex(8)
        group = f"/tmp/.assay-exec-{token}"
        wrapped = ("setsid", "-w", "bash", "-c", 'printf %s "$$" >"$0"; exec bash -c "$1"',
                   group, command)  # fmt: skip
        deadline = float(timeout_sec) if timeout_sec else DEFAULT_EXEC_S
        task = self._task
        workdir = cwd or (task.workdir if task is not None else None)

        def run() -> Any:
            return rt.exec(
                cid, wrapped, deadline_s=deadline, output_cap=OUTPUT_CAP,
                env=self._merge_env(env) or None, workdir=workdir, keep_container=True,
            )  # fmt: skip

        try:
            res = await asyncio.to_thread(run)
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.to_thread(self._kill_group, rt, cid, group))
            raise
        if res.timed_out or res.truncated:
            await asyncio.to_thread(self._kill_group, rt, cid, group)
        if res.timed_out:
            raise RuntimeError(f"Command timed out after {deadline:g} seconds")
        return HarborExec(
            stdout=res.stdout.decode("utf-8", "replace") or None,
            stderr=res.stderr.decode("utf-8", "replace") or None,
            return_code=res.exit_code if res.exit_code is not None else 137,
        )

    @staticmethod
    def _kill_group(rt: Runtime, cid: str, group: str) -> None:
        kill = 'g=$(cat -- "$0" 2>/dev/null) && [ -n "$g" ] && kill -KILL -"$g"; rm -f -- "$0"'
        try:
            rt.exec(cid, ("sh", "-c", kill, group), deadline_s=30.0, output_cap=4096,
                    keep_container=True)  # fmt: skip
        except AssayError:
            pass

    def _uid(self) -> int:
        return _AGENT_UID if self.hardened else 0

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        rt, cid = self._live()
        target = PurePosixPath(target_path)
        data = host_tar(Path(source_path), target.name, self._uid())
        await asyncio.to_thread(rt.put_archive, cid, str(target.parent), data)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        rt, cid = self._live()
        # Below a writable place only (else the put below fails, naming where).
        await self.exec(f"mkdir -p -- {shlex.quote(target_dir)}")
        data = host_tar(Path(source_dir), "", self._uid())
        await asyncio.to_thread(rt.put_archive, cid, target_dir, data)

    def _get(self, path: str) -> IO[bytes]:
        return archive(*self._live(), path)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        with await asyncio.to_thread(self._get, source_path) as raw:
            name = PurePosixPath(source_path).name
            await asyncio.to_thread(extract, raw, name, Path(target_path), True)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        with await asyncio.to_thread(self._get, source_dir) as raw:
            top = PurePosixPath(source_dir).name
            await asyncio.to_thread(extract, raw, top, Path(target_dir), False)

    # -- for the verifier ------------------------------------------------------------------

    def take_workdir(self, freeze: bool = True) -> BinaryIO:
        """The box's workdir as a tar with names relative to it: hostile bytes, for the
        firewall to judge. `freeze`: stop the box first, for good (nothing the agent started
        runs any more, and the files hold still); a multi-step trial's box goes on to the
        next step, so its steps are taken live."""
        rt, cid = self._live()
        assert self._task is not None
        if freeze:
            rt.pause(cid)
            self._frozen = True
        workdir = self._task.workdir
        with archive(rt, cid, workdir) as raw:
            data, _ = rerooted(raw, PurePosixPath(workdir).name, None)
        return io.BytesIO(data)


# -- the verifier -------------------------------------------------------------------------------


class AssayVerifier(BaseVerifier):  # type: ignore[misc]
    """Verifies a trial on assay's harbor tier (module docstring). `take` (`--verifier-kwarg
    take=exec`): how the workdir leaves the agent's box: "auto" freezes an `AssayEnvironment`
    and reads its files from the host, and tars them in any other box with that box's own
    `tar` (whose output, like everything from the box, only the firewall judges); "exec"
    always does the latter."""

    def __init__(self, *args: Any, take: str = "auto", **kwargs: Any) -> None:
        if take not in ("auto", "exec"):
            raise ValueError(f"take={take!r}: 'auto' or 'exec'")
        super().__init__(*args, **kwargs)
        self.take = take

    async def verify(self) -> VerifierResult:
        out = Path(self.trial_paths.verifier_dir)
        _empty(out)  # anything the agent planted there is not the verdict's
        try:
            graded = await self._grade()
        except Exception as exc:
            # Every failure under the one name Harbor counts as "no valid reward": any other
            # (a foreign box's transfer error, a tar error) would let a multi-step trial keep
            # the other steps' mean. Cancellation is not an Exception and passes through.
            (out / "assay-error.txt").write_text(f"{type(exc).__name__}: {exc}\n")
            raise VerifierOutputParseError(f"assay made no verdict: {exc}") from exc
        return _record(out, graded)

    async def _grade(self) -> assay.Graded:
        env, step = self.environment, self.step_name
        # A step's task: its instruction, and the task's tests with the step's over them. They
        # enter the verifier's own container only, never the box the agent goes on in.
        task_dir = await asyncio.to_thread(assay_task, self.task.paths.task_dir, step)
        if isinstance(env, AssayEnvironment) and self.take == "auto":
            tar = await asyncio.to_thread(env.take_workdir, step is None)
        else:
            tar = await self._take_foreign(assay.load_task(task_dir).workdir)
        with tar:
            return await asyncio.to_thread(_the_grader().grade, task_dir, tar, tier="harbor")

    async def _take_foreign(self, workdir: str) -> BinaryIO:
        """The workdir of a box that is not assay's: tarred in the box (by whatever `tar` the
        agent left there: its output is only ever judged by the firewall)."""
        inside = f"/tmp/.assay-take-{secrets.token_hex(6)}.tar"
        res = await self.environment.exec(
            f"tar -C '{workdir}' -cf '{inside}' .", user="root", timeout_sec=600
        )
        if res.return_code != 0:
            raise VerifierOutputParseError(f"could not archive {workdir} in the agent's box")
        with tempfile.TemporaryDirectory(prefix="assay-harbor-") as tmp:
            local = Path(tmp) / "workdir.tar"
            await self.environment.download_file(inside, local)
            if local.stat().st_size > TRANSFER_CAP:
                raise VerifierOutputParseError(
                    f"the agent's {workdir} is over {TRANSFER_CAP} bytes"
                )
            return io.BytesIO(local.read_bytes())


def _empty(d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for child in d.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _rewards(verdict: assay.Verdict) -> dict[str, float]:
    """The trial's rewards: the verdict's score as `reward`, and with several reward keys each
    key's case (1.0 passed, 0.0 not). A failed verdict rewards nothing, whatever the tests
    wrote (a leftover writer, a reward present before the tests, a limit)."""
    rewards = {"reward": float(verdict.score) if verdict.passed else 0.0}
    if len(verdict.cases) > 1:
        for case in verdict.cases:
            key = case.id.removeprefix("reward.")
            rewards[key] = 1.0 if verdict.passed and case.status == "pass" else 0.0
    return rewards


def _record(out: Path, graded: assay.Graded) -> VerifierResult:
    """The verdict where `harbor view` shows it, and the trial's rewards from it."""
    v = graded.verdict
    rewards = _rewards(v)
    (out / "verdict.json").write_text(v.model_dump_json(indent=2) + "\n")
    (out / "verdict.dsse.json").write_bytes(graded.envelope)
    shutil.copyfile(_the_grader().public_key, out / "assay-signing-key.pub")
    (out / "reward.json").write_text(json.dumps(rewards) + "\n")
    lines = [
        f"assay {v.tier} tier: {'PASSED' if v.passed else 'FAILED'} (score {v.score:g})",
        *(f"  reason: {r}" for r in v.reason_codes),
        *(f"  note: {n}" for n in v.notes),
        "check it: assay verify verdict.dsse.json --key assay-signing-key.pub",
    ]
    if graded.diagnostics is not None:
        (out / "diagnostics.json").write_bytes(graded.diagnostics.to_json())
    (out / "test-stdout.txt").write_text("\n".join(lines) + "\n")
    return VerifierResult(rewards=rewards)
