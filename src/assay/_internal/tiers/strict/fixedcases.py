"""The inputs of a task whose cases come from a fixed file, made on the host.

`prepare` in the judge prints a fixed cases file's cases without their expected values, the
same every time. The controller already parses and checks that file with the judge's own code
when it loads the task (`model.task.check_case_file`), so it makes the inputs itself and saves
the judge an exec per grading; the judge's `compare` reads the expected values from the file.
A generator is task code, so a generator task still prepares in the judge, with a fresh seed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ...model.task import Task, case_file_inputs

MAX_CACHED_BYTES = 64 << 20


def fixed_cases(task: Task) -> bool:
    j = task.config.judge
    return j is not None and j.cases is not None


class InputCache:
    """Inputs by task digest, least recently used dropped past `max_bytes` (a batch grades
    each task many times; a task's inputs are made once)."""

    def __init__(self, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._by_task: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0

    def inputs(self, task: Task) -> bytes | None:
        """The task's inputs as `prepare` prints them, or None for a generator task."""
        if not fixed_cases(task):
            return None
        with self._lock:
            got = self._by_task.get(task.digest)
            if got is not None:
                self._by_task.move_to_end(task.digest)
                return got
        made = make_inputs(task)
        with self._lock:
            if task.digest not in self._by_task:
                self._by_task[task.digest] = made
                self._bytes += len(made)
                while self._bytes > self.max_bytes and self._by_task:
                    self._bytes -= len(self._by_task.popitem(last=False)[1])
        return made


def make_inputs(task: Task) -> bytes:
    j = task.config.judge
    assert j is not None and j.cases is not None
    return case_file_inputs(task.judge_dir / j.cases, task.config)


INPUTS = InputCache()
"""One cache per process: the inputs depend on the task's digest alone."""
