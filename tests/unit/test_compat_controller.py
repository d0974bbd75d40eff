"""The compat tier's (T2) controller on the in-memory runtime: what it runs, where, with what,
and that a missing, forged or contradicted report never becomes a pass."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from e2e import EXAMPLES

from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._internal.runtime import ContainerSpec
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.baselines.grade import BaselineTier, run_baseline
from assay._internal.tiers.compat.grade import VERIFY_ARGV, grade_compat
from assay._internal.tiers.compat.prep import stub_modules
from assay._internal.tiers.strict.grade import Source
from assay.errors import TaskError, UsageError

ADD = load_task(EXAMPLES / "add-pytest")
CANARY = load_task(EXAMPLES / "canary-pytest")


def junit(task: Task, *, fail: int = 0, drop: int = 0) -> bytes:
    assert task.config.pytest is not None and task.config.pytest.tests is not None
    ids = task.config.pytest.tests[drop:]
    cases = []
    for n, node_id in enumerate(ids):
        path, _, name = node_id.partition("::")
        body = "<failure message='x'/>" if n < fail else ""
        classname = path.removesuffix(".py").replace("/", ".")
        cases.append(
            f'<testcase classname="{classname}" name="{name}" time="0.001">{body}</testcase>'
        )
    return (
        f'<testsuites><testsuite name="pytest" errors="0" failures="{fail}" skipped="0" '
        f'tests="{len(ids)}">{"".join(cases)}</testsuite></testsuites>'
    ).encode()


class Script:
    """Plays the trusted truth wrapper, the collect-only pass and the pytest run."""

    def __init__(
        self,
        report: bytes | None,
        exit_code: int = 0,
        truth: tuple[int, bytes] = (0, b'{"0": 1}'),
        collected: bytes | None = None,
    ) -> None:
        self.report, self.exit_code, self.truth, self.collected = (
            report,
            exit_code,
            truth,
            collected,
        )
        self.calls: list[tuple[str, ContainerSpec, tuple[str, ...], dict[str, str]]] = []

    def __call__(
        self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        if argv[2] == "/assay/compat/truth.py":
            self.calls.append(("truth", c.spec, argv, dict(env)))
            code, data = self.truth
            if code == 0:
                c.files["/judge-state/truth.json"] = data
            return code, b"", b"boom" if code else b""
        if "--collect-only" in argv:
            self.calls.append(("collect", c.spec, argv, dict(env)))
            if self.collected is None:
                return 2, b"", b""
            c.files["/out/collected.json"] = self.collected
            return 0, b"", b""
        self.calls.append(("pytest", c.spec, argv, dict(env)))
        if self.report is not None:
            c.files["/out/junit.xml"] = self.report
        return self.exit_code, b"", b""

    def step(self, name: str) -> tuple[ContainerSpec, tuple[str, ...], dict[str, str]]:
        found = [call[1:] for call in self.calls if call[0] == name]
        assert len(found) == 1, self.calls
        return found[0]


def grade(task: Task, script: Script, submission: Path | None = None) -> Verdict:
    rt = FakeRuntime(programs={"python3": script})
    sub = submission or task.root / ("attempts/honest" if task is CANARY else "solutions/correct")
    verdict = grade_compat(rt, task, Source(path=sub), "img")
    assert rt.leftovers() == [], "the grading left containers behind"
    return verdict


def test_clean_report_with_exit_zero_passes() -> None:
    # The control for every failing case below.
    v = grade(ADD, Script(junit(ADD)))
    assert v.passed and v.tier == "t2" and v.reason_codes == []
    assert [c.id for c in v.cases] == ADD.config.pytest.tests  # type: ignore[union-attr]


def test_image_digests_name_each_role_and_the_image_it_ran() -> None:
    """Issue 10 finding 10b: pytest ran as `candidate`; a truth generator, if any, as `judge`."""
    img = FakeRuntime().image_digest("img")
    assert grade(ADD, Script(junit(ADD))).image_digests == {"candidate": img}
    drawn = grade(CANARY, Script(junit(CANARY)))
    assert drawn.image_digests == {"judge": img, "candidate": img}


@pytest.mark.parametrize(("tier", "roles"), [("t0", {"agent"}), ("t1", {"agent", "tests"})])
def test_baseline_image_digests_name_each_role(tier: BaselineTier, roles: set[str]) -> None:
    rt = FakeRuntime()
    v = run_baseline(rt, ADD, Source(path=ADD.root / "solutions/correct"), "img", tier).verdict
    assert v.image_digests == dict.fromkeys(roles, rt.image_digest("img"))
    assert rt.leftovers() == []


def test_verification_container_runs_the_pinned_invocation() -> None:
    script = Script(junit(CANARY))
    grade(CANARY, script)
    spec, argv, env = script.step("pytest")
    assert argv == VERIFY_ARGV
    assert argv[:4] == ("python3", "-I", "-m", "pytest")
    for flag, value in [("-c", "/assay/compat/pytest.ini"), ("--rootdir", "/judge"),
                        ("--confcutdir", "/judge"), ("-p", "no:cacheprovider"),
                        ("-o", "junit_family=xunit2")]:  # fmt: skip
        assert argv[argv.index(flag) + 1] == value
    assert argv[-2:] == ("--junitxml=/out/junit.xml", "/judge/tests")
    assert env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert env["PYTEST_ADDOPTS"] == env["PYTEST_PLUGINS"] == ""
    assert spec.hardened and spec.network == "none" and spec.user == "1000:1000"
    assert spec.workdir == "/tmp"
    assert all(b.read_only for b in spec.binds)
    mounts = {b.target: b.source for b in spec.binds}
    assert mounts["/judge/tests"] == CANARY.judge_dir / "tests"
    assert mounts["/judge/conftest.py"].name == "conftest.py"
    assert (mounts["/assay/compat"] / "pytest.ini").is_file()
    assert "/judge-src" not in mounts, "the truth generator never meets the candidate"
    assert [s.target for s in spec.scratch] == ["/out"]


def test_truth_is_drawn_per_grading_before_the_candidate_and_mounted_read_only() -> None:
    seen: list[bytes] = []

    class Capture(Script):
        def __call__(
            self, c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
        ) -> tuple[int, bytes, bytes]:
            if argv[-1] == "/judge/tests" and "--collect-only" not in argv:
                state = {b.target: b.source for b in c.spec.binds}["/judge-state"]
                seen.append((state / "truth.json").read_bytes())
            return super().__call__(c, argv, env)

    scripts = [Capture(junit(CANARY), truth=(0, b'{"n": %d}' % i)) for i in range(2)]
    for s in scripts:
        grade(CANARY, s)
    assert seen == [b'{"n": 0}', b'{"n": 1}']
    seeds = [s.step("truth")[1][4] for s in scripts]
    assert seeds[0] != seeds[1] and all(int(x) > 0 for x in seeds)
    prep_spec = scripts[0].step("truth")[0]
    assert "/candidate" not in {b.target for b in prep_spec.binds}
    assert [c[0] for c in scripts[0].calls] == ["truth", "pytest"]


def test_failing_truth_generator_is_an_error_verdict() -> None:
    script = Script(junit(CANARY), truth=(1, b""))
    v = grade(CANARY, script)
    assert not v.passed and "judge:truth-failed" in v.reason_codes
    assert [c[0] for c in script.calls] == ["truth"]


@pytest.mark.parametrize(
    ("script", "reasons"),
    [
        (Script(junit(ADD), exit_code=1), ["pytest:exit-code"]),
        (Script(junit(ADD), exit_code=5), ["pytest:exit-code"]),
        (Script(None, exit_code=0), ["junit:no-report", "pytest:exit-code"]),
        (Script(None, exit_code=1), ["junit:no-report"]),
        (Script(junit(ADD, fail=2), exit_code=1), ["junit:failure"]),
        (Script(junit(ADD, drop=1)), ["junit:missing", "pytest:exit-code"]),
        (Script(b"PASSED " * 100), ["junit:malformed", "pytest:exit-code"]),
        (Script(junit(ADD).replace(b'tests="6"', b'tests="7"')), ["junit:count-mismatch"]),
        (Script(b" " * (4 << 20) + junit(ADD)), ["junit:oversize", "pytest:exit-code"]),
    ],
)
def test_missing_forged_or_contradicted_report_fails(script: Script, reasons: list[str]) -> None:
    v = grade(ADD, script)
    assert not v.passed
    for reason in reasons:
        assert reason in v.reason_codes, v.reason_codes
    assert len(v.cases) == v.expected_case_count == 6


def test_undeclared_tests_are_collected_without_the_candidate(tmp_path: Path) -> None:
    task = _copy_without_declared_tests(tmp_path)
    ids = ADD.config.pytest.tests  # type: ignore[union-attr]
    script = Script(junit(ADD), collected=json.dumps({"ids": ids, "errors": 0}).encode())
    v = grade(task, script, EXAMPLES / "add-pytest/solutions/correct")
    assert v.passed and [c.id for c in v.cases] == ids
    spec, _argv, env = script.step("collect")
    assert "/candidate" not in {b.target for b in spec.binds}
    assert env["ASSAY_STUB_MODULES"] == "solution"
    assert env["ASSAY_COLLECTED"] == "/out/collected.json"


@pytest.mark.parametrize(
    "collected",
    [
        None,
        b"[]",
        b'{"ids": [], "errors": 0}',
        b'{"ids": ["tests/test_add.py::test_small"], "errors": 1}',
        b'{"ids": ["tests/test_add.py::test_small", "tests/test_add.py::test_small"], "errors": 0}',
        b'{"ids": ["tests/test_add.py::t\\u00e9st"], "errors": 0}',
        b'{"ids": ["x"], "errors": 0}',
    ],
)
def test_unusable_collection_is_a_task_error(tmp_path: Path, collected: bytes | None) -> None:
    task = _copy_without_declared_tests(tmp_path)
    with pytest.raises(TaskError):
        grade(
            task, Script(junit(ADD), collected=collected), EXAMPLES / "add-pytest/solutions/correct"
        )


def test_strict_kind_and_misplaced_conftest_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        grade(load_task(EXAMPLES / "add"), Script(None), EXAMPLES / "add/solutions/correct")
    task = _copy_without_declared_tests(tmp_path)
    (task.judge_dir / "conftest.py").write_text("")
    with pytest.raises(TaskError, match="conftest"):
        grade(task, Script(None), EXAMPLES / "add-pytest/solutions/correct")


def test_stub_modules_are_the_artifacts_top_level_names() -> None:
    assert stub_modules(["solution.py"]) == ["solution"]
    assert stub_modules(["pkg/**", "helpers.py", "data/*.json", "**", "*.py"]) == [
        "data",
        "helpers",
        "pkg",
    ]


def _copy_without_declared_tests(tmp_path: Path) -> Task:
    import shutil

    root = tmp_path / "task"
    shutil.copytree(EXAMPLES / "add-pytest", root)
    toml = (root / "task.toml").read_text()
    start = toml.index("[pytest]")
    end = toml.index("[limits]")
    (root / "task.toml").write_text(toml[:start] + toml[end:])
    return load_task(root)
