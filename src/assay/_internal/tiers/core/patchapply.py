"""A diff as a submission (SWE-bench's `model_patch`): applied on the untrusted side.

No diff parser runs on the host for a candidate's patch. The patch is hostile input: it is
handed, as a file, to a fresh, offline, limited agent container of the task's image, where
the image's own `git apply` (then `patch`) applies it at the workdir; the tree it leaves
crosses the firewall exactly as an agent's workspace does (intake.run_agent), and is then
graded as any submission of files is.

The attempts follow swebench 5.0.2's `GIT_APPLY_CMDS`, minus `git apply --reject`, which
applies the hunks that fit and leaves the rest in `.rej` files: a part of the patch is not
the submission. Each attempt is checked first (`--check`, `--dry-run`) so a failed one leaves
nothing behind for the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.errors import TaskEnvironmentError, UsageError

from ...model.task import Task
from ...runtime import GradingScope
from .intake import Refused, Submission, run_agent

MAX_PATCH_BYTES = 16 << 20
"""A patch larger than this fails the grading (`patch:too-large`) before any container runs."""

PATCH_DIR = "/agent"
PATCH_NAME = "model.patch"
NO_TOOL_EXIT = 125
"""The apply script's exit status when the image has neither git nor patch: the task's fault."""

APPLY_SCRIPT = f"""set -u
p={PATCH_DIR}/{PATCH_NAME}
have=0
if command -v git >/dev/null 2>&1; then
  have=1
  if git apply --check "$p" >/dev/null 2>&1; then exec git apply --verbose "$p"; fi
fi
if command -v patch >/dev/null 2>&1; then
  have=1
  if patch --batch --forward --fuzz=5 -p1 --dry-run -i "$p" >/dev/null 2>&1; then
    exec patch --batch --forward --fuzz=5 -p1 -i "$p"
  fi
fi
if [ "$have" = 1 ] && command -v git >/dev/null 2>&1; then exec git apply --verbose --3way "$p"; fi
[ "$have" = 1 ] && exit 1
exit {NO_TOOL_EXIT}
"""

EMPTY = "patch:empty"
TOO_LARGE = "patch:too-large"
DOES_NOT_APPLY = "patch:does-not-apply"


@dataclass(frozen=True)
class PatchSource:
    """A diff to apply in the agent container (bytes exactly as given, never parsed here)."""

    diff: bytes


def check_patch(diff: bytes) -> Refused | None:
    """What fails a patch before any container: empty (whitespace only), or over the cap."""
    if not diff.strip():
        return Refused(EMPTY, PATCH_NAME, "the patch is empty")
    if len(diff) > MAX_PATCH_BYTES:
        return Refused(TOO_LARGE, PATCH_NAME, f"the patch is over {MAX_PATCH_BYTES} bytes")
    return None


def apply_patch(
    scope: GradingScope,
    task: Task,
    image: str,
    diff: bytes,
    same_links: frozenset[tuple[str, str]] = frozenset(),
) -> Submission | Refused:
    """Apply `diff` in an agent container of `image` at the task's workdir and take the tree
    out through the firewall. A patch that applies by none of the attempts (or whose apply
    times out) is `patch:does-not-apply`. Raises TaskEnvironmentError when the image has
    neither git nor patch, and UsageError for a task without an `[environment]`."""
    if (refused := check_patch(diff)) is not None:
        return refused
    if task.environment is None:
        raise UsageError(
            f"task {task.id}: a patch submission needs a task with an [environment] (the "
            "repository it applies to)"
        )
    holder: Path = scope.tempdir("patch")
    (holder / PATCH_NAME).write_bytes(diff)
    holder.chmod(0o755)
    (holder / PATCH_NAME).chmod(0o644)
    taken, run = run_agent(scope, task, image, APPLY_SCRIPT, holder, same_links)
    if run.exit_code == NO_TOOL_EXIT:
        raise TaskEnvironmentError(
            str(task.root / "task.toml"),
            "the task's image has neither git nor patch to apply a patch submission with",
        )
    if run.timed_out or run.exit_code != 0:
        return Refused(DOES_NOT_APPLY, PATCH_NAME, f"the patch does not apply ({run.exit_code})")
    return taken
