"""`assay grade-many`: grade many submissions with bounded parallelism; resumable.

Exit codes: 0 every job has a signed verdict (passed or failed); 2 usage or task error;
3 some gradings ended in an infrastructure error (no verdict; rerun to retry them);
130 interrupted (finished verdicts are kept; rerun to resume).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.progress import Task as RichTask
from rich.text import Text

import assay
from assay.batch import (
    BatchJob,
    Outcome,
    Progress,
    Tally,
    drain,
    jobs_from_dir,
    jobs_from_manifest,
    jobs_from_predictions,
)
from assay.errors import UsageError
from assay.runtime import START_DOCKER_FIX

from .common import engine_options, exit_codes, term_as_ctrl_c

EXIT_OK, EXIT_ERRORS, EXIT_INTERRUPTED = 0, 3, 130


class RateColumn(ProgressColumn):
    """Gradings per minute since the start: steadier than a sliding window for slow items."""

    def render(self, task: RichTask) -> Text:
        elapsed = task.elapsed or 0.0
        if elapsed <= 0 or task.completed <= 0:
            return Text("--/min", style="progress.data.speed")
        return Text(f"{task.completed / elapsed * 60:.1f}/min", style="progress.data.speed")


@click.command("grade-many")
@click.argument("task_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    help='JSONL, one {"task": ..., "submission": ..., "id": optional} per line.',
)
@click.option(
    "--submissions",
    type=click.Path(file_okay=False, path_type=Path),
    help="With TASK_DIR: every subdirectory or tar in this directory is one submission.",
)
@click.option(
    "--predictions",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With TASK_DIR (the --out of `assay import swebench`): a SWE-bench predictions file "
    "(JSONL or a .json list of {instance_id, model_name_or_path, model_patch}); each patch is "
    "applied in a fresh offline container of its instance's image and graded.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Verdicts, summary.json and log.jsonl go here; rerunning resumes.",
)
@click.option("--jobs", "parallelism", type=click.IntRange(1, 64), default=2, show_default=True)
@engine_options
@click.option("--key", type=click.Path(dir_okay=False, path_type=Path), help="Signing key.")
@click.option(
    "--fresh-judge",
    is_flag=True,
    help="Start a fresh judge container per grading instead of reusing a reset one per task "
    "(docs/security.md).",
)
@click.option(
    "--ray",
    "ray_address",
    metavar="HOST:PORT",
    help="Grade on the Ray cluster at this address: each grading runs on a node advertising "
    "the resource assay_docker, on that node's Docker engine; this process keeps the key and "
    "signs (docs/scale.md). Needs RAY_AUTH_MODE=token.",
)
@click.option(
    "--ray-insecure-no-auth",
    is_flag=True,
    help="Use a Ray cluster without token authentication (anyone who reaches it runs code "
    "on its nodes). Only on a network you fully control.",
)
def grade_many_cmd(
    task_dir: Path | None,
    manifest: Path | None,
    submissions: Path | None,
    predictions: Path | None,
    out: Path,
    parallelism: int,
    base_image: str,
    oci_runtime: str,
    key: Path | None,
    fresh_judge: bool,
    ray_address: str | None,
    ray_insecure_no_auth: bool,
) -> None:
    """Grade many submissions; one signed verdict each, a summary, and resume on rerun.

    Exit 0 when every job has a verdict, 3 when some had infrastructure errors (rerun to
    retry them), 130 when interrupted (rerun to resume), 2 on usage errors.
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    with term_as_ctrl_c():
        with exit_codes(interrupted="interrupted before any grading started"):
            jobs = _jobs(task_dir, manifest, submissions, predictions)
            grader = assay.Grader(
                image=base_image, oci_runtime=oci_runtime, key=key, reuse_judges=not fresh_judge
            )
            if grader.created_key:
                err.print(f"created signing key; public key at {grader.public_key}", markup=False)
            batch = grader.batch(
                jobs,
                parallel=parallelism,
                ray=ray_address,
                ray_insecure_no_auth=ray_insecure_no_auth,
            )
            where = (
                f"on Ray at {ray_address}, fresh judges"
                if ray_address
                else f"{'fresh' if fresh_judge else 'reused'} judges"
            )
            err.print(
                f"{len(jobs)} job(s), {len(batch.tasks)} task(s) "
                f"[{', '.join(sorted(f'{t}:{tier}' for t, tier in batch.tiers.items()))}], "
                f"--jobs {parallelism}, {where}, out {out}",
                markup=False,
            )
            if ray_insecure_no_auth:
                err.print("warning: Ray token authentication is off (--ray-insecure-no-auth)")
            try:
                with _progress(err) as progress:
                    result = drain(batch.run(out, progress))
            finally:
                grader.close()  # the reused judges go with the batch's last grading
    t = result.tally
    err.print(
        f"passed {t.passed}, failed {t.failed}, errors {t.errors}, not run {result.not_run} "
        f"(of {t.total}; {t.resumed} resumed, {t.graded} graded now) in {result.wall_s:.1f}s; "
        f"summary {out / 'summary.json'}; verify with {grader.public_key}",
        markup=False,
    )
    if result.recovered_containers:
        err.print(
            f"removed {result.recovered_containers} container(s)/volume(s) left by a killed "
            "run or a lost node"
        )
    if result.interrupted:
        err.print("interrupted: finished verdicts are kept; rerun the same command to resume")
        sys.exit(EXIT_INTERRUPTED)
    if result.aborted_engine:
        err.print(f"assay: lost the Docker engine; stopped scheduling\n  fix: {START_DOCKER_FIX}")
    sys.exit(EXIT_ERRORS if t.errors or result.not_run else EXIT_OK)


def _jobs(
    task_dir: Path | None, manifest: Path | None, submissions: Path | None,
    predictions: Path | None,
) -> list[BatchJob]:  # fmt: skip
    if manifest is not None:
        if task_dir is not None or submissions is not None or predictions is not None:
            raise UsageError(
                "--manifest names its tasks; give no TASK_DIR, --submissions or --predictions"
            )
        return jobs_from_manifest(manifest)
    if predictions is not None:
        if task_dir is None or submissions is not None:
            raise UsageError("--predictions FILE takes TASK_DIR (the tasks) and no --submissions")
        return jobs_from_predictions(predictions, task_dir)
    if task_dir is None or submissions is None:
        raise UsageError(
            "give --manifest FILE, TASK_DIR --submissions DIR, or TASK_DIR --predictions FILE"
        )
    return jobs_from_dir(task_dir, submissions)


class _progress:
    """The rich progress bar, driven from the main thread only."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = RichProgress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task_id = self.bar.add_task("grading", total=None, start=False)

    def __enter__(self) -> Progress:
        self.bar.start()
        return Progress(self._plan, self._outcome, self._stopping)

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def _plan(self, to_grade: int, resumed: int) -> None:
        if resumed:
            self.console.print(f"resuming: {resumed} verdict(s) already done and verified")
        self.bar.update(self.task_id, total=to_grade)
        self.bar.start_task(self.task_id)

    def _outcome(self, o: Outcome, t: Tally) -> None:
        desc = f"[green]{t.passed} pass[/] [red]{t.failed} fail[/] [yellow]{t.errors} err[/]"
        self.bar.update(self.task_id, advance=1, description=desc)
        if o.status == "error":
            self.console.print(f"error {o.id}: {o.error}", markup=False, highlight=False)

    def _stopping(self, running: int) -> None:
        self.console.print(
            f"stopping: no new gradings; waiting for {running} running one(s) to finish "
            "(Ctrl-C again to abort them)"
        )
