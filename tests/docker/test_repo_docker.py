"""A repository task on the compat tier (T2), end to end on the real engine: the example's
environment image is built once; the correct patch passes, the wrong one fails on the
FAIL_TO_PASS test it leaves broken, and a conftest.py fails naming the path policy's rule."""

from __future__ import annotations

import pytest
from e2e import EXAMPLES

from assay._internal.environment.build import ensure_environment
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._internal.runtime.docker import DockerRuntime, connect
from assay._internal.runtime.scope import new_grading_id
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.dispatch import run_tier

pytestmark = pytest.mark.docker

F2P_CHAIN = "tests/test_version.py::test_spec_precedence_chain"


@pytest.fixture(scope="module")
def semver(docker_runtime: DockerRuntime) -> Task:
    task = load_task(EXAMPLES / "semver-pytest")
    ensure_environment(connect(), task)
    return task


def grade(rt: DockerRuntime, image: str, task: Task, submission: str) -> Verdict:
    gid = new_grading_id()
    judged, _ = run_tier(rt, task, Source(path=task.root / submission), "t2", image,
                         grading_id=gid)  # fmt: skip
    assert rt.leftovers(gid) == [], "the grading left something behind"
    return judged.verdict


def test_correct_patch_passes(docker_runtime, base_image, semver) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, semver, "solutions/correct")
    spec = semver.config.pytest
    assert spec is not None and spec.fail_to_pass is not None
    assert v.passed, v.reason_codes
    assert [c.id for c in v.cases] == [*spec.fail_to_pass, *spec.pass_to_pass]
    assert v.reason_codes == []
    assert set(v.image_digests) == {"repository", "candidate"}


def test_wrong_patch_fails_on_the_broken_test(docker_runtime, base_image, semver) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, semver, "solutions/wrong")
    assert not v.passed
    assert "junit:failure" in v.reason_codes
    failed = [c.id for c in v.cases if c.status != "pass"]
    assert failed == [F2P_CHAIN]


def test_conftest_submission_fails_naming_the_rule(docker_runtime, base_image, semver) -> None:  # type: ignore[no-untyped-def]
    v = grade(docker_runtime, base_image, semver, "attempts/conftest-only")
    assert not v.passed
    assert v.reason_codes == ["policy:conftest"]
