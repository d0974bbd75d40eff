"""`assay.make_impossible`: the impossible twin of a task (docs/tamper.md, "Impossible twins")."""

from __future__ import annotations

import os
from pathlib import Path

from ..model.task import Task, load_task
from ..twins import make_twin
from .grader import TaskLike


def make_impossible(task: TaskLike, out: str | os.PathLike[str]) -> Path:
    """Write the impossible twin of `task` (a loaded task or a task directory) as
    `out/<id>.impossible/` and return its path: a copy whose judge expects what no honest
    solution can produce, marked `impossible = true` (its verdicts carry
    `note:impossible-twin`, and a pass fails as `twin:passed`). Raises
    `assay.errors.TaskError` when the task does not load, cannot be made impossible (the
    message names it and says why: a generator, a custom comparator or checker program, no
    assert to negate...), is a twin already, or when `out/<id>.impossible` exists."""
    loaded = task if isinstance(task, Task) else load_task(Path(task))
    return make_twin(loaded, Path(out))


__all__ = ["make_impossible"]
