"""`assay.wire`, the native answer written once for the server and its clients: the reward
rule, the answer of every verdict read back exactly, and the whole-answer refusals. The
clients against the real server's answers: tests/unit/test_integrations_rewards.py."""

from __future__ import annotations

import json
import typing

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from helpers.verdicts import verdict
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import wire
from assay._internal.signing.sign import sign_verdict
from assay.errors import AnswerError, InfrastructureError
from assay.integrations import rewards

KEY = Ed25519PrivateKey.generate()


def test_the_reward_rule() -> None:
    assert wire.reward_of(True, 1.0) == 1.0
    assert wire.reward_of(False, 1.0) == 0.0  # every case passed, a limit failed the run
    assert wire.reward_of(False, 0.75) == 0.75
    assert wire.reward_of(False, 0.0) == 0.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["pass", "fail", "timeout", "limit"]), min_size=1, max_size=12),
    st.lists(
        st.sampled_from(
            [
                "limit:pids",
                "security:tamper",
                "note:judge-reused",
                "junit:skipped",
                "firewall:link",
                "junit:empty",
            ]
        ),
        unique=True,
    ),
)
def test_every_verdicts_answer_reads_back_as_written(
    statuses: list[str], reasons: list[str]
) -> None:
    v = verdict(tuple(statuses), reason_codes=tuple(reasons))
    written = wire.Answer.of_verdict(v, sign_verdict(v, KEY))
    on_the_wire = json.dumps(written.to_json()).encode()
    read = wire.read_answer(on_the_wire)
    assert read == written
    assert list(read.to_json()) == list(wire.FIELDS)
    assert read.status == ("passed" if v.passed else "failed")
    assert (read.score, read.reward) == (v.score, wire.reward_of(v.passed, v.score))
    assert read.reward is not None and (read.reward < 1.0 or v.passed)
    assert read.tamper == tuple(v.tamper) and set(read.tamper) <= set(read.reason_codes)
    assert not (read.tamper and read.status == "passed")


def test_an_older_servers_answer_without_tamper_is_read() -> None:
    """A server from before `tamper` writes no such field: its answer is read, with the
    verdict object's tamper signals when that has them (signed with it), else none."""
    honest = verdict(("pass", "fail"))
    caught = verdict(("pass", "fail"), reason_codes=("junit:skipped",))
    for v, expected in ((honest, ()), (caught, ("junit:skipped",))):
        old = wire.Answer.of_verdict(v, sign_verdict(v, KEY)).to_json()
        del old["tamper"]
        assert wire.parse_answer(old).tamper == expected
    # A verdict signed before the field existed has none either.
    old = wire.Answer.of_verdict(caught, sign_verdict(caught, KEY)).to_json()
    del old["tamper"]
    del old["verdict"]["tamper"]
    assert wire.parse_answer(old).tamper == ()
    # But a field that is there is read strictly: never a malformed one as none.
    new = wire.Answer.of_verdict(caught, sign_verdict(caught, KEY)).to_json()
    for bad in (None, "junit:skipped", [], ["junit:skipped", "junit:skipped"], [1]):
        with pytest.raises(AnswerError, match="tamper"):
            wire.parse_answer(dict(new, tamper=bad))
    infra = wire.Answer.no_verdict("infra_error", "why").to_json()
    del infra["tamper"]
    assert wire.parse_answer(infra).tamper == ()


def test_answers_without_a_verdict() -> None:
    for status in ("invalid", "infra_error"):
        answer = wire.Answer.no_verdict(status, "why")  # type: ignore[arg-type]
        assert wire.read_answer(json.dumps(answer.to_json()).encode()) == answer
        assert (answer.score, answer.reward, answer.has_verdict) == (None, None, False)
    with pytest.raises(ValueError, match="invalid or infra_error"):
        wire.Answer.no_verdict("passed", "x")  # type: ignore[arg-type]


def test_a_whole_answer_that_cannot_be_read_is_refused() -> None:
    v = verdict(("pass",))
    good = wire.Answer.of_verdict(v, sign_verdict(v, KEY)).to_json()
    bodies = {
        b"": "not the JSON",
        b'{"results": [], "results": []}': "duplicate key",
        b"[" * 100 + b"]" * 100: "nesting depth",
        b'{"results": [], "more": 1}': "unexpected more",
        b'{"results": {}}': "not {",
        json.dumps({"results": [good, good]}).encode(): "2 results for 1 requests",
    }
    for raw, why in bodies.items():
        with pytest.raises(AnswerError, match=why):
            wire.read_results(raw, 1)
    with pytest.raises(AnswerError, match="exceeds the cap"):
        wire.read_results(json.dumps({"results": [good]}).encode(), 1, max_bytes=100)
    # One bad item is its own error, in its place; the others are read.
    mixed = json.dumps({"results": [good, dict(good, reward=1.5), good]}).encode()
    read = wire.read_results(mixed, 3)
    assert isinstance(read[0], wire.Answer) and isinstance(read[2], wire.Answer)
    assert isinstance(read[1], AnswerError) and "reward is not a number" in str(read[1])
    # An unreadable answer means no verdict reached the client: an infrastructure error.
    assert issubclass(AnswerError, InfrastructureError) and AnswerError.exit_code == 3


def test_the_reward_clients_statuses_are_the_wires() -> None:
    """`rewards.Status` is the wire's statuses but "invalid" (raised, never a reward) and
    with "no_code" (a completion with no code block, never sent)."""
    assert set(typing.get_args(rewards.Status)) == (set(wire.STATUSES) - {"invalid"}) | {"no_code"}
    assert set(typing.get_args(wire.Status)) == set(wire.STATUSES)
