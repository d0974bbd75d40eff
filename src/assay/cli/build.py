"""`assay build`: build a task's `[environment]` image, or the languages' images a `stdio` task
runs in, ahead of grading (grading builds a task's image on first use too)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click

import assay
from assay.errors import UsageError
from assay.runtime import open_runtime

from .common import exit_codes, runtime_option


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
@partial(
    runtime_option,
    help="Make each image ready for this backend (runc, the default, or $ASSAY_RUNTIME): "
    "runc and runsc unpack an image into their own store on first use, which would otherwise "
    "fall on the first grading or on `assay serve`'s start.",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not echo the build log.")
def build_cmd(task: Path | None, languages: str | None, oci_runtime: str, quiet: bool) -> None:
    """Build TASK's environment image with the local engine (never pulling), or find the image
    an unchanged build context already has, and make it ready for the --runtime backend.
    Prints `<image ref> <image id> built in <s> s|cached; <backend> ready in <s> s`.
    Exit 2 for a Dockerfile that fails (with the end of its log), a base image or
    `image =` that is not on the engine, or an image without python3; for a repository task
    also for a repository the firewall refuses as a task tree (a link leaving it, more entries
    than limits.artifact_entries) or a test patch that does not apply to it.

    With --languages, build each language's image (assay's base image plus the toolchain's
    Debian packages) unless it is there, and print a line per language:
    `<language> <image ref> built|reused <seconds> s <size> MB; <backend> ready in <s> s`.
    Exit 2 for an unknown language, a missing base image, a build that fails or a backend
    that cannot run here; exit 3 when the backend cannot unpack an image."""
    progress = None if quiet else (lambda line: click.echo(line, err=True))
    with exit_codes():
        if task is None and languages is None:
            raise UsageError("name a TASK to build, or --languages NAMES|all")
        runtime = open_runtime(oci_runtime)
        ready = f"; {oci_runtime} ready in"
        if languages is not None:
            names = None if languages == "all" else [n.strip() for n in languages.split(",")]

            def say(image: assay.LanguageImage) -> None:
                assert image.ready_s is not None
                click.echo(
                    f"{image.language} {image.ref} {'built' if image.built else 'reused'} "
                    f"{image.build_s:.1f} s {image.size_bytes / 1e6:.0f} MB"
                    f"{ready} {image.ready_s:.1f} s"
                )

            assay.build_languages(names, progress=progress, done=say, runtime=runtime)
        if task is None:
            return
        loaded = assay.load_task(task)
        if loaded.environment is None:
            click.echo(f"task {loaded.id!r} has no [environment]: it runs on the base image")
            return
        env = assay.build_environment(loaded, progress=progress, runtime=runtime)
        assert env is not None and env.ready_s is not None
        how = f"built in {env.build_s:.1f} s" if env.built else "cached"
        click.echo(f"{env.ref} {env.image_id} {how}{ready} {env.ready_s:.1f} s")
