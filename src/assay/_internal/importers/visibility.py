"""Which imported tests the agent can see (issue 36: special-casing the visible tests, TAXONOMY
V20). A program that maps each input it was shown to its answer passes every test it was shown
and solves nothing; only a test it never saw can tell it from a solution.

A test is **visible** when it is in the dataset's public set (CodeContests' `public_tests`,
LiveCodeBench's `public_test_cases`: the statement's examples, published with the problem), or
when the text the agent is given shows its input: the statement (and title and starter code)
the importer puts in `inputs/`. The rule for "shows", over **tokens**:

- a text's tokens are its maximal runs of word characters (`\\w`: letters, digits, `_`) and
  each other non-space character on its own, every token lower-cased, and the straight and
  curly quotes (U+0022, U+0027, U+2018, U+2019, U+201C, U+201D) all one token; whitespace only
  separates tokens;
- a stdin test is shown when its input's tokens appear in the shown text as one run of whole,
  adjacent tokens (so `1 2` is not shown by `1, 2` nor by `12`); a test with no input token
  is shown when its expected output's tokens appear so (the agent then knows all of it);
- a call test (a function task) is shown when the shown text has, as such a run, (1) its
  argument list in parentheses, `(a, b, k=c)` (a doctest's `>>> f(5, 6, 10)`, a kata's
  `solution(10)`), every argument as Python's `repr` writes it or every one as JSON does; or
  (2) every argument after an `=` (LeetCode's `nums = [2,7,11,15], target = 9`; a keyword
  argument after its name and `=`), each as `repr` or JSON writes it; or (3) its one argument
  on its own, when that is a string or a container (a list, tuple, dict or set), not a number:
  a number alone is in most statements. A call with no argument is shown when its expected
  value is, as in (3). An argument that cannot be written out (an int past Python's
  4,300-digit limit) makes the test count as shown.

Every other test is **hidden**. Matching errs towards "visible" (a small number in a statement
shows every test whose whole input is that number): a visible test that was not really shown
costs only a row refused or counted visible-only, while a shown test counted hidden would let
a program that prints the samples through.

The shown text is read once into a suffix automaton of its tokens (at most 2n states for n
tokens); a test is then decided by walking its tokens from the start state, one step per token,
stopping at the first token the text cannot continue with. So a row costs work linear in the
shown text plus, per test, at most min(its tokens, n + 1) steps, whatever the row holds
(`Shown.steps`, `Shown.states`); a shown text of more than `MAX_SHOWN_TOKENS` tokens is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_SHOWN_TOKENS = 1 << 17
"""Tokens of the text shown to the agent that a row may have (about 400 KB of a statement;
real statements are a few thousand tokens). The automaton holds about 2 states a token."""

VISIBLE = "visible"
HIDDEN = "hidden"
NO_HIDDEN = "no hidden tests"
"""The head of the refusal of a row none of whose tests is hidden."""

TOKEN = re.compile(r"\w+|[^\w\s]")
QUOTE = '"'
QUOTES = frozenset("'\"\u2018\u2019\u201c\u201d")
_SEPARATOR = -1
"""The token id between two shown texts: no test's token has it, so no run spans two texts."""


class TooLong(Exception):
    """The shown text has more tokens than `MAX_SHOWN_TOKENS`."""


def tokens(text: str) -> Iterator[str]:
    """`text`'s tokens, lazily: a caller that stops early has paid only for what it read."""
    for m in TOKEN.finditer(text):
        tok = m.group()
        yield QUOTE if tok in QUOTES else tok.lower()


class Shown:
    """The text an agent is shown (one or more parts: a statement, a title, starter code), and
    whether a run of tokens appears in it. `states` and `steps` count the work done."""

    def __init__(self, texts: Iterable[str], max_tokens: int | None = None) -> None:
        if max_tokens is None:
            max_tokens = MAX_SHOWN_TOKENS
        self._ids: dict[str, int] = {}
        self._edges: list[dict[int, int]] = [{}]
        self._link: list[int] = [-1]
        self._depth: list[int] = [0]
        self.tokens = 0
        self.steps = 0
        last = 0
        for text in texts:
            for tok in tokens(text):
                self.tokens += 1
                if self.tokens > max_tokens:
                    raise TooLong(f"the statement has more than {max_tokens} tokens")
                last = self._extend(last, self._ids.setdefault(tok, len(self._ids)))
            last = self._extend(last, _SEPARATOR)

    @property
    def states(self) -> int:
        return len(self._depth)

    def _extend(self, last: int, tid: int) -> int:
        """The suffix automaton's online step (Blumer et al.): amortised constant work."""
        edges, link, depth = self._edges, self._link, self._depth
        cur = len(depth)
        edges.append({})
        link.append(0)
        depth.append(depth[last] + 1)
        p = last
        while p != -1 and tid not in edges[p]:
            edges[p][tid] = cur
            p = link[p]
        if p == -1:
            return cur
        q = edges[p][tid]
        if depth[p] + 1 == depth[q]:
            link[cur] = q
            return cur
        clone = len(depth)
        edges.append(dict(edges[q]))
        link.append(link[q])
        depth.append(depth[p] + 1)
        while p != -1 and edges[p].get(tid) == q:
            edges[p][tid] = clone
            p = link[p]
        link[q] = link[cur] = clone
        return cur

    def has_run(self, text: str) -> bool:
        """Whether `text`'s tokens appear in the shown text as one run of adjacent tokens (no
        token at all: they do). At most min(tokens of `text`, tokens shown + 1) steps."""
        state = 0
        for tok in tokens(text):
            self.steps += 1
            tid = self._ids.get(tok)
            after = None if tid is None else self._edges[state].get(tid)
            if after is None:
                return False
            state = after
        return True

    def stdin_shown(self, stdin: str, stdout: str) -> bool:
        if TOKEN.search(stdin) is None:
            return self.has_run(stdout)
        return self.has_run(stdin)

    def call_shown(self, args: list[Any], kwargs: dict[str, Any], expected: Any) -> bool:
        if not args and not kwargs:
            return self.alone(expected, bare=True)
        positional = [renderings(a) for a in args]
        named = {k: renderings(v) for k, v in kwargs.items()}
        if any(f is None for f in positional) or any(f is None for f in named.values()):
            return True  # cannot be written out: fail towards visible
        pos = [f for f in positional if f is not None]
        kw = {k: f for k, f in named.items() if f is not None}
        for way in range(2):  # every argument as repr, or every one as JSON
            if all(len(f) > way for f in [*pos, *kw.values()]):
                parts = [f[way] for f in pos] + [f"{k}={f[way]}" for k, f in kw.items()]
                if self.has_run("(" + ", ".join(parts) + ")"):
                    return True
        if all(any(self.has_run("= " + r) for r in f) for f in pos) and all(
            any(self.has_run(f"{k} = {r}") for r in f) for k, f in kw.items()
        ):
            return True
        given = [*args, *kwargs.values()]
        return len(given) == 1 and self.alone(given[0], bare=False)

    def alone(self, value: Any, bare: bool) -> bool:
        """`value` on its own: any value when `bare`, else only a string or a container."""
        if not bare and not isinstance(value, (str, list, tuple, dict, set, frozenset)):
            return False
        forms = renderings(value)
        return forms is None or any(self.has_run(form) for form in forms)


def renderings(value: Any) -> list[str] | None:
    """How a statement may write `value`: Python's repr, then JSON when it has a JSON form.
    None: it cannot be written out."""
    try:
        forms = [repr(value)]
    except (ValueError, RecursionError):  # an int past the digit limit
        return None
    try:
        forms.append(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        pass  # a set, bytes, a tuple key: no JSON form
    return forms


@dataclass
class Visibility:
    """What the report says of one task's tests: per dataset set (`public`, `private`,
    `generated`; `input_output` for APPS rows; `check` for HumanEval), how many are visible and
    how many hidden; how many of a non-public set are visible because the statement shows
    them; and whether the task was imported although none is hidden."""

    sets: dict[str, dict[str, int]] = field(default_factory=dict)
    in_statement: int = 0
    visible_only: bool = False

    def declare(self, *names: str) -> None:
        for name in names:
            self.sets.setdefault(name, {VISIBLE: 0, HIDDEN: 0})

    def label(self, dataset_set: str, public: bool, shown: bool) -> str:
        """The test's label (`visible` or `hidden`), counted under its set."""
        self.declare(dataset_set)
        visible = public or shown
        if shown and not public:
            self.in_statement += 1
        which = VISIBLE if visible else HIDDEN
        self.sets[dataset_set][which] += 1
        return which

    @property
    def visible(self) -> int:
        return sum(s[VISIBLE] for s in self.sets.values())

    @property
    def hidden(self) -> int:
        return sum(s[HIDDEN] for s in self.sets.values())

    def as_json(self) -> dict[str, Any]:
        return {"visible": self.visible, "hidden": self.hidden, "sets": self.sets,
                "in_statement": self.in_statement, "visible_only": self.visible_only}  # fmt: skip

    def no_hidden_reason(self) -> str | None:
        """The refusal of a task with no hidden test, or None when it has one."""
        if self.hidden:
            return None
        public = any(name == "public" and s[VISIBLE] for name, s in self.sets.items())
        how = "public or shown in the statement" if public else "shown in the statement"
        return (f"{NO_HIDDEN}: every test ({self.visible}) is {how}, so a program that prints "
                "their answers would pass")  # fmt: skip


def case_id(label: str, name: str) -> str:
    """An imported test's id: its label, a colon, and its name in the dataset (`public-1`,
    `3`, `L12.0`). A verdict carries case ids, so it says which results are hidden tests'."""
    return f"{label}:{name}"


VISIBLE_ONLY_NOTE = (
    "visible-only: no test is hidden (every one is public or shown in the statement), so the "
    "task cannot tell a solution from a program that prints their answers; imported because "
    "it was asked for"
)
VISIBLE_ONLY_DESCRIPTION = (
    " Visible-only: every test is public or shown in the statement, so a program that prints "
    "their answers passes."
)
