"""Repository tasks on the compat tier (T2): SWE-bench's grading, without its log.

  prep (trusted): the repository as the task's environment image holds it at the workdir,
        archived out of a fresh container through the firewall (the pristine tree)
  agent phase + firewall: the compat tier's own (`Grading.take_submission`); the submission
        is the declared paths, overlaid on the pristine tree (it never deletes a file)
  policy: a changed path that reaches pytest or Python's start-up without being code under
        test fails the grading naming its rule (`repo_policy`)
  compose (host): pristine + submission; the files the hidden test patch touches are reset to
        their pristine state (or removed when the patch creates them), the patch is applied
        exactly (`repo_patch`), and the trusted compat conftest is written at the root
  verify: the compat tier's run (`run_verification`) with the composed tree mounted read-only
        at the workdir and the FAIL_TO_PASS + PASS_TO_PASS node ids named on the command
        line; only the JUnit report counts (`repo_results`), never the console.

The test patch lives under the task's judge/, which no container of the agent ever sees.
"""

from __future__ import annotations

from assay.errors import TaskError

from ..model.task import PytestSpec, Task
from ..model.verdict import Verdict, build_verdict
from ..runtime import Bind, ContainerSpec, Limits, Runtime, Scratch
from ..runtime.scope import new_grading_id
from .compat import REPORT, REPORT_BYTES, run_verification
from .compat_prep import INCONTAINER_COMPAT, PYTEST_ARGV, PYTEST_ENV
from .controller import Grading, Source
from .intake import Refused
from .junit import parse_junit
from .repo_patch import FilePatch, PatchError, parse_patch
from .repo_policy import check_changes
from .repo_results import evaluate, reconcile_exit
from .repo_tree import PathConflict, changed_paths, compose, read_pristine

OUT_BYTES = 8 << 20
CANDIDATE_ENV = "ASSAY_CANDIDATE_DIR"

__all__ = ["grade_repository", "load_test_patch", "repo_argv"]


def spec_of(task: Task) -> PytestSpec:
    spec = task.config.pytest
    if spec is None or not spec.is_repository:
        raise TaskError(str(task.root / "task.toml"), "not a repository task")
    return spec


def expected_ids(spec: PytestSpec) -> tuple[str, ...]:
    assert spec.fail_to_pass is not None
    return (*spec.fail_to_pass, *spec.pass_to_pass)


def load_test_patch(task: Task) -> tuple[FilePatch, ...]:
    spec = spec_of(task)
    assert spec.test_patch is not None
    path = task.judge_dir / spec.test_patch
    try:
        return parse_patch(path.read_bytes())
    except PatchError as exc:
        raise TaskError(str(path), f"test patch: {exc}") from None


def repo_argv(workdir: str, ids: tuple[str, ...]) -> tuple[str, ...]:
    """The compat tier's pytest command with the repository as rootdir and conftest cut-off,
    the report on /out, and exactly the listed node ids to run."""
    head = tuple(workdir if a == "/judge" else a for a in PYTEST_ARGV)
    return (*head, f"--junitxml=/out/{REPORT}", *(f"{workdir}/{i}" for i in ids))


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
            pristine = read_pristine(scope, task, image)
        if isinstance(pristine, Refused):
            return g.fail(pristine.reason)

        # The agent starts from the repository as the image has it at the workdir (tiers.seed).
        taken = g.take_submission(scope, source)
        if isinstance(taken, Refused):
            return g.fail(taken.reason)
        refusal = check_changes(changed_paths(pristine, taken.files), spec.test_dirs)
        if refusal is not None:
            return g.fail(refusal.code)

        with g.timed("verify"):
            try:
                tree = compose(scope.tempdir("repo-tree"), pristine, taken.files, patches, task)
            except PathConflict:
                return g.fail("repo:path-conflict")
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
