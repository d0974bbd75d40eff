"""The harbor tier's controller on the fake runtime: what it reads, and the two checks that keep
a reward the test script did not produce from counting (the engine runs are in
test_harbor_docker.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from assay._internal.model.task import Task, load_task
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.controller import Source
from assay._internal.tiers.dispatch import default_tier, tiers_for
from assay._internal.tiers.harbor import grade_harbor
from assay.errors import TaskError

REWARD = "/logs/verifier/reward.txt"


@pytest.fixture
def task(tmp_path: Path) -> Task:
    root = tmp_path / "task"
    (root / "inputs").mkdir(parents=True)
    (root / "inputs" / "instruction.md").write_text("write greet.sh\n")
    (root / "judge" / "tests").mkdir(parents=True)
    (root / "judge" / "tests" / "test.sh").write_text("#!/bin/bash\n")
    (root / "task.toml").write_text(
        'id = "greet"\nkind = "harbor"\nartifacts = ["greet.sh"]\n'
        '[harbor]\nverifier_env = {MODE = "x"}\n'
    )
    return load_task(root)


@pytest.fixture
def submission(tmp_path: Path) -> Source:
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "greet.sh").write_text("echo hi\n")
    return Source(path=sub)


def fake_tests(reward: bytes, *, leftover: str | None = None) -> Mapping[str, object]:
    """A fake `bash /tests/test.sh`: checks the restored artifact, writes `reward`, and may leave
    a process behind as a candidate's daemon would."""

    def run(
        c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        assert argv == ("bash", "/tests/test.sh")
        assert env == {"MODE": "x"}
        assert c.files["/workspace/greet.sh"] == b"echo hi\n"
        c.files[REWARD] = reward
        if leftover:
            c.procs.append((99, leftover))
        return 0, b"", b""

    return {"bash": run}


def test_dispatch_picks_the_harbor_tier(task: Task) -> None:
    assert default_tier(task) == "harbor"
    assert tiers_for(task) == ("t0", "harbor")


def test_reward_one_passes(task: Task, submission: Source) -> None:
    rt = FakeRuntime(fake_tests(b"1\n"))  # type: ignore[arg-type]
    verdict = grade_harbor(rt, task, submission, "img")
    assert verdict.passed and verdict.tier == "harbor"
    assert [(c.id, c.status) for c in verdict.cases] == [("reward", "pass")]
    assert set(verdict.image_digests) == {"verifier"}
    assert rt.leftovers() == []


@pytest.mark.parametrize(
    ("reward", "reason"),
    [(b"0", None), (b"nan", "harbor:reward-malformed"), (b"1e999", "harbor:reward-non-finite")],
)
def test_other_rewards_fail(task: Task, submission: Source, reward: bytes, reason: str) -> None:
    verdict = grade_harbor(FakeRuntime(fake_tests(reward)), task, submission, "img")  # type: ignore[arg-type]
    assert not verdict.passed
    assert verdict.reason_codes == ([reason] if reason else [])


class SeededRuntime(FakeRuntime):
    """An engine that fills a new volume from the image (Docker does for plain named
    volumes): a reward.txt baked into the image would be there before the tests run."""

    def start(self, cid: str) -> None:
        super().start(cid)
        if self._get(cid).spec.role == "verifier":
            self._get(cid).files[REWARD] = b"1"


def test_a_reward_present_before_the_tests_fails(task: Task, submission: Source) -> None:
    ran: list[bool] = []

    def never(
        c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        ran.append(True)
        return 0, b"", b""

    verdict = grade_harbor(SeededRuntime({"bash": never}), task, submission, "img")
    assert not verdict.passed
    assert verdict.reason_codes == ["harbor:reward-before-tests", "file:reward.txt"]
    assert ran == []  # the tests never ran on a tainted /logs/verifier


def test_a_leftover_process_fails_and_the_check_is_what_blocks_it(
    task: Task, submission: Source
) -> None:
    script = fake_tests(b"1", leftover="Sneaky Writer\x1b[31m")
    verdict = grade_harbor(FakeRuntime(script), task, submission, "img")  # type: ignore[arg-type]
    assert not verdict.passed
    assert verdict.reason_codes == ["harbor:leftover-process", "process:sneaky-writer-31m"]
    # The same run with the check removed: the reward the leftover could have written counts.
    unchecked = grade_harbor(FakeRuntime(script), task, submission, "img", check_processes=False)  # type: ignore[arg-type]
    assert unchecked.passed


class SlowKeepAlive(FakeRuntime):
    """The engine's init has not started the keep-alive yet when the container is first listed."""

    def __init__(self, programs: Mapping[str, object]) -> None:
        super().__init__(programs)  # type: ignore[arg-type]
        self.listed = 0

    def processes(self, cid: str) -> list[tuple[int, str]]:
        self.listed += 1
        return [(1, "docker-init")] if self.listed == 1 else super().processes(cid)


def test_the_keep_alive_is_not_taken_for_a_leftover(task: Task, submission: Source) -> None:
    rt = SlowKeepAlive(fake_tests(b"1"))
    verdict = grade_harbor(rt, task, submission, "img")
    assert verdict.passed, verdict.reason_codes
    assert rt.listed == 3  # once too early, once with the keep-alive, once after the tests


@pytest.mark.parametrize("workdir", ["/logs", "/logs/verifier", "/tests/x"])
def test_a_workdir_over_the_reward_or_the_tests_is_refused(tmp_path: Path, workdir: str) -> None:
    root = tmp_path / "t"
    (root / "inputs").mkdir(parents=True)
    (root / "judge" / "tests").mkdir(parents=True)
    (root / "judge" / "tests" / "test.sh").write_text("")
    (root / "env").mkdir()
    (root / "env" / "Dockerfile").write_text("FROM assay-base:latest\n")
    (root / "task.toml").write_text(
        'id = "t"\nkind = "harbor"\nartifacts = ["verifier/reward.txt"]\n'
        f'[environment]\ndockerfile = "env/Dockerfile"\nworkdir = "{workdir}"\n'
    )
    with pytest.raises(TaskError, match="may not overlap"):
        load_task(root)


@pytest.mark.parametrize(
    ("name", "code"),
    [("__init", "process:init"), ("...", "process:unnamed"), ("Ω" * 80, "process:unnamed"),
     ("x" * 80, "process:" + "x" * 40)],
)  # fmt: skip
def test_a_hostile_process_name_still_makes_a_valid_failed_verdict(
    task: Task, submission: Source, name: str, code: str
) -> None:
    verdict = grade_harbor(FakeRuntime(fake_tests(b"1", leftover=name)), task, submission, "img")  # type: ignore[arg-type]
    assert not verdict.passed
    assert verdict.reason_codes == ["harbor:leftover-process", code]
