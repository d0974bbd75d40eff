"""Many gradings into an output directory that a rerun resumes from: what `assay grade-many`
runs, for a caller that wants the files (verdicts, `summary.json`, `log.jsonl`) and the
counts, not only the verdicts `Grader.grade_many` yields.

    jobs = assay.batch.jobs_from_manifest(Path("jobs.jsonl"))
    with assay.Grader(reuse_judges=True) as grader:
        result = assay.batch.drain(grader.batch(jobs, parallel=4).run(Path("out")))
    print(result.tally.passed, result.tally.failed, result.tally.errors)

`jobs_from_manifest` reads a JSONL manifest (one `{"task", "submission", "id"?}` object per
line, relative paths from the manifest's directory) and `jobs_from_dir` makes one job per
subdirectory or tar file of a directory; `jobs_from_predictions` makes one `assay.Patch` job
per line of a SWE-bench predictions file, against the tasks `assay import swebench` wrote; all
raise `assay.errors.UsageError` naming the line
or path at fault, and refuse a submission that is a symbolic link. `Grader.batch` takes their
`BatchJob`s or `assay.Job`s. `Progress` holds the callbacks `Batch.run` calls as it goes,
with each job's `Outcome` and the running `Tally`; the run returns a `BatchResult`.
"""

from __future__ import annotations

from assay._internal.api.grader import Batch
from assay._internal.api.predictions import jobs_from_predictions
from assay._internal.batch.run import (
    BatchResult,
    Outcome,
    Progress,
    Tally,
    drain,
    jobs_from_dir,
    jobs_from_manifest,
)
from assay._internal.batch.run import Job as BatchJob

__all__ = [
    "Batch",
    "BatchJob",
    "BatchResult",
    "Outcome",
    "Progress",
    "Tally",
    "drain",
    "jobs_from_dir",
    "jobs_from_manifest",
    "jobs_from_predictions",
]
