"""Harbor's own CLI (`harbor run`, from .venv-harbor) on local tasks, offline: a dataset of one
task per scripted agent (the task's solve.sh replaced by the agent's script, which Harbor's
oracle agent runs in the box), and each trial's reward and error read from Harbor's files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARBOR = ROOT / ".venv-harbor" / "bin" / "harbor"
TASKS = ROOT / "tests" / "harbor_tasks"
AGENTS = TASKS / "agents"
ENV = "assay.integrations.harbor:AssayEnvironment"
VERIFIER = "assay.integrations.harbor:AssayVerifier"


@dataclass(frozen=True)
class Trial:
    task: str
    rewards: dict[str, float] | None
    error: str | None
    """The exception Harbor recorded for the trial (type: message), or None."""
    verifier_dir: Path


def dataset(tmp: Path, task: str, agents: list[str]) -> Path:
    """`tmp/dataset/<task>-<agent>` for each agent ("oracle": the task's own solution)."""
    out = tmp / "dataset"
    for agent in agents:
        dst = out / f"{task}-{agent}"
        shutil.copytree(TASKS / task, dst)
        if agent != "oracle":
            shutil.copy2(AGENTS / f"{agent}.sh", dst / "solution" / "solve.sh")
    return out


def run_job(
    tmp: Path,
    name: str,
    tasks: Path,
    *,
    verifier: bool,
    hardened: bool,
    take: str = "auto",
    timeout: float = 900,
) -> dict[str, Trial]:
    """One `harbor run` job over every task of `tasks`, on assay's box (`hardened` or the
    Harbor-shaped baseline), with assay's verifier (taking the workdir its `take` way) or
    Harbor's stock one. Returns the trials
    by task name; raises AssertionError with Harbor's output when the job itself failed."""
    jobs = tmp / "jobs"
    argv = [
        str(HARBOR), "run", "-p", str(tasks), "-a", "oracle", "--env", ENV,
        "-o", str(jobs), "--job-name", name, "-y", "-n", "2",
    ]  # fmt: skip
    if verifier:
        argv += ["--verifier", VERIFIER, "--verifier-kwarg", f"take={take}"]
    if not hardened:
        argv += ["--ek", "hardened=false"]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_COLOR": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    trials = {}
    for result in sorted((jobs / name).glob("*/result.json")):
        raw = json.loads(result.read_text())
        vr = raw.get("verifier_result") or {}
        exc = raw.get("exception_info")
        task = raw["task_name"]
        trials[task] = Trial(
            task=task,
            rewards=vr.get("rewards"),
            error=f"{exc['exception_type']}: {exc['exception_message']}" if exc else None,
            verifier_dir=result.parent / "verifier",
        )
    return trials


def reward(trial: Trial) -> float | None:
    return None if trial.rewards is None else trial.rewards.get("reward")


def verdict_reasons(trial: Trial) -> list[str]:
    """The reason codes of the signed verdict assay's verifier wrote for the trial."""
    raw = json.loads((trial.verifier_dir / "verdict.json").read_text())
    return list(raw["reason_codes"])
