"""One step of a multi-step Harbor task (`[[steps]]`) as a single-step one.

Harbor runs every step in one shared box: the agent works on step 1, step 1's verifier runs,
then the agent works on step 2 in the same box, and so on; each step's reward goes into the
trial's (`multi_step_reward_strategy`). What assay grades is one step's verification: the
workdir as the agent left it after that step, judged by that step's tests (the task's shared
`tests/` with the step's own `steps/<name>/tests/` over it) in a fresh container of its own. So
a step's tests enter only that step's verifier, never the shared box, and a later step's tests
are never readable by the agent (the leak of a public multi-step benchmark, whose later steps'
grading data sat in the box). The step's task.toml is the task's with the step's `[agent]` and
`[verifier]` over the task's, and the artifacts of both.
"""

from __future__ import annotations

import re
from typing import Any

from .harbor_config import Refusal

_STEP = {"name", "agent", "verifier", "min_reward", "healthcheck", "artifacts"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,47}")
"""Stricter than Harbor's: a step's name becomes part of a task id and a directory name."""

__all__ = ["step_names", "step_raw"]


def _steps(raw: dict[str, Any]) -> list[dict[str, Any]]:
    steps = raw.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise Refusal("steps", "must be a non-empty array of tables")
    return steps


def step_names(raw: dict[str, Any]) -> list[str]:
    """The steps of Harbor's parsed task.toml `raw`, in order; raises Refusal for a name assay
    cannot use as a task id part, or one seen twice."""
    names: list[str] = []
    for step in _steps(raw):
        name = step.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise Refusal("steps.name", f"{name!r}: a step name here is [A-Za-z0-9._-], "
                          "at most 48 characters, starting with a letter or digit")  # fmt: skip
        if name.lower() in (n.lower() for n in names):
            raise Refusal("steps.name", f"{name!r} twice")
        names.append(name)
    return names


def step_raw(raw: dict[str, Any], name: str) -> tuple[dict[str, Any], list[str]]:
    """The single-step task.toml (parsed) for step `name` of `raw`, and notes on what of the
    step it leaves out. Raises Refusal for an unknown step or key."""
    if name not in step_names(raw):
        raise Refusal("steps", f"no step named {name!r}")
    step = next(s for s in _steps(raw) if s.get("name") == name)
    for key in step:
        if key not in _STEP:
            raise Refusal(f"steps.{name}.{key}", "unknown or unsupported key")
    derived = {k: v for k, v in raw.items() if k not in ("steps", "multi_step_reward_strategy")}
    for table in ("agent", "verifier"):
        if table in step:
            if not isinstance(step[table], dict) or not isinstance(raw.get(table, {}), dict):
                raise Refusal(f"steps.{name}.{table}", "must be a table")
            derived[table] = {**raw.get(table, {}), **step[table]}
    if "artifacts" in step:
        own, theirs = raw.get("artifacts", []), step["artifacts"]
        if not isinstance(own, list) or not isinstance(theirs, list):
            raise Refusal(f"steps.{name}.artifacts", "must be an array")
        derived["artifacts"] = [*own, *theirs]
    notes = []
    if "min_reward" in step:
        notes.append(f"steps.{name}.min_reward: ignored (Harbor's choice of whether later "
                     "steps run; each step is graded on its own here)")  # fmt: skip
    if "healthcheck" in step:
        notes.append(f"steps.{name}.healthcheck: ignored (a check of the agent's box)")
    return derived, notes
