"""Harbor's own CLI (`harbor run`, from .venv-harbor) on local tasks, offline: a dataset of one
task per scripted agent (the task's solve.sh replaced by the agent's script, which Harbor's
oracle agent runs in the box), and each trial's reward and error read from Harbor's files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
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
    trial: str
    """Harbor's name of the trial (its directory): `<task>__<7 characters>`."""
    log: str
    """The trial's `trial.log`."""
    rewards: dict[str, float] | None
    error: str | None
    """The exception Harbor recorded for the trial (type: message), or None."""
    verifier_dir: Path
    valid: bool = True
    """What Harbor counts: a verifier result and no error, the trial's or a step's."""
    steps: dict[str, float | None] = field(default_factory=dict)
    """A multi-step trial's reward per step."""


def dataset(tmp: Path, task: str, agents: list[str], out: Path | None = None) -> Path:
    """`<out>/<task>-<agent>` (default out: `tmp/dataset`) for each agent ("oracle": the
    task's own solution). An agent of a multi-step task is a directory with a script per step,
    each the step's `solve.sh`."""
    out = out or tmp / "dataset"
    for agent in agents:
        dst = out / f"{task}-{agent}"
        shutil.copytree(TASKS / task, dst)
        if agent == "oracle":
            continue
        if (AGENTS / agent).is_dir():
            for script in sorted((AGENTS / agent).glob("*.sh")):
                shutil.copy2(script, dst / "steps" / script.stem / "solution" / "solve.sh")
        else:
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
    # The default backend, as a user gets it (tests/docker/conftest.py sets Docker for this
    # process); LiteLLM would otherwise fetch its price list at start-up.
    env = {**os.environ, "ASSAY_RUNTIME": "runc", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "NO_COLOR": "1"}  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    trials = {}
    for result in sorted((jobs / name).glob("*/result.json")):
        raw = json.loads(result.read_text())
        vr = raw.get("verifier_result") or {}
        # A multi-step trial's errors are its steps' (Harbor keeps none at the trial's level).
        excs = [raw.get("exception_info")]
        excs += [s.get("exception_info") for s in raw.get("step_results") or []]
        errors = [f"{e['exception_type']}: {e['exception_message']}" for e in excs if e]
        task = raw["task_name"]
        trials[task] = Trial(
            task=task,
            trial=result.parent.name,
            log=(result.parent / "trial.log").read_text(errors="replace"),
            rewards=vr.get("rewards"),
            error="; ".join(errors) or None,
            verifier_dir=result.parent / "verifier",
            valid=bool(raw.get("verifier_result")) and not errors,
            steps={
                s["step_name"]: ((s.get("verifier_result") or {}).get("rewards") or {}).get(
                    "reward"
                )
                for s in raw.get("step_results") or []
            },
        )
    return trials


def reward(trial: Trial) -> float | None:
    return None if trial.rewards is None else trial.rewards.get("reward")


def verdict_reasons(trial: Trial) -> list[str]:
    """The reason codes of the signed verdict assay's verifier wrote for the trial."""
    raw = json.loads((trial.verifier_dir / "verdict.json").read_text())
    return list(raw["reason_codes"])
