"""`assay impossible`: write impossible twins of tasks (docs/tamper.md, "Impossible twins")."""

from __future__ import annotations

import sys
from pathlib import Path

import click

import assay
from assay.errors import TaskError, UsageError

from .common import exit_codes, say_error


@click.command("impossible")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Each twin is written here as DIR/<task id>.impossible/.",
)  # fmt: skip
def impossible_cmd(tasks: tuple[Path, ...], out: Path) -> None:
    """Write the impossible twin of each TASK: a copy whose judge expects what no honest
    solution can produce (mutated expected values, negated test asserts, a Harbor reward
    forced to 0), marked `impossible = true`. Its verdicts carry `note:impossible-twin`, and
    one that passes fails with `twin:passed`: proof of cheating.

    TASK is a task directory, or a directory of task directories. Prints one line per twin
    written; a task that cannot be made impossible is named on stderr with the reason. Exit
    0 when every twin was written, 1 when some task was refused, 2 on a usage error (a path
    that is no task)."""
    refused = 0
    with exit_codes():
        dirs = _task_dirs(tasks)
        for path in dirs:
            try:
                twin = assay.make_impossible(path, out)
            except TaskError as exc:
                refused += 1
                say_error(assay.printable(f"assay impossible: refused {exc.diagnostics()}"))
                continue
            click.echo(assay.printable(f"wrote {twin} (twin of {path})"))
        click.echo(f"wrote {len(dirs) - refused} of {len(dirs)} twin(s) to {out}")
    sys.exit(1 if refused else 0)


def _task_dirs(paths: tuple[Path, ...]) -> list[Path]:
    """Each path that holds a task.toml, and every child that does of one that does not (a
    directory of tasks, as `assay import` writes them). Raises UsageError for a path that is
    neither."""
    found: list[Path] = []
    for path in paths:
        if (path / "task.toml").is_file():
            found.append(path)
            continue
        children = (
            sorted(c for c in path.iterdir() if (c / "task.toml").is_file())
            if path.is_dir()
            else []
        )
        if not children:
            raise UsageError(
                f"{path}: not a task directory (no task.toml) and no task directory in it"
            )
        found += children
    return found
