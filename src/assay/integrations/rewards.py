"""Rewards for RL trainers: the code in a model's completion graded by assay, one number per
completion, and a status that tells a wrong answer from a grading that never happened.

`assay.integrations.verl` (verl's `custom_reward_function`) and `assay.integrations.trl` (a TRL
`GRPOTrainer` reward function) are built on this module; any other loop can use it directly:

    from assay.integrations.rewards import Item, extract_code, from_environment

    rewards = from_environment()  # ServerRewards if $ASSAY_URL is set, else LocalRewards
    [r] = rewards.grade_many([Item(row["input_output"], "apps", extract_code(text))])
    r.score, r.status  # 0.75 "failed"; None "infra_error"; 0.0 "no_code"
    r.tamper  # ("junit:skipped",) when the verdict caught it tampering; () otherwise

The tests of a row are APPS/TACO `input_output` (form "apps") or verl's `ground_truth` (form
"verl"): `{"inputs": [...], "outputs": [...], "fn_name"?: ...}` or that object as JSON text.
Two graders answer the same `grade_many`: `LocalRewards` grades in this process (an engine on
this host), `ServerRewards` asks an `assay serve` server (`POST <url>/v1/grade/batch`).

What a result means (`Reward.status`): "passed"/"failed" carry the verdict's reward
(`assay.wire.reward_of`: the fraction of the tests passed, except that a failed verdict never
scores 1.0: one whose every test passed but which failed on a reason such as `limit:` or
`security:` scores 0.0); "no_code" scores 0.0
(the completion has no code block, as verl scores it); "infra_error" has no score (None): no
verdict exists, and a trainer must not read it as a wrong answer. A row whose tests cannot make
a task, or a language the task does not take, is a bug in the data set: `grade_many` raises
(`assay.errors.TaskError` / `UsageError`) instead of scoring it.

Tampering (`Reward.tamper`): the verdict's tamper signals, the reason codes of the tamper family
(`assay.reason_family`; docs/verdicts.md), e.g. a test skipped by the submission, a forged
report, a link in its archive. Such a verdict always failed, so by default it scores as any
failed verdict does, the fraction of its tests that passed, which can be more than a plain
wrong answer gets. `tamper_reward` (on `LocalRewards`, `ServerRewards`, `from_environment`,
and verl's and TRL's functions) is the score of every graded item with a tamper signal
instead, e.g. -1.0 below a wrong answer's 0.0; None (the default) keeps the verdict's reward.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable
from urllib.parse import urlsplit

import requests
import urllib3.exceptions
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import assay
from assay import wire
from assay.errors import AnswerError, AssayError, InfrastructureError, TaskError, UsageError

__all__ = [
    "Form",
    "Item",
    "LocalRewards",
    "Reward",
    "Rewards",
    "ServerRewards",
    "Status",
    "Style",
    "check_tamper_reward",
    "completion_text",
    "extract_code",
    "fence_tag",
    "from_environment",
    "grade_codes",
]

log = logging.getLogger("assay.integrations.rewards")

Form = Literal["apps", "verl"]
Status = Literal["passed", "failed", "infra_error", "no_code"]
Style = Literal["verl", "open-r1", "first"]
Tests = Mapping[str, Any] | str


# -- code in a completion ----------------------------------------------------------------------


def extract_code(text: str, language: str = "python", style: Style = "verl") -> str | None:
    """The code in a completion, found as the trainer's own code rewards find it; None when
    there is none (score it 0.0: `Reward` status "no_code"). `language` is the fence tag
    looked for ("python", "cpp"...; `fence_tag` makes one from a language name).

    - "verl" (verl's sandbox_fusion reward, `verl/utils/reward_score/sandbox_fusion/__init__.py`):
      if "```python" occurs, the text after the *last* "```python" up to the next "```"
      (unterminated: to the end); else if any "```" occurs, the *first* fenced block, with its
      first line dropped when that line is a bare alphabetic tag ("py", "cpp"; not "c++");
      else None (verl scores such a completion 0.0 without running anything). Nothing is
      stripped, and "```python3" matches the first rule, leaving a stray "3" line on top.
    - "open-r1" (open-r1's `extract_code`): the *last* match of "```python\\n(.*?)```"; an
      empty result is None. "```py" or "```python3" do not match. (open-r1 puts the tag into
      the regex unescaped; it is escaped here, the same for every alphanumeric tag.)
    - "first" (TRL's only code example, `examples/scripts/ssd_eval.py`): the *first* match of
      "```(?:python)?\\s*\\n(.*?)```", stripped; None when nothing matches (the example then
      runs the bare completion, which is not done here).

    For a tag other than "python", each rule uses that tag where it says "python".
    """
    if style == "verl":
        fence = f"```{language}"
        if fence in text:
            return text.split(fence)[-1].split("```")[0]
        if "```" not in text:
            return None
        solution = text.split("```")[1]
        if "\n" in solution:
            first_line, rest = solution.split("\n", 1)
            if first_line.strip().isalpha():
                solution = rest
        return solution
    if style == "open-r1":
        matches = re.findall(rf"```{re.escape(language)}\n(.*?)```", text, re.DOTALL)
        return matches[-1] if matches and matches[-1] else None
    if style == "first":
        found = re.search(rf"```(?:{re.escape(language)})?\s*\n(.*?)```", text, re.DOTALL)
        return found.group(1).strip() if found else None
    raise UsageError(f"unknown code extraction style {style!r}: verl, open-r1 or first")


_FENCE_TAGS = {
    None: "python", "python": "python", "python3": "python", "py": "python",
    "c++": "cpp", "nodejs": "javascript", "js": "javascript", "golang": "go",
}  # fmt: skip


def fence_tag(language: str | None) -> str:
    """The Markdown fence tag a model writes for a language name a data set gives (None,
    "python3", "py" -> "python"; "c++" -> "cpp"; other names as they are)."""
    return _FENCE_TAGS.get(language, language or "python")


def completion_text(completion: Any) -> str:
    """A completion's text: a str as it is, or a conversational completion (a list of
    `{"role", "content"}` messages, TRL's form for a conversational data set) as its *last*
    message's content. (TRL's own rewards read the first message, open-r1's the last: the same
    for the one-message completions TRL makes without tools; with tool calls the last message
    is the final answer.) A content of None (a tool call) is "", a list of parts is their
    "text" joined. Raises TypeError for anything else."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if isinstance(completion, Sequence) and not isinstance(completion, (bytes, bytearray)):
        if not completion:
            return ""
        message = completion[-1]
        if isinstance(message, Mapping):
            content = message.get("content")
            if content is None:
                return ""
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):
                return "".join(
                    p["text"]
                    for p in content
                    if isinstance(p, Mapping) and isinstance(p.get("text"), str)
                )
    raise TypeError(
        "a completion is a str or a list of {'role', 'content'} messages, not "
        + type(completion).__name__
    )


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reward:
    """One completion's result. `score` is None exactly when `status` is "infra_error"
    (no verdict; `error` says why); `reason_codes` are the verdict's (empty otherwise);
    `tamper` its tamper signals (a subset of them; empty for an honest verdict, and
    without a verdict: an infrastructure error is no evidence of anything)."""

    score: float | None
    status: Status
    reason_codes: tuple[str, ...] = ()
    error: str | None = None
    tamper: tuple[str, ...] = ()

    def scored(self, tamper_reward: float | None) -> Reward:
        """This reward with `tamper_reward` as its score when it has a tamper signal;
        unchanged when it has none or `tamper_reward` is None."""
        if tamper_reward is None or not self.tamper:
            return self
        return replace(self, score=tamper_reward)


NO_CODE = Reward(0.0, "no_code")


def check_tamper_reward(value: object, name: str = "tamper_reward") -> float | None:
    """`value` as a tamper reward: None, or a finite number (as a float). Raises `UsageError`
    for anything else (a bool, a string, NaN): a trainer's typo must not become a reward."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"{name} is a finite number or None, not {_printable(repr(value), 80)}")
    return float(value)


def infra(error: str) -> Reward:
    return Reward(None, "infra_error", (), error)


def answer_reward(answer: wire.Answer, tamper_reward: float | None = None) -> Reward:
    """The `Reward` of a native answer (`assay.wire`), the same for a grading in this process
    and one through the server: a verdict's `reward` (never 1.0 for a failed one; the
    `tamper_reward` instead when given and the verdict has a tamper signal), "infra_error"
    with no score, and `UsageError` for "invalid" (a request that cannot be graded as asked is
    a bug in the data set: retrying cannot help, and masking it would train on nothing)."""
    if answer.status == "invalid":
        raise UsageError(f"the assay server refused it: {_printable(answer.error or '')}")
    if answer.status == "infra_error":
        return infra(f"assay server: {_printable(answer.error or 'no reason given')}")
    assert answer.reward is not None
    reward = Reward(answer.reward, answer.status, answer.reason_codes, None, answer.tamper)
    return reward.scored(tamper_reward)


class Item(NamedTuple):
    """One completion to grade: its row's `tests` in `form`, the `code` extracted from it
    (None: it had none, scored "no_code" without grading) and its `language` (None: python3,
    or the task's function module)."""

    tests: Tests
    form: Form
    code: str | None
    language: str | None = None


@runtime_checkable
class Rewards(Protocol):
    """What grades completions: `LocalRewards`, `ServerRewards`, or your own."""

    def grade_many(self, items: Sequence[Item]) -> list[Reward]:
        """One `Reward` per item, in order."""
        ...


def grade_codes(rewards: Rewards, items: Sequence[Item]) -> list[Reward]:
    """`rewards.grade_many` on the items that have code, "no_code" for the others, one
    `Reward` per item in order (a grader answering another count raises InfrastructureError).
    Logs a warning naming the first error when any item got no verdict."""
    if isinstance(rewards, (LocalRewards, ServerRewards)):
        return rewards.grade_many(items)
    return _no_code_apart(type(rewards).__name__, lambda i, _: rewards.grade_many(i), items)


Grade = Callable[[list[Item], list[int]], list[Reward]]
"""Grades items that all have code; the second list is their positions, for messages."""


def _no_code_apart(name: str, grade: Grade, items: Sequence[Item]) -> list[Reward]:
    items = [Item(*item) for item in items]
    todo = [n for n, item in enumerate(items) if item.code is not None]
    out: list[Reward] = [NO_CODE] * len(items)
    if todo:
        graded = grade([items[n] for n in todo], todo)
        if len(graded) != len(todo) or not all(isinstance(r, Reward) for r in graded):
            raise InfrastructureError(
                f"{name}.grade_many answered {len(graded)} results for {len(todo)} items"
            )
        for n, reward in zip(todo, graded, strict=True):
            out[n] = reward
    if bad := [r for r in out if r.status == "infra_error"]:
        log.warning("%d of %d gradings got no verdict: %s", len(bad), len(out), bad[0].error)
    return out


def _plain(value: Any) -> Any:
    """`value` as plain JSON data: numpy arrays and scalars (a parquet row's lists) by their
    `tolist()`, tuples as lists."""
    if isinstance(value, (str, bytes, bool, int, float)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return _plain(tolist())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _tests(tests: Any) -> Tests:
    if isinstance(tests, str):
        return tests
    if isinstance(tests, Mapping):
        return dict(_plain(tests))
    raise TaskError("tests", f"are a mapping or JSON text, not {type(tests).__name__}")


def _printable(text: str, limit: int = 500) -> str:
    return "".join(c if c.isprintable() else "?" for c in text[:limit])


# -- in this process ---------------------------------------------------------------------------


class LocalRewards:
    """Grades in this process: each row's tests become a task once (`assay.InlineTasks`), the
    completions of a batch are graded `parallel` at a time by one `assay.Grader` (default: a
    grader made on first use with `reuse_judges=True`, the per-user signing key and the
    default backend). Thread-safe; `close()` removes the tasks, the judges and the threads.

    A bad row raises before anything is graded (`assay.errors.TaskError` for tests that make
    no task, `UsageError` for a language the task does not take): that is a data set's bug,
    not a wrong answer. An `InfrastructureError` of one grading is that item's "infra_error".
    `tamper_reward`: the score of an item whose verdict has a tamper signal (see the module);
    None keeps the verdict's reward. Raises `UsageError` for a bad `parallel` or
    `tamper_reward`.
    """

    def __init__(
        self,
        grader: assay.Grader | None = None,
        parallel: int = 2,
        *,
        tamper_reward: float | None = None,
    ) -> None:
        if parallel < 1:
            raise UsageError(f"parallel must be at least 1, not {parallel}")
        self.parallel = parallel
        self.tamper_reward = check_tamper_reward(tamper_reward)
        self._own = grader is None
        self._grader = grader
        self._inline: assay.InlineTasks | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._warm = threading.Lock()
        self._warmed = False

    def __reduce__(self) -> tuple[Any, ...]:
        # A trainer may ship its reward function to another process: a LocalRewards that made
        # its own grader is made anew there; one holding your grader cannot be.
        if not self._own:
            raise TypeError("a LocalRewards holding a Grader of yours cannot be pickled")
        return (_local_rewards, (self.parallel, self.tamper_reward))

    def grade_many(self, items: Sequence[Item]) -> list[Reward]:
        """One `Reward` per item, in order (see the class)."""
        return _no_code_apart("LocalRewards", self._grade, items)

    def _grade(self, items: list[Item], where: list[int]) -> list[Reward]:
        inline, pool = self._resources()
        # Each task is leased until its grading ends: the cache never removes one in use, and
        # the tasks made for a batch that a bad row refuses go with the refusal.
        with contextlib.ExitStack() as leases:
            jobs: list[tuple[assay.Task, dict[str, str]]] = []
            for n, item in zip(where, items, strict=True):
                try:
                    task = leases.enter_context(inline.lease(_tests(item.tests), item.form))
                    assert item.code is not None
                    jobs.append((task, assay.code_submission(task, item.code, item.language)))
                except TaskError as exc:
                    raise TaskError(f"item {n}", str(exc)) from exc
                except UsageError as exc:
                    raise UsageError(f"item {n}: {exc}") from exc
            return self._run(jobs, pool)

    def _run(
        self, jobs: list[tuple[assay.Task, dict[str, str]]], pool: ThreadPoolExecutor
    ) -> list[Reward]:
        out: list[Reward | None] = [None] * len(jobs)
        start = 0
        try:
            grader = self._grader_made()
            with self._warm:
                # The first grading runs alone: the grader opens its runtime and judge pool.
                if not self._warmed:
                    grader.runtime()
                    first = out[0] = self._one(grader, *jobs[0])
                    self._warmed = first.status != "infra_error"
                    start = 1
        except InfrastructureError as exc:  # no engine: nothing can be graded
            return [infra(exc.diagnostics())] * len(jobs)
        futures = [(n, pool.submit(self._one, grader, *jobs[n])) for n in range(start, len(jobs))]
        failure: BaseException | None = None
        for n, fut in futures:
            try:
                out[n] = fut.result()
            except BaseException as exc:  # a UsageError of a grading, or a bug: after the rest
                failure = failure or exc
        if failure is not None:
            raise failure
        return [r for r in out if r is not None]

    def _one(self, grader: assay.Grader, task: assay.Task, submission: dict[str, str]) -> Reward:
        try:
            graded = grader.grade(task, submission)
        except UsageError:
            raise
        except AssayError as exc:  # InfrastructureError, or another end with no verdict
            return infra(exc.diagnostics())
        # The answer the server would send for this verdict, read as a server's is.
        answer = wire.Answer.of_verdict(graded.verdict, graded.envelope)
        return answer_reward(answer, self.tamper_reward)

    def _grader_made(self) -> assay.Grader:
        with self._lock:
            if self._grader is None:
                rt = assay.runtime.open_runtime(parallel=self.parallel)
                self._grader = assay.Grader(runtime=rt, reuse_judges=True)
            return self._grader

    def _resources(self) -> tuple[assay.InlineTasks, ThreadPoolExecutor]:
        with self._lock:
            if self._inline is None:
                self._inline = assay.InlineTasks()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="assay-reward")
            return self._inline, self._pool

    def close(self) -> None:
        """Remove the tasks written, stop the threads, and close the grader if this object
        made it; the next `grade_many` starts afresh."""
        with self._lock:
            pool, inline = self._pool, self._inline
            grader = self._grader if self._own else None
            self._pool = self._inline = None
            if self._own:
                self._grader = None
            self._warmed = False
        if pool is not None:
            pool.shutdown(wait=True)
        if grader is not None:
            grader.close()
        if inline is not None:
            inline.close()

    def __enter__(self) -> LocalRewards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _local_rewards(parallel: int, tamper_reward: float | None) -> LocalRewards:
    return LocalRewards(None, parallel, tamper_reward=tamper_reward)


# -- through an `assay serve` server -----------------------------------------------------------

MAX_RESPONSE_BYTES = wire.MAX_ANSWER_BYTES
_BUSY = (429, 503)


class _Session(requests.Session):
    """A session that never follows a redirect, nor reads a redirect's body unbounded (as
    requests does to release the connection, also with `allow_redirects=False`)."""

    def get_redirect_target(self, resp: requests.Response) -> str | None:
        return None


class _Bad(Exception):
    """The server's answer cannot be trusted: every item it was for is an infra_error."""


class ServerRewards:
    """Grades through an `assay serve` server: `POST <url>/v1/grade/batch`, `batch_size`
    items a request, up to `connections` requests at a time.

    `url`: the server's base, e.g. "http://127.0.0.1:8000", or with the token as its first
    path segment, "http://127.0.0.1:8000/<token>"; `token` (if given) goes in an
    `Authorization: Bearer` header instead. `timeout`: seconds for one request, the batch's
    gradings included. `public_key`: a signing.pub; when given, every verdict's envelope must
    verify with it and agree with the status and score the server reports (this proves the
    verdict was signed by that key, not which request it answers).

    Every byte of the answer is checked: a body over `max_response_bytes`, anything but the
    answer `assay.wire` defines (read by its strict reader: the fields and their types, a
    score in [0, 1], the reward its rule gives for the status and score, a verdict that agrees
    with them), a wrong count of results, makes those items "infra_error", never a score. A
    failed verdict whose every test passed is read as the server sends it, reward 0.0. So do a
    refused connection, a timeout, a 5xx, and a 429/503 still refused after `retry_attempts`
    tries or `retry_budget` seconds (each retry waits what Retry-After says). A 3xx/4xx other
    than 429 (a wrong URL or token, a body over the server's cap), and an item the server calls
    "invalid" (tests that make no task, a language the task does not take) raise
    `assay.errors.UsageError`: retrying cannot help, and masking them would train on nothing.

    An answer's `tamper` is read as strictly (`assay.wire`: codes among the failing reasons,
    the verdict's own; an answer that breaks that is that item's "infra_error", never an
    honest score); an older server's answer without it has the verdict's, or none. With
    `public_key`, the signed verdict's tamper signals must be the answer's too.
    `tamper_reward`: the score of an item whose verdict has a tamper signal (see the module);
    None keeps the verdict's reward. Bad settings raise `UsageError`.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 900.0,
        connect_timeout: float = 10.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        retry_attempts: int = 5,
        retry_budget: float = 120.0,
        batch_size: int = 64,
        connections: int = 4,
        public_key: str | os.PathLike[str] | None = None,
        tamper_reward: float | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"the assay server's URL must be http(s)://HOST[:PORT][/TOKEN], not {url!r}"
            )
        if parts.query or parts.fragment:
            raise UsageError("the assay server's URL takes no query or fragment")
        if token is not None and (not token or any(c in token for c in "\r\n\0 ")):
            raise UsageError("the assay server's token is empty or holds whitespace")
        if batch_size < 1 or connections < 1 or retry_attempts < 1:
            raise UsageError("batch_size, connections and retry_attempts must be at least 1")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_response_bytes = max_response_bytes
        self.retry_attempts = retry_attempts
        self.retry_budget = retry_budget
        self.batch_size = batch_size
        self.connections = connections
        self.tamper_reward = check_tamper_reward(tamper_reward)
        self.public_key_path = None if public_key is None else os.fspath(public_key)
        self._key: Ed25519PublicKey | None = (
            None if public_key is None else assay.load_public_key(public_key)
        )
        self._secrets = [s for s in parts.path.split("/") if len(s) >= 8]
        if token:
            self._secrets.append(token)
        self._local = threading.local()

    def __repr__(self) -> str:
        shown = urlsplit(self.url)
        return f"ServerRewards({shown.scheme}://{shown.netloc}/...)"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_local"], state["_key"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        self._key = (
            None if self.public_key_path is None else assay.load_public_key(self.public_key_path)
        )

    def grade_many(self, items: Sequence[Item]) -> list[Reward]:
        """One `Reward` per item, in order (see the class)."""
        return _no_code_apart("ServerRewards", self._grade, items)

    def _grade(self, items: list[Item], where: list[int]) -> list[Reward]:
        step = self.batch_size
        chunks = [(items[i : i + step], where[i : i + step]) for i in range(0, len(items), step)]
        if len(chunks) == 1:
            results = [self._chunk(*chunks[0])]
        else:
            with ThreadPoolExecutor(min(self.connections, len(chunks))) as pool:
                results = list(pool.map(lambda c: self._chunk(*c), chunks))
        return [r for chunk in results for r in chunk]

    # one request

    def _chunk(self, items: list[Item], where: list[int]) -> list[Reward]:
        body = {"requests": [_request(item, n) for n, item in zip(where, items, strict=True)]}
        try:
            return self._results(self._post(body), where)
        except _Bad as exc:
            return [infra(self._redact(f"assay server: {exc}"))] * len(items)

    def _post(self, body: dict[str, Any]) -> bytes:
        data = json.dumps(body, allow_nan=False).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Accept-Encoding": "identity"}  # fmt: skip
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        deadline = time.monotonic() + self.retry_budget
        for attempt in range(1, self.retry_attempts + 1):
            status, told, raw = self._send(data, headers)
            if status == 200:
                return raw
            if status in _BUSY:
                wait = _retry_wait(told.get("Retry-After"), attempt)
                if attempt == self.retry_attempts or time.monotonic() + wait > deadline:
                    raise _Bad(f"HTTP {status} (busy) after {attempt} attempt(s)")
                log.info("assay server busy (HTTP %d): retrying in %.1f s", status, wait)
                time.sleep(wait)
                continue
            detail = _error_text(raw)
            if 300 <= status < 400:
                detail += f" (to {_printable(told.get('Location') or '?', 200)})"
            if 300 <= status < 500:
                raise UsageError(
                    self._redact(f"the assay server refused the request: HTTP {status}{detail}")
                )
            raise _Bad(f"HTTP {status}{detail}")
        raise AssertionError("unreachable")

    def _send(self, data: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = _Session()
        end = time.monotonic() + self.timeout
        try:
            with session.post(
                f"{self.url}/v1/grade/batch", data=data, headers=headers, stream=True,
                timeout=(self.connect_timeout, self.timeout), allow_redirects=False,
            ) as resp:  # fmt: skip
                ok = resp.status_code == 200
                cap = self.max_response_bytes if ok else 1 << 16
                declared = resp.headers.get("Content-Length", "")
                if ok and declared.isascii() and declared.isdigit() and int(declared) > cap:
                    raise _Bad(f"the answer is {declared} bytes, over the cap of {cap}")
                # read1: whatever one read brings (a dripping server cannot hold a read open
                # for a whole chunk); decoded, so a compressed body is capped as it expands.
                read = getattr(resp.raw, "read1", resp.raw.read)
                chunks: list[bytes] = []
                size = 0
                while chunk := read(1 << 16, decode_content=True):
                    size += len(chunk)
                    if size > cap:
                        if not ok:
                            break
                        raise _Bad(f"the answer is over the cap of {cap} bytes")
                    if time.monotonic() > end:
                        raise _Bad(f"no whole answer within {self.timeout} s")
                    chunks.append(chunk)
                told = {
                    k: resp.headers[k] for k in ("Retry-After", "Location") if k in resp.headers
                }
                return resp.status_code, told, b"".join(chunks)
        except (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException,
                OSError) as exc:  # fmt: skip
            raise _Bad(f"{type(exc).__name__}: {exc}") from None

    def _results(self, raw: bytes, where: list[int]) -> list[Reward]:
        try:
            answers = wire.read_results(raw, len(where), max_bytes=self.max_response_bytes)
        except AnswerError as exc:
            raise _Bad(str(exc)) from None
        out = []
        for n, answer in zip(where, answers, strict=True):
            try:
                if isinstance(answer, AnswerError):
                    raise _Bad(str(answer))
                if self._key is not None and answer.has_verdict:
                    self._check_signed(answer)
                reward = answer_reward(answer, self.tamper_reward)
            except _Bad as exc:
                reward = infra(f"assay server: item {n}: {exc}")
            except UsageError as exc:
                raise UsageError(self._redact(f"item {n}: {exc}")) from None
            out.append(reward if reward.error is None else infra(self._redact(reward.error)))
        return out

    def _check_signed(self, answer: wire.Answer) -> None:
        if answer.envelope is None:
            raise _Bad("no envelope to verify")
        try:
            assert self._key is not None
            v = assay.verify(answer.envelope.encode(), self._key)
        except AssayError as exc:
            raise _Bad(f"the envelope does not verify: {exc}") from None
        if (
            v.passed != (answer.status == "passed")
            or not math.isclose(v.score, answer.score or 0.0, abs_tol=1e-9)
            or tuple(v.reason_codes) != answer.reason_codes
            or tuple(v.tamper) != answer.tamper
            or v.grading_id != answer.grading_id
        ):
            raise _Bad("the signed verdict differs from the reported result")

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "<redacted>")
        return text


def _request(item: Item, n: int) -> dict[str, Any]:
    try:
        tests = _tests(item.tests)
    except TaskError as exc:
        raise TaskError(f"item {n}", str(exc)) from exc
    req: dict[str, Any] = {
        "input_output" if item.form == "apps" else "ground_truth": tests,
        "code": item.code,
    }
    if item.language is not None:
        req["language"] = item.language
    return req


def _retry_wait(header: str | None, attempt: int) -> float:
    """Seconds to wait before the next try: Retry-After (seconds, or an HTTP date), else
    1, 2, 4... s; never negative. A huge value is returned as it is (the caller gives up)."""
    backoff = float(min(2 ** (attempt - 1), 30))
    if header is None:
        return backoff
    header = header.strip()
    if header.isascii() and header.isdigit():
        return float(int(header[:12]))
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return backoff
    if when.tzinfo is None:
        return backoff
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _error_text(raw: bytes) -> str:
    try:
        found = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return ""
    if isinstance(found, dict) and isinstance(found.get("error"), str):
        return f": {_printable(found['error'], 300)}"
    return ""


# -- from the environment ----------------------------------------------------------------------

_cache: dict[tuple[Any, ...], Rewards] = {}
_cache_lock = threading.Lock()


def from_environment(tamper_reward: float | None = None) -> Rewards:
    """The process's grader of rewards for `tamper_reward` (see the module), made on first
    use: `ServerRewards($ASSAY_URL, $ASSAY_TOKEN)` when ASSAY_URL is set (ASSAY_PUBLIC_KEY: a
    signing.pub every verdict must verify with), else `LocalRewards(parallel=$ASSAY_PARALLEL
    or 2)`. Thread-safe; a forked process, changed variables or another `tamper_reward` get a
    new one. Raises `UsageError` for a bad variable or `tamper_reward`."""
    env = os.environ
    key = (os.getpid(), env.get("ASSAY_URL"), env.get("ASSAY_TOKEN"),
           env.get("ASSAY_PUBLIC_KEY"), env.get("ASSAY_PARALLEL"),
           check_tamper_reward(tamper_reward))  # fmt: skip
    with _cache_lock:
        found = _cache.get(key)
        if found is None:
            found = _cache[key] = _make(*key[1:])
        return found


def _make(
    url: str | None,
    token: str | None,
    public_key: str | None,
    parallel: str | None,
    tamper_reward: float | None,
) -> Rewards:
    if url:
        return ServerRewards(
            url, token or None, public_key=public_key or None, tamper_reward=tamper_reward
        )
    if parallel and not (parallel.isascii() and parallel.isdigit()):
        raise UsageError(f"ASSAY_PARALLEL must be a whole number, not {parallel!r}")
    return LocalRewards(parallel=int(parallel) if parallel else 2, tamper_reward=tamper_reward)
