"""The `assay` command line. Each subcommand lives next to the boundary it drives."""

from __future__ import annotations

import click

from assay import __version__


@click.group()
@click.version_option(__version__, prog_name="assay")
def main() -> None:
    """Grade AI coding agents; the graded code never touches what grades it."""


# Subcommands register below, one line each.
