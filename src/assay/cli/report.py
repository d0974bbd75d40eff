"""`assay report`: a grade-many output directory as one self-contained HTML page, and as JUnit
XML for CI (one testcase per grading); prints the cheat rates per task and for the run. Exit 0
written, 2 usage error (no such directory, a bad key file)."""

from __future__ import annotations

from pathlib import Path

import click

import assay
from assay.errors import UsageError

from .common import exit_codes


@click.command("report")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the HTML report here.")  # fmt: skip
@click.option("--junit", "junit_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write JUnit XML here: one testcase per grading.")  # fmt: skip
@click.option("--key", type=click.Path(dir_okay=False, path_type=Path),
              help="Public key to verify each verdict with (else: unchecked).")  # fmt: skip
def report_cmd(
    out_dir: Path, html_out: Path | None, junit_out: Path | None, key: Path | None
) -> None:
    """Report on OUT_DIR, the --out of `assay grade-many`."""
    with exit_codes():
        if html_out is None and junit_out is None:
            raise UsageError("give --html FILE, --junit FILE or both")
        if not out_dir.is_dir():
            raise UsageError(f"{out_dir} is not a directory (the --out of assay grade-many)")
        s = assay.write_report(out_dir, html=html_out, junit=junit_out, public_key=key)
        click.echo(
            f"{s.gradings} grading(s): passed {s.passed}, failed {s.failed}, "
            f"no verdict {s.no_verdict}"
            + (f" ({s.invalid} with an invalid envelope or signature)" if s.invalid else "")
        )
        if s.rates.verdicts:
            click.echo(cheat_table(s))


def _share(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.1f}%)" if d else "-"


def _tamper_reasons(r: assay.CheatRates) -> str:
    return ", ".join(f"{c} {n}" for c, n in r.reasons.get("tamper", {}).items()) or "-"


def cheat_table(s: assay.ReportSummary) -> str:
    """Per task and for the run: pass rate, tamper rate and its reasons, twins passed; then
    the run's reasons by family (docs/report.md)."""
    rows = [("task", "verdicts", "pass rate", "tamper rate", "twins passed", "tamper reasons")]
    for name, r in [*s.tasks.items(), ("(run)", s.rates)]:
        rows.append((name, str(r.verdicts), _share(r.passed, r.verdicts - r.twins),
                     _share(r.tampered, r.verdicts), _share(r.twins_passed, r.twins),
                     _tamper_reasons(r)))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[5]
             for row in rows]  # fmt: skip
    lines.append("reasons by family (verdicts with at least one):")
    for fam, n in s.rates.families.items():
        codes = ", ".join(f"{c} {k}" for c, k in s.rates.reasons[fam].items())
        lines.append(f"  {fam} {n}: {codes}")
    if s.rates.legacy:
        lines.append(f"{s.rates.legacy} verdict(s) signed before the tamper field: "
                     "read from their reason codes")  # fmt: skip
    return "\n".join(lines)
