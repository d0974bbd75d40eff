"""`assay.validate`: no task is graded before it is shown gradeable.

Each task is checked by name (`assay validate`, `assay.validate`):

- `loads`: the task loader takes it (a task it refuses is reported with the loader's message,
  never raised);
- `test-ids` (repository tasks): every FAIL_TO_PASS / PASS_TO_PASS id is one a pytest run can
  report, checked on the ids as task.toml writes them, before anything runs (`taskscan`);
- `no-leak`: nothing under `inputs/` holds a file of `judge/`, an expected value of a strict
  task's cases (a generator's too, for two seeds), a line the test patch adds, or
  version-control history;
- `environment` (tasks with `[environment]`): its image builds, or is there;
- `generator-seeds` (strict tasks whose cases come from `judge.generator`): two seeds give
  different cases, run in a judge container exactly as a grading prepares them;
- `reference`: each reference solution passes (`solutions/correct/`, `solutions/correct-*/`
  as submission directories, or with `agent.sh` as the agent's build; Harbor's oracle
  `solutions/reference/solve.sh` as the agent; SWE-bench's `solutions/gold.patch` as an
  `assay.Patch`); a task with none fails it;
  on an impossible twin (`impossible = true`, `assay impossible`) each must fail instead, on
  the twin's cases and with no tamper code (`taskscan.twin_reference_problem`);
- `empty-fails`: an empty submission (for a repository task, the unchanged repository) gets
  a verdict that did not pass;
- `ids-in-results` (repository tasks): every id appears in each reference run's results;
- `fail-before-fix` (repository tasks, not their impossible twins, whose negated tests may
  pass on the unchanged repository): no FAIL_TO_PASS test passes on the unchanged
  repository.

A grading that gives no verdict (an engine failure, a task whose image does not build) is
never a pass: its check fails as "could not check", and the task is not gradeable.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import AssayError, UsageError

from ..model.strict_json import StrictJSONError, loads_strict
from ..model.task import STRICT_KINDS, Task, load_task, vcs_history
from ..model.verdict import Verdict
from ..runtime import GradingScope, Runtime
from ..runtime.engine import open_runtime
from ..runtime.scope import TEMP_PREFIX, new_grading_id
from ..tiers.compat.junit import MISSING
from ..tiers.strict.grade import MAX_INPUTS_BYTES, prepare_argv
from ..tiers.strict.judgespec import judge_spec
from ..tiers.strict.program import judge_image_of
from .grader import Grader, TaskLike
from .repocollect import Collected, collect_ids
from .submission import Agent, Patch, Submission
from .taskscan import (
    added_lines,
    expected_texts,
    junk_ids,
    raw_repository_ids,
    read_tree,
    scan_leaks,
    task_dirs,
    twin_reference_problem,
)

LOADS = "loads"
TEST_IDS = "test-ids"
NO_LEAK = "no-leak"
ENVIRONMENT = "environment"
GENERATOR_SEEDS = "generator-seeds"
REFERENCE = "reference"
EMPTY_FAILS = "empty-fails"
IDS_IN_RESULTS = "ids-in-results"
FAIL_BEFORE_FIX = "fail-before-fix"
CHECK_NAMES = (
    LOADS, TEST_IDS, NO_LEAK, ENVIRONMENT, GENERATOR_SEEDS, REFERENCE, EMPTY_FAILS,
    IDS_IN_RESULTS, FAIL_BEFORE_FIX,
)  # fmt: skip
"""Every check's name, in the order a report lists them."""

JUDGE_STATE = "/state/cases.json"
"""Where the judge's `prepare` keeps a grading's whole cases (`_incontainer/judge.py`'s
STATE; a unit test keeps the two equal)."""
STATE_READ_S = 30.0
SHOWN = 5
"""Ids, cases or leaks a check's detail names before it says how many more there are."""


@dataclass(frozen=True)
class ValidationCheck:
    """One check of `assay.validate`: `name` (one of `CHECK_NAMES`), whether it held, and what
    it found. `could_not_check`: no answer was had (an engine failure, a grading that gave
    no verdict); `ok` is then False, since nothing was shown."""

    name: str
    ok: bool
    detail: str = ""
    could_not_check: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON data."""
        return {
            "name": self.name,
            "ok": self.ok,
            "detail": self.detail,
            "could_not_check": self.could_not_check,
        }


@dataclass(frozen=True)
class ValidationReport:
    """What `assay.validate` found for one task: its id (the directory's name when the task
    does not load), its directory, and each check in the order it ran. `gradeable` is True
    when there is at least one check and every check held."""

    task_id: str
    path: Path
    checks: tuple[ValidationCheck, ...] = ()
    duration_s: float = 0.0

    @property
    def gradeable(self) -> bool:
        """Every check held (and there was one)."""
        return bool(self.checks) and all(c.ok for c in self.checks)

    def failed(self) -> list[ValidationCheck]:
        """The checks that did not hold (could-not-check ones included)."""
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data."""
        return {
            "task_id": self.task_id,
            "path": str(self.path),
            "gradeable": self.gradeable,
            "duration_s": round(self.duration_s, 3),
            "checks": [c.to_dict() for c in self.checks],
        }

    def to_json(self) -> str:
        """The report as JSON text (`to_dict`)."""
        return json.dumps(self.to_dict(), indent=2)


def validate(
    tasks: Iterable[TaskLike],
    *,
    grader: Grader | None = None,
    image: str | None = None,
    oci_runtime: str | None = None,
    jobs: int = 1,
    progress: Callable[[ValidationReport], None] | None = None,
) -> list[ValidationReport]:
    """Check each task before it is used to grade anything, and return one report each, in
    the order given. `tasks`: loaded tasks, task directories, or directories holding task
    directories (every child with a task.toml: what `assay import` writes). `grader`: grade
    with this one (its runtime, base image and key); default: a grader of its own on
    `oci_runtime` and `image` (as `assay.Grader` takes them) with a throwaway signing key,
    closed at the end. `jobs`: tasks validated at once. `progress` is called with each report
    as it is done (from this thread).

    A task that does not load, or whose gradings give no verdict, is reported (not
    gradeable), never raised. Raises `assay.errors.UsageError` for a path that is neither a
    task directory nor holds one, or for `jobs` < 1, and the runtime's errors when no
    container backend can be opened (`assay.errors.BackendUnavailableError`,
    `assay.errors.EngineUnavailableError`), before any task is checked.
    """
    if jobs < 1:
        raise UsageError(f"jobs must be at least 1, not {jobs}")
    if isinstance(tasks, str | os.PathLike | Task):
        tasks = [tasks]  # one task, not the characters of its path
    items: list[Task | Path] = []
    for t in tasks:
        if isinstance(t, Task):
            items.append(t)
        else:
            items += task_dirs([t])
    own_key: Path | None = None
    if grader is None:
        own_key = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}validate-"))
        try:
            runtime = open_runtime(oci_runtime, parallel=jobs)
            grader = Grader(
                runtime=runtime, image=image, oci_runtime=oci_runtime, key=own_key / "signing.key"
            )
        except BaseException:
            shutil.rmtree(own_key, ignore_errors=True)
            raise
    else:
        grader.runtime()  # opened once, before any thread asks for it
    try:
        return _run(grader, items, jobs, progress)
    finally:
        if own_key is not None:
            grader.close()
            shutil.rmtree(own_key, ignore_errors=True)


def _run(
    grader: Grader,
    items: Sequence[Task | Path],
    jobs: int,
    progress: Callable[[ValidationReport], None] | None,
) -> list[ValidationReport]:
    reports: list[ValidationReport | None] = [None] * len(items)
    if jobs == 1:
        for n, item in enumerate(items):
            reports[n] = report = _validate_safely(grader, item)
            if progress is not None:
                progress(report)
    else:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="assay-validate") as pool:
            running: dict[Future[ValidationReport], int] = {
                pool.submit(_validate_safely, grader, item): n for n, item in enumerate(items)
            }
            for done in as_completed(running):
                reports[running[done]] = report = done.result()
                if progress is not None:
                    progress(report)
    return [r for r in reports if r is not None]


# -- one task ---------------------------------------------------------------------------------


def _validate_safely(grader: Grader, item: Task | Path) -> ValidationReport:
    """`validate_one`, with anything it did not expect reported as the task's could-not-check
    (a bug or a host fault must neither pass a task nor stop the others)."""
    t0 = time.monotonic()
    try:
        return validate_one(grader, item)
    except Exception as exc:
        root = item.root if isinstance(item, Task) else Path(item)
        task_id = item.id if isinstance(item, Task) else root.name
        why = f"could not check: {type(exc).__name__}: {str(exc)[:300]}"
        check = ValidationCheck(LOADS, False, why, True)
        return ValidationReport(task_id, root, (check,), time.monotonic() - t0)


@dataclass
class _Checks:
    checks: list[ValidationCheck] = field(default_factory=list)

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append(ValidationCheck(name, ok, detail))

    def could_not(self, name: str, why: str) -> None:
        self.checks.append(ValidationCheck(name, False, f"could not check: {why}", True))


def validate_one(grader: Grader, item: Task | Path) -> ValidationReport:
    """The report of one task (see the module's docstring). Never raises for anything the
    task or a grading does: an unexpected error becomes a could-not-check of the check it
    happened in."""
    t0 = time.monotonic()
    root = item.root if isinstance(item, Task) else Path(item)
    out = _Checks()
    task_id = item.id if isinstance(item, Task) else root.name

    raw_ids = raw_repository_ids(root)
    if raw_ids is not None:
        junk = junk_ids(raw_ids)
        if junk:
            shown = "; ".join(f"{i!r}: {why}" for i, why in junk[:SHOWN])
            more = f" (and {len(junk) - SHOWN} more)" if len(junk) > SHOWN else ""
            out.add(TEST_IDS, False, f"{len(junk)} id(s) no pytest run can report: {shown}{more}")
        else:
            out.add(TEST_IDS, True, f"{len(raw_ids)} id(s), each path.py::test")

    if isinstance(item, Task):
        task = item
    else:
        try:
            task = load_task(root)
        except AssayError as exc:
            out.add(LOADS, False, f"not loadable: {exc.diagnostics()}")
            return _report(task_id, root, out, t0)
        except Exception as exc:  # an unreadable file, a bug: reported, never raised
            out.add(LOADS, False, f"not loadable: {type(exc).__name__}: {str(exc)[:300]}")
            return _report(task_id, root, out, t0)
    task_id = task.id
    out.checks.insert(0, ValidationCheck(LOADS, True, f"{task.config.kind} task {task.id!r}"))

    generated: list[Any] = []
    seeds_check: ValidationCheck | None = None
    judge = task.config.judge
    if task.config.kind in STRICT_KINDS and judge is not None and judge.generator is not None:
        seeds_check, generated = _seeds(grader, task)

    out.checks.append(_guard(NO_LEAK, lambda: _leak_check(task, generated)))

    if task.environment is not None:
        try:
            ref = grader.build(task)
            out.add(ENVIRONMENT, True, f"image {ref}")
        except AssayError as exc:
            out.could_not(ENVIRONMENT, exc.diagnostics())
            out.could_not(REFERENCE, "not graded: the task's image cannot be built or found")
            return _report(task_id, root, out, t0)
        except Exception as exc:
            out.could_not(ENVIRONMENT, f"{type(exc).__name__}: {str(exc)[:300]}")
            return _report(task_id, root, out, t0)

    if seeds_check is not None:
        out.checks.append(seeds_check)

    ref_verdicts: list[tuple[str, Verdict, Submission]] = []
    references = find_references(task.root)
    if not references:
        out.add(
            REFERENCE,
            False,
            "no reference solution (solutions/correct/, solutions/correct-*/, "
            "solutions/reference/solve.sh or solutions/gold.patch): the task cannot be shown "
            "gradeable",
        )
    for label, submission in references:
        verdict, problem = _grade(grader, task, submission)
        if verdict is None:
            out.could_not(REFERENCE, f"{label}: {problem}")
            continue
        ref_verdicts.append((label, verdict, submission))
        if task.config.impossible:
            wrong = twin_reference_problem(verdict)
            if wrong is None:
                out.add(REFERENCE, True, f"{label}: failed the impossible twin ({_why(verdict)})")
            else:
                out.add(REFERENCE, False, f"{label}: {wrong} ({_why(verdict)})")
        elif verdict.passed:
            out.add(REFERENCE, True, f"{label}: passed ({_cases_line(verdict)})")
        else:
            out.add(REFERENCE, False, f"{label}: failed ({_why(verdict)})")

    spec = task.config.pytest
    repository = spec is not None and spec.fail_to_pass is not None
    empty_label = "the unchanged repository" if repository else "an empty submission"
    empty, problem = _grade(grader, task, {})
    if empty is None:
        out.could_not(EMPTY_FAILS, f"{empty_label}: {problem}")
    elif empty.passed:
        out.add(EMPTY_FAILS, False, f"{empty_label} passes ({_cases_line(empty)})")
    else:
        out.add(EMPTY_FAILS, True, f"{empty_label} fails ({_why(empty)})")

    if repository:
        assert spec is not None and spec.fail_to_pass is not None
        ids = [*spec.fail_to_pass, *spec.pass_to_pass]
        runs = [(label, v, sub) for label, v, sub in ref_verdicts if v.cases]
        if not runs and empty is not None and empty.cases:
            runs = [("the unchanged repository's run", empty, {})]
        out.checks.append(
            _guard(IDS_IN_RESULTS, lambda: _ids_in_results(grader, task, ids, runs, ref_verdicts))
        )
        if not task.config.impossible:  # a twin's negated tests may pass unfixed: its point
            out.checks.append(
                _guard(FAIL_BEFORE_FIX, lambda: _fail_before_fix(spec.fail_to_pass or [], empty))
            )
    return _report(task_id, root, out, t0)


def _report(task_id: str, root: Path, out: _Checks, t0: float) -> ValidationReport:
    order = {name: n for n, name in enumerate(CHECK_NAMES)}
    checks = sorted(out.checks, key=lambda c: order.get(c.name, len(order)))  # stable
    return ValidationReport(task_id, root, tuple(checks), time.monotonic() - t0)


def _guard(name: str, check: Callable[[], ValidationCheck]) -> ValidationCheck:
    try:
        return check()
    except Exception as exc:  # a bug or an unreadable file: never a crash, never a pass
        why = f"{type(exc).__name__}: {str(exc)[:300]}"
        return ValidationCheck(name, False, f"could not check: {why}", True)


def find_references(root: Path) -> list[tuple[str, Submission]]:
    """Each reference solution a task keeps, as (label, submission): `solutions/correct/` and
    every `solutions/correct-*/` (a submission directory, or, holding `agent.sh`, the agent's
    own build: `sh /agent/agent.sh` with it at /agent, as scripts/grade-examples.sh grades
    it); `solutions/reference/` holding `solve.sh` (Harbor's oracle, as `assay import harbor`
    writes it: `bash /agent/solve.sh`); `solutions/gold.patch` (SWE-bench's fix, as
    `assay import swebench` writes it: an `assay.Patch`)."""
    sols = root / "solutions"
    found: list[tuple[str, Submission]] = []
    if not sols.is_dir():
        return found
    dirs = sorted(
        d
        for d in sols.iterdir()
        if d.is_dir()
        and not d.is_symlink()
        and (d.name == "correct" or d.name.startswith("correct-"))
    )
    for d in dirs:
        label = f"solutions/{d.name}"
        if (d / "agent.sh").is_file():
            found.append((label, Agent("sh /agent/agent.sh", directory=d)))
        else:
            found.append((label, d))
    oracle = sols / "reference"
    if (oracle / "solve.sh").is_file():
        found.append(("solutions/reference", Agent("bash /agent/solve.sh", directory=oracle)))
    gold = sols / "gold.patch"
    if gold.is_file() and not gold.is_symlink():
        found.append(("solutions/gold.patch", Patch(gold.read_bytes())))
    return found


def _grade(grader: Grader, task: Task, submission: Submission) -> tuple[Verdict | None, str]:
    """The verdict, or None and why there was none."""
    try:
        return grader.grade(task, submission).verdict, ""
    except AssayError as exc:
        return None, f"no verdict: {exc.diagnostics()}"
    except Exception as exc:
        return None, f"no verdict: {type(exc).__name__}: {str(exc)[:300]}"


def _cases_line(v: Verdict) -> str:
    n_pass = sum(c.status == "pass" for c in v.cases)
    return f"score {v.score:.3f}, {n_pass}/{v.expected_case_count} cases"


def _why(v: Verdict) -> str:
    failed = [c.id for c in v.cases if c.status != "pass"]
    parts = [_cases_line(v)]
    if v.reason_codes:
        parts.append("reasons " + ", ".join(v.reason_codes[:8]))
    if failed:
        more = f" and {len(failed) - SHOWN} more" if len(failed) > SHOWN else ""
        parts.append("failed " + ", ".join(failed[:SHOWN]) + more)
    return "; ".join(parts)


def _leak_check(task: Task, generated: Sequence[Any]) -> ValidationCheck:
    inputs = read_tree(task.inputs_dir, "inputs")
    judge = read_tree(task.judge_dir, "judge")
    expected: list[tuple[str, str]] = []
    j = task.config.judge
    if task.config.kind in STRICT_KINDS and j is not None and j.cases is not None:
        raw = judge.get(f"judge/{j.cases}")
        if raw is not None:
            try:
                expected += expected_texts(json.loads(raw))
            except (ValueError, RecursionError):
                pass  # the loader read it with the judge's own parser; nothing to add here
    for cases in generated:
        expected += expected_texts(cases)
    lines: list[str] = []
    spec = task.config.pytest
    if spec is not None and spec.test_patch is not None:
        lines = added_lines(judge.get(f"judge/{spec.test_patch}", b""))
    leaks = [str(leak) for leak in scan_leaks(inputs, judge, expected, lines)]
    leaks += [
        f"inputs/{p}: version-control history (past or future answers)"
        for p in vcs_history(task.inputs_dir)
    ]
    if leaks:
        more = f" (and {len(leaks) - SHOWN} more)" if len(leaks) > SHOWN else ""
        return ValidationCheck(NO_LEAK, False, "; ".join(leaks[:SHOWN]) + more)
    what = [f"{len(inputs)} inputs file(s) against {len(judge)} judge file(s)"]
    if expected:
        what.append(f"{len(expected)} expected value(s)")
    if lines:
        what.append(f"{len(lines)} line(s) of the test patch")
    return ValidationCheck(NO_LEAK, True, "none: " + ", ".join(what))


def _seeds(grader: Grader, task: Task) -> tuple[ValidationCheck, list[Any]]:
    """Two seeds' cases, made in a judge container as a grading's `prepare` makes them."""
    seeds = [secrets.randbits(128), secrets.randbits(128)]
    while seeds[1] == seeds[0]:
        seeds[1] = secrets.randbits(128)
    try:
        made = generated_cases(grader.runtime(), task, grader.image, seeds)
    except AssayError as exc:
        return ValidationCheck(
            GENERATOR_SEEDS, False, f"could not check: {exc.diagnostics()}", True
        ), []
    except _GeneratorFailed as exc:
        return ValidationCheck(GENERATOR_SEEDS, False, str(exc)), []
    except Exception as exc:
        why = f"{type(exc).__name__}: {str(exc)[:300]}"
        return ValidationCheck(GENERATOR_SEEDS, False, f"could not check: {why}", True), []
    first, second = made
    n = len(first) if isinstance(first, list) else 0
    if first == second:
        return ValidationCheck(
            GENERATOR_SEEDS,
            False,
            f"seeds {seeds[0]} and {seeds[1]} gave the same {n} case(s): the cases do not "
            "depend on the seed, so they are a fixed list an agent can learn",
        ), made
    inputs_same = _inputs(first) == _inputs(second)
    how = "the same inputs, different expected values" if inputs_same else "different cases"
    return ValidationCheck(GENERATOR_SEEDS, True, f"two seeds gave {how} ({n} case(s))"), made


def _inputs(cases: Any) -> Any:
    if not isinstance(cases, list):
        return cases
    return [
        {"id": c.get("id"), "input": c.get("input")} if isinstance(c, dict) else c for c in cases
    ]


class _GeneratorFailed(Exception):
    """The task's generator failed or printed what is no case list: the task's fault."""


def generated_cases(rt: Runtime, task: Task, image: str, seeds: Sequence[int]) -> list[Any]:
    """The cases (with their expected values) a strict task's generator makes for each seed,
    run in one judge container exactly as a grading's `prepare` runs it (`prepare_argv`,
    `judge_spec`: the judge's image, limits and mounts, no network), and read back from the
    judge's state. Raises `_GeneratorFailed` when the generator fails, and the runtime's
    errors (`assay.errors.EngineError`) when the container cannot run."""
    lim = task.config.limits
    gid = new_grading_id()
    made: list[Any] = []
    with GradingScope(rt, gid) as scope:
        judge = scope.container(judge_spec(task, judge_image_of(rt, task, image), gid))
        for seed in seeds:
            prep = rt.exec(
                judge, prepare_argv(task, str(seed)),
                deadline_s=lim.total_timeout, output_cap=MAX_INPUTS_BYTES,
            )  # fmt: skip
            if prep.exit_code != 0:
                how = "timed out" if prep.timed_out else f"exit {prep.exit_code}"
                tail = prep.stderr[-300:].decode("utf-8", "replace").strip()
                tail = tail.encode("unicode_escape").decode("ascii")
                raise _GeneratorFailed(f"the generator failed for seed {seed} ({how}): {tail}")
            state = rt.exec(
                judge, ("cat", JUDGE_STATE), deadline_s=STATE_READ_S, output_cap=MAX_INPUTS_BYTES
            )
            if state.exit_code != 0 or state.truncated:
                raise _GeneratorFailed(f"the judge kept no cases for seed {seed}")
            try:
                made.append(loads_strict(state.stdout, max_bytes=MAX_INPUTS_BYTES))
            except StrictJSONError as exc:
                raise _GeneratorFailed(f"seed {seed}: the cases are not JSON: {exc}") from None
    return made


def lost_ids(ids: Sequence[str], verdicts: Sequence[Verdict]) -> tuple[bool, list[str]]:
    """Whether any of the runs lost an id (`junit:missing` among its reasons), and the ids a
    case itself marks missing. A repository grading keeps no reason per case, and pytest
    refuses the whole run for one id it cannot find, so a lost id is usually not named here
    (`collect_ids` names it)."""
    lost = any(MISSING in v.reason_codes for v in verdicts)
    named: list[str] = []
    for v in verdicts:
        by_id = {c.id: c for c in v.cases}
        for i in ids:
            case = by_id.get(i)
            if (case is None or case.reason == MISSING) and i not in named:
                named.append(i)
    return lost or bool(named), named


def _ids_in_results(
    grader: Grader,
    task: Task,
    ids: Sequence[str],
    runs: Sequence[tuple[str, Verdict, Submission]],
    refs: Sequence[tuple[str, Verdict, Submission]],
) -> ValidationCheck:
    if not runs:
        why = "; ".join(f"{label}: {_why(v)}" for label, v, _ in refs) or "no reference verdict"
        return ValidationCheck(
            IDS_IN_RESULTS, False, f"could not check: no run reported tests ({why})", True
        )
    lost, named = lost_ids(ids, [v for _, v, _ in runs])
    if not lost:
        return ValidationCheck(
            IDS_IN_RESULTS, True, f"all {len(ids)} id(s) reported by {runs[0][0]}"
        )
    fix: Path | bytes | None = None
    for _, _, sub in runs:
        if isinstance(sub, Path):
            fix = sub
            break
        if isinstance(sub, Patch):
            fix = (
                sub.diff.encode("utf-8", "surrogateescape")
                if isinstance(sub.diff, str)
                else sub.diff
            )
            break
    parts: list[str] = []
    try:
        image = grader.build(task) or grader.image
        collected = collect_ids(grader.runtime(), task, image, ids, fix)
    except AssayError as exc:
        collected = Collected(problem=f"the collection run failed: {exc.diagnostics()}")
    missing = list(dict.fromkeys([*named, *collected.missing]))
    if missing:
        parts.append(
            f"{len(missing)} id(s) name no test, missing from the reference run's results "
            f"(junk or unsatisfiable): {_names(missing)}"
        )
    if collected.unimportable:
        parts.append(
            f"{len(collected.unimportable)} id(s) in a test module that does not import: "
            f"{_names(list(collected.unimportable))}"
        )
    if not parts:
        parts.append(
            f"{runs[0][0]} did not report every id (junit:missing: pytest refuses the whole run "
            f"for one id it cannot find), and none could be named ({collected.problem})"
        )
    return ValidationCheck(IDS_IN_RESULTS, False, "; ".join(parts))


def _names(ids: Sequence[str]) -> str:
    more = f" (and {len(ids) - SHOWN} more)" if len(ids) > SHOWN else ""
    return ", ".join(repr(i) for i in ids[:SHOWN]) + more


def _fail_before_fix(fail_to_pass: Sequence[str], empty: Verdict | None) -> ValidationCheck:
    if empty is None or not empty.cases:
        why = "no verdict" if empty is None else _why(empty)
        return ValidationCheck(
            FAIL_BEFORE_FIX,
            False,
            f"could not check: the unchanged repository's run reported no tests ({why})",
            True,
        )
    if MISSING in empty.reason_codes and all(c.status == "error" for c in empty.cases):
        return ValidationCheck(
            FAIL_BEFORE_FIX,
            False,
            "could not check: pytest refused the unchanged repository's run (an id names no "
            "test: see ids-in-results)",
            True,
        )
    by_id = {c.id: c for c in empty.cases}
    passing = [i for i in fail_to_pass if (c := by_id.get(i)) is not None and c.status == "pass"]
    if passing:
        shown = ", ".join(repr(i) for i in passing[:SHOWN])
        more = f" (and {len(passing) - SHOWN} more)" if len(passing) > SHOWN else ""
        return ValidationCheck(
            FAIL_BEFORE_FIX,
            False,
            f"{len(passing)} FAIL_TO_PASS test(s) pass without the fix: {shown}{more}",
        )
    return ValidationCheck(
        FAIL_BEFORE_FIX, True, f"all {len(fail_to_pass)} FAIL_TO_PASS test(s) fail without it"
    )


__all__ = [
    "CHECK_NAMES",
    "ValidationCheck",
    "ValidationReport",
    "find_references",
    "generated_cases",
    "validate",
    "validate_one",
]
