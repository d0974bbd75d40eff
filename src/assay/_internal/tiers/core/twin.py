"""The verdict of an impossible twin (docs/tamper.md, "Impossible twins"), marked in the one
place every tier's verdict passes through (`dispatch.run_tier`).

A twin's judge expects what no honest solution can produce, so its verdict always carries the
informational `note:impossible-twin`, and one whose cases all pass is proof that something
other than the solution decided them: it fails with the tamper code `twin:passed`. Both come
from the task's own mark (`impossible = true`, part of the task digest), never from anything a
container said.
"""

from __future__ import annotations

from datetime import datetime

from ...model.diagnostics import Judged
from ...model.task import Task
from ...model.verdict import ControllerFacts, build_verdict, error_verdict

NOTE = "note:impossible-twin"
PASSED = "twin:passed"


def mark_twin(task: Task, judged: Judged) -> Judged:
    """`judged` as it is for a task that is no twin; for a twin, its verdict made again from
    the same facts and cases with the note, and with `twin:passed` when it passed."""
    if not task.config.impossible:
        return judged
    v = judged.verdict
    codes = [*v.reason_codes, *v.notes, NOTE]
    if v.passed:
        codes.append(PASSED)
    facts = ControllerFacts(
        grading_id=v.grading_id,
        task_id=v.task_id,
        task_digest=v.task_digest,
        tier=v.tier,
        runtime=v.runtime,
        submission_digest=v.submission_digest,
        started_at=datetime.fromisoformat(v.started_at),
        ended_at=datetime.fromisoformat(v.ended_at),
        timings=v.timings,
        image_digests=v.image_digests,
        reason_codes=tuple(codes),
        assay_version=v.assay_version,
    )
    if not v.cases and v.expected_case_count == 0 and v.reason_codes:
        # An error verdict stays one: build_verdict would add `cases:none-expected` to it.
        marked = error_verdict(facts, v.reason_codes[0])
    else:
        marked = build_verdict(facts, v.cases, v.expected_case_count)
    return Judged(marked, judged.diagnostics)
