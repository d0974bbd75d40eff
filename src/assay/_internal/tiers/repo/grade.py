"""Repository tasks on the compat tier (T2): SWE-bench's grading, without its log.

  prep (trusted): the repository as the task's environment image holds it at the workdir,
        archived out of a fresh container through the firewall (the pristine tree)
  agent phase + firewall: the compat tier's own (`Grading.take_submission`); the submission
        is the declared paths, overlaid on the pristine tree (it never deletes a file)
  policy: a changed path that reaches pytest or Python's start-up without being code under
        test fails the grading naming its rule (`repo_policy`)
  compose (host): pristine + submission; the files the hidden test patch touches are reset to
        their pristine state (or removed when the patch creates them), and the patch is applied
        exactly (`repo_patch`)
  verify: the compat tier's run (`run_verification`) with the composed tree mounted read-only
        at the workdir, the trusted plugin registered from /assay/compat by its launcher, and
        the FAIL_TO_PASS + PASS_TO_PASS node ids named on the command line; only the JUnit
        report counts (`repo_results`), never the console.

The test patch lives under the task's judge/, which no container of the agent ever sees.
"""

from __future__ import annotations

from pathlib import Path

from assay.errors import TaskError

from ...model.task import PytestSpec, Task
from ...model.testpatch import read_test_patch
from ...model.verdict import Verdict, build_verdict
from ...runtime import Bind, ContainerSpec, GradingScope, Limits, Runtime, Scratch
from ...runtime.scope import new_grading_id
from ..compat.grade import REPORT, REPORT_BYTES, run_verification
from ..compat.junit import parse_junit
from ..compat.prep import INCONTAINER_COMPAT, PYTEST_ARGV, PYTEST_ENV
from ..core.controller import Grading, Source
from ..core.intake import Refused
from .imports import ImportGuard, PluginScanError, import_guard
from .patch import FilePatch, PatchError, touched_paths
from .policy import check_changes
from .probe import run_probe
from .results import evaluate, reconcile_exit
from .tree import (
    AliasFlood,
    PathConflict,
    aliases,
    changed_paths,
    compose,
    patched_test_files,
    pristine_links,
    read_pristine,
)

OUT_BYTES = 8 << 20
CANDIDATE_ENV = "ASSAY_CANDIDATE_DIR"

__all__ = ["check_repository", "grade_repository", "load_test_patch", "repo_argv"]


def spec_of(task: Task) -> PytestSpec:
    spec = task.config.pytest
    if spec is None or not spec.is_repository:
        raise TaskError(str(task.root / "task.toml"), "not a repository task")
    return spec


def expected_ids(spec: PytestSpec) -> tuple[str, ...]:
    assert spec.fail_to_pass is not None
    return (*spec.fail_to_pass, *spec.pass_to_pass)


def load_test_patch(task: Task) -> tuple[FilePatch, ...]:
    """The test patch, read again (as `load_task` did) for this grading: malformed, or touching
    anything outside test_dirs, is a TaskError."""
    spec = spec_of(task)
    assert spec.test_patch is not None
    return read_test_patch(task.judge_dir / spec.test_patch, spec.test_dirs)


def check_repository(rt: Runtime, task: Task, image: str, grading_id: str | None = None) -> int:
    """What every grading of a repository task would find wrong with the task itself, found once
    (`assay build`): the repository in `image` through the firewall as a task tree, the test
    patch under test_dirs and applying to it exactly. Raises TaskError (exit 2); returns the
    number of the repository's links, kept as links."""
    patches = load_test_patch(task)
    with GradingScope(rt, grading_id or f"repo-check-{new_grading_id()}") as scope:
        pristine = read_pristine(scope, task, image)
        nothing = scope.tempdir("repo-check-empty")
        compose(scope.tempdir("repo-check-tree"), pristine, nothing, patches, task)
        return len(pristine_links(pristine))


LAUNCHER = ("python3", "-I", "/assay/compat/pytest_main.py")


def guard_for(
    scope: GradingScope, task: Task, image: str, pristine: Path,
    patches: tuple[FilePatch, ...], ids: tuple[str, ...],
) -> ImportGuard:  # fmt: skip
    """What the image and the pristine tree (with the test patch) load before the tests."""
    toml = str(task.root / "task.toml")
    runs = run_probe(scope, task, image)
    try:
        patched = patched_test_files(scope.tempdir("repo-probe"), pristine, patches)
    except PatchError as exc:
        raise TaskError(toml, f"test patch does not apply: {exc}") from None
    touched = set(touched_paths(patches))
    every = {p.relative_to(pristine).as_posix() for p in pristine.rglob("*") if p.is_file()}
    files = {p for p in every if p not in touched}
    files |= {p for p in touched if (patched / p).is_file()}

    def read(rel: str) -> bytes:
        return ((patched if rel in touched else pristine) / rel).read_bytes()

    test_files = {i.split("::", 1)[0] for i in ids} | {p for p in touched if p.endswith(".py")}
    try:
        return import_guard(runs, task.workdir, frozenset(files), test_files, read)
    except PluginScanError as exc:
        raise TaskError(toml, str(exc)) from None


def repo_argv(workdir: str, ids: tuple[str, ...]) -> tuple[str, ...]:
    """The compat tier's pytest command with the repository as rootdir and conftest cut-off,
    the report on /out, and exactly the listed node ids to run. pytest is started by assay's
    launcher, which registers the trusted plugin from /assay/compat: nothing of assay's lives
    in the repository's tree, where the candidate's files could change how it is imported."""
    assert PYTEST_ARGV[:4] == ("python3", "-I", "-m", "pytest")
    options = tuple(workdir if a == "/judge" else a for a in PYTEST_ARGV[4:])
    return (*LAUNCHER, *options, f"--junitxml=/out/{REPORT}", *(f"{workdir}/{i}" for i in ids))


def grade_repository(
    rt: Runtime, task: Task, source: Source, image: str, grading_id: str | None = None
) -> Verdict:
    spec = spec_of(task)
    patches = load_test_patch(task)
    ids = expected_ids(spec)
    g = Grading(rt, task, "t2", image, gid=grading_id or new_grading_id())
    # The repository lives in the task's environment image (`assay build`), which the pristine
    # tree is read from and the tests run on.
    image = g.task_image
    with g.scope() as scope:
        with g.timed("judge_prepare"):
            pristine = read_pristine(scope, task, image)  # a TaskError when the tree is refused
            links = pristine_links(pristine)
            guard = guard_for(scope, task, image, pristine, patches, ids)

        # The agent starts from the repository as the image has it at the workdir (tiers.seed),
        # its links included: those come back unchanged and are no change.
        taken = g.take_submission(scope, source, links)
        if isinstance(taken, Refused):
            return g.fail(taken.reason)
        changed = changed_paths(pristine, taken.files)
        try:
            named = aliases(changed, links)
        except AliasFlood as flood:
            return g.fail(flood.code)
        refusal = check_changes([*changed, *named], spec.test_dirs, guard)
        if refusal is not None:
            return g.fail(refusal.code)

        with g.timed("verify"):
            try:
                tree = compose(scope.tempdir("repo-tree"), pristine, taken.files, patches, task)
            except PathConflict as conflict:
                return g.fail(conflict.code)
            workdir = task.workdir
            lim = task.config.limits
            vspec = ContainerSpec(
                image=image,
                grading_id=scope.grading_id,
                role="candidate",
                binds=(Bind(tree, workdir), Bind(INCONTAINER_COMPAT, "/assay/compat")),
                scratch=(Scratch("/out", OUT_BYTES),),
                limits=Limits(memory_bytes=lim.memory_mb * 2**20, pids=lim.pids, cpus=lim.cpus),
                workdir="/tmp",
            )
            cases, extra = run_verification(
                scope, task, vspec, repo_argv(workdir, ids), {**PYTEST_ENV, CANDIDATE_ENV: workdir},
                ids,
                lambda raw, code: reconcile_exit(
                    evaluate(parse_junit(raw, ids, max_bytes=REPORT_BYTES), spec.pass_to_pass), code
                ),
            )  # fmt: skip
        return build_verdict(g.facts(), cases, len(ids), extra)
