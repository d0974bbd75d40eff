"""Which FAIL_TO_PASS / PASS_TO_PASS ids of a repository task name no test, by name.

A grading cannot say: the repository tier hands pytest exactly the listed ids, and pytest
refuses the whole run when one of them names nothing (`ERROR: not found`, exit 4), so every
id comes back missing (`junit:missing`) and the culprit is lost. `assay validate` then asks
pytest itself, once: the repository as the task's image holds it (read through the firewall
as every grading reads it), with the reference fix when there is one as files or a patch and
the hidden test patch applied (`tiers.repo.tree.compose`), is mounted read-only in a fresh,
hardened, offline container of the task's image, and the grading's own pytest command runs
with `--collect-only`. No submission is in that tree: only the task's own files.

An id whose file is not in the tree is named without pytest; pytest names the others on its
console (`ERROR: not found: <workdir>/<id>`). An id in a test module that fails to import
there (an `ERROR collecting <file>`) cannot be told apart from a missing one, and is reported
as such.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..model.task import Task
from ..model.testpatch import PatchError, parse_patch
from ..runtime import Bind, ContainerSpec, GradingScope, Limits, Runtime, Scratch
from ..runtime.scope import new_grading_id
from ..tiers.compat.prep import INCONTAINER_COMPAT, PYTEST_ENV
from ..tiers.repo.grade import CANDIDATE_ENV, OUT_BYTES, load_test_patch, repo_argv
from ..tiers.repo.patch import FilePatch, apply_patch
from ..tiers.repo.tree import PathConflict, compose, read_pristine

CONSOLE_BYTES = 4 << 20
_COLLECT_ERROR = re.compile(r"^_+ ERROR collecting (.+?) _+$")


@dataclass(frozen=True)
class Collected:
    """What a collection run found: ids that name no test (`missing`), ids in a test module
    that did not import (`unimportable`), and, when it could not run or said nothing of
    either, why (`problem`)."""

    missing: tuple[str, ...] = ()
    unimportable: tuple[str, ...] = ()
    problem: str = ""


def file_part(node_id: str) -> str:
    """The file a node id names, as the JUnit reader splits it."""
    return node_id.split("[", 1)[0].split("::", 1)[0]


def parse_collection(console: str, workdir: str, ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(missing, unimportable) among `ids` from pytest's console: `ERROR: not found: ARG` for
    each argument that matched nothing (`workdir/<id>`), `ERROR collecting FILE` (relative to
    the rootdir, the workdir) for each module that failed to import; an id whose file failed
    is unimportable rather than missing. Only listed ids are ever returned, so nothing else of
    the console reaches a report."""
    wanted = {f"{workdir.rstrip('/')}/{i}": i for i in ids}
    not_found: list[str] = []
    broken: set[str] = set()
    for line in console.splitlines():
        if line.startswith("ERROR: not found: "):
            arg = line.removeprefix("ERROR: not found: ").rstrip()
            if arg in wanted and wanted[arg] not in not_found:
                not_found.append(wanted[arg])
        elif m := _COLLECT_ERROR.match(line.strip()):
            broken.add(m.group(1).removeprefix(workdir.rstrip("/") + "/"))
    missing = [i for i in not_found if file_part(i) not in broken]
    unimportable = [i for i in not_found if file_part(i) in broken]
    return missing, unimportable


def collect_ids(
    rt: Runtime,
    task: Task,
    image: str,
    ids: Sequence[str],
    reference: Path | bytes | None = None,
) -> Collected:
    """Ask pytest which of `ids` name no test in the task's repository (see the module's
    docstring). `image`: the task's environment image. `reference`: the reference fix, a
    directory of files (`solutions/correct/`) or a unified diff (`solutions/gold.patch`),
    composed in when it fits, so that a test module importing what the fix adds imports.
    Raises `assay.errors.TaskError` when the repository or the test patch is the task's
    fault (as a grading would), and the runtime's errors when a container cannot run."""
    patches = load_test_patch(task)
    workdir = task.workdir
    lim = task.config.limits
    gid = new_grading_id()
    with GradingScope(rt, gid) as scope:
        pristine = read_pristine(scope, task, image)
        tree = _tree(scope, task, pristine, patches, reference)
        no_file = [i for i in ids if not (tree / file_part(i)).is_file()]
        rest = [i for i in ids if i not in no_file]
        if not rest:
            return Collected(tuple(no_file))
        spec = ContainerSpec(
            image=image,
            grading_id=gid,
            role="candidate",
            binds=(Bind(tree, workdir), Bind(INCONTAINER_COMPAT, "/assay/compat")),
            scratch=(Scratch("/out", OUT_BYTES),),
            limits=Limits(memory_bytes=lim.memory_mb * 2**20, pids=lim.pids, cpus=lim.cpus),
            workdir="/tmp",
        )
        cid = scope.container(spec)
        run = rt.exec(
            cid, (*repo_argv(workdir, tuple(rest)), "--collect-only"),
            deadline_s=lim.total_timeout, output_cap=CONSOLE_BYTES,
            env={**PYTEST_ENV, CANDIDATE_ENV: workdir}, workdir="/tmp",
        )  # fmt: skip
    console = (run.stdout + b"\n" + run.stderr).decode("utf-8", "replace")
    missing, unimportable = parse_collection(console, workdir, rest)
    problem = ""
    if run.timed_out or run.truncated:
        problem = "the collection run " + ("timed out" if run.timed_out else "printed too much")
    elif not (no_file or missing or unimportable):
        problem = f"pytest's collection (exit {run.exit_code}) named no id it cannot find"
    return Collected(tuple(no_file + missing), tuple(unimportable), problem)


def _tree(
    scope: GradingScope,
    task: Task,
    pristine: Path,
    patches: tuple[FilePatch, ...],
    reference: Path | bytes | None,
) -> Path:
    """pristine + the reference fix (when it fits) + the test patch."""
    if isinstance(reference, Path):
        try:
            return compose(scope.tempdir("validate-tree"), pristine, reference, patches, task)
        except PathConflict:
            pass  # collected without it; an import that needs the fix shows as unimportable
    tree = compose(
        scope.tempdir("validate-tree"), pristine, scope.tempdir("validate-none"), patches, task
    )
    if isinstance(reference, bytes):
        try:
            fix = parse_patch(reference)
            touched = {fp.path for fp in patches}
            apply_patch(tree, [fp for fp in fix if fp.path not in touched])
        except (PatchError, OSError):
            pass  # as above: the fix is trusted task content, but not always exact
        for dirpath, _dirs, names in os.walk(tree):  # readable by the unprivileged run
            os.chmod(dirpath, 0o755)  # noqa: S103
            for name in names:
                if not os.path.islink(Path(dirpath) / name):
                    os.chmod(Path(dirpath) / name, 0o644)
    return tree
