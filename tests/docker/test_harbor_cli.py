"""Harbor's own CLI runs trials with assay's box and verifier (issue 39), offline, on local
tasks built FROM assay-base: the same scripted agents under Harbor's stock verifier and under
assay's, side by side (docs/integrations.md shows this run's table).

The baseline column is Harbor's stock verifier in a box shaped like Harbor's Docker
environment (root, a writable root; offline): there each Terminal-Bench exploit class wins.
assay's verifier stops every one of them in that same box (taking the workdir out with the
box's own `tar`, as it must for a box it does not own), and in assay's hardened box."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from helpers.harborrun import HARBOR, Trial, dataset, reward, run_job, verdict_reasons

import assay

# One worker: the three `harbor run` jobs (`columns`, about 45 s) are set up once, not per worker.
pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("harbor-cli")]

AGENTS = [
    "oracle", "wrong", "trojan-python", "grader-rewrite", "leftover-writer", "planted-reward",
    "link-to-tests",
]  # fmt: skip
STOCK = {
    "oracle": 1.0,
    "wrong": 0.0,
    "trojan-python": 1.0,
    "grader-rewrite": 1.0,
    "leftover-writer": 1.0,
    # Harbor itself removes reward.txt and reward.json before test.sh runs.
    "planted-reward": 0.0,
    "link-to-tests": 1.0,
}
REASONS = {"link-to-tests": "firewall:"}
"""The reason a blocked agent's verdict names, where the tests' own 0 is not the whole story."""
ASSAY = {agent: 1.0 if agent == "oracle" else 0.0 for agent in AGENTS}


REFUSED = {"gpu": "GPUs", "compose": "compose file"}


def _boxes_left(trials: list[Trial]) -> list[str]:
    """The runc backend's containers of these trials' boxes still on the host (each trial's log
    names its box's grading id; another run's boxes on this host are not this test's)."""
    from assay._internal.runtime.oci import host

    gids = set()
    for t in trials:
        found = re.findall(r"assay: the box is grading (\S+) on oci/runc", t.log)
        refused = t.error is not None and "cannot honour" in t.error  # no box was made
        assert found or refused, f"{t.trial}: no box named in its log"
        gids |= set(found)
    return [
        m.grading_id for m in host.all_metas() if not isinstance(m, str) and m.grading_id in gids
    ]


def _refused_variants(tasks: Path) -> None:
    """Tasks Harbor accepts and assay's box cannot honour, beside the others of a dataset."""
    variants = {
        "gpu": ("gpus = 1\n", {}),
        "compose": ("", {"environment/docker-compose.yaml": "services:\n  main: {}\n"}),
    }
    for name, (toml_extra, files) in variants.items():
        dst = tasks / f"wordcount-{name}"
        shutil.copytree(tasks / "wordcount-oracle", dst)
        toml = (dst / "task.toml").read_text()
        (dst / "task.toml").write_text(
            toml.replace("[environment]\n", f"[environment]\n{toml_extra}")
        )
        for rel, text in files.items():
            (dst / rel).write_text(text)


def _run_columns(tmp: Path) -> dict[str, dict[str, Trial]]:
    tasks = dataset(tmp, "wordcount", AGENTS)
    dataset(tmp, "twostep", ["oracle", "leak-tests"], out=tasks)
    hardened = tmp / "hardened"
    shutil.copytree(tasks, hardened)
    _refused_variants(hardened)
    # A step assay cannot import (a verifier hook it does not run): its error voids the trial.
    broken = hardened / "twostep-broken"
    shutil.copytree(hardened / "twostep-oracle", broken)
    toml = (broken / "task.toml").read_text()
    (broken / "task.toml").write_text(toml + '\n[[steps.verifier.collect]]\ncommand = "true"\n')
    return {
        "stock": run_job(tmp, "stock", tasks, verifier=False, hardened=False),
        "assay-verifier": run_job(
            tmp, "assay-verifier", tasks, verifier=True, hardened=False, take="exec"
        ),
        "assay": run_job(tmp, "assay", hardened, verifier=True, hardened=True),
    }


@pytest.fixture(scope="session")
def columns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Trial]]:
    """Three `harbor run` jobs over the same tasks (one CLI start each: Harbor's own start-up
    is most of a job's time). The hardened column's dataset also holds the refused tasks.
    Run once per pytest run whichever xdist workers take this module's tests (CI on 770b7a1
    ran them twice, 70 s each): the first worker runs them under a lock in the directory the
    workers share, the others read its results."""
    assert HARBOR.is_file(), f"{HARBOR} is missing: `bash scripts/setup.sh` makes it"
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is a directory of this run's; alone, the base is the run's.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    done = shared / "harbor-columns.json"
    with open(shared / "harbor-columns.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            ran = _run_columns(tmp_path_factory.mktemp("harbor"))
            raw = {c: {t: dataclasses.asdict(tr) for t, tr in ts.items()} for c, ts in ran.items()}
            done.write_text(json.dumps(raw, default=str))
    raw = json.loads(done.read_text())
    return {
        c: {t: Trial(**{**tr, "verifier_dir": Path(tr["verifier_dir"])}) for t, tr in ts.items()}
        for c, ts in raw.items()
    }


def test_exploits_win_under_harbors_verifier_and_fail_under_assays(
    columns: dict[str, dict[str, Trial]],
) -> None:
    table = {
        col: {
            t.removeprefix("wordcount-"): reward(tr)
            for t, tr in trials.items()
            if t.removeprefix("wordcount-") in AGENTS
        }
        for col, trials in columns.items()
    }
    errors = {
        f"{c}/{t}": tr.error
        for c, ts in columns.items()
        for t, tr in ts.items()
        if tr.error and t.removeprefix("wordcount-") in AGENTS
    }
    assert errors == {}
    assert table["stock"] == STOCK, "an exploit did not work on the baseline: it proves nothing"
    assert table["assay-verifier"] == ASSAY
    assert table["assay"] == ASSAY
    key = assay.Grader().public_key
    for col in ("assay-verifier", "assay"):
        for trial in columns[col].values():
            if trial.task.removeprefix("wordcount-") not in AGENTS:
                continue
            envelope = (trial.verifier_dir / "verdict.dsse.json").read_bytes()
            verdict = assay.verify(envelope, key)
            assert verdict.passed == (trial.task == "wordcount-oracle"), trial
            assert verdict.tier == "harbor" and verdict.runtime == "oci/runc"
            shown = json.loads((trial.verifier_dir / "reward.json").read_text())
            assert shown == trial.rewards
            assert verdict_reasons(trial) == list(verdict.reason_codes)
            agent = trial.task.removeprefix("wordcount-")
            if agent in REASONS:
                assert any(r.startswith(REASONS[agent]) for r in verdict.reason_codes), verdict
    assert _boxes_left([t for trials in columns.values() for t in trials.values()]) == []


def test_a_later_steps_tests_leak_into_harbors_shared_box_and_never_into_assays(
    columns: dict[str, dict[str, Trial]],
) -> None:
    """`leak-tests` solves step 1 and leaves a process copying /tests; step 2's answer is in
    the task's shared tests/ (the mistake a public multi-step benchmark shipped). Harbor
    uploads the shared tests into the box at step 1's verification, so step 2 passes without
    being solved; assay's verifier never puts a test in the box."""
    steps = {c: {t: tr.steps for t, tr in trials.items() if t.startswith("twostep-")}
             for c, trials in columns.items()}  # fmt: skip
    both = {"count": 1.0, "canary": 1.0}
    assert steps["stock"] == {"twostep-oracle": both, "twostep-leak-tests": both}
    for col in ("assay-verifier", "assay"):
        assert steps[col]["twostep-oracle"] == both, col
        assert steps[col]["twostep-leak-tests"] == {"count": 1.0, "canary": 0.0}, col
        assert reward(columns[col]["twostep-leak-tests"]) == 0.5
        assert all(columns[col][t].valid for t in ("twostep-oracle", "twostep-leak-tests"))


def test_a_step_without_a_verdict_voids_the_trials_reward(
    columns: dict[str, dict[str, Trial]],
) -> None:
    """Harbor's mean would drop a step that raised an error it does not know and keep the
    other steps' reward: assay's error is one Harbor counts as no valid reward."""
    trial = columns["assay"]["twostep-broken"]
    assert trial.steps == {"count": 1.0, "canary": None}
    assert trial.error is not None and "VerifierOutputParseError" in trial.error
    assert "verifier.collect" in trial.error
    assert not trial.valid


def test_what_assay_cannot_honour_fails_that_trial_naming_it(
    columns: dict[str, dict[str, Trial]],
) -> None:
    for name, named in REFUSED.items():
        trial = columns["assay"][f"wordcount-{name}"]
        assert trial.rewards is None, trial
        assert trial.error is not None and named in trial.error, trial
        assert "AssayVerifierError" in trial.error
