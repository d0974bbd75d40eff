"""`assay report`: a grade-many output directory as one self-contained HTML page, and as JUnit
XML for CI (one testcase per grading). Exit 0 written, 2 usage error (no such directory, a bad
key file)."""

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
