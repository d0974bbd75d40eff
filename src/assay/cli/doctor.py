"""`assay doctor`: which runtime backends work on this host, and why not."""

from __future__ import annotations

import os
import sys

import click

from assay.runtime import DEFAULT_BACKEND, DEFAULT_BASE_IMAGE, diagnose

from .common import exit_codes


@click.command("doctor")
@click.option(
    "--base-image", default=lambda: os.environ.get("ASSAY_BASE_IMAGE", DEFAULT_BASE_IMAGE)
)
@click.option("--conformance", is_flag=True, help="Also run the whole conformance suite.")
def doctor_cmd(base_image: str, conformance: bool) -> None:
    """Try every backend with a real container; exit 2 if the default one does not work."""
    with exit_codes():
        found = diagnose(base_image, conformance=conformance)
    for s in found:
        mark = "works" if s.works else "does not work"
        extra = f" ({s.probe_s * 1000:.0f} ms for one container)" if s.probe_s is not None else ""
        default = " [default]" if s.name == DEFAULT_BACKEND else ""
        click.echo(f"{s.name}{default}: {mark}{extra}")
        for why in s.why_not:
            click.echo(f"  - {why}")
    if not any(s.works for s in found if s.name == DEFAULT_BACKEND):
        working = [s.name for s in found if s.works]
        click.echo(
            f"assay doctor: the default backend {DEFAULT_BACKEND} does not work here; "
            + (f"pass --runtime {working[0]}" if working else "no backend works"),
            err=True,
        )
        sys.exit(2)
