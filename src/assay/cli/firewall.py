"""`assay firewall check`: vet any tar archive with the same firewall the grader uses."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import BinaryIO, cast

import click

from assay.errors import UsageError
from assay.firewall import Accepted, Rejected, check, display


@click.group()
def firewall() -> None:
    """The archive firewall: prove an archive safe to extract, or name the rule it breaks."""


@firewall.command("check")
@click.argument("archive", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--artifacts",
    "artifacts",
    multiple=True,
    metavar="GLOB",
    help="Keep only files matching this glob (repeatable; '**' spans directories).",
)
@click.option(
    "--strip-prefix",
    metavar="DIR",
    help="Remove this leading directory from names "
    "(e.g. 'workspace' for Docker's get_archive of /workspace).",
)
@click.option(
    "--output",
    "output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the normalised archive here (must not exist).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def check_command(
    archive: Path,
    artifacts: tuple[str, ...],
    strip_prefix: str | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """Exit 0 and print the manifest if ARCHIVE is accepted, 1 and the rule if rejected."""
    try:
        with contextlib.ExitStack() as stack:
            source = stack.enter_context(archive.open("rb"))
            sink = (
                cast(BinaryIO, _NullSink())
                if output is None
                else stack.enter_context(output.open("xb"))
            )
            result = check(
                source,
                sink,
                artifacts=list(artifacts) if artifacts else None,
                strip_prefix=strip_prefix,
            )
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    except FileExistsError:
        raise click.UsageError(f"{output} already exists") from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or archive}: {exc.strerror}") from None
    if isinstance(result, Rejected) and output is not None:
        os.unlink(output)
    click.echo(_render_json(result) if as_json else _render_text(result))
    raise SystemExit(0 if isinstance(result, Accepted) else 1)


class _NullSink(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, b: object) -> int:
        return len(memoryview(b))  # type: ignore[arg-type]


def _render_json(result: Accepted | Rejected) -> str:
    if isinstance(result, Rejected):
        body: dict[str, object] = {
            "status": "rejected",
            "rule": result.rule,
            "member": result.member,
            "detail": result.detail,
        }
    else:
        body = {
            "status": "accepted",
            "digest": result.digest,
            "size": result.size,
            "manifest": [
                {"path": e.path, "kind": e.kind, "size": e.size, "sha256": e.sha256}
                for e in result.manifest
            ],
            "dropped": list(result.dropped),
        }
    return json.dumps(body, indent=2, ensure_ascii=True)


def _render_text(result: Accepted | Rejected) -> str:
    if isinstance(result, Rejected):
        return f"rejected: {result.rule}\n  member: {result.member}\n  {result.detail}"
    files = sum(1 for e in result.manifest if e.kind == "file")
    lines = [
        f"accepted: {files} files, {len(result.manifest) - files} directories, "
        f"{len(result.dropped)} dropped; normalised {result.size} bytes, {result.digest}"
    ]
    for entry in result.manifest:
        if entry.kind == "dir":
            lines.append(f"  dir  {'':>12}  {'':64}  {display(entry.path)}/")
        else:
            lines.append(f"  file {entry.size:>12}  {entry.sha256}  {display(entry.path)}")
    lines.extend(f"  dropped  {display(path)}" for path in result.dropped)
    return "\n".join(lines)
