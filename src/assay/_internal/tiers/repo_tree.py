"""A repository task's trees on the host: the pristine repository read out of the task's
environment image, what a submission changes in it, and the tree the tests run on (see
`repo`). Shared by T2 and the SWE-bench-style baselines."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from assay.errors import TaskError

from ..firewall.check import FirewallLimits
from ..model.task import Task
from ..runtime import ContainerSpec, GradingScope
from ..runtime.base import AGENT_UID
from .compat_prep import INCONTAINER_COMPAT, PREP_LIMITS
from .intake import Crossing, Refused, take_from_container
from .repo_patch import FilePatch, PatchError, apply_patch, touched_paths
from .repo_policy import is_cache

REPO_BYTES = 256 << 20


def read_pristine(scope: GradingScope, task: Task, image: str) -> Path | Refused:
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
    top = PurePosixPath(workdir).name
    how = Crossing(limits, None, top, "repo-pristine", "judge-firewall")
    taken = take_from_container(scope, cid, workdir, REPO_BYTES * 2, how)
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


def _owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if is_cache(info.name):
        return None
    info.uid = info.gid = AGENT_UID
    info.uname = info.gname = ""
    return info


def pack(root: Path) -> bytes:
    """The tree under `root` as a tar of its contents, owned by the agent's user."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for child in sorted(root.iterdir()):
            tf.add(child, arcname=child.name, recursive=True, filter=_owned)
    return buf.getvalue()


def patched_test_files(dest: Path, pristine: Path, patches: tuple[FilePatch, ...]) -> Path:
    """Only the files the test patch touches, as it leaves them (the baselines copy these
    over whatever the agent left, as SWE-bench's eval script resets and applies)."""
    tree = dest / "tests-only"
    tree.mkdir()
    for rel in touched_paths(patches):
        if (pristine / rel).is_file():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pristine / rel, tree / rel)
    apply_patch(tree, patches)
    return tree
