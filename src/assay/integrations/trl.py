"""A TRL `GRPOTrainer` reward function: assay grades the code in each completion against its
row's tests, one float per completion, and None where no verdict could be produced.

    from trl import GRPOTrainer
    from assay.integrations.trl import assay_reward

    # the data set has "prompt" and "input_output" (APPS/TACO tests) columns
    trainer = GRPOTrainer(model=..., reward_funcs=[assay_reward], train_dataset=dataset)

`reward_function(...)` makes one for another tests column, verl's form of the tests, a
language column, another code extraction rule, a grader of your own, or a reward for
tampering: `reward_function(tamper_reward=-1.0)` scores every completion whose verdict has a
tamper signal (a skipped test, a forged report...: `rewards.Reward.tamper`) -1.0, below a wrong
answer's 0.0; by default it scores as the failed verdict it is.

TRL calls a reward function with keywords: `prompts`, `completions`, `completion_ids`, every
other column of the data set as a list aligned with the completions, `trainer_state`,
`log_extra`, `log_metric` (GRPOTrainer._calculate_rewards). A completion is a str (a standard
data set) or a list of messages (a conversational one: the last message's content is read).

What each completion gets: the verdict's score (the fraction of the tests passed; a failed
verdict never scores 1.0); 0.0 when it has no code block; **None when no verdict could be
produced** (the engine or the server failed). TRL >= 1.6 treats a row every reward function
scored None as unscorable: it is left out of its group's baseline and its advantage is 0, so an
infrastructure error is never learned as a wrong answer. (Before 1.6 a None counts as 0.0 under
TRL's nansum.) A row whose tests cannot make a task raises, as does a missing column.

Each call also logs the metrics `<name>/infra_error_rate`, `<name>/no_code_rate` and
`<name>/tamper_rate` (through `log_metric`, when TRL passes it) and the completions-table
columns `<name>_status` and `<name>_tamper` (the tamper codes, space-separated; "" for none).

Grading runs in this process (`rewards.LocalRewards`), or through `assay serve` when ASSAY_URL
is set (`ASSAY_URL=http://127.0.0.1:8000/<token>`; `rewards.from_environment`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .rewards import (
    Form,
    Item,
    Rewards,
    Style,
    check_tamper_reward,
    completion_text,
    extract_code,
    fence_tag,
    from_environment,
    grade_codes,
)

__all__ = ["AssayReward", "assay_reward", "reward_function"]

# What TRL passes besides the data set's columns (left out of "the columns given").
_TRL_KEYWORDS = {"prompts", "completion_ids", "trainer_state", "log_extra", "log_metric",
                 "environments"}  # fmt: skip


class AssayReward:
    """A reward function for TRL (a callable object, not a closure, so that TRL can pickle
    it for a rollout worker in another process). Made by `reward_function`."""

    __name__ = "assay_reward"

    def __init__(
        self,
        rewards: Rewards | None = None,
        *,
        tests_column: str = "input_output",
        form: Form = "apps",
        language_column: str | None = None,
        style: Style = "open-r1",
        name: str = "assay_reward",
        tamper_reward: float | None = None,
    ) -> None:
        self.rewards = rewards
        self.tamper_reward = check_tamper_reward(tamper_reward)
        self.tests_column = tests_column
        self.form: Form = form
        self.language_column = language_column
        self.style: Style = style
        self.__name__ = name

    def __call__(self, completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        tests = self._column(self.tests_column, kwargs, n)
        languages = (
            [None] * n
            if self.language_column is None
            else self._column(self.language_column, kwargs, n)
        )
        items = []
        for i, (completion, row_tests, language) in enumerate(
            zip(completions, tests, languages, strict=True)
        ):
            if language is not None and not isinstance(language, str):
                raise TypeError(f"completion {i}: {self.language_column} is not a str")
            text = completion_text(completion)
            code = extract_code(text, fence_tag(language), self.style)
            items.append(Item(row_tests, self.form, code, language))
        results = grade_codes(from_environment() if self.rewards is None else self.rewards, items)
        statuses = [r.status for r in results]
        tampered = sum(1 for r in results if r.tamper)
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        # Every call logs the same names: TRL gathers them across processes in one order.
        if callable(log_metric):
            for status in ("infra_error", "no_code"):
                rate = statuses.count(status) / n if n else 0.0
                log_metric(f"{self.__name__}/{status}_rate", rate)
            log_metric(f"{self.__name__}/tamper_rate", tampered / n if n else 0.0)
        if callable(log_extra):
            log_extra(f"{self.__name__}_status", statuses)
            log_extra(f"{self.__name__}_tamper", [" ".join(r.tamper) for r in results])
        return [r.scored(self.tamper_reward).score for r in results]

    def _column(self, name: str, kwargs: dict[str, Any], n: int) -> list[Any]:
        if name not in kwargs:
            given = sorted(k for k in kwargs if k not in _TRL_KEYWORDS)
            raise TypeError(
                f"{self.__name__} reads the tests from the data set column {name!r}, which TRL "
                f"did not pass; the columns given: {', '.join(given) or 'none'} (name the "
                f"column with reward_function(tests_column=...))"
            )
        values = list(kwargs[name])
        if len(values) != n:
            raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
        return values


def reward_function(
    rewards: Rewards | None = None,
    *,
    tests_column: str = "input_output",
    form: Form = "apps",
    language_column: str | None = None,
    style: Style = "open-r1",
    name: str = "assay_reward",
    tamper_reward: float | None = None,
) -> Callable[..., list[float | None]]:
    """A TRL reward function `f(completions, **kwargs) -> list[float | None]` (see the module).

    `rewards`: what grades (default: `rewards.from_environment()`, looked up at each call).
    `tests_column`: the data set column holding each row's tests, in `form` "apps" (APPS/TACO
    `input_output`) or "verl" (verl's `ground_truth`). `language_column`: a column naming each
    row's language (default: python). `style`: how the code is found in a completion
    (`rewards.extract_code`; default "open-r1", the rule of open-r1's code reward for TRL: the
    last ```python block). `name`: what TRL logs the reward as. `tamper_reward`: the reward of
    a completion whose verdict has a tamper signal (e.g. -1.0; None, the default: its failed
    verdict's score). Raises `UsageError` for a bad `tamper_reward`."""
    return AssayReward(
        rewards,
        tests_column=tests_column,
        form=form,
        language_column=language_column,
        style=style,
        name=name,
        tamper_reward=tamper_reward,
    )


assay_reward = AssayReward()
"""The default reward function: tests in the "input_output" column (APPS form), Python, graded
as `rewards.from_environment()` says (looked up at each call, not at import)."""
