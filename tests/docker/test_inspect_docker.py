"""The Inspect AI integration end to end: examples/inspect runs as a user would run it
(`inspect eval assay_eval.py --model mockllm/model`, from that folder, offline), and every
envelope in its log verifies with `assay verify` and the per-user public key."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import assay

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "inspect"
BIN = Path(sys.executable).parent


def test_the_inspect_example_eval_scores_and_signs_every_sample(
    tmp_path: Path, base_image: str, docker_runtime: object
) -> None:
    from inspect_ai.log import read_eval_log

    config = tmp_path / "config"  # the per-user key is created here, as in a fresh home
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(config),
        "ASSAY_BASE_IMAGE": base_image,
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
        "NO_COLOR": "1",
        # The default backend: this checks Inspect's scores and signatures, not the engine.
        "ASSAY_RUNTIME": "runc",
    }
    done = subprocess.run(
        [str(BIN / "inspect"), "eval", "assay_eval.py", "--model", "mockllm/model"],
        cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    logs = sorted((tmp_path / "logs").glob("*.eval"))
    assert len(logs) == 1
    log = read_eval_log(str(logs[0]))
    assert log.status == "success", log.error
    assert log.samples is not None

    pub = config / "assay" / "signing.pub"
    assert pub.is_file()
    scores = {}
    for sample in log.samples:
        assert sample.error is None, sample.error
        assert sample.scores is not None
        score = sample.scores["assay_scorer"]
        scores[sample.id] = score.value
        meta = score.metadata or {}
        envelope = tmp_path / f"{sample.id}.dsse.json"
        envelope.write_text(meta["assay_dsse"])
        verified = subprocess.run(
            [str(BIN / "assay"), "verify", str(envelope), "--key", str(pub), "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert verified.returncode == 0, verified.stdout + verified.stderr
        verdict = meta["assay_verdict"]
        assert json.loads(verified.stdout)["verdict"]["grading_id"] == verdict["grading_id"]
        assert (score.value == 1.0) == verdict["passed"]
        assert score.explanation == (" ".join(verdict["reason_codes"]) or "passed")
        assert verdict["tier"] == ("t2" if str(sample.id).startswith("add-pytest") else "t3")
    assert scores == {
        "add-correct": 1.0,
        "add-wrong": 0.0,
        "add-pytest-correct": 1.0,
        "add-pytest-wrong": 0.0,
    }
    # A different key does not verify them.
    _, other = assay.keygen(tmp_path / "other")
    refused = subprocess.run(
        [str(BIN / "assay"), "verify", str(tmp_path / "add-correct.dsse.json"),
         "--key", str(other)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 1
    shutil.rmtree(tmp_path / "logs")
