"""`assay gc`: remove what gradings of a killed controller left behind."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from assay._internal.runtime.engine import docker_runtime
from assay._internal.runtime.scope import grading_tempdirs
from assay.errors import AssayError

from .common import exit_codes


def _temp_dirs(gid: str | None) -> list[Path]:
    return [p for p in grading_tempdirs(gid) if p.is_dir()]


@click.command("gc")
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Remove every assay grading on this engine, even one that may still be running.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
def gc_cmd(everything: bool, dry_run: bool) -> None:
    """Remove containers, volumes and temp dirs of gradings whose controller is gone.

    Without --all, only gradings whose controller process is certainly dead (same host,
    process gone or machine rebooted) are touched, so gc is safe beside running gradings.
    """
    with exit_codes():
        rt = docker_runtime()
        gids = rt.gradings() if everything else rt.orphans()
        removed = 0
        failures: list[str] = []
        for gid in sorted(gids):
            dirs = _temp_dirs(gid)
            click.echo(f"{'would remove' if dry_run else 'removing'} {gid} ({len(dirs)} temp dirs)")
            if not dry_run:
                try:
                    removed += rt.sweep(gid)
                except AssayError as exc:  # keep going: one stuck grading must not shield others
                    failures.append(f"{gid}: {exc}")
                for d in dirs:
                    shutil.rmtree(d, ignore_errors=True)
        if everything:
            for d in _temp_dirs(None):
                click.echo(f"{'would remove' if dry_run else 'removing'} {d}")
                if not dry_run:
                    shutil.rmtree(d, ignore_errors=True)
    click.echo(f"{len(gids)} grading(s), {removed} container(s)/volume(s) removed")
    if failures:
        for line in failures:
            click.echo(f"assay gc: {line}", err=True)
        sys.exit(3)
