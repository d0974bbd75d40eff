"""Inspect AI integration (`pip install 'assay[inspect]'`): the `assay` sandbox and `assay_scorer`.

Inspect finds this module through the `inspect_ai` entry-point group, so `sandbox="assay"` works
in any eval once assay is installed. Each sample gets an `assay.Session`: the model's tool calls
run in the agent container (no network, task inputs read-only, a capped /workspace), and the
scorer freezes it, takes the declared artifacts through the archive firewall and grades them on
the task's tier. The workspace never leaves through exec output.

    from assay.integrations.inspect_ai import assay_scorer

    Task(dataset=[Sample(input="...", metadata={"assay_task": "path/to/task"})],
         solver=[use_tools(bash()), generate()],
         sandbox=("assay", "path/to/task"), scorer=assay_scorer())

The sandbox's config is an assay task directory (a str), or an `AssaySandboxConfig`; a
sample's `assay_task` metadata overrides the task. Verdicts are signed with the per-user key
(as `assay.Grader()` does), or the config's `key`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Literal, overload

import anyio
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
    sandbox,
    sandboxenv,
)
from pydantic import BaseModel, ConfigDict

import assay
from assay.errors import UsageError

TASK_METADATA = "assay_task"
"""Sample metadata key naming the assay task directory for that sample."""


class AssaySandboxConfig(BaseModel):
    """`task`: the assay task directory. `image`, `oci_runtime` (a backend name) and `key`
    are `assay.Grader`'s arguments (default: its defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str | None = None
    image: str | None = None
    oci_runtime: str | None = None
    key: str | None = None


_graders: dict[AssaySandboxConfig, assay.Grader] = {}
_graders_lock = threading.Lock()


def _config(config: SandboxEnvironmentConfigType | None) -> AssaySandboxConfig:
    if config is None:
        return AssaySandboxConfig()
    if isinstance(config, str):
        return AssaySandboxConfig(task=config)
    if isinstance(config, AssaySandboxConfig):
        return config
    if isinstance(config, BaseModel):
        return AssaySandboxConfig.model_validate(config.model_dump())
    raise UsageError(f"the assay sandbox takes a task path or AssaySandboxConfig, not {config!r}")


def _grader(cfg: AssaySandboxConfig) -> assay.Grader:
    key = cfg.model_copy(update={"task": None})
    with _graders_lock:
        if key not in _graders:
            _graders[key] = assay.Grader(image=cfg.image, oci_runtime=cfg.oci_runtime, key=cfg.key)
        return _graders[key]


@sandboxenv(name="assay")
class AssaySandbox(SandboxEnvironment):
    """One sample's agent container (an `assay.Session`). Commands run as the agent's
    unprivileged user: `user=` other than None is refused (SandboxUserUnsupportedError)."""

    def __init__(self, session: assay.Session) -> None:
        super().__init__()
        self.session = session

    # -- lifecycle ----------------------------------------------------------------------------

    @classmethod
    def default_concurrency(cls) -> int | None:
        # Each sample holds a container, and grading starts two more.
        return max(2, (os.cpu_count() or 2))

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return AssaySandboxConfig(**config)

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        cfg = _config(config)
        task = metadata.get(TASK_METADATA) or cfg.task
        if not task:
            raise UsageError(
                f"the assay sandbox needs a task: give the sandbox a task path, or the sample "
                f"an {TASK_METADATA!r} metadata entry"
            )
        session = _grader(cfg).session(Path(task))
        await anyio.to_thread.run_sync(session.start)
        return {"default": cls(session)}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for env in environments.values():
            if isinstance(env, AssaySandbox):
                await anyio.to_thread.run_sync(env.session.close)

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        with _graders_lock:
            graders = list(_graders.values())
        for g in graders:
            g.close()

    # -- tool calls ---------------------------------------------------------------------------

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None:
            raise SandboxUserUnsupportedError(
                "the assay sandbox runs every command as the agent's unprivileged user"
            )
        res = await anyio.to_thread.run_sync(
            lambda: self.session.exec(cmd, input=input, timeout=timeout, cwd=cwd, env=env)
        )
        if res.timed_out:
            raise TimeoutError(f"command timed out after {timeout} s: {cmd[:1]}")
        stdout = res.stdout.decode("utf-8", "replace")
        if res.truncated or len(res.stdout) > SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE:
            raise OutputLimitExceededError(
                SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR, stdout[-4096:]
            )
        if res.exit_code == 126:
            raise PermissionError(f"permission denied: {cmd[:1]}")
        code = -1 if res.exit_code is None else res.exit_code
        return ExecResult(code == 0, code, stdout, res.stderr.decode("utf-8", "replace"))

    async def write_file(self, file: str, contents: str | bytes) -> None:
        try:
            await anyio.to_thread.run_sync(self.session.write_file, file, contents)
        except UsageError as exc:
            raise PermissionError(f"{file}: {exc}") from exc

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        try:
            data = await anyio.to_thread.run_sync(self.session.read_file, file)
        except UsageError as exc:
            raise PermissionError(f"{file}: {exc}") from exc
        if len(data) > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None)
        return data.decode("utf-8") if text else data


@scorer(metrics=[accuracy()])
def assay_scorer(tier: str | None = None) -> Scorer:
    """Grade the sample's workspace with assay (the task's tier, or `tier`): 1.0 if the signed
    verdict passed, else 0.0; the explanation holds its reason codes, the metadata the verdict
    (`assay_verdict`) and the signed DSSE envelope (`assay_dsse`, a JSON string that
    `assay verify` checks). A grading that produced no verdict raises: never a score."""

    async def score(state: TaskState, target: Target) -> Score:
        env = sandbox().as_type(AssaySandbox)
        graded = await anyio.to_thread.run_sync(lambda: env.session.grade(tier=tier))
        verdict = graded.verdict
        return Score(
            value=1.0 if verdict.passed else 0.0,
            answer=verdict.submission_digest,
            explanation=" ".join(verdict.reason_codes) or "passed",
            metadata={
                "assay_verdict": verdict.model_dump(mode="json"),
                "assay_dsse": graded.envelope.decode("utf-8"),
            },
        )

    return score
