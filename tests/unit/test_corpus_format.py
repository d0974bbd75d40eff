"""The attack corpus is well-formed (no Docker needed): corpus/README.md is the format."""

from __future__ import annotations

import os
import py_compile
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
TAXONOMY = ROOT / "TAXONOMY.md"
EXAMPLES = ROOT / "examples"

REQUIRED = {"id", "title", "class", "source", "task", "t0", "t1"}
OPTIONAL = {"aims", "aims_why", "notes", "t2", "t3", "harbor", "tamper"}
# Besides T0 and T1: T2 and T3 for a function or pytest task with a strict twin, T2 alone for a
# pytest task with none (an imported SWE-bench instance), harbor for a Harbor task.
TASK_TIERS = ({"t2", "t3"}, {"t2"}, {"harbor"})
OUTCOMES = {"exploit", "blocked"}
ADR_0002_FIVE = {
    "runtime-read-answer-key",
    "frame-introspection-expected",
    "atexit-forge-report",
    "always-equal-object",
    "monkeypatch-pytest-reports",
}
# One attack per item the corpus issue (#6) lists, so none silently disappears.
ISSUE_LIST = {
    "sys-exit-before-asserts",
    "raise-skiptest",
    "forged-passed-stdout",
    "conftest-report-patching",
    "sitecustomize-injection",
    "usercustomize-injection",
    "pth-injection",
    "shadow-json-module",
    "shadow-pytest-module",
    "trojan-on-path",
    "tests-rewrite-conftest",
    "tests-neutered-collection",
    "forged-report-files",
    "background-test-editor",
    "symlink-artifact",
    "hardlink-artifact",
    "tar-slip",
    "device-node-fifo",
    "oversize-artifact",
    "fork-bomb",
    "memory-bomb",
    "disk-fill",
    "infinite-loop",
    "stdout-flood",
    "network-exfiltration",
    "env-secret-read",
    "timer-monkeypatch",
    "git-history-leak",
    "always-equal-int-subclass",
    "always-equal-str-subclass",
    "always-equal-list-subclass",
    "json-huge-int",
    "json-nan",
    "json-deep-nesting",
    "json-duplicate-keys",
    "json-non-utf8",
    "verdict-injection-text",
}

# One attack at least per kind of exploit published in 2025-26 that issue 36 lists, each with
# the tier that claims to stop it.
ISSUE_36 = {
    "harbor-trojan-uvx": "harbor",  # trojaned tools the verifier runs later (uv)
    "harbor-trojan-uv-python": "harbor",  # ... (the Python uv picks)
    "stdio-overwrite-checker": "t3",  # the grader's own files rewritten in the box (checker)
    "harbor-parser-overwrite": "harbor",  # ... (SWE-bench Pro's parser.py)
    "stack-replace-scorer": "t3",  # a scorer replaced through stack introspection
    "stateful-conflicting-checks": "t3",  # state kept across calls
    "pytest-collect-only": "t2",  # zero checks accepted (a vacuous pass)
    "stdio-hardcode-samples": "t3",  # hard-coding the visible tests
    "proc-environ-expected": "t3",  # reading the grader's own process
}


def attack_dirs() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


def load(folder: Path) -> dict[str, object]:
    with (folder / "attack.toml").open("rb") as fh:
        return tomllib.load(fh)


def taxonomy_sections() -> dict[str, str]:
    text = TAXONOMY.read_text(encoding="utf-8")
    parts = re.split(r"(?m)^## (V\d+) ", text)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


ATTACKS = attack_dirs()


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_attack_toml_has_exactly_the_format_keys(folder: Path) -> None:
    doc = load(folder)
    keys = set(doc)
    assert REQUIRED <= keys, f"missing {sorted(REQUIRED - keys)}"
    assert keys <= REQUIRED | OPTIONAL, f"unknown {sorted(keys - REQUIRED - OPTIONAL)}"
    for key, value in doc.items():
        assert isinstance(value, str) and value.strip(), f"{key} must be a non-empty string"
    assert doc["id"] == folder.name
    assert keys & {"t2", "t3", "harbor"} in TASK_TIERS
    for tier in sorted(keys & {"t0", "t1", "t2", "t3", "harbor"}):
        assert doc[tier] in OUTCOMES, f"{tier} = {doc[tier]!r}"
    assert ("aims" in doc) == ("aims_why" in doc), "aims and aims_why go together"
    if "aims" in doc:
        assert doc["aims"] == "strict"


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_class_is_defined_in_taxonomy(folder: Path) -> None:
    assert load(folder)["class"] in taxonomy_sections()


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_task_resolves_to_a_task_directory(folder: Path) -> None:
    task = str(load(folder)["task"])
    local, named = folder / task, EXAMPLES / task
    found = local if local.is_dir() else named
    assert (found / "task.toml").is_file(), f"{task!r} is neither under the attack nor examples/"


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_the_harbor_column_is_named_exactly_for_harbor_tasks(folder: Path) -> None:
    doc = load(folder)
    task = str(doc["task"])
    root = folder / task if (folder / task).is_dir() else EXAMPLES / task
    kind = tomllib.loads((root / "task.toml").read_text(encoding="utf-8"))["kind"]
    assert ("harbor" in doc) == (kind == "harbor")


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_t3_is_named_exactly_when_it_can_grade_the_task(folder: Path) -> None:
    """T3 grades a strict task: a function task, or the strict twin (`X` beside `X-pytest`) of a
    pytest one. An attack on a pytest task with no twin names T2 alone; T3 shows n/a."""
    doc = load(folder)
    if "harbor" in doc:
        return
    task = str(doc["task"])
    root = folder / task if (folder / task).is_dir() else EXAMPLES / task
    twin = root.parent / root.name.removesuffix("-pytest")
    graded_on_t3 = twin if (twin / "task.toml").is_file() else root
    kind = tomllib.loads((graded_on_t3 / "task.toml").read_text(encoding="utf-8"))["kind"]
    assert ("t3" in doc) == (kind != "pytest"), f"T3 would grade {graded_on_t3.name} ({kind})"


def test_the_harbor_column_has_a_blocked_attack_and_its_open_class() -> None:
    """The late writer (blocked by construction) and a writer during the tests (the tier's
    open class, docs/compat.md) both stay in the corpus."""
    harbor = {f.name: load(f)["harbor"] for f in ATTACKS if "harbor" in load(f)}
    assert harbor.get("harbor-late-reward-writer") == "blocked"
    assert harbor.get("harbor-reward-during-tests") == "exploit"


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_run_sh_is_an_executable_shell_script(folder: Path) -> None:
    run = folder / "agent" / "run.sh"
    assert run.is_file()
    assert os.access(run, os.X_OK), "run.sh must be executable"
    assert run.read_text(encoding="utf-8").startswith("#!/bin/sh\n")
    checked = subprocess.run(["sh", "-n", str(run)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_agent_python_files_compile(folder: Path, tmp_path: Path) -> None:
    for src in sorted((folder / "agent").glob("*.py")):
        py_compile.compile(str(src), cfile=str(tmp_path / (src.name + "c")), doraise=True)


@pytest.mark.parametrize("folder", ATTACKS, ids=lambda p: p.name)
def test_every_attack_is_live_on_a_baseline_or_says_why_not(folder: Path) -> None:
    doc = load(folder)
    assert "exploit" in (doc["t0"], doc["t1"]) or doc.get("aims") == "strict"


def test_ids_are_unique() -> None:
    ids = [load(f)["id"] for f in ATTACKS]
    assert len(ids) == len(set(ids))


def test_at_least_forty_attacks_over_twelve_classes() -> None:
    docs = [load(f) for f in ATTACKS]
    assert len(docs) >= 40
    assert len({d["class"] for d in docs}) >= 12


def test_adr_0002_five_are_present_and_expected_to_beat_t2_but_not_t3() -> None:
    docs = {f.name: load(f) for f in ATTACKS}
    for attack_id in ADR_0002_FIVE:
        assert attack_id in docs, attack_id
        assert docs[attack_id]["t2"] == "exploit", attack_id
        assert docs[attack_id]["t3"] == "blocked", attack_id


def test_every_item_the_issue_lists_has_its_attack() -> None:
    present = {f.name for f in ATTACKS}
    assert ISSUE_LIST <= present, sorted(ISSUE_LIST - present)


def test_every_exploit_issue_36_lists_is_stopped_where_a_tier_claims_to() -> None:
    docs = {f.name: load(f) for f in ATTACKS}
    for attack_id, tier in ISSUE_36.items():
        assert attack_id in docs, attack_id
        assert docs[attack_id][tier] == "blocked", (attack_id, tier)
        assert "exploit" in (docs[attack_id]["t0"], docs[attack_id]["t1"]), attack_id


def test_every_taxonomy_class_cites_a_source_and_has_an_attack() -> None:
    sections = taxonomy_sections()
    used = {load(f)["class"] for f in ATTACKS}
    assert len(sections) >= 12
    for name, body in sections.items():
        assert "https://" in body, f"{name} cites no source"
        assert name in used, f"{name} has no attack in the corpus"
    assert "V4" in sections and "injection" in sections["V4"].lower()
