"""Tasks made from a dataset row's tests (APPS/TACO `input_output`, verl's `ground_truth`), the
form an RL trainer holds its problems in, and the submission a code string makes for a task.

A row becomes a task exactly as `assay import apps` makes one (the same converter, the same
refusals), written once per distinct content under one temporary directory of this process:
the many completions of one problem in a GRPO group grade against one task, and only the
judge ever reads the expected outputs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.errors import TaskError, UsageError

from ..importers import apps
from ..importers.stdio_task import MAX_NESTED_JSON_BYTES, Refused, write_task
from ..model.languages import LANGUAGES
from ..model.task import Task, load_task
from ..runtime.scope import TEMP_PREFIX

FORMS = ("apps", "verl")
ALIASES = {"python": "python3", "py": "python3", "c++": "cpp", "nodejs": "javascript",
           "js": "javascript", "golang": "go"}  # fmt: skip


class InlineTasks:
    """A bounded cache of tasks made from rows, in a temporary directory removed by `close()`
    (or when the object is collected, or at interpreter exit). Thread-safe."""

    def __init__(self, max_tasks: int = 4096) -> None:
        self.max_tasks = max_tasks
        self._root = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}inline-"))
        self._tasks: OrderedDict[str, Task] = OrderedDict()
        self._lock = threading.Lock()
        self._closer = weakref.finalize(self, shutil.rmtree, self._root, True)

    def task(self, tests: Mapping[str, Any] | str, form: str = "apps") -> Task:
        """The task whose tests are `tests`: `{"inputs": [...], "outputs": [...], "fn_name"?}`
        or that object as JSON text. `form`: "apps" (APPS/TACO `input_output`) or "verl"
        (verl's `ground_truth`, where a call-based test's input is newline-separated JSON).
        Raises `assay.errors.TaskError` naming the field when the row cannot become a task,
        `assay.errors.UsageError` for another form."""
        if form not in FORMS:
            raise UsageError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
        raw = tests if isinstance(tests, str) else _json(tests)
        if len(raw) > MAX_NESTED_JSON_BYTES:
            raise TaskError("inline tests", f"{len(raw)} bytes, over {MAX_NESTED_JSON_BYTES}")
        key = hashlib.sha256(f"{form}\0{raw}".encode()).hexdigest()[:32]
        with self._lock:
            if not self._closer.alive:
                raise UsageError("this InlineTasks was closed")
            found = self._tasks.get(key)
            if found is not None:
                self._tasks.move_to_end(key)
                return found
            task = self._make(raw, form, key)
            self._tasks[key] = task
            while len(self._tasks) > self.max_tasks:
                _, old = self._tasks.popitem(last=False)
                shutil.rmtree(old.root, ignore_errors=True)
            return task

    def _make(self, raw: str, form: str, key: str) -> Task:
        row = {"input_output" if form == "apps" else "ground_truth": raw,
               "question": "A problem given inline by its tests."}  # fmt: skip
        try:
            io, verl = apps.io_of(row)
            made = apps.build(row, io, verl, f"inline-{key}", "inline")
            return load_task(write_task(self._root, made))
        except Refused as exc:
            raise TaskError("inline tests", f"cannot make a task: {exc}") from None

    def close(self) -> None:
        """Remove every task written; later calls to `task` raise."""
        with self._lock:
            self._tasks.clear()
            self._closer()


def _json(tests: Mapping[str, Any]) -> str:
    try:
        return json.dumps(tests, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TaskError("inline tests", f"not JSON data: {exc}") from None


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
