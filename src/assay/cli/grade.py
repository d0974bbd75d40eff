"""`assay grade`: one task, one submission, one signed verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

import assay
from assay.errors import UsageError

from .common import engine_options, exit_codes

EXIT_PASSED, EXIT_FAILED = 0, 1


def print_diagnostics(console: Console, diagnostics: assay.Diagnostics) -> None:
    """Failed cases explained; every character that could steer a terminal is escaped
    (they hold candidate bytes)."""
    for d in diagnostics.cases:
        console.print(f"  case {d.id}: {d.reason}", markup=False, highlight=False)
        parts = [("diff", d.diff)] if d.diff else [("expected", d.expected), ("actual", d.actual)]
        for label, text in parts:
            console.print(f"    {label}:", markup=False, highlight=False)
            for line in assay.printable(text).splitlines()[:40]:
                console.print(f"      {line}", markup=False, highlight=False, soft_wrap=True)


def diagnostics_target(envelope: Path) -> Path:
    stem = envelope.name.removesuffix(".json").removesuffix(".dsse")
    return envelope.with_name(f"{stem}.diag.json")


def by_label(v: assay.Verdict) -> str:
    """` hidden=P/N visible=P/N` for an imported task, whose case ids carry the label
    (`hidden:private-3`, docs/stdio.md "Datasets in"); empty for any other task."""
    parts = []
    for label in ("hidden", "visible"):
        mine = [c for c in v.cases if c.id.startswith(f"{label}:")]
        if mine:
            parts.append(f" {label}={sum(c.status == 'pass' for c in mine)}/{len(mine)}")
    return "".join(parts)


def _summary(console: Console, v: assay.Verdict, out: Path) -> None:
    mark = "[bold green]PASSED[/]" if v.passed else "[bold red]FAILED[/]"
    n_pass = sum(c.status == "pass" for c in v.cases)
    console.print(
        f"{mark} {v.task_id} tier={v.tier} score={v.score:.3f} "
        f"cases={n_pass}/{v.expected_case_count}{by_label(v)} grading={v.grading_id}"
    )
    for c in v.cases:
        how = "  ".join(x for x in (c.reason, c.checker and f"checker {c.checker}") if x)
        line = f"  {c.status:8} {c.id}  ({c.duration_s:.3f}s)" + (f"  {how}" if how else "")
        console.print(line, markup=False)
    if v.reason_codes:
        console.print("  reasons: " + ", ".join(v.reason_codes), markup=False)
    if v.notes:
        console.print("  notes: " + ", ".join(v.notes), markup=False)
    console.print(f"  signed verdict: {out}", markup=False)


@click.command("grade")
@click.argument("task_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--submission", type=click.Path(path_type=Path), help="Directory or tar to grade.")
@click.option(
    "--patch",
    "patch_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A unified diff to grade (SWE-bench's model_patch), for a task with an [environment]: "
    "applied at its workdir in a fresh offline container of its image (assay.Patch).",
)
@click.option("--agent-cmd", help="Run this as the agent in the agent container.")
@click.option(
    "--agent-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Directory mounted read-only at /agent for --agent-cmd.",
)
@click.option("--tier", type=click.Choice(list(assay.TIER_TITLES)), help="Override the tier.")
@click.option(
    "--unsafe-baseline",
    is_flag=True,
    help="Allow the unsafe baselines t0/t1 (for demonstrating attacks only).",
)
@engine_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Envelope path.")
@click.option("--key", type=click.Path(dir_okay=False, path_type=Path), help="Signing key.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict JSON on stdout.")
def grade_cmd(
    task_dir: Path,
    submission: Path | None,
    patch_file: Path | None,
    agent_cmd: str | None,
    agent_dir: Path | None,
    tier: str | None,
    unsafe_baseline: bool,
    base_image: str,
    oci_runtime: str,
    out: Path | None,
    key: Path | None,
    as_json: bool,
) -> None:
    """Grade TASK_DIR; exit 0 passed, 1 failed, 2 usage or task error, 3 no verdict."""
    err = Console(stderr=True)
    with exit_codes(interrupted="interrupted: grading stopped, its containers and files removed"):
        if sum(x is not None for x in (submission, patch_file, agent_cmd)) != 1:
            raise UsageError(
                "give exactly one of --submission PATH, --patch FILE and --agent-cmd CMD"
            )
        if agent_dir is not None and agent_cmd is None:
            raise UsageError("--agent-dir only goes with --agent-cmd")
        task = assay.load_task(task_dir)
        chosen = assay.Grader.tier_for(task, tier, unsafe_baseline=unsafe_baseline)
        if chosen in assay.UNSAFE_TIERS:
            err.print(
                f"[bold yellow]warning:[/] {chosen} is an UNSAFE baseline; its verdict "
                "can be forged by the submission. Never use it to score anything."
            )
        with assay.Grader(image=base_image, oci_runtime=oci_runtime, key=key) as grader:
            if grader.created_key:
                err.print(f"created signing key; public key at {grader.public_key}", markup=False)
            what: assay.Submission = submission or Path()
            if agent_cmd is not None:
                what = assay.Agent(agent_cmd, agent_dir)
            if patch_file is not None:
                what = assay.Patch(patch_file.read_bytes())
            graded = grader.grade(task, what, tier=chosen, unsafe_baseline=unsafe_baseline)
        verdict = graded.verdict
        target = out or Path("assay-out") / f"{verdict.grading_id}.dsse.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(graded.envelope)
        diag_file = diagnostics_target(target)
        diag_file.unlink(missing_ok=True)  # an older grading's must not pass for this one's
        if graded.diagnostics is not None:
            diag_file.write_bytes(graded.diagnostics.to_json())
    if as_json:
        click.echo(verdict.model_dump_json(indent=2))
    else:
        console = Console()
        _summary(console, verdict, target)
        if graded.diagnostics is not None:
            print_diagnostics(console, graded.diagnostics)
            console.print(f"  diagnostics (for the task owner): {diag_file}", markup=False)
    sys.exit(EXIT_PASSED if verdict.passed else EXIT_FAILED)
