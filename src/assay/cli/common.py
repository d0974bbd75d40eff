"""What the commands share: the engine options, and the one place an error becomes an exit code."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn, TypeVar

import click

from assay.errors import AssayError, InternalError
from assay.runtime import BACKENDS, DEFAULT_BACKEND, DEFAULT_BASE_IMAGE

F = TypeVar("F", bound=Callable[..., object])

EXIT_INTERRUPTED = 130


RUNTIME_HELP = (
    "The container backend: runc (direct, no daemon; the default, or $ASSAY_RUNTIME), "
    "runsc (gVisor, direct), docker, or docker-runsc (gVisor through the engine). "
    "`assay doctor` says which work here."
)


def runtime_option(fn: F, help: str = RUNTIME_HELP) -> F:
    """--runtime (the parameter `oci_runtime`): a backend's name, $ASSAY_RUNTIME by default."""
    return click.option(
        "--runtime",
        "oci_runtime",
        type=click.Choice(list(BACKENDS)),
        default=lambda: os.environ.get("ASSAY_RUNTIME") or DEFAULT_BACKEND,
        help=help,
    )(fn)


def engine_options(fn: F) -> F:
    """--base-image and --runtime, the same on every command that starts containers."""
    fn = runtime_option(fn)
    return click.option(
        "--base-image", default=lambda: os.environ.get("ASSAY_BASE_IMAGE", DEFAULT_BASE_IMAGE)
    )(fn)


def say_error(message: str) -> None:
    # Plain echo, not rich: the reason must stay one unwrapped line for people and scripts.
    click.echo(message, err=True)


def fail(exc: AssayError, render: Callable[[AssayError], None] | None = None) -> NoReturn:
    """Report `exc` and exit with its code: 1 verification, 2 usage or task, 3 no verdict."""
    if render is not None:
        render(exc)
    else:
        say_error(f"assay: {exc.diagnostics()}")
    sys.exit(exc.exit_code)


@contextmanager
def exit_codes(
    interrupted: str | None = None, render: Callable[[AssayError], None] | None = None
) -> Iterator[None]:
    """Run a command's body: an AssayError exits with its code, Ctrl-C with 130 after printing
    `interrupted` (when the command has something to say about what was cleaned up)."""
    try:
        yield
    except KeyboardInterrupt:
        if interrupted is None:
            raise
        say_error(interrupted)
        sys.exit(EXIT_INTERRUPTED)
    except AssayError as exc:
        fail(exc, render)
    except click.ClickException:
        raise
    except Exception as exc:
        # Anything nobody raised on purpose (a full disk while writing the verdict, a bug) must
        # not end as a traceback with exit 1, the code for FAILED: it is no verdict (exit 3).
        say_error(f"assay: {InternalError.reason}: {type(exc).__name__}: {str(exc)[:300]}")
        sys.exit(InternalError.exit_code)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def term_as_ctrl_c() -> Iterator[None]:
    """SIGTERM handled as Ctrl-C while the block runs: what a supervisor (CI, a job runner)
    sends reaches the same clean-up, and it does when the parent started this with SIGINT
    ignored (a background job of a script), where Ctrl-C's SIGINT is ignored too."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
