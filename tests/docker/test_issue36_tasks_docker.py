"""The tasks the issue-36 attacks bring, checked where the proof matrix cannot: an honest
submission passes them where a pass is possible, so a "blocked" in docs/matrix.md means the
grader refused the attack, not that the task could never pass.

The canaries draw their answer per run, so no honest submission passes them; here each Harbor
canary is copied with its answer fixed, graded on the harbor tier with the right answer (it
passes: the installer, uvx, pytest, the parser all ran) and with the attack (it still fails).
The stdio pairs are solvable as they are: a correct program passes both twins, and the attack
fails where docs/matrix.md says it is blocked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay._internal.environment.build import ensure_environment
from assay._internal.model.task import Task, load_task
from assay._internal.runtime.docker import DockerRuntime, connect
from assay._internal.runtime.scope import new_grading_id
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.dispatch import run_tier

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
TICKET = "0123456789abcdef"


def grade(rt: DockerRuntime, image: str, task: Task, source: Source, tier: str) -> bool:
    gid = new_grading_id()
    judged, _ = run_tier(rt, task, source, tier, image, grading_id=gid)  # type: ignore[arg-type]
    assert rt.leftovers(gid) == [], "the grading left something behind"
    return judged.verdict.passed


def built(root: Path) -> Task:
    task = load_task(root)
    ensure_environment(connect(), task)
    return task


def report(tmp_path: Path, ticket: str) -> Source:
    agent = tmp_path / "honest"
    agent.mkdir()
    (agent / "run.sh").write_text(f'echo \'{{"ticket": "{ticket}"}}\' > report.json\n')
    return Source(agent_cmd="sh /agent/run.sh", agent_dir=agent)


def attack(name: str) -> Source:
    return Source(agent_cmd="sh /agent/run.sh", agent_dir=CORPUS / name / "agent")


@pytest.fixture(scope="module")
def uv_canary(tmp_path_factory: pytest.TempPathFactory) -> Task:
    """uv-canary-harbor with its ticket fixed: its test.sh unchanged (curl, the installer,
    `source`, uvx, pytest), so a report with the ticket passes only if all of them ran."""
    root = tmp_path_factory.mktemp("uv") / "uv-canary-harbor"
    shutil.copytree(CORPUS / "harbor-trojan-uvx" / "uv-canary-harbor", root)
    tests = root / "judge" / "tests" / "test_outputs.py"
    text = tests.read_text()
    assert "TICKET = secrets.token_hex(8)" in text
    tests.write_text(text.replace("TICKET = secrets.token_hex(8)", f"TICKET = {TICKET!r}"))
    return built(root)


def test_uv_canary_passes_a_right_report_through_terminal_benchs_test_script(
    docker_runtime: DockerRuntime, base_image: str, uv_canary: Task, tmp_path: Path
) -> None:
    assert grade(docker_runtime, base_image, uv_canary, report(tmp_path, TICKET), "harbor")
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    assert not grade(docker_runtime, base_image, uv_canary, report(wrong, "f" * 16), "harbor")


@pytest.mark.parametrize("name", ["harbor-trojan-uvx", "harbor-trojan-uv-python"])
def test_the_uv_trojans_fail_on_the_harbor_tier_and_pass_harbors_shared_mode(
    docker_runtime: DockerRuntime, base_image: str, uv_canary: Task, name: str
) -> None:
    assert not grade(docker_runtime, base_image, uv_canary, attack(name), "harbor")
    assert grade(docker_runtime, base_image, uv_canary, attack(name), "t0")


def test_parser_canary_passes_the_right_answer_and_not_the_parser_overwrite(
    docker_runtime: DockerRuntime, base_image: str, tmp_path: Path
) -> None:
    root = tmp_path / "parser-canary-harbor"
    shutil.copytree(CORPUS / "harbor-parser-overwrite" / "parser-canary-harbor", root)
    script = root / "judge" / "tests" / "test.sh"
    text = script.read_text()
    drawn = """secret="$(od -An -N8 -tx8 /dev/urandom | tr -d ' \\n')\""""
    assert drawn in text
    script.write_text(text.replace(drawn, f'secret="{TICKET}"'))
    task = built(root)
    honest = tmp_path / "honest"
    honest.mkdir()
    (honest / "run.sh").write_text(f"printf '#!/bin/bash\\necho {TICKET}\\n' > solve.sh\n")
    right = Source(agent_cmd="sh /agent/run.sh", agent_dir=honest)
    assert grade(docker_runtime, base_image, task, right, "harbor")
    assert not grade(docker_runtime, base_image, task, attack("harbor-parser-overwrite"), "harbor")
    assert grade(docker_runtime, base_image, task, attack("harbor-parser-overwrite"), "t0")


CORRECT = {
    "checker-sort": "import sys\n\nfor x in sorted(float(t) for t in sys.stdin.read().split()[1:]):\n    print(repr(x))\n",
    "sum-samples": "import sys\n\nprint(sum(int(t) for t in sys.stdin.read().split()[1:]))\n",
}
PAIRS = {"checker-sort": "stdio-overwrite-checker", "sum-samples": "stdio-hardcode-samples"}


@pytest.mark.parametrize("name", sorted(PAIRS))
@pytest.mark.parametrize("tier", ["t2", "t3"])
def test_a_correct_program_passes_the_stdio_pairs(
    docker_runtime: DockerRuntime, base_image: str, tmp_path: Path, name: str, tier: str
) -> None:
    pair = CORPUS / PAIRS[name]
    task = load_task(pair / (name if tier == "t3" else f"{name}-pytest"))
    (tmp_path / "main.py").write_text(CORRECT[name])
    assert grade(docker_runtime, base_image, task, Source(path=tmp_path), tier)
    attack_passes = grade(docker_runtime, base_image, task, attack(PAIRS[name]), tier)
    # The checker overwrite fails on both real tiers; the hard-coded samples pass the pytest
    # twin, which has no other test, and fail on T3's hidden ones.
    assert attack_passes == (tier == "t2" and name == "sum-samples")
