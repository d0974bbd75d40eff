"""Builders for realistic verdicts in tests (values shaped like a real grading's)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from assay._internal.model.verdict import CaseResult, ControllerFacts, Verdict, build_verdict

SUBMISSION = "sha256:" + "5d" * 32
TASK_DIGEST = "sha256:" + "a1" * 32
START = datetime(2026, 11, 5, 14, 3, 7, 125000, tzinfo=UTC)


def facts(**overrides: Any) -> ControllerFacts:
    fields: dict[str, Any] = {
        "grading_id": "g-20261105-7f3a9c",
        "task_id": "canary-secret",
        "task_digest": TASK_DIGEST,
        "tier": "t3",
        "runtime": "docker/runc",
        "submission_digest": SUBMISSION,
        "started_at": START,
        "ended_at": START + timedelta(seconds=4, microseconds=250000),
        "timings": {"agent": 0.0, "firewall": 0.041, "candidate": 1.92, "judge": 0.733},
        "image_digests": {"candidate": "sha256:" + "c3" * 32, "judge": "sha256:" + "d4" * 32},
    }
    fields.update(overrides)
    return ControllerFacts(**fields)


def cases(*statuses: str) -> list[CaseResult]:
    return [
        CaseResult(id=f"c{i}", status=status, duration_s=0.01 * i)
        for i, status in enumerate(statuses, 1)
    ]


def verdict(statuses: Sequence[str] = ("pass", "pass", "pass"), **overrides: Any) -> Verdict:
    return build_verdict(facts(**overrides), cases(*statuses), len(statuses))
