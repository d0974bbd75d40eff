"""A repository task's trees on the host: the pristine repository read out of the task's
environment image, what a submission changes in it, and the tree the tests run on (see
`repo`). Shared by T2 and the SWE-bench-style baselines."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
from pathlib import Path, PurePosixPath

from assay.errors import TaskError

from ...firewall.check import FirewallLimits
from ...firewall.treelinks import MAX_HOPS, resolve
from ...model.task import Task
from ...runtime import ContainerSpec, GradingScope
from ...runtime.base import AGENT_UID
from ..compat.prep import PREP_LIMITS
from ..core.intake import Crossing, Refused, take_from_container
from .patch import FilePatch, PatchError, apply_patch, touched_paths
from .policy import is_cache

REPO_BYTES = 256 << 20


def read_pristine(scope: GradingScope, task: Task, image: str) -> Path:
    """The repository at the workdir of a fresh container of the task's image, through the
    firewall as a trusted task tree: links that resolve inside it are kept as links, a hard link
    becomes a copy, no special files, capped. Anything refused is the task's fault, the same for
    every submission: a TaskError (exit 2), never a failed verdict."""
    workdir = task.workdir
    cid = scope.container(
        ContainerSpec(
            image=image, grading_id=scope.grading_id, role="repository", limits=PREP_LIMITS,
            workdir="/tmp",
        )
    )  # fmt: skip
    entries = task.config.limits.artifact_entries
    limits = FirewallLimits(
        max_entries=entries, max_total_bytes=REPO_BYTES, max_file_bytes=REPO_BYTES
    )
    top = PurePosixPath(workdir).name
    how = Crossing(limits, None, top, "repo-pristine", "task-tree", tree=True)
    taken = take_from_container(scope, cid, workdir, REPO_BYTES * 2, how)
    scope.discard(cid)
    if isinstance(taken, Refused):
        raise TaskError(str(task.root / "task.toml"), _refusal(taken, workdir, entries))
    return taken.files


def _refusal(refused: Refused, workdir: str, entries: int) -> str:
    what = f"the repository at {workdir} in the environment image is refused"
    if refused.reason.endswith(":entry-count"):
        return (
            f"{what}: it has more than limits.artifact_entries = {entries} entries (files, "
            "directories and links); raise that limit in task.toml"
        )
    return f"{what} ({refused.reason}) at {refused.member}: {refused.detail}"


def pristine_links(pristine: Path) -> frozenset[tuple[str, str]]:
    """The repository's own symbolic links as (path, target): the same link in a submission is
    no change (`firewall.check`'s `same_links`)."""
    found = set()
    for dirpath, dirs, names in os.walk(pristine):
        for name in (*dirs, *names):
            p = Path(dirpath) / name
            if p.is_symlink():
                found.add((p.relative_to(pristine).as_posix(), os.readlink(p)))
    return frozenset(found)


MAX_ALIASES = 100_000
TOO_MANY_ALIASES = "repo:too-many-aliases"


class AliasFlood(Exception):
    """The changed paths have more names through the repository's links than the policy judges:
    the submission chose how many paths it changes (ten thousand files under a directory that
    eleven links name), so the grading fails, naming `TOO_MANY_ALIASES`, rather than ending in
    a task error (exit 2, no verdict) or judging only some names."""

    code = TOO_MANY_ALIASES


def aliases(changed: list[str], links: frozenset[tuple[str, str]]) -> list[str]:
    """The other names the repository's links give the changed paths: with `tests/util.py ->
    ../pkg/util.py` a change to `pkg/util.py` is one to `tests/util.py` too, and the path policy
    judges both (else a task's link would open its test directories to the submission). Raises
    `AliasFlood` past `MAX_ALIASES` names."""
    table = dict(links)
    leads = {link: resolve(link, table) for link in table}  # contained: the firewall checked
    # A link to one of its own ancestors (`tests/root -> ..`) names nothing anew: everything under
    # it is already reachable by its own path. Counting it would refuse every change and loop.
    leads = {k: t for k, t in leads.items() if t and not k.startswith(t + "/")}
    found: set[str] = set()
    fresh = set(changed)
    for _round in range(MAX_HOPS):  # an alias of an alias: a link into a linked directory
        more: set[str] = set()
        for link, target in leads.items():
            for path in fresh:
                if path == target or path.startswith(target + "/"):
                    more.add(link + path[len(target) :])
        fresh = more - found - set(changed)
        found |= fresh
        if len(found) > MAX_ALIASES:
            raise AliasFlood(f"the changes have over {MAX_ALIASES} names through links")
        if not fresh:
            break
    return sorted(found)


def _files(root: Path) -> dict[str, Path]:
    """Every regular file under `root` by relative path, caches left out (`is_cache`). Links are
    not files: the repository's are its own, and a submission has none."""
    found: dict[str, Path] = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if not is_cache(rel) and not p.is_symlink():
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
    """A submitted file the composed tree has no place for; `code` is the verdict's reason."""

    def __init__(self, code: str, path: str) -> None:
        super().__init__(f"{code}: {path}")
        self.code = code
        self.path = path


CONFLICT = "repo:path-conflict"
"""A submitted file where the repository or the test patch has a directory, or below a file."""
THROUGH_LINK = "repo:through-link"
"""A submitted file at a path that is a link in the repository, or below one."""


def _conflict(tree: Path, rel: str, patched: tuple[str, ...]) -> str | None:
    """Why the submitted file `rel` cannot be written into `tree` (pristine so far), or None.
    Nothing here follows a link: each component is looked at with lstat."""
    parts = rel.split("/")
    here = tree
    for i, part in enumerate(parts):
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            break  # nothing of the repository from here on: created as directories
        if stat.S_ISLNK(mode):
            return THROUGH_LINK
        last = i == len(parts) - 1
        if stat.S_ISDIR(mode) == last:  # a directory where the file goes, a file on the way
            return CONFLICT
    for path in patched:
        if path.startswith(rel + "/") or rel.startswith(path + "/"):
            return CONFLICT  # the test patch writes a file above or below this one
    return None


def compose(
    dest: Path, pristine: Path, submission: Path, patches: tuple[FilePatch, ...], task: Task
) -> Path:
    """pristine + submission, the test patch's files reset and the patch applied;
    world-readable for the unprivileged test run. Nothing of assay's goes into it."""
    tree = dest / "repo"
    shutil.copytree(pristine, tree, symlinks=True)
    patched = touched_paths(patches)
    for rel in patched:
        if _conflict(tree, rel, ()) == THROUGH_LINK:
            raise TaskError(str(task.root / "task.toml"), f"the test patch writes through a "
                            f"link of the repository: {rel!r}")  # fmt: skip
    for rel, path in sorted(_files(submission).items()):
        code = _conflict(tree, rel, patched)
        if code is not None:
            raise PathConflict(code, rel)
        target = tree / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        except OSError:
            # Checked above; a file and a directory of the submission itself cannot collide
            # either (the firewall refuses that), so this is a conflict missed, failed closed.
            raise PathConflict(CONFLICT, rel) from None
        with os.fdopen(fd, "wb") as out, path.open("rb") as src:
            shutil.copyfileobj(src, out)
    for rel in patched:
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
    for dirpath, _dirs, names in os.walk(tree):
        os.chmod(dirpath, 0o755)  # noqa: S103 - read-only bind for the unprivileged test run
        for name in names:
            if not os.path.islink(Path(dirpath) / name):  # chmod would follow it
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
