"""assay: grade AI coding agents so that the graded code cannot touch what grades it.

The public API is what this module exports (`__all__`), plus `assay.errors`,
`assay.firewall`, `assay.batch`, `assay.runtime`, `assay.serve` and `assay.integrations`.
Everything under `assay._internal` may change in any release.

    import assay

    with assay.Grader() as grader:
        graded = grader.grade("examples/add", {"solution.py": "def add(a, b): return a + b"})
    assay.verify(graded.envelope, grader.public_key)  # -> assay.Verdict
"""

from __future__ import annotations

from assay import batch, errors, firewall, runtime
from assay._internal.api.build import LanguageImage, build_environment, build_languages
from assay._internal.api.graded import Graded
from assay._internal.api.grader import Grader, Job, TaskLike
from assay._internal.api.harbortask import import_harbor
from assay._internal.api.impossible import make_impossible
from assay._internal.api.inline import InlineTasks, code_submission
from assay._internal.api.keys import keygen, keyid, load_public_key, verify
from assay._internal.api.report import CheatRates, ReportSummary, write_report
from assay._internal.api.session import ExecResult, Session
from assay._internal.api.submission import Agent, Patch, Submission
from assay._internal.api.validate import ValidationCheck, ValidationReport, validate
from assay._internal.environment import EnvImage
from assay._internal.model.diagnostics import Diagnostics, printable
from assay._internal.model.families import Family
from assay._internal.model.families import family as reason_family
from assay._internal.model.task import EnvironmentSpec, Task, TaskConfig, load_task
from assay._internal.model.verdict import TIER_TITLES, UNSAFE_TIERS, Tier, Verdict
from assay._internal.signing.dsse import MAX_ENVELOPE_BYTES
from assay._version import __version__

__all__ = [
    "MAX_ENVELOPE_BYTES",
    "TIER_TITLES",
    "UNSAFE_TIERS",
    "Agent",
    "CheatRates",
    "Diagnostics",
    "EnvImage",
    "EnvironmentSpec",
    "ExecResult",
    "Family",
    "Graded",
    "Grader",
    "InlineTasks",
    "Job",
    "LanguageImage",
    "Patch",
    "ReportSummary",
    "Session",
    "Submission",
    "Task",
    "TaskConfig",
    "TaskLike",
    "Tier",
    "ValidationCheck",
    "ValidationReport",
    "Verdict",
    "__version__",
    "batch",
    "build_environment",
    "build_languages",
    "code_submission",
    "errors",
    "firewall",
    "import_harbor",
    "keygen",
    "keyid",
    "load_public_key",
    "load_task",
    "make_impossible",
    "printable",
    "reason_family",
    "runtime",
    "validate",
    "verify",
    "write_report",
]
