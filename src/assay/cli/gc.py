"""`assay gc`: remove what gradings of a killed controller left behind."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from assay._internal.runtime.base import Runtime
from assay._internal.runtime.engine import docker_runtime
from assay._internal.runtime.oci.runtime import OciRuntime
from assay._internal.runtime.scope import grading_tempdirs
from assay.errors import AssayError, EngineUnavailableError

from .common import exit_codes


def _temp_dirs(gid: str | None) -> list[Path]:
    return [p for p in grading_tempdirs(gid) if p.is_dir()]


def _backends(oci: OciRuntime) -> list[Runtime]:
    """Every backend that may hold gradings here: the runc backend's state needs no engine,
    so a host whose engine is down still has its runc containers collected."""
    found: list[Runtime] = [oci]
    try:
        found.append(docker_runtime())
    except EngineUnavailableError:
        click.echo("assay gc: no Docker engine answers; only the runc backend was swept", err=True)
    return found


def _image_trees(oci: OciRuntime, everything: bool, dry_run: bool, failures: list[str]) -> int:
    """The runc backend's unpacked images that the engine handed out and no longer has, that
    no other engine handed out and no container is made of (--all: also an older assay's,
    which do not say which engine): removed (listed with --dry-run); how many."""
    try:
        unused = oci.unused_images(unmarked=everything)
        if unused is None:
            click.echo("assay gc: a container does not say which image it is made of (an older "
                       "assay made it); no unpacked image removed", err=True)  # fmt: skip
            return 0
        for image_id in unused:
            what = "would remove" if dry_run else "removing"
            click.echo(
                f"{what} the runc backend's tree of image {image_id[:19]} (not on the engine)"
            )
        return len(unused) if dry_run else (oci.prune_images(unmarked=everything) or 0)
    except EngineUnavailableError:
        return 0  # said once already, by _backends: without an engine no image is known gone
    except AssayError as exc:
        failures.append(f"unpacked images: {exc}")
        return 0


@click.command("gc")
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Remove every assay grading on this host, even one that may still be running.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
def gc_cmd(everything: bool, dry_run: bool) -> None:
    """Remove containers, volumes, mounts, cgroups and temp dirs of gradings whose controller
    is gone, on every backend (the Docker engine and the runc backend), and the runc backend's
    copies of images the engine no longer has (after `docker rmi` or `docker image prune`).

    Without --all, only gradings whose controller process is certainly dead (same host,
    process gone or machine rebooted) are touched, so gc is safe beside running gradings.
    """
    gids: set[str] = set()
    removed = views = 0
    failures: list[str] = []
    oci = OciRuntime()
    with exit_codes():
        for rt in _backends(oci):
            if isinstance(rt, OciRuntime) and not dry_run:
                removed += rt.sweep_stale_state()
                views += rt.collapse_views()
            found = rt.gradings() if everything else rt.orphans()
            gids |= found
            for gid in sorted(found):
                click.echo(f"{'would remove' if dry_run else 'removing'} {gid} ({rt.name})")
                if not dry_run:
                    try:
                        removed += rt.sweep(gid)
                    except AssayError as exc:  # one stuck grading must not shield others
                        failures.append(f"{gid}: {exc}")
            if everything and isinstance(rt, OciRuntime) and not dry_run:
                try:
                    # What is left has no readable meta (an older version's half-made
                    # container): no grading to name, removed by id.
                    removed += rt.sweep()
                except AssayError as exc:
                    failures.append(str(exc))
        trees = _image_trees(oci, everything, dry_run, failures)
        for gid in sorted(gids):
            for d in _temp_dirs(gid):
                click.echo(f"{'would remove' if dry_run else 'removing'} {d}")
                if not dry_run:
                    shutil.rmtree(d, ignore_errors=True)
        if everything:
            for d in _temp_dirs(None):
                click.echo(f"{'would remove' if dry_run else 'removing'} {d}")
                if not dry_run:
                    shutil.rmtree(d, ignore_errors=True)
    click.echo(f"{len(gids)} grading(s), {removed} container(s)/volume(s) removed")
    if trees:
        click.echo(f"{trees} unpacked image(s) {'to remove' if dry_run else 'removed'}")
    if views:
        # An older version's leak (`RootfsCache.collapse_views`), said so it is not a mystery.
        click.echo(f"{views} image view mount(s) stacked by an older assay taken down")
    if failures:
        for line in failures:
            click.echo(f"assay gc: {line}", err=True)
        sys.exit(3)
