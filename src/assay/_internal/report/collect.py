"""A grade-many output directory (batch/journal.py) read back as records for the report.

Every file here was written by assay, but the verdicts' contents came through gradings of
hostile submissions and a directory can be edited by anyone: files are read without following
links and with caps, envelopes are verified with the given key (or marked unchecked), and a
file that is not what it claims becomes a row saying so, never an exception.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..batch.journal import DIAGNOSTICS_SUFFIX, ENVELOPE_SUFFIX, SUMMARY
from ..model import diagnostics as diag
from ..model.strict_json import StrictJSONError, loads_strict
from ..model.verdict import TIER_TITLES, Verdict, is_failing_reason
from ..signing.dsse import MAX_ENVELOPE_BYTES
from ..signing.sign import VerificationError, unverified_verdict, verify_envelope
from .rates import is_legacy, is_twin, read_codes

Signature = Literal["verified", "unchecked", "invalid", "none"]
MAX_SUMMARY_BYTES = 64 << 20
MAX_ERROR_CHARS = 500
EVENT_NAMESPACES = ("limit", "firewall", "output-firewall", "network")


@dataclass
class Record:
    """One grading as the report shows it."""

    id: str
    status: Literal["passed", "failed", "no-verdict"]
    signature: Signature
    detail: str = ""
    verdict: Verdict | None = None
    diagnostics: list[diag.CaseDiagnostic] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """Compact and JSON-ready; the page's script reads exactly these keys."""
        out: dict[str, Any] = {"id": self.id, "st": self.status, "sig": self.signature}
        if self.detail:
            out["detail"] = self.detail
        v = self.verdict
        if v is None:
            return out
        n_pass = sum(c.status == "pass" for c in v.cases)
        read = read_codes(v)
        out.update(
            task=v.task_id,
            tier=v.tier,
            tierTitle=TIER_TITLES[v.tier],
            runtime=v.runtime,
            score=round(v.score, 6),
            cases=[[c.id, c.status, c.duration_s] for c in v.cases],
            nPass=n_pass,
            nCases=v.expected_case_count,
            # a verdict signed before notes had their own field carries them among its codes
            reasons=[c for c in v.reason_codes if is_failing_reason(c)],
            notes=list(
                dict.fromkeys([*v.notes, *(c for c in v.reason_codes if not is_failing_reason(c))])
            ),
            events=[r for r in v.reason_codes if r.partition(":")[0] in EVENT_NAMESPACES],
            # each reason's family as the cheat rates count it (rates.py), and what shows tampering
            fam={c: f for f, codes in read.items() for c in codes},
            tamper=read.get("tamper", []),
            twin=is_twin(v),
            legacy=is_legacy(v),
            timings=list(v.timings.items()),
            gid=v.grading_id,
            started=v.started_at,
            ended=v.ended_at,
            digests={
                "task": v.task_digest,
                "submission": v.submission_digest or "(none)",
                **{f"image {k}": d for k, d in v.image_digests.items()},
            },
        )
        if self.diagnostics:
            out["diag"] = [
                {"id": d.id, "reason": d.reason, "expected": d.expected, "actual": d.actual,
                 "diff": d.diff}
                for d in self.diagnostics
            ]  # fmt: skip
        return out


def _read(path: Path, cap: int) -> bytes | None:
    """A regular file's bytes (never through a link), or None if it is not one or too big."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        data = fh.read(cap + 1)
    return None if len(data) > cap else data


def _record(out: Path, job_id: str, key: Ed25519PublicKey | None) -> Record:
    raw = _read(out / f"{job_id}{ENVELOPE_SUFFIX}", MAX_ENVELOPE_BYTES)
    if raw is None:
        return Record(job_id, "no-verdict", "invalid", "verdict file unreadable or oversize")
    try:
        verdict = unverified_verdict(raw) if key is None else verify_envelope(raw, key)
    except VerificationError as exc:
        return Record(job_id, "no-verdict", "invalid", f"{exc.reason}: {str(exc)[:200]}")
    rec = Record(
        job_id,
        "passed" if verdict.passed else "failed",
        "unchecked" if key is None else "verified",
        verdict=verdict,
    )
    found = _read(out / f"{job_id}{DIAGNOSTICS_SUFFIX}", diag.MAX_FILE_BYTES)
    loaded = diag.load(found) if found is not None else None
    if loaded is not None and loaded.grading_id == verdict.grading_id:  # not a stale file
        rec.diagnostics = list(loaded.cases)
    return rec


def _errors(out: Path) -> dict[str, str]:
    """Jobs the last run gave no verdict (summary.json `error_details`)."""
    raw = _read(out / SUMMARY, MAX_SUMMARY_BYTES)
    if raw is None:
        return {}
    try:
        summary = loads_strict(raw, max_bytes=MAX_SUMMARY_BYTES, max_depth=8)
    except StrictJSONError:
        return {}
    details = summary.get("error_details") if isinstance(summary, dict) else None
    found: dict[str, str] = {}
    for item in details if isinstance(details, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            found[item["id"][:256]] = str(item.get("error", ""))[:MAX_ERROR_CHARS]
    return found


def collect(out: Path, key: Ed25519PublicKey | None) -> list[Record]:
    """Every grading in `out`, sorted by job id: verdicts, then jobs without one."""
    ids = sorted(
        name[: -len(ENVELOPE_SUFFIX)]
        for name in os.listdir(out)
        if name.endswith(ENVELOPE_SUFFIX) and not name.startswith(".")
    )
    records = [_record(out, job_id, key) for job_id in ids]
    have = set(ids)
    for job_id, error in sorted(_errors(out).items()):
        if job_id not in have:
            records.append(Record(job_id, "no-verdict", "none", error or "no verdict"))
    return sorted(records, key=lambda r: r.id)
