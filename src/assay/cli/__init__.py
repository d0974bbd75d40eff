"""The `assay` command line. Each subcommand lives next to the boundary it drives."""

from __future__ import annotations

import click

from assay._version import __version__


@click.group()
@click.version_option(__version__, prog_name="assay")
def main() -> None:
    """Grade AI coding agents; the graded code never touches what grades it."""


# Subcommands register below, one line each.
from assay.cli.grade import grade_cmd  # noqa: E402

main.add_command(grade_cmd)
from assay.cli.keys import keygen, verify  # noqa: E402

main.add_command(keygen)
main.add_command(verify)
from assay.cli.firewall import firewall as firewall_group  # noqa: E402

main.add_command(firewall_group)
from assay.cli.grade_many import grade_many_cmd  # noqa: E402

main.add_command(grade_many_cmd)
from assay.cli.bench import bench_cmd  # noqa: E402

main.add_command(bench_cmd)
from assay.cli.matrix import matrix_cmd  # noqa: E402

main.add_command(matrix_cmd)
from assay.cli.gc import gc_cmd  # noqa: E402

main.add_command(gc_cmd)
from assay.cli.importer import import_cmd  # noqa: E402

main.add_command(import_cmd)
from assay.cli.build import build_cmd  # noqa: E402

main.add_command(build_cmd)
from assay.cli.report import report_cmd  # noqa: E402

main.add_command(report_cmd)
from assay.cli.doctor import doctor_cmd  # noqa: E402

main.add_command(doctor_cmd)
from assay.cli.serve import serve_cmd  # noqa: E402

main.add_command(serve_cmd)
from assay.cli.validate import validate_cmd  # noqa: E402

main.add_command(validate_cmd)
from assay.cli.impossible import impossible_cmd  # noqa: E402

main.add_command(impossible_cmd)
