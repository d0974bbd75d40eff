"""Compat tier (T2), trusted preparation: ground truth and expected test ids, before any
candidate code exists.

Both run in one judge-side container that holds the task's judge/ and no candidate: the truth
generator writes its files under /judge-state, and, when task.toml declares no test ids, a
collect-only pytest pass (the candidate's modules answered by inert stubs) lists them. What
comes out crosses the firewall like any other archive; the truth is then mounted read-only in
the verification container.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from assay.errors import TaskError

from ...firewall.check import FirewallLimits
from ...model.strict_json import StrictJSONError, loads_strict
from ...model.task import PytestSpec, Task
from ...runtime import Bind, ContainerSpec, GradingScope, Limits, Scratch
from ..core.intake import Crossing, Refused, take_from_container
from ..core.paths import INCONTAINER
from .junit import check_expected_ids

INCONTAINER_COMPAT = INCONTAINER / "compat"
PREP_LIMITS = Limits(memory_bytes=1 << 30, pids=64, cpus=1.0)
STATE_BYTES = 16 << 20
COLLECT_BYTES = 4 << 20
MAX_TESTS = 10_000
_PRINTABLE_ID = re.compile(r"[\x20-\x7e]{1,256}")

PYTEST_ARGV = (
    "python3", "-I", "-m", "pytest",
    "-c", "/assay/compat/pytest.ini", "--rootdir", "/judge", "--confcutdir", "/judge",
    "-p", "no:cacheprovider", "-o", "junit_family=xunit2", "-q",
)  # fmt: skip
PYTEST_ENV = {
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "PYTEST_ADDOPTS": "",
    "PYTEST_PLUGINS": "",
    "HOME": "/tmp",
}


@dataclass(frozen=True)
class Prepared:
    expected_ids: tuple[str, ...]
    state: Path | None
    """Host directory of the truth files (world-readable), or None when the task has none."""


def judge_binds(task: Task) -> tuple[Bind, ...]:
    """The tests at /judge/tests with the trusted conftest as the rootdir conftest beside them."""
    return (
        Bind(task.judge_dir / "tests", "/judge/tests"),
        Bind(INCONTAINER_COMPAT / "conftest.py", "/judge/conftest.py"),
        Bind(INCONTAINER_COMPAT, "/assay/compat"),
    )


def check_layout(task: Task) -> None:
    toml = str(task.root / "task.toml")
    if not (task.judge_dir / "tests").is_dir():
        raise TaskError(toml, "a pytest task keeps its tests in judge/tests/")
    if (task.judge_dir / "conftest.py").exists():
        raise TaskError(toml, "judge/conftest.py would be ignored; put it in judge/tests/")


def pytest_spec(task: Task) -> PytestSpec:
    """The task's [pytest] section; all of it is optional, so a missing one means defaults."""
    return task.config.pytest or PytestSpec()


def declared_ids(task: Task) -> tuple[str, ...] | None:
    spec = pytest_spec(task)
    return None if spec.tests is None else _valid_ids(task, spec.tests)


def prepare(scope: GradingScope, task: Task, image: str) -> Prepared | Refused:
    """Run the truth generator and/or collection; returns what the verification step needs."""
    spec = pytest_spec(task)
    declared = declared_ids(task)
    if spec.truth is None and declared is not None:
        return Prepared(declared, None)
    rt = scope.runtime
    lim = task.config.limits
    cid = scope.container(
        ContainerSpec(
            image=image,
            grading_id=scope.grading_id,
            role="judge",
            binds=(Bind(task.judge_dir, "/judge-src"), *judge_binds(task)),
            scratch=(Scratch("/judge-state", STATE_BYTES), Scratch("/out", COLLECT_BYTES)),
            limits=PREP_LIMITS,
            workdir="/tmp",
        )
    )
    if spec.truth is not None:
        argv = ("python3", "-I", "/assay/compat/truth.py", f"/judge-src/{spec.truth}",
                str(secrets.randbits(128)), "/judge-state")  # fmt: skip
        res = rt.exec(cid, argv, deadline_s=lim.total_timeout, output_cap=64 << 10)
        if res.exit_code != 0:
            return Refused(
                "judge:truth-failed", spec.truth, res.stderr[-2000:].decode(errors="replace")
            )
    if declared is None:
        env = {**PYTEST_ENV, "ASSAY_COLLECTED": "/out/collected.json",
               "ASSAY_STUB_MODULES": ",".join(stub_modules(task.config.artifacts))}  # fmt: skip
        res = rt.exec(cid, (*PYTEST_ARGV, "--collect-only", "/judge/tests"), env=env,
                      deadline_s=lim.total_timeout, output_cap=1 << 20)  # fmt: skip
        if res.exit_code != 0:
            raise TaskError(
                str(task.root / "task.toml"),
                "the tests could not be collected without the candidate; "
                "declare their node ids in [pytest].tests",
            )
    rt.pause(cid)
    state = _take(scope, cid, "/judge-state", "judge-state", None) if spec.truth else None
    if isinstance(state, Refused):
        return state
    ids = declared
    if ids is None:
        out = _take(scope, cid, "/out", "out", ["collected.json"])
        if isinstance(out, Refused):
            return out
        ids = _collected(task, out / "collected.json")
    scope.discard(cid)
    return Prepared(ids, state)


def stub_modules(artifacts: Sequence[str]) -> list[str]:
    """Top-level module names the artifacts could provide ("solution.py" -> "solution")."""
    names = []
    for glob in artifacts:
        head = glob.split("/", 1)[0].removesuffix(".py")
        if head.isidentifier():
            names.append(head)
    return sorted(set(names))


def _take(
    scope: GradingScope, cid: str, path: str, prefix: str, artifacts: list[str] | None
) -> Path | Refused:
    cap = STATE_BYTES * 2 + (1 << 20)
    limits = FirewallLimits(max_total_bytes=STATE_BYTES, max_file_bytes=STATE_BYTES)
    how = Crossing(limits, artifacts, prefix, f"prep-{prefix}", "judge-firewall")
    taken = take_from_container(scope, cid, path, cap, how)
    return taken if isinstance(taken, Refused) else taken.files


def _collected(task: Task, path: Path) -> tuple[str, ...]:
    toml = str(task.root / "task.toml")
    try:
        doc = loads_strict(path.read_bytes(), max_bytes=COLLECT_BYTES)
    except (OSError, StrictJSONError) as exc:
        raise TaskError(toml, f"test collection gave no usable list: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("errors") != 0:
        raise TaskError(toml, "test collection failed; declare [pytest].tests")
    ids = doc.get("ids")
    if not isinstance(ids, list) or not ids:
        raise TaskError(toml, "test collection failed or found no tests; declare [pytest].tests")
    return _valid_ids(task, ids)


def _valid_ids(task: Task, ids: Sequence[object]) -> tuple[str, ...]:
    toml = str(task.root / "task.toml")
    if len(ids) > MAX_TESTS:
        raise TaskError(toml, f"more than {MAX_TESTS} tests")
    strs = [i for i in ids if isinstance(i, str) and _PRINTABLE_ID.fullmatch(i)]
    if len(strs) != len(ids):
        raise TaskError(toml, "test ids must be printable ASCII of at most 256 characters")
    try:
        check_expected_ids(strs)
    except ValueError as exc:
        raise TaskError(toml, f"[pytest].tests: {exc}") from exc
    return tuple(strs)
