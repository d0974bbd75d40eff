"""The three real-format Harbor fixtures on a real engine: each imported, built offline, its own
solve.sh passes and a no-op agent fails. And the trojaned interpreter: an agent that replaces
`python3` wherever it can outside its workdir (and drops one in its workdir) with a no-op
solution. It is live in Harbor's default mode, where the agent is root in a writable container
and the tests run in that same container; on the harbor tier the agent cannot write outside its
workdir, and the verifier is a fresh container of the image with only the workdir restored,
so the tests run the image's python3 and the no-op fails."""

from __future__ import annotations

import shutil

import pytest
from e2e import EXAMPLES

from assay._internal.environment.build import ensure_environment
from assay._internal.importers.harbor import import_harbor
from assay._internal.model.envcontext import environment_ref
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._internal.runtime import Bind, ContainerSpec, GradingScope, Scratch
from assay._internal.runtime.docker import DockerRuntime, connect
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.harbor.grade import LOGS, TEST_ARGV, TESTS, grade_harbor
from assay._internal.tiers.strict.grade import new_grading_id

pytestmark = pytest.mark.docker

HARBOR = EXAMPLES / "harbor"
FIXTURES = ("log-summary", "fizzbuzz-v2", "word-count")
# Overwrites python3 in every PATH directory, HOME, /tmp and the workdir, each attempt allowed
# to fail; the trojan writes a reward of 1 and exits 0, as a passing test run would.
TROJAN = r"""t='#!/bin/sh
mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; exit 0'
for d in /usr/local/bin /usr/bin /bin "$HOME" /tmp .; do
  printf '%s\n' "$t" > "$d/python3" 2>/dev/null && chmod +x "$d/python3" 2>/dev/null
done
true"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Task]:
    out = tmp_path_factory.mktemp("harbor-real")
    client = connect()
    tasks = {}
    for name in FIXTURES:
        task = load_task(import_harbor(HARBOR / name, out / name))
        ensure_environment(client, task)  # also reads the image's WORKDIR when none is named
        tasks[name] = task
    return tasks


def grade(rt: DockerRuntime, image: str, task: Task, source: Source) -> Verdict:
    gid = new_grading_id()
    verdict = grade_harbor(rt, task, source, image, grading_id=gid)
    assert rt.leftovers(gid) == [], "the grading left something behind"
    return verdict


@pytest.mark.parametrize("name", FIXTURES)
def test_reference_passes_and_a_no_op_agent_fails(docker_runtime, base_image, imported, name):
    task = imported[name]
    ok = grade(
        docker_runtime,
        base_image,
        task,
        Source(agent_cmd="bash /agent/solve.sh", agent_dir=task.root / "solutions" / "reference"),
    )
    assert ok.passed, ok.reason_codes
    noop = grade(docker_runtime, base_image, task, Source(agent_cmd="true"))
    assert not noop.passed
    assert noop.reason_codes == [] and any(c.status == "fail" for c in noop.cases)


def test_the_image_workdir_is_the_agents(imported) -> None:
    assert imported["log-summary"].workdir == "/srv/logsum"  # the Dockerfile's WORKDIR, not /app


def harbor_default_mode(rt: DockerRuntime, task: Task, image: str, agent_cmd: str) -> bytes:
    """What Harbor does with a task by default: one container, the agent as root with a
    writable root filesystem, then test.sh in that same container; returns the reward file."""
    with GradingScope(rt, new_grading_id()) as scope:
        cid = scope.container(ContainerSpec(
            image=image, grading_id=scope.grading_id, role="agent", user="0:0", hardened=False,
            binds=(Bind(task.judge_dir / "tests", TESTS),), scratch=(Scratch(LOGS, 1 << 20),),
            workdir=task.workdir,
        ))  # fmt: skip
        rt.exec(cid, ("sh", "-c", agent_cmd), deadline_s=60, output_cap=1 << 16)
        rt.exec(cid, TEST_ARGV, deadline_s=120, output_cap=1 << 16, workdir=task.workdir)
        return rt.exec(cid, ("cat", f"{LOGS}/reward.txt"), deadline_s=30, output_cap=64).stdout


def test_a_trojaned_interpreter_is_live_in_harbors_default_mode_and_fails_here(
    docker_runtime, base_image, imported
) -> None:
    task = imported["log-summary"]
    image = environment_ref(task) or base_image
    assert harbor_default_mode(docker_runtime, task, image, "true").strip() == b"0"
    live = harbor_default_mode(docker_runtime, task, image, TROJAN)
    assert live.strip() == b"1"  # the trojan ran as the tests' python3 and wrote the reward
    blocked = grade(docker_runtime, base_image, task, Source(agent_cmd=TROJAN))
    assert not blocked.passed
    assert blocked.reason_codes == [] and [c.status for c in blocked.cases] == ["fail"]


SHADOW = "printf 'import sys\\nsys.exit(0)\\n' > pytest.py"
"""A no-op solution that leaves a pytest.py in the workdir, which exits 0 if it is imported."""


def test_a_module_left_in_the_workdir_shadows_python_m_but_not_the_pytest_command(
    docker_runtime, base_image, imported, tmp_path
) -> None:
    """The whole workdir is in the verifier, at the tests' working directory. `python3 -m
    pytest` puts that directory first on sys.path, so the agent's pytest.py runs instead and
    exits 0 (live on a copy of the task whose test.sh is written that way; the importer notes
    such a test.sh); the fixture runs `pytest` as a command, as Terminal-Bench's `uvx pytest`
    does, and the same agent fails."""
    task = imported["log-summary"]
    copy = tmp_path / "log-summary-m"
    shutil.copytree(task.root, copy)
    script = copy / "judge" / "tests" / "test.sh"
    script.write_text(script.read_text().replace("\npytest -p", "\npython3 -m pytest -p"))
    variant = load_task(copy)
    ensure_environment(connect(), variant)  # the same build context: the same image
    live = grade(docker_runtime, base_image, variant, Source(agent_cmd=SHADOW))
    assert live.passed, live.reason_codes  # the shadow module decided the reward
    blocked = grade(docker_runtime, base_image, task, Source(agent_cmd=SHADOW))
    assert not blocked.passed and [c.status for c in blocked.cases] == ["fail"]


def test_the_whole_workdir_is_the_verifiers_workdir_deletions_included(
    docker_runtime, base_image, tmp_path
) -> None:
    """With no declared artifact the verifier's workdir is exactly the agent's: a file the
    agent deleted from the image's workdir is not copied back under it (the task asks for
    that deletion; a no-op agent fails)."""
    src = tmp_path / "src"
    shutil.copytree(HARBOR / "fizzbuzz-v2", src)
    (src / "environment" / "junk").write_text("remove me\n")
    (src / "environment" / "keep").write_text("keep me\n")
    (src / "environment" / "Dockerfile").write_text(
        "FROM assay-base:latest\nWORKDIR /app\nCOPY junk keep /app/\n"
    )
    (src / "tests" / "test.sh").write_text(
        "#!/bin/bash\nif [ ! -e junk ] && [ -e keep ]; then r=1; else r=0; fi\n"
        'echo "$r" > /logs/verifier/reward.txt\n'
    )
    task = load_task(import_harbor(src, tmp_path / "cleanup"))
    ensure_environment(connect(), task)
    done = grade(docker_runtime, base_image, task, Source(agent_cmd="rm junk"))
    assert done.passed, done.reason_codes
    noop = grade(docker_runtime, base_image, task, Source(agent_cmd="true"))
    assert not noop.passed


PLANT = (
    "mkdir -p /logs/verifier logs/verifier; echo 1 > /logs/verifier/reward.txt;"
    " echo 1 > logs/verifier/reward.txt; true"
)
# A wc.py that prints a wrong answer and leaves a detached loop rewriting reward.txt with 1
# after the check wrote 0.
DAEMON = r"""cat > /app/wc.py <<'PY'
import subprocess
loop = ("while :; do echo 1 > /logs/verifier/r.tmp"
        " && mv -f /logs/verifier/r.tmp /logs/verifier/reward.txt; sleep 0.01; done")
subprocess.Popen(["sh", "-c", loop], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("0 0 0")
PY"""


def test_a_planted_reward_and_a_leftover_writer_stay_blocked_on_the_fixtures(
    docker_runtime, base_image, imported
) -> None:
    """The harbor tier's two checks on the real-format fixtures: a reward planted by the agent
    (at /logs, which it cannot write, and in its workdir, which is restored there and nowhere
    else) and a process the candidate's program leaves to rewrite the reward after the tests."""
    for name in ("log-summary", "fizzbuzz-v2"):
        planted = grade(docker_runtime, base_image, imported[name], Source(agent_cmd=PLANT))
        assert not planted.passed, name
    left = grade(docker_runtime, base_image, imported["word-count"], Source(agent_cmd=DAEMON))
    assert not left.passed
    assert left.reason_codes[0] == "harbor:leftover-process"
