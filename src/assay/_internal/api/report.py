"""`assay.write_report`: a grade-many output directory as an HTML page and JUnit XML, and its
cheat rates (report/rates.py) as numbers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from assay.errors import UsageError

from ..model.atomic import atomic_write
from ..report.batch import batch_data
from ..report.collect import collect
from ..report.junit import junit_xml
from ..report.page import render
from ..report.rates import CheatRates, by_task
from ..report.rates import rates as run_rates
from ..signing.keys import keyid, load_public_key

__all__ = ["CheatRates", "ReportSummary", "write_report"]


@dataclass(frozen=True)
class ReportSummary:
    """What a report found in the output directory, one grading per job."""

    gradings: int
    passed: int
    failed: int
    no_verdict: int
    """Jobs with no verdict file, or one that could not be read."""
    invalid: int
    """Envelopes that failed to verify (with `public_key`) or could not be parsed."""
    key_note: str
    """Whether the signatures were checked, and with which key id: what the page says."""
    rates: CheatRates = field(default_factory=CheatRates)
    """The whole run's pass rate, tamper rate (by family and reason code) and pass rate on
    impossible twins, over the gradings that have a verdict."""
    tasks: Mapping[str, CheatRates] = field(default_factory=dict)
    """The same for each task, by task id."""


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    html: str | os.PathLike[str] | None = None,
    junit: str | os.PathLike[str] | None = None,
    public_key: str | os.PathLike[str] | Ed25519PublicKey | None = None,
) -> ReportSummary:
    """Read `out_dir` (the output directory of `assay grade-many` or `Batch.run`) and write a
    self-contained HTML page to `html` and JUnit XML (one testcase per grading) to `junit`,
    each replaced atomically; either may be None. With `public_key` every envelope is
    verified and a bad one is shown as such; without, verdicts are shown as unchecked. The
    summary, the page and the JUnit export carry the same cheat rates, per task and for the run
    (docs/report.md: pass rate, tamper rate by family and reason code, impossible twins).

    Nothing read is trusted: files are read with caps and without following links, and one
    that is not what it claims becomes a row saying so. Raises `assay.errors.KeyFileError`
    for an unusable key file, `assay.errors.UsageError` for an output path that cannot be
    written (a directory, a device such as /dev/null, a missing parent)."""
    out = Path(out_dir)
    key = (
        public_key
        if public_key is None or isinstance(public_key, Ed25519PublicKey)
        else load_public_key(Path(public_key))
    )
    records = collect(out, key)
    verdicts = [r.verdict for r in records if r.verdict is not None]
    note = (
        f"signatures checked with key {keyid(key)[:16]}"
        if key
        else "signatures not checked (no --key)"
    )

    def page() -> bytes:
        return render(batch_data(records, str(out), note)).encode("utf-8")

    def xml() -> bytes:
        return junit_xml(records)

    for target, data in ((html, page), (junit, xml)):
        if target is None:
            continue
        try:
            atomic_write(Path(target), data())
        except OSError as exc:
            raise UsageError(f"cannot write {os.fspath(target)}: {exc.strerror or exc}") from exc
    return ReportSummary(
        gradings=len(records),
        passed=sum(r.status == "passed" for r in records),
        failed=sum(r.status == "failed" for r in records),
        no_verdict=sum(r.status == "no-verdict" for r in records),
        invalid=sum(r.signature == "invalid" for r in records),
        key_note=note,
        rates=run_rates(verdicts),
        tasks=by_task(verdicts),
    )
