"""Tasks made from a dataset row's tests (APPS/TACO `input_output`, verl's `ground_truth`), the
form an RL trainer holds its problems in, and the submission a code string makes for a task.

A row becomes a task exactly as `assay import apps` makes one (the same converter, the same
refusals), written once per distinct content under one temporary directory of this process:
the many completions of one problem in a GRPO group grade against one task, and only the
judge ever reads the expected outputs. The cache is bounded by count and by bytes on disk,
and a task made for a request that was refused goes with the refusal.

Which tests the model saw: a row's tests hold no public/private split, and the prompt the model
was given usually shows some of them (the examples). With the `statement` (the problem text of
that prompt) a test whose input it shows is `visible:<n>`, the others `hidden:<n>`, and a row
with no hidden test is refused as the importers refuse it (a program that prints the examples'
answers would earn the full reward), unless `allow_visible_only`. Without it assay cannot know
what the model saw: the ids stay `<n>` and nothing is refused, as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import TaskError, UsageError

from ..importers import apps
from ..importers.stdio_task import (
    MAX_NESTED_JSON_BYTES,
    MAX_STATEMENT_BYTES,
    Refused,
    require_hidden,
    write_task,
)
from ..model.languages import LANGUAGES
from ..model.task import Task, load_task
from ..runtime.scope import TEMP_PREFIX

FORMS = ("apps", "verl")
ALIASES = {"python": "python3", "py": "python3", "c++": "cpp", "nodejs": "javascript",
           "js": "javascript", "golang": "go"}  # fmt: skip


MAX_TASKS = 4096
MAX_BYTES = 1 << 30


@dataclass(eq=False)
class _Entry:
    """One row's task in the cache. `users` counts the leases open on it; `kept` says whether
    anyone used it to the end (a lease left without an error, or `task()`), so that a task
    made only for requests that were refused goes with them."""

    ready: threading.Event = field(default_factory=threading.Event)
    task: Task | None = None
    error: BaseException | None = None
    size: int = 0
    users: int = 0
    kept: bool = False


class InlineTasks:
    """A cache of tasks made from rows, in a temporary directory removed by `close()` (or when
    the object is collected, or at interpreter exit). Thread-safe.

    Bounded twice: at most `max_tasks` tasks and `max_bytes` bytes on disk (each task's files
    counted as the disk holds them), the least recently used going first. A task that a
    `lease` holds is never removed, so while gradings hold tasks the directory may exceed
    `max_bytes` by theirs. A task whose files alone exceed `max_bytes` is refused
    (`TaskError`). Building a task happens outside the cache's lock: a slow row delays only
    the requests for that same row."""

    def __init__(self, max_tasks: int = MAX_TASKS, max_bytes: int = MAX_BYTES) -> None:
        if max_tasks < 1 or max_bytes < 1:
            raise UsageError("an inline task cache holds at least one task and one byte")
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self._root = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}inline-"))
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._closer = weakref.finalize(self, shutil.rmtree, self._root, True)

    @property
    def bytes(self) -> int:
        """Bytes on disk of the tasks the cache holds now."""
        with self._lock:
            return self._bytes

    def task(
        self,
        tests: Mapping[str, Any] | str,
        form: str = "apps",
        *,
        statement: str | None = None,
        allow_visible_only: bool = False,
    ) -> Task:
        """The task whose tests are `tests`: `{"inputs": [...], "outputs": [...], "fn_name"?}`
        or that object as JSON text. `form`: "apps" (APPS/TACO `input_output`) or "verl"
        (verl's `ground_truth`, where a call-based test's input is newline-separated JSON).
        `statement`: the problem text the model was shown; the tests whose input it shows are
        visible (`visible:<n>`), the rest hidden (`hidden:<n>`), and a row with no hidden test
        is refused (`TaskError`, "no hidden tests: ...") unless `allow_visible_only`. Without
        it the ids are `<n>` and nothing is refused: assay cannot know what the model saw.
        Raises `assay.errors.TaskError` naming the field when the row cannot become a task,
        `assay.errors.UsageError` for another form. The cache may remove the task's files
        once later rows need the room: grade with `lease` to hold them."""
        with self.lease(
            tests, form, statement=statement, allow_visible_only=allow_visible_only
        ) as task:
            return task

    @contextmanager
    def lease(
        self,
        tests: Mapping[str, Any] | str,
        form: str = "apps",
        *,
        statement: str | None = None,
        allow_visible_only: bool = False,
    ) -> Iterator[Task]:
        """`task(tests, form, ...)`, held until the block ends: the cache removes no task a
        lease holds. When the block raises (the request was refused, or its grading had no
        verdict) and no one else ever used the task, the task is removed as the block ends,
        so a refused request leaves no files behind."""
        if form not in FORMS:
            raise UsageError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
        raw = tests if isinstance(tests, str) else _json(tests)
        if len(raw) > MAX_NESTED_JSON_BYTES:
            raise TaskError("inline tests", f"{len(raw)} bytes, over {MAX_NESTED_JSON_BYTES}")
        if statement is not None and not isinstance(statement, str):
            raise UsageError("statement is the problem's text (a str) or None")
        if statement is not None and len(statement) > MAX_STATEMENT_BYTES:  # chars <= bytes
            raise TaskError("inline statement", f"longer than {MAX_STATEMENT_BYTES} bytes")
        # The same tests with another statement (or opt-in) can be another task, or a refusal.
        shown = "\0" if statement is None else f"\1{statement}"
        seed = f"{form}\0{int(bool(allow_visible_only))}{shown}\0{raw}"
        key = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        entry = self._acquire(raw, form, key, statement, bool(allow_visible_only))
        ok = False
        try:
            assert entry.task is not None
            yield entry.task
            ok = True
        finally:
            self._release(key, entry, ok)

    def _acquire(
        self, raw: str, form: str, key: str, statement: str | None, allow_visible_only: bool
    ) -> _Entry:
        with self._lock:
            if not self._closer.alive:
                raise UsageError("this InlineTasks was closed")
            entry = self._entries.get(key)
            building = entry is None
            if entry is None:
                entry = self._entries[key] = _Entry()
            else:
                self._entries.move_to_end(key)
            entry.users += 1
        if not building:
            entry.ready.wait()
            if entry.error is not None:
                with self._lock:
                    entry.users -= 1
                raise entry.error
            return entry
        try:
            task, size = self._make(raw, form, key, statement, allow_visible_only)
        except BaseException as exc:
            with self._lock:
                entry.error, entry.users = exc, entry.users - 1
                if self._entries.get(key) is entry:
                    del self._entries[key]
            entry.ready.set()
            raise
        with self._lock:
            entry.task, entry.size = task, size
            if self._entries.get(key) is entry:
                self._bytes += size
                doomed = self._evict()
            else:  # closed while it was built: close() already removed the directory
                doomed = []
        entry.ready.set()
        _remove(doomed)
        return entry

    def _release(self, key: str, entry: _Entry, ok: bool) -> None:
        with self._lock:
            entry.users -= 1
            entry.kept = entry.kept or ok
            doomed: list[Path] = []
            if not entry.kept and entry.users == 0 and self._entries.get(key) is entry:
                doomed.append(self._forget(key, entry))
            doomed += self._evict()
        _remove(doomed)

    def _evict(self) -> list[Path]:
        """Under the lock: forget the least recently used tasks no lease holds until the cache
        is within its bounds; their directories, moved aside, for `_remove`."""
        doomed = []
        for key, entry in list(self._entries.items()):
            if len(self._entries) <= self.max_tasks and self._bytes <= self.max_bytes:
                break
            if entry.users == 0 and entry.task is not None:
                doomed.append(self._forget(key, entry))
        return doomed

    def _forget(self, key: str, entry: _Entry) -> Path:
        """Under the lock: drop `key` and move its directory aside (a rename, so removing it
        after the lock is released cannot race a new build of the same row, which writes the
        same name)."""
        del self._entries[key]
        self._bytes -= entry.size
        assert entry.task is not None
        aside = self._root / f".gone-{secrets.token_hex(8)}"
        try:
            entry.task.root.rename(aside)
        except OSError:
            return entry.task.root
        return aside

    def _make(
        self, raw: str, form: str, key: str, statement: str | None, allow_visible_only: bool
    ) -> tuple[Task, int]:
        row: dict[str, Any] = {"input_output" if form == "apps" else "ground_truth": raw}
        if statement is not None:
            row["question"] = statement
        try:
            io, verl = apps.io_of(row)
            made = apps.build(row, io, verl, f"inline-{key}", apps.INLINE)
            require_hidden(made, allow_visible_only)
            written = write_task(self._root, made)
        except Refused as exc:
            raise TaskError("inline tests", f"cannot make a task: {exc}") from None
        try:
            size = disk_usage(written)
            if size > self.max_bytes:
                raise TaskError(
                    "inline tests",
                    f"the task takes {size} bytes on disk, over the cache's {self.max_bytes}",
                )
            return load_task(written), size
        except BaseException:
            shutil.rmtree(written, ignore_errors=True)
            raise

    def close(self) -> None:
        """Remove every task written; later calls to `task` and `lease` raise."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self._closer()


def disk_usage(root: Path) -> int:
    """Bytes a directory tree takes on disk (allocated blocks, as `du` counts them), links
    not followed."""
    total = 0
    for here, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            total += os.lstat(os.path.join(here, name)).st_blocks * 512
    return total + os.lstat(root).st_blocks * 512


def _remove(paths: list[Path]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)


def _json(tests: Mapping[str, Any]) -> str:
    try:
        return json.dumps(tests, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise TaskError("inline tests", f"not JSON data: {type(exc).__name__}: {exc}") from None


def code_submission(task: Task, code: str, language: str | None = None) -> dict[str, str]:
    """The submission a code string is for `task`: the source file of `language` (default:
    python3) for a stdio task, the module the entry names for a function task. Raises
    `assay.errors.UsageError` for a language the task does not take, or a task of another
    kind (give such a task its files)."""
    c = task.config
    if c.stdio is not None:
        name = ALIASES.get(language or "python3", language or "python3")
        if name not in c.stdio.languages:
            raise UsageError(
                f"task {task.id} takes {', '.join(c.stdio.languages)}, not {language!r}"
            )
        return {LANGUAGES[name].source: code}
    if c.function is not None:
        if language is not None and ALIASES.get(language, language) != "python3":
            raise UsageError(f"task {task.id} is a Python function task, not {language!r}")
        module = c.function.entry.partition(":")[0]
        return {module.replace(".", "/") + ".py": code}
    raise UsageError(f"task {task.id} is a {c.kind} task: give its files, not a code string")
