"""A SWE-bench predictions file as batch jobs: one `Patch` per instance, graded against the
task `assay import swebench` wrote for it.

The file is hostile input: read a line at a time under a cap, each line parsed by the strict
JSON reader; `instance_id` must be a safe name; `model_patch` is kept as bytes and never
parsed here (the agent container applies it, `tiers.core.patchapply`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from assay.errors import UsageError

from ..batch.jobs import Job, no_duplicate_ids
from ..importers.swebench import task_id_of
from ..model.strict_json import StrictJSONError, loads_strict, shown
from .submission import Patch

MAX_PREDICTION_LINE = 64 << 20
"""One line: a 16 MiB patch, JSON-escaped, with room to spare."""
MAX_PREDICTIONS_FILE = 4 << 30
_INSTANCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def _rows(path: Path) -> list[tuple[str, Any]]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read predictions {path}: {exc.strerror}") from None
    rows: list[tuple[str, Any]] = []
    with fh:
        if path.suffix == ".json":  # SWE-bench also takes a JSON list
            raw = fh.read(MAX_PREDICTIONS_FILE + 1)
            if len(raw) > MAX_PREDICTIONS_FILE:
                raise UsageError(f"{path}: over {MAX_PREDICTIONS_FILE} bytes")
            try:
                doc = loads_strict(raw, max_bytes=MAX_PREDICTIONS_FILE, max_depth=3)
            except StrictJSONError as exc:
                raise UsageError(f"{path}: not JSON ({exc.code})") from None
            if not isinstance(doc, list):
                raise UsageError(f"{path}: a .json predictions file is a list of objects")
            return [(f"{path}[{i}]", row) for i, row in enumerate(doc)]
        for n, raw in enumerate(iter(lambda: fh.readline(MAX_PREDICTION_LINE + 1), b""), 1):
            where = f"{path}:{n}"
            if len(raw) > MAX_PREDICTION_LINE:
                raise UsageError(f"{where}: line longer than {MAX_PREDICTION_LINE} bytes")
            if not raw.strip():
                continue
            try:
                rows.append((where, loads_strict(raw, max_bytes=MAX_PREDICTION_LINE, max_depth=2)))
            except StrictJSONError as exc:
                raise UsageError(f"{where}: not a JSON object line ({exc.code})") from None
    return rows


def jobs_from_predictions(predictions: Path, tasks: Path) -> list[Job]:
    """One job per prediction (`instance_id`, `model_name_or_path`, `model_patch`): its task is
    `tasks/<instance id, lower-cased>/` as `assay import swebench` wrote it, its submission an
    `assay.Patch` of `model_patch` (null counts as empty, which fails `patch:empty`). Raises
    UsageError naming the line for a malformed prediction, an instance listed twice, or an
    instance with no task under `tasks`."""
    if not tasks.is_dir():
        raise UsageError(f"{tasks}: not a directory of tasks (the --out of assay import swebench)")
    jobs: list[Job] = []
    seen: dict[str, str] = {}
    missing: list[str] = []
    for where, row in _rows(predictions):
        if not isinstance(row, dict):
            raise UsageError(f"{where}: a prediction is a JSON object")
        iid = row.get("instance_id")
        if not isinstance(iid, str) or not _INSTANCE.match(iid) or ".." in iid:
            raise UsageError(f"{where}: instance_id {shown(str(iid))!r} is not a safe name")
        patch = row.get("model_patch")
        if patch is None:
            patch = ""
        if not isinstance(patch, str):
            raise UsageError(f"{where}: model_patch must be a string or null")
        model = row.get("model_name_or_path")
        if model is not None and not isinstance(model, str):
            raise UsageError(f"{where}: model_name_or_path must be a string")
        if iid in seen:
            raise UsageError(f"{where}: instance {iid} already predicted at {seen[iid]}")
        seen[iid] = where
        task_dir = tasks / task_id_of(iid)
        if not (task_dir / "task.toml").is_file():
            missing.append(iid)
            continue
        jobs.append(Job(iid, task_dir, Patch(patch.encode("utf-8", "surrogateescape")), where))
    if missing:
        raise UsageError(
            f"{predictions}: {len(missing)} instance(s) have no task under {tasks}: "
            f"{' '.join(missing[:10])}{' ...' if len(missing) > 10 else ''} "
            "(import them with assay import swebench)"
        )
    if not jobs:
        raise UsageError(f"{predictions}: no prediction in it")
    no_duplicate_ids(jobs)
    return jobs
