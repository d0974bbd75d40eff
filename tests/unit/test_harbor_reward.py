"""The Harbor reward parser: one finite number, or a flat object of finite numbers; anything
else is a failing reason, never a pass."""

from __future__ import annotations

import pytest

from assay._internal.model.verdict import is_failing_reason
from assay._internal.tiers.harbor.reward import (
    MAX_JSON_BYTES,
    MAX_KEYS,
    BadReward,
    Rewards,
    parse_reward,
)


def txt(raw: bytes) -> Rewards | BadReward:
    return parse_reward({"reward.txt": raw})


def js(raw: bytes) -> Rewards | BadReward:
    return parse_reward({"reward.json": raw})


@pytest.mark.parametrize(
    ("raw", "value"),
    [(b"1", 1.0), (b"1.0\n", 1.0), (b"  0.5 ", 0.5), (b"0", 0.0), (b"1e0", 1.0), (b"-2", -2.0)],
)
def test_one_finite_number(raw: bytes, value: float) -> None:
    got = txt(raw)
    assert isinstance(got, Rewards)
    assert got.values == (("reward", value),)
    assert got.passed is (value == 1.0)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"nan", "harbor:reward-malformed"),
        (b"inf", "harbor:reward-malformed"),
        (b"-Infinity", "harbor:reward-malformed"),
        (b"1e999", "harbor:reward-non-finite"),
        (b"0x1", "harbor:reward-malformed"),
        (b"1_0", "harbor:reward-malformed"),
        (b"1 1", "harbor:reward-malformed"),
        (b"", "harbor:reward-malformed"),
        (b"true", "harbor:reward-malformed"),
        (b"\xef\xbc\x91", "harbor:reward-malformed"),  # a full-width digit one
        (b"1" + b" " * 100, "harbor:reward-oversize"),
    ],
)
def test_text_garbage_fails(raw: bytes, reason: str) -> None:
    got = txt(raw)
    assert isinstance(got, BadReward)
    assert got.reason == reason
    assert is_failing_reason(got.reason)


def test_json_map_passes_only_when_every_value_is_one() -> None:
    every = js(b'{"a": 1, "b": 1.0}')
    assert isinstance(every, Rewards) and every.passed
    assert every.values == (("reward.a", 1.0), ("reward.b", 1.0))
    some = js(b'{"a": 1, "b": 0.99}')
    assert isinstance(some, Rewards) and not some.passed


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"a": NaN}', "harbor:reward-non-finite"),
        (b'{"a": Infinity}', "harbor:reward-non-finite"),
        (b'{"a": 1e400}', "harbor:reward-non-finite"),
        (b'{"a": 1' + b"0" * 400 + b"}", "harbor:reward-non-finite"),
        (b'{"a": 0, "a": 1}', "harbor:reward-duplicate-key"),
        (b'{"a": true}', "harbor:reward-malformed"),
        (b'{"a": "1"}', "harbor:reward-malformed"),
        (b'{"a": null}', "harbor:reward-malformed"),
        (b'{"a": {"b": 1}}', "harbor:reward-malformed"),
        (b'{"a": [1]}', "harbor:reward-malformed"),
        (b"{}", "harbor:reward-malformed"),
        (b"[1]", "harbor:reward-malformed"),
        (b"1", "harbor:reward-malformed"),
        (b'{"a\\u001b[31m": 1}', "harbor:reward-malformed"),
        (b'{"": 1}', "harbor:reward-malformed"),
        (b'{"a": 1', "harbor:reward-malformed"),
        (b"\xff", "harbor:reward-malformed"),
        (b" " * (MAX_JSON_BYTES + 1), "harbor:reward-oversize"),
    ],
)
def test_json_garbage_fails(raw: bytes, reason: str) -> None:
    got = js(raw)
    assert isinstance(got, BadReward), got
    assert got.reason == reason


def test_too_many_keys_fail() -> None:
    keys = ", ".join(f'"k{i}": 1' for i in range(MAX_KEYS + 1))
    got = js(("{" + keys + "}").encode())
    assert isinstance(got, BadReward) and got.reason == "harbor:reward-oversize"
    at_cap = js(("{" + ", ".join(f'"k{i}": 1' for i in range(MAX_KEYS)) + "}").encode())
    assert isinstance(at_cap, Rewards) and at_cap.passed


def test_no_file_or_both_files_fail() -> None:
    none = parse_reward({})
    assert isinstance(none, BadReward) and none.reason == "harbor:no-reward"
    other = parse_reward({"notes.txt": b"1"})
    assert isinstance(other, BadReward) and other.reason == "harbor:no-reward"
    both = parse_reward({"reward.txt": b"1", "reward.json": b'{"a": 1}'})
    assert isinstance(both, BadReward) and both.reason == "harbor:reward-ambiguous"
