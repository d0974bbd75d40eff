"""`assay build`: build a task's `[environment]` image ahead of grading (grading builds it on
first use too)."""

from __future__ import annotations

from pathlib import Path

import click

import assay

from .common import exit_codes


@click.command("build")
@click.argument("task", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--quiet", "-q", is_flag=True, help="Do not echo the build log.")
def build_cmd(task: Path, quiet: bool) -> None:
    """Build TASK's environment image with the local engine (never pulling), or find the image
    an unchanged build context already has. Prints `<image ref> <image id> built|cached`.
    Exit 2 for a Dockerfile that fails (with the end of its log), a base image or
    `image =` that is not on the engine, or an image without python3; for a repository task
    also for a repository the firewall refuses as a task tree (a link leaving it, more entries
    than limits.artifact_entries) or a test patch that does not apply to it."""
    with exit_codes():
        loaded = assay.load_task(task)
        if loaded.environment is None:
            click.echo(f"task {loaded.id!r} has no [environment]: it runs on the base image")
            return
        progress = None if quiet else (lambda line: click.echo(line, err=True))
        env = assay.build_environment(loaded, progress=progress)
        assert env is not None
        how = f"built in {env.build_s:.1f} s" if env.built else "cached"
        click.echo(f"{env.ref} {env.image_id} {how}")
