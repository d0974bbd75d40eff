"""verl's custom reward function: assay grades the code in each response against its row's
tests, and says apart a wrong answer, a response with no code, and a grading that never ran.

    # verl's configuration, not Python: verl 0.8's ppo_trainer.yaml (verl 0.9: reward.yaml,
    # where the keys are reward.custom_reward_function.{path,name})
    custom_reward_function.path=pkg://assay.integrations.verl
    custom_reward_function.name=compute_score

verl calls `compute_score(data_source=, solution_str=, ground_truth=, extra_info=)` with
keywords, once per response (its "naive" manager; the reward loop may add keywords such as
`reward_router_address`, which are ignored). With `reward_manager=batch`, name
`compute_score_batch` grades a whole step in one call, `parallel` at a time (faster); an async
reward loop can take `compute_score_async`.

A row: `reward_model.ground_truth` holds its tests, JSON text or a dict, `{"inputs": [...],
"outputs": [...], "fn_name"?: ...}` (verl's form: a call-based test's input is its arguments as
newline-separated JSON); `extra_info.language` may name the language ("python" if absent).
`data_source` is not looked at: route other data sources to other rewards yourself. The code is
found as verl's sandbox_fusion reward finds it (`rewards.extract_code`, style "verl"); a
response with no code block scores 0.0 without being graded, as in verl.

Grading runs in this process (`rewards.LocalRewards`), or through `assay serve` when
ASSAY_URL is set (`ASSAY_URL=http://127.0.0.1:8000/<token>`; `rewards.from_environment`).

The result is a dict with the same keys for every response (verl appends each key's values to
`reward_extra_info` per response, so a key missing from one would misalign them):
`{"score": 0.0-1.0, "passed": 0.0|1.0, "infra_error": 0.0|1.0, "no_code": 0.0|1.0,
"tamper": 0.0|1.0}`; "score" is the fraction of the tests passed (a failed verdict never scores
1.0); "tamper" is 1.0 when the verdict has a tamper signal (a skipped test, a forged report...:
`rewards.Reward.tamper`). It is a number, not the codes, because verl averages every key into
its metrics. The codes are in the verdict (`rewards.ServerRewards` or `LocalRewards` give them).

Tampering scores as the failed verdict it is unless a tamper reward is set: `tamper_reward=-1.0`
in verl's `reward_kwargs` (verl 0.9:
`+reward.custom_reward_function.reward_kwargs.tamper_reward=-1.0`; verl passes the keyword to
every call) or `make_compute_score(..., tamper_reward=-1.0)`. The keyword wins over the
function's own setting.

When no verdict could be produced (the engine or the server failed), verl has no way to leave a
response out of the update. By default `assay.errors.InfrastructureError` is raised: the step
stops (verl's trainer calls the reward once more, then fails) instead of training on a 0 that is
not a wrong answer. With `ASSAY_ON_INFRA_ERROR=report` (or `make_compute_score(...,
on_infra_error="report")`) such a response scores 0.0 with `infra_error` 1.0, visible in verl's
reward metrics, and training goes on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from assay.errors import InfrastructureError, TaskError, UsageError

from .rewards import (
    Item,
    Reward,
    Rewards,
    check_tamper_reward,
    extract_code,
    fence_tag,
    from_environment,
    grade_codes,
)

__all__ = [
    "SCORE_KEYS",
    "ComputeScore",
    "OnInfraError",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "make_compute_score",
]

OnInfraError = Literal["raise", "report"]
SCORE_KEYS = ("score", "passed", "infra_error", "no_code", "tamper")
"""The keys of every result, in this order."""


class ComputeScore:
    """A verl reward function (module-level, so picklable when `rewards` is). `rewards`:
    what grades (default: `rewards.from_environment()`, looked up at each call).
    `on_infra_error`: "raise" or "report" (default: $ASSAY_ON_INFRA_ERROR, else "raise").
    `tamper_reward`: the score of a response whose verdict has a tamper signal (None: the
    verdict's reward); a call's `tamper_reward=` keyword (verl's `reward_kwargs`) wins over it.
    Raises `UsageError` for a bad setting."""

    __name__ = "compute_score"

    def __init__(
        self,
        rewards: Rewards | None = None,
        on_infra_error: OnInfraError | None = None,
        tamper_reward: float | None = None,
    ) -> None:
        if on_infra_error not in (None, "raise", "report"):
            raise UsageError(f"on_infra_error is 'raise' or 'report', not {on_infra_error!r}")
        self.rewards = rewards
        self.on_infra_error = on_infra_error
        self.tamper_reward = check_tamper_reward(tamper_reward)

    def __call__(
        self,
        data_source: Any = None,
        solution_str: str = "",
        ground_truth: Any = None,
        extra_info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, float]:
        """One response's result (verl's per-response call)."""
        return self.batch([data_source], [solution_str], [ground_truth], [extra_info], **kwargs)[0]

    def batch(
        self,
        data_sources: Sequence[Any] | None = None,
        solution_strs: Sequence[str] = (),
        ground_truths: Sequence[Any] = (),
        extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
        **kwargs: Any,
    ) -> list[dict[str, float]]:
        """Every response's result, graded together (verl's "batch" manager's call)."""
        tamper_reward = (
            check_tamper_reward(kwargs["tamper_reward"])
            if kwargs.get("tamper_reward") is not None
            else self.tamper_reward
        )
        n = len(solution_strs)
        infos = [None] * n if extra_infos is None else list(extra_infos)
        truths = list(ground_truths)
        if len(truths) != n or len(infos) != n:
            raise UsageError(
                f"{n} solution_strs, {len(truths)} ground_truths and {len(infos)} extra_infos"
            )
        items = [_item(solution_strs[i], truths[i], infos[i], i) for i in range(n)]
        results = grade_codes(from_environment() if self.rewards is None else self.rewards, items)
        if self._mode() == "raise" and (bad := [r for r in results if r.status == "infra_error"]):
            raise InfrastructureError(
                f"{len(bad)} of {n} responses got no verdict: {bad[0].error}",
                fix="fix the engine or the server and resume; ASSAY_ON_INFRA_ERROR=report "
                "scores such a response 0.0 with infra_error 1.0 instead",
            )
        return [scores(r.scored(tamper_reward)) for r in results]

    def _mode(self) -> OnInfraError:
        mode = self.on_infra_error or os.environ.get("ASSAY_ON_INFRA_ERROR") or "raise"
        if mode not in ("raise", "report"):
            raise UsageError(f"ASSAY_ON_INFRA_ERROR is 'raise' or 'report', not {mode!r}")
        return "raise" if mode == "raise" else "report"


def scores(reward: Reward) -> dict[str, float]:
    """A `Reward` as verl's result dict (`SCORE_KEYS`)."""
    return {
        "score": reward.score if reward.score is not None else 0.0,
        "passed": float(reward.status == "passed"),
        "infra_error": float(reward.status == "infra_error"),
        "no_code": float(reward.status == "no_code"),
        "tamper": float(bool(reward.tamper)),
    }


def _item(solution: Any, ground_truth: Any, extra_info: Any, n: int) -> Item:
    if not isinstance(solution, str):
        raise TypeError(f"response {n}: solution_str is a {type(solution).__name__}, not a str")
    if ground_truth is None:
        raise TaskError(
            f"response {n}", "no ground_truth: reward_model.ground_truth must hold the tests"
        )
    language = extra_info.get("language") if isinstance(extra_info, Mapping) else None
    if language is not None and not isinstance(language, str):
        raise UsageError(f"response {n}: extra_info.language is not a string: {language!r}")
    code = extract_code(solution, fence_tag(language), "verl")
    return Item(ground_truth, "verl", code, language)


def make_compute_score(
    rewards: Rewards | None = None,
    on_infra_error: OnInfraError | None = None,
    tamper_reward: float | None = None,
) -> ComputeScore:
    """A `compute_score` grading with `rewards` (e.g. `rewards.ServerRewards(url)`), raising or
    reporting infrastructure errors, and scoring a tampering response `tamper_reward` (None: as
    its failed verdict; see the module). Put it in a module of yours and point
    `custom_reward_function.path` at that module; `.batch` is the batch form. Raises
    `UsageError` for a bad setting."""
    return ComputeScore(rewards, on_infra_error, tamper_reward)


_default = ComputeScore()


def compute_score(
    data_source: Any = None,
    solution_str: str = "",
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """verl's per-response reward: `{"score", "passed", "infra_error", "no_code", "tamper"}`
    (see the module; `tamper_reward=` among the keywords sets the score of a tampering
    response). Raises `assay.errors.InfrastructureError` when no verdict could be produced
    (unless ASSAY_ON_INFRA_ERROR=report), `TaskError`/`UsageError` for a row whose tests or
    language cannot be graded, `UsageError` for a bad `tamper_reward`."""
    return _default(data_source, solution_str, ground_truth, extra_info, **kwargs)


def compute_score_batch(
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[str] = (),
    ground_truths: Sequence[Any] = (),
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """verl's batch reward (`reward_manager=batch`): one result per response, as
    `compute_score` would give each, graded together."""
    return _default.batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs)


async def compute_score_async(
    data_source: Any = None,
    solution_str: str = "",
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """`compute_score` on a worker thread, for verl's async reward loop."""
    return await asyncio.to_thread(
        compute_score, data_source, solution_str, ground_truth, extra_info, **kwargs
    )
