"""The harbor tier's controller on the fake runtime: what it reads, where the tests run, and the
checks that keep a reward the test script did not produce from counting (the engine runs, and
the init's own behaviour, are in test_harbor_docker.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from assay._internal.model.task import Task, load_task
from assay._internal.runtime.base import ContainerSpec, ExecResult
from assay._internal.runtime.fake import FakeContainer, FakeRuntime
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.dispatch import default_tier, tiers_for
from assay._internal.tiers.harbor.grade import INIT_ARGV, TEST_ARGV, grade_harbor
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


def fake_tests(reward: bytes, *, init_code: int = 0) -> Mapping[str, object]:
    """A fake of the tests container's command (assay's init running `bash /tests/test.sh`):
    checks the restored artifact, writes `reward`, and exits as the init would (3: another
    process was alive when the script ended)."""

    def run(
        c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        assert argv == INIT_ARGV
        assert env == {"MODE": "x"}
        assert c.files["/workspace/greet.sh"] == b"echo hi\n"
        c.files[REWARD] = reward
        return init_code, b"", b""

    return {"python3": run}


def test_dispatch_picks_the_harbor_tier(task: Task) -> None:
    assert default_tier(task) == "harbor"
    assert tiers_for(task) == ("t0", "t1", "harbor")


def test_reward_one_passes(task: Task, submission: Source) -> None:
    rt = FakeRuntime(fake_tests(b"1\n"))  # type: ignore[arg-type]
    verdict = grade_harbor(rt, task, submission, "img")
    assert verdict.passed and verdict.tier == "harbor"
    assert [(c.id, c.status) for c in verdict.cases] == [("reward", "pass")]
    assert set(verdict.image_digests) == {"verifier", "tests"}
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


class Recording(FakeRuntime):
    """Remembers every container it made and every exec it ran."""

    def __init__(self, programs: Mapping[str, object]) -> None:
        super().__init__(programs)  # type: ignore[arg-type]
        self.made: dict[str, FakeContainer] = {}
        self.execs: list[tuple[str, tuple[str, ...]]] = []

    def create(self, spec: ContainerSpec) -> str:
        cid = super().create(spec)
        self.made[cid] = self.containers[cid]
        return cid

    def exec(self, cid: str, argv: tuple[str, ...], **kw: Any) -> ExecResult:
        self.execs.append((self.made[cid].spec.role, argv))
        return super().exec(cid, argv, **kw)


def test_the_tests_are_the_init_of_their_own_container_over_the_holders_files(
    task: Task, submission: Source
) -> None:
    rt = Recording(fake_tests(b"1"))
    assert grade_harbor(rt, task, submission, "img").passed
    holder = next(cid for cid, c in rt.made.items() if c.spec.role == "verifier")
    tests = next(c for c in rt.made.values() if c.spec.role == "tests")
    assert tests.spec.command == INIT_ARGV and not tests.spec.init
    assert tests.spec.mounts_of == holder and tests.spec.hardened
    assert [b.target for b in tests.spec.binds] == ["/assay/harbor"]
    assert all(argv != TEST_ARGV for _, argv in rt.execs)  # never an exec beside the holder


@pytest.mark.parametrize(("code", "reason"), [(3, "harbor:leftover-process"),
                                              (4, "harbor:tests-interrupted"),
                                              (127, "harbor:tests-interrupted")])  # fmt: skip
def test_an_init_that_reports_anything_but_a_clean_end_fails(
    task: Task, submission: Source, code: int, reason: str
) -> None:
    verdict = grade_harbor(Recording(fake_tests(b"1", init_code=code)), task, submission, "img")
    assert not verdict.passed
    assert verdict.reason_codes == [reason]  # the reward, 1, is never read


def test_t1_is_harbors_own_verifier_an_exec_beside_the_files(
    task: Task, submission: Source
) -> None:
    def bash(
        c: FakeContainer, argv: tuple[str, ...], env: Mapping[str, str]
    ) -> tuple[int, bytes, bytes]:
        c.files[REWARD] = b"1"
        return 0, b"", b""

    rt = Recording({"bash": bash})
    verdict = grade_harbor(rt, task, submission, "img", baseline="t1")
    assert verdict.passed and verdict.tier == "t1"
    assert rt.execs[-1] == ("verifier", TEST_ARGV)
    assert {c.spec.role for c in rt.made.values()} == {"verifier"}  # no tests container


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
