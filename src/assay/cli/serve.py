"""`assay serve`: the HTTP service for RL trainers and harnesses (docs/integrations.md)."""

from __future__ import annotations

import logging
from pathlib import Path

import click

import assay
import assay.serve
from assay.errors import UsageError

from .common import engine_options, exit_codes


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind; anything but loopback needs a token.",
)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The bearer token: read from this file, or written there (0600) when it "
    "does not exist. Default: a fresh token, printed at start.",
)
@click.option(
    "--insecure-no-token",
    is_flag=True,
    help="Serve without a token (refused unless --host is a loopback address).",
)
@click.option(
    "--tasks",
    "tasks_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="A task directory, or a directory of them, for POST /v1/grade's `task`.",
)
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Gradings and runs at once.",
)
@click.option(
    "--queue",
    default=256,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="Items that may wait beyond the running ones; past that: 429.",
)
@click.option(
    "--queue-timeout",
    default=120.0,
    show_default=True,
    type=click.FloatRange(1, 3600),
    help="Seconds an item may wait before it ends as an infrastructure error.",
)
@click.option("--max-body-mb", default=16, show_default=True, type=click.IntRange(1, 1024))
@click.option(
    "--head-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0.1, 600),
    help="Seconds a connection may take to send a request's whole head; then it is closed.",
)
@click.option(
    "--max-connections",
    default=1024,
    show_default=True,
    type=click.IntRange(16, 100_000),
    help="Open connections at most; past it, the oldest one still waiting for a head is closed.",
)
@click.option(
    "--inline-cache-mb",
    default=1024,
    show_default=True,
    type=click.IntRange(1, 1 << 20),
    help="Disk for the tasks made from rows' tests, least recently used removed first.",
)
@click.option(
    "--drain-timeout",
    default=600.0,
    show_default=True,
    type=click.FloatRange(0, 86400),
    help="On SIGTERM, seconds the running requests get to finish.",
)
@click.option(
    "--key",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Signing key (default: the per-user key).",
)
@engine_options
def serve_cmd(
    host: str, port: int, token_file: Path | None, insecure_no_token: bool,
    tasks_dir: Path | None, workers: int, queue: int, queue_timeout: float, max_body_mb: int,
    head_timeout: float, max_connections: int, inline_cache_mb: int,
    drain_timeout: float, key: Path | None, oci_runtime: str, base_image: str,
) -> None:  # fmt: skip
    """Grade and run code over HTTP: native grading routes (signed verdicts, a status that
    tells infrastructure errors apart), SandboxFusion's /run_code and Piston's /api/v2."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    with exit_codes():
        if insecure_no_token and token_file is not None:
            raise UsageError("--insecure-no-token and --token-file contradict each other")
        token = None if insecure_no_token else assay.serve.read_token(token_file)
        assay.serve.check_address(host, token)
        tasks = assay.serve.load_tasks(tasks_dir)
        runtime = assay.runtime.open_runtime(oci_runtime, parallel=workers)
        settings = assay.serve.Settings(
            token=token, workers=workers, queue=queue, queue_timeout=queue_timeout,
            max_body_bytes=max_body_mb << 20, head_timeout=head_timeout,
            max_connections=max_connections, inline_cache_bytes=inline_cache_mb << 20,
        )  # fmt: skip

        def announce(service: assay.serve.Service) -> None:
            base = f"http://{host}:{port}"
            shown = base + (f"/{token}" if token and token_file is None else "/<token>")
            click.echo(
                f"assay serve: {base} ({len(tasks)} task(s), languages "
                f"{', '.join(sorted(service.languages))}, {workers} worker(s))",
                err=True,
            )
            click.echo(f"  SandboxFusion: {shown}/run_code   Piston: {shown}/api/v2   "
                       f"native: {shown}/v1/grade", err=True)  # fmt: skip
            if token_file is not None:
                click.echo(f"  token: in {token_file}", err=True)

        with assay.Grader(runtime=runtime, image=base_image, key=key, reuse_judges=True) as g:
            assay.serve.serve(g, host=host, port=port, tasks=tasks, settings=settings,
                              drain_timeout=drain_timeout, announce=announce)  # fmt: skip
