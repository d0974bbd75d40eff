"""scripts/mutation_gate.py: its table still applies to the source, and it classifies honestly.

The gate itself (every mutation killed) is a step of scripts/test.sh; here only what a refactor
or a bad entry would break: an edit that no longer finds its text, a mutation its tests do not
notice (SURVIVED), claiming tests that do not exist (MISSING), and the working tree untouched.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    name = "mutation_gate"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "mutation_gate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


gate = _load()


def test_every_mutation_applies_exactly_once_and_compiles() -> None:
    gate.check_config(gate.MUTATIONS)


def test_at_least_fifteen_named_mutations_with_claiming_tests() -> None:
    names = [m.name for m in gate.MUTATIONS]
    assert len(names) == len(set(names)) >= 15
    ready = [m for m in gate.MUTATIONS if not m.pending]
    assert len(ready) >= 15
    for m in ready:
        for t in m.tests:
            assert (ROOT / gate.test_path(t)).is_file(), (m.name, t)


def test_docs_list_exactly_the_gate_mutations() -> None:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    section = text[text.index("## Mutation gate") :]
    listed = re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.M)
    assert listed == [m.name for m in gate.MUTATIONS]


def test_an_edit_whose_text_moved_fails_loudly() -> None:
    m = gate.MUTATIONS[0]
    with pytest.raises(gate.GateError, match="occurs 0 times"):
        gate.check_config([replace(m, old=m.old + "  # not in the source")])
    with pytest.raises(gate.GateError, match="does not compile"):
        gate.check_config([replace(m, new=m.new + " (")])


def test_gate_tells_killed_from_survived_and_missing_and_leaves_the_tree_alone() -> None:
    judge = ROOT / "src" / "assay" / "_incontainer" / "judge.py"
    before = judge.read_bytes()
    harmless = gate.Mutation(
        "harmless",
        "nothing: a comment is added",
        "src/assay/_incontainer/judge.py",
        "class Invalid(Exception):",
        "class Invalid(Exception):  # a comment",
        (
            "tests/unit/test_judge_incontainer.py::test_exact_accepts_equal_values_of_the_same_types",
        ),
    )
    gate.check_config([harmless])
    runner = gate.Runner(timeout=300)
    files = gate.repo_files()
    assert gate.run_mutation(runner, files, harmless).result == "SURVIVED"
    real = next(m for m in gate.MUTATIONS if m.name == "judge-exact-bool-int")
    assert gate.run_mutation(runner, files, real).result == "KILLED"
    assert gate.warm_bytecode(runner, files, [real]).result == "PASSED"
    broken = replace(harmless, tests=("tests/helpers/pyc.py",))  # collects no test: exit 5
    assert gate.warm_bytecode(runner, files, [broken]).result == "ERROR"
    absent = replace(harmless, tests=("tests/test_no_such_file.py",), pending="elsewhere")
    out = gate.run_mutation(runner, files, absent)
    assert (out.result, out.ok) == ("MISSING", False)
    assert "elsewhere" in out.detail
    assert judge.read_bytes() == before


def _stub_runs(monkeypatch: pytest.MonkeyPatch, warm_up: str) -> None:
    """No pytest is started: every mutation is killed, the warm-up ends as `warm_up` says."""

    def killed(runner: object, files: object, m: object, template: object = None) -> object:
        return gate.Outcome("judge-exact-bool-int", "KILLED", 0.0, "")

    def warm(*args: object) -> object:
        return gate.Outcome("(bytecode)", warm_up, 0.0, "")

    monkeypatch.setattr(gate, "run_mutation", killed)
    monkeypatch.setattr(gate, "warm_bytecode", warm)
    monkeypatch.setattr(gate.signal, "signal", lambda *a: None)  # main's SIGTERM handler


@pytest.mark.parametrize("suite_passed", [False, True])
def test_the_unmutated_run_is_skipped_only_when_the_suite_passed(
    suite_passed: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """test.sh passes --suite-passed only after a green whole-suite run on the same tree; without
    it the claiming tests run unmutated first, and their failure fails the gate."""
    baselines: list[int] = []

    def failing_baseline(*args: object, **kwargs: object) -> object:
        baselines.append(1)
        return gate.Outcome("(unmutated)", "ERROR", 0.0, "the claiming tests fail")

    monkeypatch.setattr(gate, "run_baseline", failing_baseline)
    _stub_runs(monkeypatch, "PASSED")
    argv = ["--only", "judge-exact-bool-int"] + (["--suite-passed"] if suite_passed else [])
    code = gate.main(argv)
    out = capsys.readouterr().out
    if suite_passed:
        assert (code, baselines) == (0, [])
        assert "not run again: the whole suite passed" in out
    else:
        assert (code, baselines) == (1, [1])


def test_a_failed_warm_up_fails_the_gate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claiming tests that cannot even be collected are a broken gate, not a slower one."""

    _stub_runs(monkeypatch, "ERROR")
    assert gate.main(["--only", "judge-exact-bool-int", "--suite-passed"]) == 1
    assert "(bytecode) ERROR" in capsys.readouterr().err
