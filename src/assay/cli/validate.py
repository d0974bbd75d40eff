"""`assay validate`: check tasks before they grade anything (reference passes, empty fails,
repository ids, no leak into the inputs, generators that use their seed)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

import assay
from assay.errors import UsageError

from .common import engine_options, exit_codes

EXIT_GRADEABLE, EXIT_NOT_GRADEABLE = 0, 1


def exit_code(gradeable: Sequence[bool]) -> int:
    """0 when there was at least one task and every one was shown gradeable, else 1 (a usage
    error exits 2 before any report, through `exit_codes`)."""
    return EXIT_GRADEABLE if gradeable and all(gradeable) else EXIT_NOT_GRADEABLE


def print_report(report: assay.ValidationReport) -> None:
    """One headline per task, then one line per check. Details may quote task files: they are
    escaped so that nothing in them steers the terminal."""
    mark = "GRADEABLE" if report.gradeable else "NOT GRADEABLE"
    head = f"{mark} {report.task_id} ({report.path}) in {report.duration_s:.1f} s"
    click.echo(assay.printable(head, keep_newlines=False))
    for check in report.checks:
        status = "ok" if check.ok else ("error" if check.could_not_check else "FAIL")
        line = f"  {status:5} {check.name}: {check.detail}"
        click.echo(assay.printable(line, keep_newlines=False))


@click.command("validate")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(path_type=Path))
@engine_options
@click.option(
    "--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
    help="Tasks validated at once.",
)  # fmt: skip
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write every report as JSON to this file.",
)
def validate_cmd(
    tasks: tuple[Path, ...], base_image: str, oci_runtime: str, jobs: int, json_out: Path | None
) -> None:
    """Show that each TASK can grade before it is used: its reference solutions pass
    (solutions/correct*/, solutions/reference/solve.sh, solutions/gold.patch), an empty
    submission (a repository task: the unchanged repository) fails, a repository task's
    FAIL_TO_PASS / PASS_TO_PASS ids are real tests and its FAIL_TO_PASS tests fail before the
    fix, nothing of judge/ (a file, an expected value, a line of the test patch) is in
    inputs/, and a generator's cases change with the seed.

    TASK is a task directory, or a directory of task directories (each child with a
    task.toml). Prints one line per check. Exit 0 when every task is gradeable, 1 when some
    task is not (a check failed, or could not be checked), 2 on a usage error (a path that is
    no task, a backend that cannot run here), 3 when no Docker engine answers."""
    with exit_codes(interrupted="assay validate: interrupted"):
        reports = run_validation(list(tasks), base_image, oci_runtime, jobs, json_out)
    sys.exit(exit_code([r.gradeable for r in reports]))


def run_validation(
    tasks: Sequence[Path],
    base_image: str | None = None,
    oci_runtime: str | None = None,
    jobs: int = 1,
    json_out: Path | None = None,
) -> list[assay.ValidationReport]:
    """Validate `tasks`, printing each report as it is done and a summary line, and write
    every report to `json_out` if given. Raises what `assay.validate` raises, and
    `assay.errors.UsageError` when there is no task."""
    reports = assay.validate(
        list(tasks), image=base_image, oci_runtime=oci_runtime, jobs=jobs, progress=print_report
    )
    if not reports:
        raise UsageError("no task to validate")
    if json_out is not None:
        data = {
            "gradeable": all(r.gradeable for r in reports),
            "tasks": [r.to_dict() for r in reports],
        }
        json_out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    bad = [r.task_id for r in reports if not r.gradeable]
    if bad:
        shown = ", ".join(bad[:10]) + (" ..." if len(bad) > 10 else "")
        click.echo(assay.printable(f"{len(bad)} of {len(reports)} task(s) not gradeable: {shown}"))
    else:
        click.echo(f"all {len(reports)} task(s) gradeable")
    return reports


def validate_and_report(tasks: Sequence[Path], jobs: int = 1) -> bool:
    """What `assay import swebench --validate` runs after writing its tasks: `run_validation`
    on the engine options' defaults ($ASSAY_RUNTIME, $ASSAY_BASE_IMAGE); True when every task
    is gradeable. An error that stops it (no backend, no engine) exits with the error's code,
    as every command does (`exit_codes`); raises nothing else."""
    with exit_codes(interrupted="assay validate: interrupted"):
        reports = run_validation(tasks, jobs=jobs)
    return exit_code([r.gradeable for r in reports]) == EXIT_GRADEABLE
