"""The proof matrix on a real engine: a few attacks on every tier, the honest controls, the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay._internal.proof.matrix import CONTROLS, load_attack, problems, run_matrix
from assay._internal.runtime.docker import DockerRuntime
from assay.cli.matrix import matrix_cmd

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "assay-base:latest"


def test_attacks_and_honest_controls_come_out_as_expected_on_every_tier() -> None:
    attacks = [
        load_attack(ROOT / "corpus" / name)
        for name in ("conftest-report-patching", "runtime-read-answer-key")
    ]
    rows = run_matrix(
        attacks,
        ["t0", "t1", "t2", "t3"],
        runtime_factory=DockerRuntime,
        image=IMAGE,
        examples=ROOT / "examples",
        jobs=3,
        controls=CONTROLS,
    )
    got = {(r.attack, r.tier): r.observed for r in rows}
    assert [got[("conftest-report-patching", t)] for t in ("t0", "t1", "t2", "t3")] == [
        "exploit",
        "exploit",
        "blocked",
        "blocked",
    ]
    assert [got[("runtime-read-answer-key", t)] for t in ("t0", "t1", "t2", "t3")] == [
        "exploit",
        "exploit",
        "exploit",
        "blocked",
    ]
    for tier in ("t0", "t1", "t2", "t3"):
        assert got[("add-correct", tier)] == "pass", tier
        assert got[("add-wrong", tier)] == "fail", tier
        assert got[("canary-honest", tier)] == "fail", tier
    assert problems(rows, attacks, ["t0", "t1", "t2", "t3"]) == []
    assert not any("left behind" in r.reason for r in rows)


def test_the_cli_fails_on_a_wrong_expectation_and_writes_json(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "corpus" / "conftest-report-patching", corpus / "claims-t2")
    toml = corpus / "claims-t2" / "attack.toml"
    text = toml.read_text().replace('id = "conftest-report-patching"', 'id = "claims-t2"')
    toml.write_text(text.replace('t2 = "blocked"', 't2 = "exploit"'))
    out = tmp_path / "rows.json"
    result = CliRunner().invoke(
        matrix_cmd,
        ["--corpus", str(corpus), "--tiers", "t2", "--no-controls", "--json", str(out)],
    )
    assert result.exit_code == 1, result.output
    rows = json.loads(out.read_text())
    assert rows == [
        {
            "kind": "attack",
            "attack": "claims-t2",
            "class": "V1",
            "tier": "t2",
            "expected": "exploit",
            "observed": "blocked",
            "reason": rows[0]["reason"],
            "tamper": [],  # its conftest never crosses: a plain failed test (docs/matrix.md)
            "match": False,
        }
    ]
    assert rows[0]["reason"].startswith("junit:")


def test_json_nan_comparator_is_blocked_on_t3() -> None:
    """The attack for which only the judge's strict JSON parse stands between NaN and a pass
    (scripts/mutation_gate.py, judge-lenient-json, turns this row into an exploit)."""
    attack = load_attack(ROOT / "corpus" / "json-nan-comparator")
    rows = run_matrix(
        [attack],
        ["t3"],
        runtime_factory=DockerRuntime,
        image=IMAGE,
        examples=ROOT / "examples",
        jobs=1,
        controls=(),
    )
    assert [(r.observed, r.reason) for r in rows] == [("blocked", "candidate:invalid-output")]
