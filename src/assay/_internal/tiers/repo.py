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

import os
import shutil
from pathlib import Path, PurePosixPath
from time import monotonic

from assay.errors import TaskError

from ..firewall.check import FirewallLimits
from ..model.task import PytestSpec, Task
from ..model.verdict import Verdict, build_verdict
from ..runtime import Bind, ContainerSpec, GradingScope, Limits, Runtime, Scratch
from ..runtime.scope import new_grading_id
from .baselines import _pack_submission
from .compat import REPORT, REPORT_BYTES, run_verification
from .compat_prep import INCONTAINER_COMPAT, PREP_LIMITS, PYTEST_ARGV, PYTEST_ENV
from .controller import Grading, Source
from .intake import Refused, take_from_container
from .junit import parse_junit
from .repo_patch import FilePatch, PatchError, apply_patch, parse_patch, touched_paths
from .repo_policy import check_changes, is_cache
from .repo_results import evaluate, reconcile_exit

REPO_BYTES = 256 << 20
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
        t0 = monotonic()
        pristine = _pristine(scope, task, image)
        g.lap("judge_prepare", t0)
        if isinstance(pristine, Refused):
            return g.fail(pristine.reason)

        # The agent starts from the repository, owned by its user, at the workdir.
        seed = _pack_submission(pristine) if source.agent_cmd is not None else None
        taken = g.take_submission(scope, source, seed)
        if isinstance(taken, Refused):
            return g.fail(taken.reason)
        refusal = check_changes(changed_paths(pristine, taken.files), spec.test_dirs)
        if refusal is not None:
            return g.fail(refusal.code)

        t0 = monotonic()
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
        g.lap("verify", t0)
        return build_verdict(g.facts(), cases, len(ids), extra)


def _pristine(scope: GradingScope, task: Task, image: str) -> Path | Refused:
    """The repository at the workdir of a fresh container of the task's image, through the
    firewall (no links, no special files, capped)."""
    workdir = task.workdir
    cid = scope.container(
        ContainerSpec(
            image=image, grading_id=scope.grading_id, role="repository", limits=PREP_LIMITS,
            workdir="/tmp",
        )
    )  # fmt: skip
    limits = FirewallLimits(max_total_bytes=REPO_BYTES, max_file_bytes=REPO_BYTES)
    taken = take_from_container(
        scope, cid, workdir, REPO_BYTES * 2, limits, None, PurePosixPath(workdir).name,
        "repo-pristine", "judge-firewall",
    )  # fmt: skip
    scope.discard(cid)
    if isinstance(taken, Refused):
        return taken
    if (taken.files / "conftest.py").exists():
        raise TaskError(
            str(task.root / "task.toml"),
            f"the repository has a conftest.py at {workdir}; assay's own goes there",
        )
    return taken.files


def _files(root: Path) -> dict[str, Path]:
    """Every regular file under `root` by relative path, caches left out (`is_cache`)."""
    found: dict[str, Path] = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if not is_cache(rel):
                found[rel] = p
    return found


def changed_paths(pristine: Path, submission: Path) -> list[str]:
    """The submitted files that are new or differ from the pristine tree."""
    before = _files(pristine)
    changed = []
    for rel, path in _files(submission).items():
        old = before.get(rel)
        if old is None or old.read_bytes() != path.read_bytes():
            changed.append(rel)
    return sorted(changed)


class PathConflict(Exception):
    """A submitted file where the repository has a directory, or below one of its files."""


def compose(
    dest: Path, pristine: Path, submission: Path, patches: tuple[FilePatch, ...], task: Task
) -> Path:
    """pristine + submission, the test patch's files reset and the patch applied, the trusted
    conftest at the root; world-readable for the unprivileged test run."""
    tree = dest / "repo"
    shutil.copytree(pristine, tree, symlinks=True)
    for rel, path in _files(submission).items():
        target = tree / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise PathConflict(rel) from None
        if target.is_dir():
            raise PathConflict(rel)
        shutil.copyfile(path, target, follow_symlinks=False)
    for rel in touched_paths(patches):
        target = tree / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        original = pristine / rel
        if original.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(original, target)
    try:
        apply_patch(tree, patches)
    except PatchError as exc:
        # Every file it touches was just reset to the task's own, so this is the task's fault.
        raise TaskError(str(task.root / "task.toml"), f"test patch does not apply: {exc}") from None
    shutil.copyfile(INCONTAINER_COMPAT / "conftest.py", tree / "conftest.py")
    for dirpath, _dirs, names in os.walk(tree):
        os.chmod(dirpath, 0o755)  # noqa: S103 - read-only bind for the unprivileged test run
        for name in names:
            os.chmod(Path(dirpath) / name, 0o644)
    return tree
