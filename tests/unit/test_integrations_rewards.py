"""The RL reward integrations without an engine: code extraction as verl, open-r1 and TRL's
example do it; verl's `compute_score` and TRL's reward function called exactly as the trainers
call them, on a fake grader; `ServerRewards` against the real `assay serve` app on 127.0.0.1
(its answers as the server writes them, over signed verdicts: tests/helpers/serve_app.py), and
against a stub HTTP server on 127.0.0.1 answering hostile bytes, each made from a real answer;
`LocalRewards` on a `Grader` whose verdicts are real."""

from __future__ import annotations

import asyncio
import json
import pickle
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from helpers.serve_app import serving
from helpers.verdicts import verdict
from hypothesis import given
from hypothesis import strategies as st

import assay
from assay import wire
from assay._internal.model.verdict import MAX_REASONS
from assay._internal.signing.sign import sign_verdict
from assay.errors import InfrastructureError, TaskError, UsageError
from assay.integrations import rewards as rw
from assay.integrations import trl, verl
from assay.integrations.rewards import (
    Item,
    LocalRewards,
    Reward,
    ServerRewards,
    completion_text,
    extract_code,
)

ADD_IO = {"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]}
ADD_JSON = json.dumps(ADD_IO)

# -- extraction: the trainers' own code, copied verbatim, as the reference ---------------------


def verl_reference(completion: str) -> str | None:
    """verl/utils/reward_score/sandbox_fusion/__init__.py:47-61 (None where verl returns 0.0)."""
    solution = completion
    if "```python" in completion:
        solution = completion.split("```python")[-1].split("```")[0]
    elif "```" in completion:
        parts = completion.split("```")
        if len(parts) >= 2:
            solution = parts[1]
            if "\n" in solution:
                first_line, rest = solution.split("\n", 1)
                if first_line.strip().isalpha():
                    solution = rest
    else:
        return None
    return solution


def open_r1_reference(completion: str, language: str = "python") -> str:
    """open-r1 src/open_r1/rewards.py:476-482."""
    pattern = re.compile(rf"```{language}\n(.*?)```", re.DOTALL)
    matches = pattern.findall(completion)
    return matches[-1] if len(matches) >= 1 else ""


SSD_EVAL = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)  # trl examples/scripts/ssd_eval.py


def first_reference(text: str) -> str | None:
    m = SSD_EVAL.search(text)
    return m.group(1).strip() if m else None


TEXTS = [
    "no fence at all",
    "```python\na = 1\n```\nthen\n```python\nb = 2\n```",
    "```py\nprint(1)\n```",
    "```python3\nprint(1)\n```",
    "```\nprint(1)\n```",
    "```c++\nint main() {}\n```",
    "```js\nA\n```\n```py\nB\n```",
    "```python\nprint(1)",
    "```x```",
    "```python\n```",
    "```python print(1)```",
    "```python   \nx = 1```",
    "text ```python\nx = 1\n``` and ```\ny = 2\n```",
    "```",
    "``````",
]


@pytest.mark.parametrize("text", TEXTS)
def test_extraction_mirrors_the_trainers_code(text: str) -> None:
    assert extract_code(text, style="verl") == verl_reference(text)
    assert extract_code(text, style="open-r1") == (open_r1_reference(text) or None)
    assert extract_code(text, style="first") == first_reference(text)


@given(st.lists(st.sampled_from(["```", "python", "py", "3", "\n", " ", "x", "c++"]), max_size=12))
def test_extraction_mirrors_the_trainers_code_on_any_mix(parts: list[str]) -> None:
    text = "".join(parts)
    assert extract_code(text, style="verl") == verl_reference(text)
    assert extract_code(text, style="open-r1") == (open_r1_reference(text) or None)
    assert extract_code(text, style="first") == first_reference(text)


def test_extraction_edge_cases_named_in_the_research() -> None:
    two = "```python\na = 1\n```\n```python\nb = 2\n```"
    assert extract_code(two, style="verl") == "\nb = 2\n"  # the last python block
    assert extract_code(two, style="open-r1") == "b = 2\n"  # the last one too
    assert extract_code(two, style="first") == "a = 1"  # the first, stripped
    # "```py": verl drops the alphabetic tag line; open-r1 and the example find nothing.
    assert extract_code("```py\nprint(1)\n```", style="verl") == "print(1)\n"
    assert extract_code("```py\nprint(1)\n```", style="open-r1") is None
    assert extract_code("```py\nprint(1)\n```", style="first") is None
    # "```python3": verl leaves a stray "3" line on top; open-r1 does not match.
    assert extract_code("```python3\nprint(1)\n```", style="verl") == "3\nprint(1)\n"
    assert extract_code("```python3\nprint(1)\n```", style="open-r1") is None
    # A non-alphabetic tag stays (verl), no fence at all is None (verl scores it 0.0).
    assert extract_code("```c++\nx\n```", style="verl") == "c++\nx\n"
    assert extract_code("just prose", style="verl") is None
    assert extract_code("```python\n```", style="open-r1") is None  # "" is no code
    assert extract_code("```python\n```", style="verl") == "\n"  # verl grades it as it is
    # Another fence tag: the rules use it where they say python.
    cpp = "```python\nnot this\n```\n```cpp\nint main() {}\n```"
    assert extract_code(cpp, "cpp", style="verl") == "\nint main() {}\n"
    assert extract_code(cpp, "cpp", style="open-r1") == "int main() {}\n"
    assert extract_code("```cpp\nint main() {}\n```", "cpp", style="first") == "int main() {}"
    # The example's regex also matches from a block's closing fence to the next opening one.
    assert extract_code(cpp, "cpp", style="first") == ""
    with pytest.raises(UsageError):
        extract_code("x", style="nope")  # type: ignore[arg-type]


def test_fence_tags() -> None:
    assert [rw.fence_tag(x) for x in (None, "python", "python3", "py", "c++", "cpp", "rust")] == [
        "python", "python", "python", "python", "cpp", "cpp", "rust"
    ]  # fmt: skip


def test_completion_text() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "assistant", "content": "one"}]) == "one"
    msgs = [{"role": "assistant", "content": "call"}, {"role": "tool", "content": "out"},
            {"role": "assistant", "content": "final"}]  # fmt: skip
    assert completion_text(msgs) == "final"
    assert completion_text([{"role": "assistant", "content": None}]) == ""
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}]
    assert completion_text(parts) == "ab"
    assert completion_text([]) == ""
    for bad in (None, 3, b"bytes", [3]):
        with pytest.raises(TypeError):
            completion_text(bad)


# -- a fake grader behind the interface ---------------------------------------------------------


class FakeRewards:
    """Grades by what the code says: PASS, WRONG (0.25), TAMPER (0.5, failed on a tamper
    signal: more than WRONG, as a verdict that skipped its failing tests scores) or INFRA (no
    verdict)."""

    def __init__(self) -> None:
        self.calls: list[list[Item]] = []

    def grade_many(self, items: list[Item]) -> list[Reward]:
        self.calls.append(list(items))
        out = []
        for item in items:
            assert item.code is not None
            if "INFRA" in item.code:
                out.append(Reward(None, "infra_error", (), "the engine went away"))
            elif "WRONG" in item.code:
                out.append(Reward(0.25, "failed", ("output:wrong",)))
            elif "TAMPER" in item.code:
                out.append(Reward(0.5, "failed", SKIPPED, None, SKIPPED))
            else:
                out.append(Reward(1.0, "passed"))
        return out


SKIPPED = ("junit:skipped",)


def block(code: str, tag: str = "python") -> str:
    return f"Here it is.\n```{tag}\n{code}\n```\nDone."


PASS, WRONG, INFRA, NOCODE, TAMPER = (
    block("print('PASS')"),
    block("print('WRONG')"),
    block("INFRA"),
    "no code",
    block("TAMPER"),
)


def verl_call(fn: Callable[..., Any], solution: str, **extra: Any) -> Any:
    """As verl's naive reward manager (and the reward loop, with its extra keywords) calls;
    `tamper_reward` among `extra` is a keyword of verl's `reward_kwargs`, the rest extra_info."""
    reward_kwargs = {k: extra.pop(k) for k in list(extra) if k == "tamper_reward"}
    return fn(
        data_source="apps",
        solution_str=solution,
        ground_truth=ADD_JSON,
        extra_info={"index": 3, "num_turns": None, "rollout_reward_scores": {}, **extra},
        reward_router_address="127.0.0.1:9",
        reward_model_tokenizer=None,
        **reward_kwargs,
    )


def test_verl_compute_score_keeps_one_key_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_ON_INFRA_ERROR", raising=False)
    fake = FakeRewards()
    score = verl.make_compute_score(fake, on_infra_error="report")
    got = [verl_call(score, s) for s in (PASS, WRONG, NOCODE, INFRA, TAMPER)]
    assert [list(g) for g in got] == [list(verl.SCORE_KEYS)] * 5
    assert got == [
        {"score": 1.0, "passed": 1.0, "infra_error": 0.0, "no_code": 0.0, "tamper": 0.0},
        {"score": 0.25, "passed": 0.0, "infra_error": 0.0, "no_code": 0.0, "tamper": 0.0},
        {"score": 0.0, "passed": 0.0, "infra_error": 0.0, "no_code": 1.0, "tamper": 0.0},
        {"score": 0.0, "passed": 0.0, "infra_error": 1.0, "no_code": 0.0, "tamper": 0.0},
        # By default a tampering response scores as its failed verdict: here above WRONG.
        {"score": 0.5, "passed": 0.0, "infra_error": 0.0, "no_code": 0.0, "tamper": 1.0},
    ]
    assert all(type(v) is float for g in got for v in g.values())
    # The response without code was never graded; the others as verl's ground truth form.
    assert len(fake.calls) == 4
    assert fake.calls[0] == [Item(ADD_JSON, "verl", "\nprint('PASS')\n", None)]


def test_verl_compute_score_raises_on_infra_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_ON_INFRA_ERROR", raising=False)
    score = verl.make_compute_score(FakeRewards())
    assert verl_call(score, PASS)["score"] == 1.0
    with pytest.raises(InfrastructureError, match="the engine went away"):
        verl_call(score, INFRA)
    monkeypatch.setenv("ASSAY_ON_INFRA_ERROR", "report")
    assert verl_call(score, INFRA)["infra_error"] == 1.0
    monkeypatch.setenv("ASSAY_ON_INFRA_ERROR", "ignore")
    with pytest.raises(UsageError, match="ASSAY_ON_INFRA_ERROR"):
        verl_call(score, INFRA)
    # An explicit mode wins over the environment.
    with pytest.raises(InfrastructureError):
        verl_call(verl.make_compute_score(FakeRewards(), "raise"), INFRA)
    with pytest.raises(UsageError):
        verl.make_compute_score(FakeRewards(), "mask")  # type: ignore[arg-type]


def test_verl_tamper_reward_from_the_factory_or_verls_reward_kwargs() -> None:
    """A tamper reward replaces the score of a tampering response only; verl passes its
    `reward_kwargs` as keywords of every call, and the keyword wins over the factory's."""
    fake = FakeRewards()
    sols = [PASS, WRONG, NOCODE, INFRA, TAMPER]
    default = verl.make_compute_score(fake, "report")
    harsh = verl.make_compute_score(fake, "report", tamper_reward=-1.0)
    assert [verl_call(default, s)["score"] for s in sols] == [1.0, 0.25, 0.0, 0.0, 0.5]
    assert [verl_call(harsh, s)["score"] for s in sols] == [1.0, 0.25, 0.0, 0.0, -1.0]
    # verl's get_custom_reward_fn: partial(_call_with_kwargs, fn, reward_kwargs).
    from_kwargs = [verl_call(default, s, tamper_reward=-2) for s in sols]
    assert [g["score"] for g in from_kwargs] == [1.0, 0.25, 0.0, 0.0, -2.0]
    assert [g["tamper"] for g in from_kwargs] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert verl_call(harsh, TAMPER, tamper_reward=-3.0)["score"] == -3.0
    assert verl_call(harsh, TAMPER, tamper_reward=None)["score"] == -1.0
    batch = harsh.batch(None, [TAMPER, WRONG], [ADD_JSON] * 2, tamper_reward=-0.5)
    assert [g["score"] for g in batch] == [-0.5, 0.25]
    for bad in (True, "-1", float("nan"), float("inf")):
        with pytest.raises(UsageError, match="tamper_reward"):
            verl_call(default, TAMPER, tamper_reward=bad)
        with pytest.raises(UsageError, match="tamper_reward"):
            verl.make_compute_score(fake, tamper_reward=bad)  # type: ignore[arg-type]


def test_verl_language_ground_truth_and_bad_rows() -> None:
    fake = FakeRewards()
    score = verl.make_compute_score(fake, "report")
    both = block("print('no')") + block("int main() { PASS; }", "cpp")
    assert verl_call(score, both, language="cpp")["passed"] == 1.0
    assert fake.calls[-1][0].language == "cpp"
    assert fake.calls[-1][0].code == "\nint main() { PASS; }\n"
    as_dict = score(solution_str=PASS, ground_truth=ADD_IO, extra_info=None)
    assert as_dict["passed"] == 1.0 and fake.calls[-1][0].tests == ADD_IO
    with pytest.raises(TaskError, match="ground_truth"):
        score(data_source="apps", solution_str=PASS, ground_truth=None, extra_info={})
    with pytest.raises(UsageError, match="language"):
        verl_call(score, PASS, language=3)


def test_verl_batch_manager_call() -> None:
    """As verl's BatchRewardManager.verify calls: plural keywords, one call for the step."""
    fake = FakeRewards()
    score = verl.make_compute_score(fake, "report")
    sols = [PASS, NOCODE, WRONG, INFRA]
    got = score.batch(
        data_sources=["apps"] * 4, solution_strs=sols, ground_truths=[ADD_JSON] * 4,
        extra_infos=[{"rollout_reward_scores": {}} for _ in sols], extra_kwarg=1,
    )  # fmt: skip
    assert [g["score"] for g in got] == [1.0, 0.0, 0.25, 0.0]
    assert [g["no_code"] for g in got] == [0.0, 1.0, 0.0, 0.0]
    assert [g["infra_error"] for g in got] == [0.0, 0.0, 0.0, 1.0]
    assert len(fake.calls) == 1 and len(fake.calls[0]) == 3
    with pytest.raises(UsageError):
        score.batch(solution_strs=[PASS], ground_truths=[])


# -- TRL ----------------------------------------------------------------------------------------


@dataclass
class TrlLogs:
    metrics: list[tuple[str, float]] = field(default_factory=list)
    extra: list[tuple[str, list[Any]]] = field(default_factory=list)


def trl_call(fn: Callable[..., Any], completions: list[Any], logs: TrlLogs, **columns: Any) -> Any:
    """As GRPOTrainer._calculate_rewards calls a sync reward function (trl 1.10, l.1659)."""
    n = len(completions)
    reward_kwargs = {"input_output": [ADD_JSON] * n, "difficulty": ["easy"] * n, **columns}
    reward_kwargs["trainer_state"] = SimpleNamespace(global_step=7)
    reward_kwargs["log_extra"] = lambda column, values: logs.extra.append((column, values))
    reward_kwargs["log_metric"] = lambda name, value: logs.metrics.append((name, value))
    return fn(
        prompts=["Add two numbers."] * n,
        completions=completions,
        completion_ids=[[1, 2, 3]] * n,
        **reward_kwargs,
    )


@pytest.mark.parametrize("conversational", [False, True])
def test_trl_reward_as_grpo_calls_it(conversational: bool) -> None:
    fake = FakeRewards()
    f = trl.reward_function(fake)
    texts = [PASS, WRONG, NOCODE, INFRA, TAMPER]
    completions: list[Any] = (
        [[{"role": "assistant", "content": t}] for t in texts] if conversational else texts
    )
    logs = TrlLogs()
    got = trl_call(f, completions, logs)
    assert got == [1.0, 0.25, 0.0, None, 0.5]
    assert [type(x) for x in got] == [float, float, float, type(None), float]
    assert len(fake.calls) == 1
    assert [i.code for i in fake.calls[0]] == [
        "print('PASS')\n", "print('WRONG')\n", "INFRA\n", "TAMPER\n"
    ]  # fmt: skip
    assert {i.form for i in fake.calls[0]} == {"apps"}
    assert logs.metrics == [
        ("assay_reward/infra_error_rate", 0.2),
        ("assay_reward/no_code_rate", 0.2),
        ("assay_reward/tamper_rate", 0.2),
    ]
    assert logs.extra == [
        ("assay_reward_status", ["passed", "failed", "no_code", "infra_error", "failed"]),
        ("assay_reward_tamper", ["", "", "", "", "junit:skipped"]),
    ]
    assert f.__name__ == "assay_reward"
    # A reward for tampering replaces that completion's score, and no other.
    harsh = trl.reward_function(fake, tamper_reward=-1)
    assert trl_call(harsh, completions, TrlLogs()) == [1.0, 0.25, 0.0, None, -1.0]
    assert pickle.loads(pickle.dumps(harsh)).tamper_reward == -1.0
    for bad in (False, "-1", float("-inf")):
        with pytest.raises(UsageError, match="tamper_reward"):
            trl.reward_function(fake, tamper_reward=bad)  # type: ignore[arg-type]


def test_trl_reward_columns_and_names() -> None:
    fake = FakeRewards()
    f = trl.reward_function(fake, tests_column="gt", form="verl", language_column="lang",
                            style="verl", name="code_ok")  # fmt: skip
    logs = TrlLogs()
    got = trl_call(f, [block("PASS", "py"), block("PASS", "cpp")], logs, gt=[ADD_IO, ADD_JSON],
                   lang=[None, "cpp"])  # fmt: skip
    assert got == [1.0, 1.0]
    assert [(i.tests, i.form, i.language) for i in fake.calls[0]] == [
        (ADD_IO, "verl", None), (ADD_JSON, "verl", "cpp")
    ]  # fmt: skip
    assert fake.calls[0][0].code == "PASS\n"  # verl's rule drops the "py" tag line
    assert f.__name__ == "code_ok" and logs.metrics[0][0] == "code_ok/infra_error_rate"
    with pytest.raises(TypeError, match=r"'tests'.*columns given: difficulty, input_output"):
        trl_call(trl.reward_function(fake, tests_column="tests"), [PASS], logs)
    with pytest.raises(ValueError, match="2 values for 1"):
        trl_call(trl.reward_function(fake), [PASS], logs, input_output=[ADD_JSON] * 2)


def test_trl_reward_pickles() -> None:
    again = pickle.loads(pickle.dumps(trl.assay_reward))
    assert again.__name__ == "assay_reward" and again.rewards is None
    server = trl.reward_function(ServerRewards("http://127.0.0.1:9/" + "t" * 20), name="x")
    again = pickle.loads(pickle.dumps(server))
    assert isinstance(again.rewards, ServerRewards) and again.__name__ == "x"
    assert again.rewards.url == "http://127.0.0.1:9/" + "t" * 20


# -- a real HTTP server on 127.0.0.1 ------------------------------------------------------------

Reply = tuple[int, dict[str, str], bytes] | Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Stub:
    url: str
    replies: list[Reply]
    seen: list[dict[str, Any]]


def ok(results: list[dict[str, Any]]) -> Reply:
    return (200, {"Content-Type": "application/json"}, json.dumps({"results": results}).encode())


_SIGNER = Ed25519PrivateKey.generate()


def signed(statuses: tuple[str, ...], reasons: tuple[str, ...] = ()) -> dict[str, Any]:
    """The answer the server writes for a real, signed verdict with these cases."""
    v = verdict(statuses, reason_codes=reasons)
    return wire.Answer.of_verdict(v, sign_verdict(v, _SIGNER)).to_json()


def graded(
    status: str = "passed", score: Any = 1.0, reasons: tuple[str, ...] = (), **more: Any
) -> dict[str, Any]:
    """The server's answer of `status` and `score` (a verdict of ten cases, `score` of them
    passed, with `reasons`; a failed one that passed all ten fails on `limit:pids` unless
    `reasons` say why), with the fields in `more` put over it: a hostile answer is a real
    one, changed."""
    if status in ("invalid", "infra_error"):
        r = wire.Answer.no_verdict(status, str(more.get("error") or "x")).to_json()
        if score is not None:
            r["score"] = score
    elif type(score) is float and 0 <= score <= 1:
        passing = round(score * 10)
        if status != "passed" and passing == 10 and not reasons:
            reasons = ("limit:pids",)
        r = dict(signed(("pass",) * passing + ("fail",) * (10 - passing), reasons), status=status)
    else:
        r = dict(signed(("pass",) * 10), status=status, score=score)
    r.update(more)
    return r


@pytest.fixture
def stub() -> Iterator[Stub]:
    replies: list[Reply] = []
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"path": self.path, "headers": dict(self.headers),
                         "body": json.loads(body), "at": time.monotonic()})  # fmt: skip
            reply = replies.pop(0) if len(replies) > 1 else replies[0]
            if callable(reply):
                reply(self)
                return
            status, headers, data = reply
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            if "Content-Length" not in headers and "Transfer-Encoding" not in headers:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield Stub(f"http://127.0.0.1:{server.server_address[1]}", replies, seen)
    finally:
        server.shutdown()
        server.server_close()


def items(*codes: str | None, form: rw.Form = "apps") -> list[Item]:
    return [Item(ADD_IO, form, code) for code in codes]


def test_server_request_and_answer(stub: Stub) -> None:
    stub.replies.append(ok([graded(), graded("failed", 0.5, ("output:wrong",))]))
    token = "s3cret-token-123"
    got = ServerRewards(f"{stub.url}/{token}/").grade_many(
        [Item(ADD_IO, "apps", "a"), Item(ADD_JSON, "verl", "b", "cpp"), Item(ADD_IO, "apps", None)]
    )
    assert got == [Reward(1.0, "passed"), Reward(0.5, "failed", ("output:wrong",)), rw.NO_CODE]
    [req] = stub.seen
    assert req["path"] == f"/{token}/v1/grade/batch"
    assert "Authorization" not in req["headers"]
    assert req["body"] == {"requests": [
        {"input_output": ADD_IO, "code": "a"},
        {"ground_truth": ADD_JSON, "code": "b", "language": "cpp"},
    ]}  # fmt: skip
    stub.replies[:] = [ok([graded()])]
    ServerRewards(stub.url, token="tok").grade_many(items("a"))
    assert stub.seen[-1]["path"] == "/v1/grade/batch"
    assert stub.seen[-1]["headers"]["Authorization"] == "Bearer tok"


def test_server_a_failed_verdict_never_scores_one(stub: Stub) -> None:
    stub.replies.append(ok([graded("failed", 1.0, ("security:tamper",))]))
    assert ServerRewards(stub.url).grade_many(items("a")) == [
        Reward(0.0, "failed", ("security:tamper",))
    ]


HOSTILE = {
    "not json": b"<html>busy</html>",
    "empty": b"",
    "not utf-8": b'{"results": ["\xff"]}',
    "no results": b"{}",
    "results not a list": b'{"results": {"0": 1}}',
    "NaN score": b'{"results": [{"status": "passed", "score": NaN}]}',
    "duplicate key": b'{"results": [], "results": [{"status": "passed", "score": 1}]}',
    "too few results": json.dumps({"results": []}).encode(),
    "too many results": json.dumps({"results": [graded(), graded()]}).encode(),
    "deep nesting": b"[" * 100000 + b"]" * 100000,
}


@pytest.mark.parametrize("body", list(HOSTILE.values()), ids=list(HOSTILE))
def test_server_hostile_answers_are_infra_errors(stub: Stub, body: bytes) -> None:
    stub.replies.append((200, {"Content-Type": "application/json"}, body))
    got = ServerRewards(stub.url).grade_many(items("a"))
    assert [(r.score, r.status) for r in got] == [(None, "infra_error")]
    assert got[0].error and got[0].error.startswith("assay server:")


def _verdict_says(reasons: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    """A real failed answer (score 0.5, `reasons`) whose `verdict` object says `fields`
    instead."""
    r = graded("failed", 0.5, reasons)
    return dict(r, verdict={**r["verdict"], **fields})


# Each a real answer changed in one way, and the words the refusal must give: the answer is
# refused for that change, not for another one the change happened to make.
BAD_RESULTS: dict[str, tuple[Any, str]] = {
    "not an object": ([1], "must be a JSON object"),
    "unknown status": (graded("excellent"), "unknown status"),
    "no status": ({k: v for k, v in graded().items() if k != "status"}, "lacks status"),
    "an extra field": (dict(graded(), note="x"), "unexpected note"),
    "score a string": (graded(score="1.0"), "score is not a number"),
    "score a bool": (graded(score=True), "score is not a number"),
    "score missing": (
        {k: v for k, v in graded().items() if k not in ("score", "reward")},
        "lacks reward, score",
    ),
    "score above 1": (graded(score=1.5), "score is not a number in [0, 1]"),
    "score below 0": (graded("failed", -0.1), "score is not a number in [0, 1]"),
    "passed below 1": (graded("passed", 0.5), "passed with a score of 0.5"),
    "reward differs": (graded("failed", 0.5, reward=1.0), "reward 1.0 contradicts"),
    # What the client used to expect of a correct program failed by a limit: that is a reward
    # of 1.0 for a failed verdict, which the rule forbids.
    "reward 1.0 for a failed verdict": (graded("failed", 1.0, reward=1.0), "the rule gives 0.0"),
    "reward null with a verdict": (graded(reward=None), "reward is not a number"),
    "reason codes not a list": (graded(reason_codes="output:wrong"), "not a list of reason"),
    "reason code malformed": (
        graded("failed", 0.5, reason_codes=["Output wrong"]),
        "not a list of reason",
    ),
    "reason code duplicated": (graded("failed", 0.5, reason_codes=["a:b", "a:b"]), "repeat"),
    "passed with a failing reason": (
        graded("passed", 1.0, reason_codes=["limit:pids"]),
        "passed with a failing reason",
    ),
    "error with a verdict": (graded(error="oops"), "an error with a verdict"),
    "error not a string": (graded("infra_error", None, error=["x"]), "error is not a string"),
    "infra with a score": (graded("infra_error", 0.0), "carries a verdict's fields"),
    "infra with reason codes": (
        graded("infra_error", None, reason_codes=["limit:pids"]),
        "carries a verdict's fields",
    ),
    "infra without an error": (graded("infra_error", None, error=""), "without an error"),
    "grading id not a string": (graded(grading_id=7), "grading_id is not a grading id"),
    "grading id with escapes": (graded(grading_id="g-\x1b[31m"), "not a grading id"),
    "verdict not an object": (graded(verdict=[1]), "verdict is not an object"),
    "envelope not a string": (graded(envelope={"payload": ""}), "envelope is not a string"),
    "verdict passed, answer failed": (_verdict_says(passed=True), "the verdict differs"),
    "verdict of another score": (_verdict_says(score=0.6), "the verdict differs"),
    "verdict of another grading": (_verdict_says(grading_id="g-2"), "the verdict differs"),
    "verdict with other reasons": (_verdict_says(reason_codes=["a:b"]), "the verdict differs"),
    # A tamper signal is read as strictly as a score: a malformed one is never read as none.
    "tamper not a list": (graded("failed", 0.5, SKIPPED, tamper="junit:skipped"), "tamper is not"),
    "tamper null": (graded("failed", 0.5, SKIPPED, tamper=None), "tamper is not a list"),
    "tamper code malformed": (graded("failed", 0.5, SKIPPED, tamper=["Skipped"]), "tamper is not"),
    "tamper too long": (
        graded("failed", 0.5, SKIPPED, tamper=[f"a:{i}" for i in range(MAX_REASONS + 1)]),
        "tamper is not a list",
    ),
    "tamper repeated": (
        graded("failed", 0.5, SKIPPED, tamper=["junit:skipped"] * 2),
        "tamper repeats",
    ),
    "tamper not among the reasons": (
        graded("failed", 0.5, tamper=["junit:skipped"]),
        "not among the failing reasons",
    ),
    "tamper on a passed answer": (
        graded("passed", 1.0, tamper=["junit:skipped"]),
        "not among the failing reasons",
    ),
    "tamper dropped from the answer": (
        graded("failed", 0.5, SKIPPED, tamper=[]),
        "tamper differs from the verdict's",
    ),
    "tamper dropped from the verdict": (
        _verdict_says(SKIPPED, tamper=[]),
        "tamper differs from the verdict's",
    ),
    "tamper on an infra error": (
        graded("infra_error", None, tamper=["junit:skipped"]),
        "carries a verdict's fields",
    ),
}


@pytest.mark.parametrize(("bad", "why"), list(BAD_RESULTS.values()), ids=list(BAD_RESULTS))
def test_server_a_bad_result_is_that_items_infra_error(stub: Stub, bad: Any, why: str) -> None:
    if isinstance(bad, list):
        bad = bad[0]
    stub.replies.append(ok([graded(), bad, graded("failed", 0.0)]))
    got = ServerRewards(stub.url).grade_many(items("a", "b", "c"))
    assert [(r.score, r.status) for r in got] == [
        (1.0, "passed"), (None, "infra_error"), (0.0, "failed")
    ]  # fmt: skip
    assert got[1].error and got[1].error.startswith("assay server: item 1: "), got[1].error
    assert why in got[1].error, got[1].error


def test_the_unchanged_answers_of_the_bad_results_are_read() -> None:
    """Each bad result above is refused for its change: the answers it was made from read."""
    for base in (graded(), graded("failed", 0.5), graded("failed", 1.0), graded("passed", 1.0),
                 graded("infra_error", None, error="x"), graded("failed", 0.5, SKIPPED)):  # fmt: skip
        assert wire.parse_answer(json.loads(json.dumps(base))).to_json() == base


def test_server_infra_error_and_invalid(stub: Stub) -> None:
    stub.replies.append(ok([graded("infra_error", None, error="engine:gone\x1b[31m")]))
    [r] = ServerRewards(stub.url).grade_many(items("a"))
    assert r == Reward(None, "infra_error", (), "assay server: engine:gone?[31m")
    stub.replies[:] = [ok([graded(), graded("invalid", None, error="tests: bad")])]
    with pytest.raises(UsageError, match="item 1: the assay server refused it: tests: bad"):
        ServerRewards(stub.url).grade_many(items("a", "b"))


@pytest.mark.parametrize("chunked", [False, True])
def test_server_answer_over_the_cap(stub: Stub, chunked: bool) -> None:
    big = signed(("pass",) * 100)  # its cases and its envelope: about 20 kB
    body = json.dumps({"results": [big]}).encode()
    assert len(body) > 10000
    if chunked:

        def reply(h: BaseHTTPRequestHandler) -> None:
            h.protocol_version = "HTTP/1.1"
            h.send_response(200)
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            for i in range(0, len(body), 1000):
                piece = body[i : i + 1000]
                h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            h.wfile.write(b"0\r\n\r\n")

        stub.replies.append(reply)
    else:
        stub.replies.append((200, {}, body))
    [r] = ServerRewards(stub.url, max_response_bytes=4096).grade_many(items("a"))
    assert (r.score, r.status) == (None, "infra_error") and "cap of 4096" in (r.error or "")
    # The same answer under a larger cap is read (the cap is what refused it).
    assert ServerRewards(stub.url).grade_many(items("a"))[0].status == "passed"


def test_server_busy_is_retried_after_retry_after(stub: Stub) -> None:
    stub.replies.extend([(429, {"Retry-After": "1"}, b'{"error": "queue full"}'), ok([graded()])])
    t0 = time.monotonic()
    assert ServerRewards(stub.url).grade_many(items("a")) == [Reward(1.0, "passed")]
    assert len(stub.seen) == 2
    assert stub.seen[1]["at"] - stub.seen[0]["at"] >= 1.0
    assert time.monotonic() - t0 < 10


def test_server_busy_for_good_is_an_infra_error(stub: Stub) -> None:
    stub.replies.append((503, {"Retry-After": "0"}, b""))
    [r] = ServerRewards(stub.url, retry_attempts=3).grade_many(items("a"))
    assert (r.score, r.status) == (None, "infra_error") and "after 3 attempt" in (r.error or "")
    assert len(stub.seen) == 3
    # A Retry-After beyond the budget: no waiting, no second try.
    stub.seen.clear()
    stub.replies[:] = [(429, {"Retry-After": "99999999999999999999"}, b"")]
    t0 = time.monotonic()
    [r] = ServerRewards(stub.url, retry_budget=5).grade_many(items("a"))
    assert r.status == "infra_error" and len(stub.seen) == 1 and time.monotonic() - t0 < 3


def test_retry_after_forms() -> None:
    assert rw._retry_wait("7", 1) == 7.0
    assert rw._retry_wait(None, 3) == 4.0
    assert rw._retry_wait("soon", 1) == 1.0
    assert rw._retry_wait("\u0662", 2) == 2.0  # a non-ASCII digit is no number
    assert rw._retry_wait("Wed, 21 Oct 2015 07:28:00 GMT", 1) == 0.0  # in the past


@pytest.mark.parametrize(
    ("status", "error"),
    [(500, InfrastructureError), (502, InfrastructureError), (401, UsageError),
     (404, UsageError), (413, UsageError), (302, UsageError)],
)  # fmt: skip
def test_server_http_errors(stub: Stub, status: int, error: type[Exception]) -> None:
    stub.replies.append((status, {"Location": "http://elsewhere/"}, b'{"error": "nope"}'))
    rewards = ServerRewards(stub.url + "/token-in-the-path")
    if error is UsageError:
        with pytest.raises(UsageError, match=f"HTTP {status}: nope") as caught:
            rewards.grade_many(items("a"))
        assert "token-in-the-path" not in str(caught.value)
        assert ("(to http://elsewhere/)" in str(caught.value)) == (status == 302)
    else:
        [r] = rewards.grade_many(items("a"))
        assert (r.score, r.status, r.error) == (
            None,
            "infra_error",
            f"assay server: HTTP {status}: nope",
        )
    assert len(stub.seen) == 1  # none of these is retried


def test_server_endless_error_body_is_not_read_whole(stub: Stub) -> None:
    """requests reads a redirect's body whole, also when not following it; assay's session
    does not, so an endless 3xx (or 4xx) body costs at most 64 KiB."""

    def endless(h: BaseHTTPRequestHandler) -> None:
        h.send_response(307)
        h.send_header("Location", "/v2")
        h.end_headers()
        try:
            while True:
                h.wfile.write(b"x" * 65536)
        except OSError:
            pass

    stub.replies.append(endless)
    t0 = time.monotonic()
    with pytest.raises(UsageError, match=r"HTTP 307 \(to /v2\)"):
        ServerRewards(stub.url, timeout=5).grade_many(items("a"))
    assert time.monotonic() - t0 < 4


def test_server_unreachable_or_slow_is_an_infra_error(stub: Stub) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    secret = "a-very-secret-token"
    [r] = ServerRewards(f"http://127.0.0.1:{port}/{secret}").grade_many(items("a"))
    assert (r.score, r.status) == (None, "infra_error") and "ConnectionError" in (r.error or "")
    assert secret not in (r.error or "") and "<redacted>" in (r.error or "")

    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(2)

    stub.replies.append(slow)
    t0 = time.monotonic()
    [r] = ServerRewards(stub.url, timeout=0.5).grade_many(items("a"))
    assert (r.score, r.status) == (None, "infra_error") and time.monotonic() - t0 < 1.9


def test_server_batches_in_chunks_in_order(stub: Stub) -> None:
    def echo(h: BaseHTTPRequestHandler) -> None:
        reqs = stub.seen[-1]["body"]["requests"]
        data = json.dumps({"results": [graded("failed", float(r["code"]) / 10) for r in reqs]})
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data.encode())

    stub.replies.append(echo)
    codes = ["1", None, "2", "3", "4", "5"]
    got = ServerRewards(stub.url, batch_size=2, connections=2).grade_many(items(*codes))
    assert [r.score for r in got] == [0.1, 0.0, 0.2, 0.3, 0.4, 0.5]
    assert got[1].status == "no_code"
    assert sorted(len(s["body"]["requests"]) for s in stub.seen) == [1, 2, 2]


def test_server_checks_signed_verdicts(stub: Stub, tmp_path: Any) -> None:
    from assay._internal.signing.keys import load_private_key

    key, pub = assay.keygen(tmp_path / "k")
    v = verdict(("pass", "fail", "pass"))
    good = wire.Answer.of_verdict(v, sign_verdict(v, load_private_key(key))).to_json()
    # A forgery the wire format cannot see: the answer and its verdict object agree, only the
    # signed envelope says otherwise.
    forged = dict(good, score=1.0, reward=1.0, status="passed",
                  verdict={**good["verdict"], "passed": True, "score": 1.0})  # fmt: skip
    unsigned = dict(good, envelope="{}")
    stub.replies.append(ok([good, forged, unsigned]))
    got = ServerRewards(stub.url, public_key=pub).grade_many(items("a", "b", "c"))
    assert [(r.score, r.status) for r in got] == [
        (pytest.approx(2 / 3), "failed"), (None, "infra_error"), (None, "infra_error")
    ]  # fmt: skip
    assert "differs from the reported result" in (got[1].error or "")
    assert "does not verify" in (got[2].error or "")
    # Without the key the forged result is believed: the key is what refused it.
    assert ServerRewards(stub.url).grade_many(items("a", "b", "c"))[1].status == "passed"
    _, other_pub = assay.keygen(tmp_path / "other")
    stub.replies[:] = [ok([good])]
    assert ServerRewards(stub.url, public_key=other_pub).grade_many(items("a"))[0].status == (
        "infra_error"
    )
    # A server that hides a tamper signal: the answer and its verdict object agree on none,
    # only the signed verdict names it.
    t = verdict(("pass", "fail"), reason_codes=SKIPPED)
    tampered = wire.Answer.of_verdict(t, sign_verdict(t, load_private_key(key))).to_json()
    hidden = dict(tampered, tamper=[], verdict={**tampered["verdict"], "tamper": []})
    stub.replies[:] = [ok([tampered, hidden])]
    got = ServerRewards(stub.url, public_key=pub, tamper_reward=-1).grade_many(items("a", "b"))
    assert [(r.score, r.status, r.tamper) for r in got] == [
        (-1.0, "failed", SKIPPED), (None, "infra_error", ())
    ]  # fmt: skip
    assert "differs from the reported result" in (got[1].error or "")
    unchecked = ServerRewards(stub.url, tamper_reward=-1).grade_many(items("a", "b"))
    assert [(r.score, r.tamper) for r in unchecked] == [(-1.0, SKIPPED), (0.5, ())]


def test_server_rewards_refuses_bad_settings() -> None:
    for url in ("ftp://x/", "127.0.0.1:8000", "http:///x", "http://h/?token=1"):
        with pytest.raises(UsageError):
            ServerRewards(url)
    with pytest.raises(UsageError):
        ServerRewards("http://h", token="a b")
    assert "secret" not in repr(ServerRewards("http://h:1/secret-token-value"))


# -- the real server's answers -----------------------------------------------------------------


def fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}\n```"


def test_clients_read_the_real_servers_answers(tmp_path: Path) -> None:
    """The clients against what `assay serve` itself writes (its app under uvicorn on
    127.0.0.1; the verdicts are real and signed, decided by markers in the code). A failed
    verdict whose every case passed (a correct program that hit its pids limit) is answered
    score 1.0, reward 0.0: the client reads that as a failed reward of 0.0, verl scores it
    without raising, TRL gets 0.0. (The client used to refuse this answer as "reward differs
    from score", an infra_error, which made verl raise and stop the step.)"""
    with serving(tmp_path) as s:
        raw = requests.post(
            f"{s.url}/v1/grade", json={"input_output": ADD_IO, "code": "ALLCASES"}, timeout=30
        ).json()
        assert (raw["status"], raw["score"], raw["reward"], raw["reason_codes"]) == (
            "failed", 1.0, 0.0, ["limit:pids"]
        )  # fmt: skip
        backend = ServerRewards(s.url, public_key=s.grader.public_key)
        codes = ["print('PASS')", "ALLCASES", "WRONG", "print(0)", "INFRA", None]
        got = backend.grade_many(items(*codes))
        assert [(r.score, r.status, r.reason_codes) for r in got] == [
            (1.0, "passed", ()), (0.0, "failed", ("limit:pids",)), (0.5, "failed", ()),
            (0.0, "failed", ()), (None, "infra_error", ()), (0.0, "no_code", ()),
        ]  # fmt: skip
        assert "engine:gone (scripted)" in (got[4].error or "")
        # The same items graded in this process by the same grader: the same rewards.
        with LocalRewards(grader=s.grader) as local:
            assert local.grade_many(items(*codes))[:4] == got[:4]

        # verl, in its default mode (an infrastructure error raises): a correct program failed
        # by a limit is an ordinary wrong answer, no exception.
        score = verl.make_compute_score(backend)
        keys = {"score": 0.0, "passed": 0.0, "infra_error": 0.0, "no_code": 0.0, "tamper": 0.0}
        for form in ("apps", "verl"):
            truth = ADD_JSON if form == "verl" else json.dumps(ADD_IO)
            assert score(data_source="apps", solution_str=fenced("ALLCASES"),
                         ground_truth=truth, extra_info={}) == keys  # fmt: skip
        assert verl.make_compute_score(backend).batch(
            None, [fenced("PASS"), fenced("ALLCASES")], [ADD_JSON] * 2
        ) == [dict(keys, score=1.0, passed=1.0), keys]
        with pytest.raises(InfrastructureError, match="engine:gone"):
            score(data_source="apps", solution_str=fenced("INFRA"), ground_truth=ADD_JSON)

        reward = trl.reward_function(backend)
        chat = [
            [{"role": "assistant", "content": fenced(c)}] for c in ("PASS", "ALLCASES", "INFRA")
        ]
        assert reward(completions=chat, input_output=[ADD_JSON] * 3) == [1.0, 0.0, None]

        # A request the server refuses as invalid (422 on /v1/grade) is a bug in the data set.
        with pytest.raises(UsageError, match="item 0: the assay server refused it"):
            backend.grade_many([Item(ADD_IO, "apps", "print(1)", "cobol")])


def test_tamper_through_the_real_server(tmp_path: Path) -> None:
    """A submission caught tampering (the scripted grader's TAMPER: half its cases pass and
    the run fails on `junit:skipped`) against an honest wrong one (WRONG: the same half):
    the server answers `tamper` beside `reward`, the same reward for both; a trainer's
    `tamper_reward=-1` sets the tampering one apart through ServerRewards, verl and TRL, and
    LocalRewards over the same grader agrees."""
    with serving(tmp_path) as s:

        def grade(code: str) -> Any:
            body = {"input_output": ADD_IO, "code": code}
            return requests.post(f"{s.url}/v1/grade", json=body, timeout=30).json()

        raw = [grade("TAMPER"), grade("WRONG")]
        assert [(r["status"], r["reward"], r["tamper"]) for r in raw] == [
            ("failed", 0.5, ["junit:skipped"]), ("failed", 0.5, [])
        ]  # fmt: skip
        assert list(raw[0])[:4] == ["status", "score", "reward", "tamper"]
        assert raw[0]["verdict"]["tamper"] == ["junit:skipped"]

        codes = ["TAMPER", "WRONG", "print('PASS')", "INFRA", None]
        plain = ServerRewards(s.url, public_key=s.grader.public_key)
        harsh = ServerRewards(s.url, public_key=s.grader.public_key, tamper_reward=-1)
        got = [(r.score, r.status, r.tamper) for r in plain.grade_many(items(*codes))]
        assert got == [
            (0.5, "failed", SKIPPED), (0.5, "failed", ()), (1.0, "passed", ()),
            (None, "infra_error", ()), (0.0, "no_code", ()),
        ]  # fmt: skip
        assert [r.score for r in harsh.grade_many(items(*codes))] == [-1.0, 0.5, 1.0, None, 0.0]
        with LocalRewards(grader=s.grader, tamper_reward=-1) as local:
            assert [r.score for r in local.grade_many(items(*codes))] == [
                -1.0, 0.5, 1.0, None, 0.0
            ]  # fmt: skip

        # verl: the flag in every result, the reward from its reward_kwargs or the factory.
        texts = [fenced("TAMPER"), fenced("WRONG")]
        score = verl.make_compute_score(plain)
        keys = {"passed": 0.0, "infra_error": 0.0, "no_code": 0.0}
        assert [verl_call(score, t) for t in texts] == [
            dict(keys, score=0.5, tamper=1.0), dict(keys, score=0.5, tamper=0.0)
        ]  # fmt: skip
        assert [verl_call(score, t, tamper_reward=-1.0)["score"] for t in texts] == [-1.0, 0.5]
        assert [
            r["score"] for r in verl.make_compute_score(plain, tamper_reward=-1.0).batch(
                None, texts, [ADD_JSON] * 2
            )
        ] == [-1.0, 0.5]  # fmt: skip

        # TRL: the factory's tamper_reward; the default scores the tampering one as WRONG.
        chat = [[{"role": "assistant", "content": t}] for t in texts]
        assert trl.reward_function(plain)(completions=chat, input_output=[ADD_JSON] * 2) == [
            0.5, 0.5
        ]  # fmt: skip
        logs = TrlLogs()
        harsh_trl = trl.reward_function(plain, tamper_reward=-1.0)
        assert trl_call(harsh_trl, chat, logs) == [-1.0, 0.5]
        assert ("assay_reward/tamper_rate", 0.5) in logs.metrics
        # A grader's own tamper_reward reaches the functions as it is.
        assert trl.reward_function(harsh)(completions=chat, input_output=[ADD_JSON] * 2) == [
            -1.0, 0.5
        ]  # fmt: skip


def test_every_answer_of_the_real_server_is_what_the_wire_format_says(tmp_path: Path) -> None:
    """Each status the server can answer, read back by `assay.wire`'s strict reader from the
    bytes on the wire, with the reward rule holding."""
    with serving(tmp_path) as s:
        bodies = [
            {"input_output": ADD_IO, "code": "PASS"},
            {"input_output": ADD_IO, "code": "ALLCASES"},
            {"input_output": ADD_IO, "code": "WRONG"},
            {"input_output": ADD_IO, "code": "INFRA"},
            {"input_output": ADD_IO, "code": "x", "language": "cobol"},
            {"task": "no-such-task", "code": "x"},
        ]
        seen = []
        for body in bodies:
            r = requests.post(f"{s.url}/v1/grade", json=body, timeout=30)
            answer = wire.read_answer(r.content)
            assert r.status_code == (422 if answer.status == "invalid" else 200)
            if answer.has_verdict:
                assert answer.score is not None
                assert answer.reward == wire.reward_of(answer.status == "passed", answer.score)
            seen.append((answer.status, answer.score, answer.reward))
        assert seen == [
            ("passed", 1.0, 1.0), ("failed", 1.0, 0.0), ("failed", 0.5, 0.5),
            ("infra_error", None, None), ("invalid", None, None), ("invalid", None, None),
        ]  # fmt: skip
        batch = requests.post(f"{s.url}/v1/grade/batch", json={"requests": bodies}, timeout=30)
        read = wire.read_results(batch.content, len(bodies))
        assert [(a.status, a.score, a.reward) for a in read if isinstance(a, wire.Answer)] == seen


# -- through the environment, as a trainer loads them ------------------------------------------


def test_from_environment(monkeypatch: pytest.MonkeyPatch, stub: Stub) -> None:
    monkeypatch.setenv("ASSAY_URL", stub.url)
    monkeypatch.setenv("ASSAY_TOKEN", "tok")
    found: list[Any] = []
    threads = [
        threading.Thread(target=lambda: found.append(rw.from_environment())) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(f is found[0] for f in found) and isinstance(found[0], ServerRewards)
    assert found[0].url == stub.url and found[0].token == "tok"
    harsh = rw.from_environment(tamper_reward=-1)
    assert harsh is not found[0] and harsh is rw.from_environment(-1.0)
    assert isinstance(harsh, ServerRewards) and harsh.tamper_reward == -1.0
    with pytest.raises(UsageError, match="tamper_reward"):
        rw.from_environment(tamper_reward=float("nan"))
    monkeypatch.setenv("ASSAY_URL", stub.url + "/other")
    assert rw.from_environment() is not found[0]
    monkeypatch.delenv("ASSAY_URL")
    local = rw.from_environment()
    assert isinstance(local, LocalRewards) and local.parallel == 2
    local_harsh = rw.from_environment(-0.5)
    assert isinstance(local_harsh, LocalRewards) and local_harsh.tamper_reward == -0.5
    monkeypatch.setenv("ASSAY_PARALLEL", "many")
    with pytest.raises(UsageError, match="ASSAY_PARALLEL"):
        rw.from_environment()


def test_module_level_functions_grade_through_assay_url(
    monkeypatch: pytest.MonkeyPatch, stub: Stub
) -> None:
    """verl's `pkg://assay.integrations.verl` compute_score and TRL's `assay_reward`, with
    nothing but the environment saying where to grade."""
    monkeypatch.setenv("ASSAY_URL", stub.url)
    monkeypatch.delenv("ASSAY_TOKEN", raising=False)
    monkeypatch.delenv("ASSAY_ON_INFRA_ERROR", raising=False)
    stub.replies.append(ok([graded("failed", 0.5, ("output:wrong",))]))
    assert verl_call(verl.compute_score, PASS)["score"] == 0.5
    assert asyncio.run(verl.compute_score_async(solution_str=PASS, ground_truth=ADD_JSON)) == {
        "score": 0.5, "passed": 0.0, "infra_error": 0.0, "no_code": 0.0, "tamper": 0.0
    }  # fmt: skip
    assert stub.seen[0]["body"]["requests"][0]["ground_truth"] == ADD_JSON
    assert trl_call(trl.assay_reward, [PASS], TrlLogs()) == [0.5]
    assert stub.seen[-1]["body"]["requests"][0]["input_output"] == ADD_JSON
    stub.replies[:] = [ok([graded("infra_error", None, error="engine down")])]
    assert trl_call(trl.assay_reward, [PASS], TrlLogs()) == [None]
    with pytest.raises(InfrastructureError, match="engine down"):
        verl_call(verl.compute_score, PASS)
    stub.replies[:] = [ok([graded(), graded("infra_error", None, error="x")])]
    with pytest.raises(InfrastructureError, match="1 of 2"):
        verl.compute_score_batch(solution_strs=[PASS, PASS], ground_truths=[ADD_JSON] * 2)
    monkeypatch.setenv("ASSAY_ON_INFRA_ERROR", "report")
    assert (
        verl.compute_score_batch(
            solution_strs=[PASS, PASS], ground_truths=[ADD_JSON] * 2, extra_infos=None
        )[1]["infra_error"]
        == 1.0
    )


# -- in this process, on a fake Grader ----------------------------------------------------------


class FakeGrader:
    def __init__(self) -> None:
        self.graded: list[tuple[str, dict[str, str], str]] = []
        self.runtimes = 0
        self.lock = threading.Lock()

    def runtime(self) -> object:
        self.runtimes += 1
        return object()

    def grade(self, task: assay.Task, submission: dict[str, str]) -> Any:
        with self.lock:
            self.graded.append((task.id, submission, threading.current_thread().name))
        code = next(iter(submission.values()))
        if "INFRA" in code:
            raise InfrastructureError("engine:gone")
        if "USAGE" in code:
            raise UsageError("no such tier")
        if "PASS" in code:
            v = verdict(("pass", "pass"))
        elif "ALLCASES" in code:  # every case passed, and the run still failed
            v = verdict(("pass", "pass"), reason_codes=("security:tamper",))
        elif "TAMPER" in code:  # every case passed: they were skipped into passing
            v = verdict(("pass", "pass"), reason_codes=SKIPPED)
        else:
            v = verdict(("pass", "fail"), reason_codes=("output:wrong",))
        return assay.Graded(v, sign_verdict(v, _SIGNER))


def test_local_rewards_on_a_fake_grader() -> None:
    g = FakeGrader()
    with LocalRewards(grader=g, parallel=3) as local:  # type: ignore[arg-type]
        got = local.grade_many(
            items("print('PASS')", None, "WRONG", "INFRA", "ALLCASES") + items("PASS", form="verl")
        )
        assert got == [
            Reward(1.0, "passed"), rw.NO_CODE, Reward(0.5, "failed", ("output:wrong",)),
            Reward(None, "infra_error", (), "engine:gone"),
            Reward(0.0, "failed", ("security:tamper",)), Reward(1.0, "passed"),
        ]  # fmt: skip
        assert len(g.graded) == 5 and g.runtimes == 1
        assert {sub["main.py"] for _, sub, _ in g.graded} == {
            "print('PASS')", "WRONG", "INFRA", "ALLCASES", "PASS"
        }  # fmt: skip
        # One task per distinct tests and form: the verl form of the same tests is another.
        assert len({tid for tid, _, _ in g.graded}) == 2
        assert any(name.startswith("assay-reward") for _, _, name in g.graded)
        # A bad row raises before anything is graded; so does a language the task lacks.
        before = len(g.graded)
        with pytest.raises(TaskError, match="item 1"):
            local.grade_many([Item(ADD_IO, "apps", "PASS"), Item({"inputs": ["1"]}, "apps", "x")])
        with pytest.raises(UsageError, match="item 0"):
            local.grade_many([Item(ADD_IO, "apps", "PASS", "cobol")])
        assert len(g.graded) == before
        with pytest.raises(UsageError, match="no such tier"):
            local.grade_many(items("PASS", "USAGE", "PASS"))
        with pytest.raises(TypeError):
            pickle.dumps(local)
    assert isinstance(pickle.loads(pickle.dumps(LocalRewards(parallel=5))), LocalRewards)
    again = pickle.loads(pickle.dumps(LocalRewards(parallel=5, tamper_reward=-1)))
    assert (again.parallel, again.tamper_reward) == (5, -1.0)
    with pytest.raises(UsageError, match="tamper_reward"):
        LocalRewards(tamper_reward="-1")  # type: ignore[arg-type]


def test_local_rewards_tamper_reward() -> None:
    """A tampering verdict (its cases all passed: reward 0.0 as a failed verdict) against an
    honest wrong one (0.5): the tamper reward goes to the tampering one only."""
    with LocalRewards(grader=FakeGrader()) as plain:  # type: ignore[arg-type]
        assert plain.grade_many(items("TAMPER", "WRONG")) == [
            Reward(0.0, "failed", SKIPPED, None, SKIPPED),
            Reward(0.5, "failed", ("output:wrong",)),
        ]
    with LocalRewards(grader=FakeGrader(), tamper_reward=-1) as harsh:  # type: ignore[arg-type]
        got = harsh.grade_many(items("TAMPER", "WRONG", "PASS"))
        assert [(r.score, r.tamper) for r in got] == [(-1.0, SKIPPED), (0.5, ()), (1.0, ())]


def test_grade_codes_checks_a_graders_answer() -> None:
    class Short:
        def grade_many(self, items: list[Item]) -> list[Reward]:
            return []

    with pytest.raises(InfrastructureError, match=r"Short\.grade_many answered 0 results for 1"):
        rw.grade_codes(Short(), items("a"))
    assert rw.grade_codes(Short(), items(None)) == [rw.NO_CODE]
