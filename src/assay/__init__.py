"""assay: grade AI coding agents so that the graded code cannot touch what grades it.

The public API is what this module exports (`__all__`), plus `assay.errors` and
`assay.firewall`. Everything under `assay._internal` may change in any release.

    import assay

    with assay.Grader() as grader:
        graded = grader.grade("examples/add", {"solution.py": "def add(a, b): return a + b"})
    assay.verify(graded.envelope, grader.public_key)  # -> assay.Verdict
"""

from __future__ import annotations

from assay import errors, firewall
from assay._internal.api.graded import Graded
from assay._internal.api.grader import Grader, Job
from assay._internal.api.keys import keygen, verify
from assay._internal.api.session import ExecResult, Session
from assay._internal.api.submission import Agent, Submission
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._version import __version__

__all__ = [
    "Agent",
    "ExecResult",
    "Graded",
    "Grader",
    "Job",
    "Session",
    "Submission",
    "Task",
    "Verdict",
    "__version__",
    "errors",
    "firewall",
    "keygen",
    "load_task",
    "verify",
]
