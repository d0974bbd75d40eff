"""The data of a batch report page, from a grade-many output directory."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ..model.diagnostics import printable
from .collect import Record
from .rates import by_task, rates, rates_json
from .reasons import explain


def _visible(rec: dict[str, Any]) -> dict[str, Any]:
    """Diagnostics hold candidate bytes: controls and bidi characters shown as escapes, so
    they can neither reorder nor hide the text around them (the page shows them as text)."""
    for d in rec.get("diag", []):
        for k in ("expected", "actual", "diff"):
            d[k] = printable(d[k])
    return rec


def batch_data(records: Sequence[Record], source: str, key_note: str) -> dict[str, Any]:
    rows = [_visible(r.as_json()) for r in records]
    codes = sorted({c for r in rows for c in [*r.get("reasons", []), *r.get("notes", [])]})
    when = datetime.now(UTC).isoformat(timespec="seconds")
    verdicts = [r.verdict for r in records if r.verdict is not None]
    return {
        "kind": "batch",
        "title": f"assay report: {len(rows)} gradings",
        "subtitle": f"{source} \u00b7 {key_note} \u00b7 generated {when}",
        "explain": {c: explain(c) for c in codes},
        "records": rows,
        "rates": {
            "run": rates_json(rates(verdicts)),
            "tasks": [{"task": t, **rates_json(r)} for t, r in by_task(verdicts).items()],
        },
    }
