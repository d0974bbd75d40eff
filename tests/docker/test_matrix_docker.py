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


def test_sigterm_stops_the_matrix_as_ctrl_c_does_with_sigint_ignored() -> None:
    """A CI script's background job starts with SIGINT ignored, so the Ctrl-C its trap passes
    on does nothing; SIGTERM used to end `assay matrix` on the spot, its containers left to the
    end-of-run check. Now SIGTERM is Ctrl-C: the cells running finish and remove their
    containers, no other cell starts, exit 130. Also shows that a Ctrl-C no longer runs every
    queued cell before the command ends."""
    import signal
    import subprocess
    import sys
    import time

    # Quick cells (none waits out a deadline), so the running ones end soon after the signal.
    attacks = sorted(a.name for a in (ROOT / "corpus").glob("always-equal-*"))
    attacks += sorted(a.name for a in (ROOT / "corpus").glob("json-*"))
    argv = [sys.executable, "-m", "assay", "matrix", "--tiers", "t2,t3", "--jobs", "2"]
    for a in attacks:
        argv += ["--attack", a]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.strip(), proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)  # ignored, as under the CI script
        time.sleep(0.5)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "interrupted" in err
    rows = [line for line in (first + out).splitlines() if line.strip()]
    cells = len(attacks) * 2  # and the controls
    assert len(rows) < cells, rows  # the queued cells never ran
