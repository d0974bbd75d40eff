"""`assay build`: build a task's `[environment]` image, or the languages' images a `stdio` task
runs in, ahead of grading (grading builds a task's image on first use too)."""

from __future__ import annotations

from pathlib import Path

import click

import assay
from assay.errors import UsageError

from .common import exit_codes


@click.command("build")
@click.argument(
    "task", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--languages",
    metavar="NAMES|all",
    is_flag=False,
    flag_value="all",
    default=None,
    help="Build the images of these languages (comma-separated, or `all`, the default when "
    "no value is given) instead of, or before, TASK's.",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not echo the build log.")
def build_cmd(task: Path | None, languages: str | None, quiet: bool) -> None:
    """Build TASK's environment image with the local engine (never pulling), or find the image
    an unchanged build context already has. Prints `<image ref> <image id> built|cached`.
    Exit 2 for a Dockerfile that fails (with the end of its log), a base image or
    `image =` that is not on the engine, or an image without python3; for a repository task
    also for a repository the firewall refuses as a task tree (a link leaving it, more entries
    than limits.artifact_entries) or a test patch that does not apply to it.

    With --languages, build each language's image (assay's base image plus the toolchain's
    Debian packages) unless it is there, and print a line per language:
    `<language> <image ref> built|reused <seconds> s <size> MB`. Exit 2 for an unknown
    language, a missing base image or a build that fails."""
    progress = None if quiet else (lambda line: click.echo(line, err=True))
    with exit_codes():
        if task is None and languages is None:
            raise UsageError("name a TASK to build, or --languages NAMES|all")
        if languages is not None:
            names = None if languages == "all" else [n.strip() for n in languages.split(",")]
            assay.build_languages(names, progress=progress, done=_say_language)
        if task is None:
            return
        loaded = assay.load_task(task)
        if loaded.environment is None:
            click.echo(f"task {loaded.id!r} has no [environment]: it runs on the base image")
            return
        env = assay.build_environment(loaded, progress=progress)
        assert env is not None
        how = f"built in {env.build_s:.1f} s" if env.built else "cached"
        click.echo(f"{env.ref} {env.image_id} {how}")


def _say_language(image: assay.LanguageImage) -> None:
    how = "built" if image.built else "reused"
    click.echo(
        f"{image.language} {image.ref} {how} {image.build_s:.1f} s {image.size_bytes / 1e6:.0f} MB"
    )
