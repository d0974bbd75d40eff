"""`assay report`: a grade-many output directory as one self-contained HTML page, and as JUnit
XML for CI (one testcase per grading). Exit 0 written, 2 usage error (no such directory, a bad
key file)."""

from __future__ import annotations

from pathlib import Path

import click

from assay._internal.model.atomic import atomic_write
from assay._internal.report.batch import batch_data
from assay._internal.report.collect import collect
from assay._internal.report.junit import junit_xml
from assay._internal.report.page import render
from assay._internal.signing.keys import keyid, load_public_key
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
        public = load_public_key(key) if key is not None else None
        records = collect(out_dir, public)
        note = (
            f"signatures checked with key {keyid(public)[:16]}"
            if public
            else "signatures not checked (no --key)"
        )
        if html_out is not None:
            page = render(batch_data(records, str(out_dir), note))
            atomic_write(html_out, page.encode("utf-8"))
        if junit_out is not None:
            atomic_write(junit_out, junit_xml(records))
        counts = {
            s: sum(r.status == s for r in records) for s in ("passed", "failed", "no-verdict")
        }
        bad = sum(r.signature == "invalid" for r in records)
        click.echo(
            f"{len(records)} grading(s): passed {counts['passed']}, failed {counts['failed']}, "
            f"no verdict {counts['no-verdict']}"
            + (f" ({bad} with an invalid envelope or signature)" if bad else "")
        )
