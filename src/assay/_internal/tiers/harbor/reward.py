"""The Harbor reward file, parsed strictly: a pure function of the bytes the verifier read.

Harbor's test script writes `/logs/verifier/reward.txt` (one number) or `reward.json` (an object
of named numbers). Those bytes are written inside a container where candidate code ran, so they
are hostile: anything but one finite number, or a flat JSON object of at most MAX_KEYS finite
numbers under printable keys, is refused with a reason code, never read as a pass.

Pass rule (docs/tasks.md, "Harbor tasks"): Harbor's tasks write 1 for solved and 0 for not, so
a reward passes when it is exactly 1; a reward.json passes when every value is exactly 1. Each
value becomes one case of the verdict (`reward` for reward.txt, `reward.<key>` for reward.json),
so the verdict's score is the fraction of rewards at 1 and `passed` needs all of them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ...model.strict_json import StrictJSONError, loads_strict

TXT = "reward.txt"
JSON = "reward.json"
MAX_TXT_BYTES = 64
MAX_JSON_BYTES = 16 << 10
MAX_KEYS = 32
# A plain decimal number, optionally signed, optional exponent: what Harbor's float() reads,
# minus "nan", "inf", "infinity", underscores and hex, which float() would also take.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


_JSON_CODES = {
    "oversize": "reward-oversize",
    "non-finite-number": "reward-non-finite",
    "duplicate-key": "reward-duplicate-key",
}


@dataclass(frozen=True)
class Rewards:
    """Each named reward as a float, in the order the file gave them."""

    values: tuple[tuple[str, float], ...]

    @property
    def passed(self) -> bool:
        return bool(self.values) and all(v == 1.0 for _, v in self.values)


@dataclass(frozen=True)
class BadReward:
    """Why the reward file was refused: `reason` is a failing reason code."""

    reason: str
    detail: str


def parse_reward(files: dict[str, bytes]) -> Rewards | BadReward:
    """`files`: the regular files found in /logs/verifier named reward.txt or reward.json, each
    read with at most its cap + 1 bytes. Exactly one must be there."""
    present = sorted(n for n in files if n in (TXT, JSON))
    if not present:
        return BadReward("harbor:no-reward", "the test script wrote no reward file")
    if len(present) == 2:
        return BadReward("harbor:reward-ambiguous", "both reward.txt and reward.json exist")
    name = present[0]
    raw = files[name]
    return parse_txt(raw) if name == TXT else parse_json(raw)


def parse_txt(raw: bytes) -> Rewards | BadReward:
    if len(raw) > MAX_TXT_BYTES:
        return BadReward("harbor:reward-oversize", f"reward.txt is over {MAX_TXT_BYTES} bytes")
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        return BadReward("harbor:reward-malformed", "reward.txt is not ASCII")
    if not _NUMBER.fullmatch(text):
        return BadReward("harbor:reward-malformed", "reward.txt is not one decimal number")
    value = float(text)
    if not math.isfinite(value):
        return BadReward("harbor:reward-non-finite", "reward.txt overflows to infinity")
    return Rewards((("reward", value),))


def parse_json(raw: bytes) -> Rewards | BadReward:
    try:
        doc = loads_strict(raw, max_bytes=MAX_JSON_BYTES, max_depth=1)
    except StrictJSONError as exc:
        code = _JSON_CODES.get(exc.code, "reward-malformed")
        return BadReward(f"harbor:{code}", f"reward.json: {exc}")
    if not isinstance(doc, dict) or not doc:
        return BadReward("harbor:reward-malformed", "reward.json is not a non-empty object")
    if len(doc) > MAX_KEYS:
        return BadReward("harbor:reward-oversize", f"reward.json has over {MAX_KEYS} keys")
    values: list[tuple[str, float]] = []
    for key, value in doc.items():
        if not _KEY.fullmatch(key):
            return BadReward("harbor:reward-malformed", "a reward.json key is not a plain name")
        # bool is an int subclass in Python; true is not a reward.
        if isinstance(value, bool) or not isinstance(value, int | float):
            return BadReward("harbor:reward-malformed", f"reward.json {key!r} is not a number")
        as_float = float(value) if abs(value) < 1e300 else math.inf
        if not math.isfinite(as_float):
            return BadReward("harbor:reward-non-finite", f"reward.json {key!r} is not finite")
        values.append((f"reward.{key}", as_float))
    return Rewards(tuple(values))
