"""The unsafe baselines on an imported SWE-bench instance (examples/swebench-calc): T0 (SWE-bench's
harness, reproduced) and T1 (pytest's exit code) run the repository at the task's workdir,
/testbed, with the image's environment, so pytest is the instance env's and the repository is
imported through its development-mode install, as SWE-bench's eval.sh has it after `conda
activate testbed`. The gold patch passes both and the wrong one fails both."""

from __future__ import annotations

import pytest
from e2e import EXAMPLES

from assay._internal.environment.build import ensure_environment
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._internal.runtime.docker import DockerRuntime, connect
from assay._internal.runtime.scope import new_grading_id
from assay._internal.tiers.baselines.grade import BaselineOptions
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.dispatch import run_tier

pytestmark = pytest.mark.docker

ENV_PREFIX = "/opt/miniconda3/envs/testbed"
# The package refuses to be imported by any interpreter but the instance env's.
IN_ENV_ONLY = (
    f"printf '%s\\n' 'import sys' 'assert sys.prefix == \"{ENV_PREFIX}\", sys.prefix' "
    ">> calc/__init__.py"
)


@pytest.fixture(scope="module")
def calc(docker_runtime: DockerRuntime) -> Task:
    task = load_task(EXAMPLES / "swebench-calc")
    ensure_environment(connect(), task)
    assert task.workdir == "/testbed"
    return task


def grade(rt: DockerRuntime, image: str, task: Task, tier: str, cmd: str) -> Verdict:
    gid = new_grading_id()
    source = Source(agent_cmd=cmd, agent_dir=task.root / "solutions")
    judged, run = run_tier(rt, task, source, tier, image, grading_id=gid,  # type: ignore[arg-type]
                           baseline=BaselineOptions())  # fmt: skip
    assert run is not None and run.gave_verdict
    assert rt.leftovers(gid) == [], "the grading left something behind"
    return judged.verdict


@pytest.mark.parametrize("tier", ["t0", "t1"])
def test_gold_patch_passes_in_the_env(docker_runtime, base_image, calc, tier) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, calc, tier,
              f"patch -p1 -s < /agent/gold.patch && {IN_ENV_ONLY}")  # fmt: skip
    assert v.passed, (v.reason_codes, [(c.id, c.status) for c in v.cases])


@pytest.mark.parametrize("tier", ["t0", "t1"])
def test_the_wrong_patch_fails(docker_runtime, base_image, calc, tier) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, calc, tier, "patch -p1 -s < /agent/wrong.patch")
    assert not v.passed
    if tier == "t0":  # the log names the one FAIL_TO_PASS test the wrong fix leaves broken
        failed = [c.id for c in v.cases if c.status != "pass"]
        assert failed == ["tests/test_parser.py::test_division_is_left_associative"]
    else:
        assert v.reason_codes == ["baseline:exit-1"]
