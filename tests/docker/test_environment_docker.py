"""`[environment]` on the real engine: the C example built once and then cached, graded on T3
(correct passes, wrong fails), judge/ never in a build context, and the bad-input exits."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from e2e import EXAMPLES, assay

from assay._internal.environment import ensure_environment
from assay._internal.environment.build import CONTEXT_LABEL
from assay._internal.model.envcontext import context_digest, environment_ref
from assay._internal.model.task import load_task
from assay._internal.runtime import ContainerSpec, GradingScope
from assay._internal.runtime.scope import new_grading_id
from assay._internal.tiers.core.controller import task_image
from assay.errors import TaskEnvironmentError

pytestmark = pytest.mark.docker

C_TASK = EXAMPLES / "c-wordfreq"
AGENT_CMD = "sh /agent/agent.sh"  # solutions/*/agent.sh: cc -O2 -o wordfreq wordfreq.c


def cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp / "config"))
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp,
    )  # fmt: skip


@pytest.fixture(scope="module")
def c_env(docker_runtime: Any) -> Any:
    """The C example's image, built here if this engine has none yet (a fresh CI machine)."""
    env = ensure_environment(docker_runtime.client, load_task(C_TASK))
    assert env is not None
    return env


@pytest.fixture
def scratch_task(tmp_path: Path, docker_runtime: Any) -> Iterator[Any]:
    """Writes a task with the given Dockerfile; removes any image built from it afterwards.
    Each Dockerfile ends in a comment of its own, so two tests never share an image tag:
    under xdist one test's teardown would remove an image the other's container still runs."""
    made: list[str] = []

    def make(dockerfile: str, env: str = 'dockerfile = "environment/Dockerfile"') -> Path:
        root = tmp_path / f"task{len(made)}"
        (root / "inputs").mkdir(parents=True)
        (root / "judge").mkdir()
        (root / "judge" / "cases.json").write_text('[{"id": "a", "input": [1], "expected": 1}]')
        (root / "judge" / "secret.txt").write_text("the judge's answer 42")
        (root / "environment").mkdir()
        own = f"{dockerfile.rstrip(chr(10))}\n# {uuid.uuid4().hex}\n"
        (root / "environment" / "Dockerfile").write_text(own)
        os.symlink("../judge/secret.txt", root / "environment" / "leak")
        (root / "task.toml").write_text(
            'id = "t"\nkind = "function"\nartifacts = ["s.py"]\n[function]\nentry = "s:f"\n'
            f'[judge]\ncases = "cases.json"\n[environment]\n{env}\n'
        )
        made.append(str(environment_ref(load_task(root))))
        return root

    yield make
    for ref in made:
        try:
            docker_runtime.client.images.remove(ref)
        except docker.errors.ImageNotFound:
            pass


def test_c_example_is_built_once_and_then_reused(
    c_env: Any, docker_runtime: Any, tmp_path: Path
) -> None:
    client = docker_runtime.client
    task = load_task(C_TASK)
    image = client.images.get(c_env.ref)
    assert image.id == c_env.image_id
    assert image.labels[CONTEXT_LABEL] == context_digest(task)
    builds: list[object] = []
    real_build = client.api.build
    client.api.build = lambda *a, **k: builds.append(k) or real_build(*a, **k)
    try:
        again = ensure_environment(client, task)
    finally:
        client.api.build = real_build
    assert again is not None and not again.built and again.image_id == c_env.image_id
    assert builds == []
    run = cli("build", "--runtime", "runc", str(C_TASK), tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    said, ready = run.stdout.rstrip("\n").split("; ")
    assert said.split() == [c_env.ref, c_env.image_id, "cached"]
    # Made ready for the backend too (runc: unpacked into its image store, once).
    assert re.fullmatch(r"runc ready in \d+\.\d s", ready), run.stdout
    run = cli("build", str(C_TASK), tmp=tmp_path)  # these tests' $ASSAY_RUNTIME: docker
    assert run.returncode == 0, run.stderr
    assert re.fullmatch(r"docker ready in \d+\.\d s", run.stdout.split("; ")[1].strip())


@pytest.mark.parametrize(("solution", "code"), [("correct", 0), ("wrong", 1)])
def test_c_example_grades_on_t3(
    c_env: Any, docker_runtime: Any, base_image: str, tmp_path: Path, solution: str, code: int
) -> None:
    g = assay(
        "grade", str(C_TASK), "--agent-cmd", AGENT_CMD,
        "--agent-dir", str(C_TASK / "solutions" / solution), tmp=tmp_path,
    )  # fmt: skip
    assert g.exit_code == code, g.stderr
    assert g.verdict is not None and g.verdict["passed"] is (code == 0)
    assert g.verdict["tier"] == "t3"
    if code == 1:
        assert "compare:mismatch" in g.reasons
        failed = {c["id"] for c in g.verdict["cases"] if c["status"] != "pass"}
        assert failed == {"sentence", "mixed-case"}  # the wrong one does not fold case
    digests = g.verdict["image_digests"]
    assert digests["agent"] == digests["candidate"] == c_env.image_id
    assert digests["judge"] == docker_runtime.image_digest(base_image) != c_env.image_id


def test_judge_is_not_in_the_build_context(
    scratch_task: Any, docker_runtime: Any, tmp_path: Path
) -> None:
    root = scratch_task(
        "FROM assay-base:latest\nCOPY . /ctx/\n"
        "RUN find /ctx | sort > /listing && (cat /ctx/leak > /leak-read 2>&1 || true)\n"
    )
    run = cli("build", "-q", str(root), tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    ref = run.stdout.split()[0]
    with GradingScope(docker_runtime, new_grading_id()) as scope:
        cid = scope.container(ContainerSpec(image=ref, grading_id=scope.grading_id, role="probe"))
        res = docker_runtime.exec(
            cid, ("sh", "-c", "cat /listing; echo ---; cat /leak-read; readlink /ctx/leak"),
            deadline_s=60, output_cap=1 << 16,
        )  # fmt: skip
    out = res.stdout.decode()
    listing, leak = out.split("---\n")
    assert listing.split() == ["/ctx", "/ctx/Dockerfile", "/ctx/leak"]
    assert "42" not in leak and "No such file" in leak and "../judge/secret.txt" in leak


def test_a_dockerfile_that_fails_exits_2_with_its_log_tail(
    scratch_task: Any, tmp_path: Path
) -> None:
    root = scratch_task(
        "FROM assay-base:latest\nRUN echo marker-before-the-failure\nCOPY ../judge/secret.txt /x\n"
    )
    run = cli("build", "-q", str(root), tmp=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "failed to build" in run.stderr and "marker-before-the-failure" in run.stderr
    assert "outside the build context" in run.stderr  # the judge's file is out of reach
    assert "assay build" in run.stderr and "Traceback" not in run.stderr


def test_a_base_that_is_not_here_is_never_pulled(scratch_task: Any, tmp_path: Path) -> None:
    root = scratch_task("ARG V=1\nFROM assay-no-such-base:$V\nRUN true\n")
    run = cli("build", str(root), tmp=tmp_path)
    assert run.returncode == 2
    assert "'assay-no-such-base:1' is not on this Docker engine" in run.stderr
    assert "never pulls" in run.stderr


def test_an_image_without_python3_is_refused(
    scratch_task: Any, docker_runtime: Any, tmp_path: Path
) -> None:
    root = scratch_task("FROM scratch\nCOPY Dockerfile /\n")
    run = cli("build", str(root), tmp=tmp_path)
    assert run.returncode == 2
    assert "python3" in run.stderr and "Traceback" not in run.stderr
    with pytest.raises(docker.errors.ImageNotFound):
        docker_runtime.client.images.get(str(environment_ref(load_task(root))))


def test_a_missing_image_exits_2_naming_it(
    scratch_task: Any, docker_runtime: Any, tmp_path: Path
) -> None:
    missing = "sha256:" + "0" * 64
    pinned = scratch_task("FROM assay-base:latest\n", env=f'image = "{missing}"')
    run = cli("build", str(pinned), tmp=tmp_path)
    assert run.returncode == 2 and missing in run.stderr and "never pulls" in run.stderr
    g = assay("grade", str(pinned), "--submission", str(pinned / "inputs"), tmp=tmp_path)
    assert g.exit_code == 2 and missing in g.stderr and g.verdict is None
    unbuilt = load_task(scratch_task("FROM assay-base:latest\nRUN echo never-built\n"))
    with pytest.raises(TaskEnvironmentError) as err:
        task_image(docker_runtime, unbuilt, "assay-base:latest")
    assert err.value.fix == f"assay build {unbuilt.root}" and err.value.exit_code == 2


def _app_task(scratch_task: Any) -> Any:
    """A task whose image ships a wrong `add` at /app/pkg/solution.py (workdir /app)."""
    root = scratch_task(
        "FROM assay-base:latest\nRUN mkdir -p /app/pkg"
        " && printf 'def add(a, b):\\n    return a - b\\n' > /app/pkg/solution.py\n",
        env='dockerfile = "environment/Dockerfile"\nworkdir = "/app"',
    )
    toml = root / "task.toml"
    toml.write_text(
        toml.read_text()
        .replace('artifacts = ["s.py"]', 'artifacts = ["pkg/solution.py"]')
        .replace('entry = "s:f"', 'entry = "pkg.solution:add"')
    )
    (root / "judge" / "cases.json").write_text(
        '[{"id": "a", "input": [2, 3], "expected": 5}, {"id": "b", "input": [0, 0], "expected": 0}]'
    )
    return root


def test_a_session_works_in_the_tasks_workdir_and_image(
    scratch_task: Any, tmp_path: Path, docker_runtime: Any
) -> None:
    """Grader.session on an `[environment]` task: built on first use, the agent container runs
    the task's image, files are read and written under its workdir (/app), not /workspace."""
    import assay as api

    root = _app_task(scratch_task)
    with api.Grader(key=tmp_path / "k" / "signing.key") as grader:
        with grader.session(root) as s:
            assert s.exec("pwd").stdout == b"/app\n"
            assert b"a - b" in s.read_file("pkg/solution.py")
            assert b"a - b" in s.read_file("/app/pkg/solution.py")
            with pytest.raises(api.errors.UsageError):
                s.read_file("/workspace/pkg/solution.py")
            s.write_file("pkg/solution.py", "def add(a, b):\n    return a + b\n")
            graded = s.grade()
            gid = s.grading_id
    assert graded.verdict.passed, graded.verdict.reason_codes
    digests = graded.verdict.image_digests
    assert digests["agent"] == digests["candidate"] != digests["judge"]
    assert list(docker_runtime.leftovers(gid)) == []


def test_grading_builds_on_first_use_and_the_agent_starts_from_the_image_workdir(
    scratch_task: Any, docker_runtime: Any, tmp_path: Path
) -> None:
    """A Harbor-style task: the image ships the code at /app (root's files); the agent edits it
    in place. The workdir is a fresh volume, so this passes only if the image's /app was copied
    in, owned by the agent."""
    root = _app_task(scratch_task)
    fix = "sed -i 's/a - b/a + b/' pkg/solution.py && test \"$(pwd)\" = /app"
    g = assay("grade", str(root), "--agent-cmd", fix, tmp=tmp_path)
    assert g.exit_code == 0, g.stderr  # built on first use by the grade itself
    assert g.verdict is not None and g.verdict["passed"] is True
    untouched = assay("grade", str(root), "--agent-cmd", "true", tmp=tmp_path)
    assert untouched.exit_code == 1 and untouched.verdict is not None  # a - b, as shipped
    assert untouched.verdict["cases"][0]["status"] == "fail"


def test_grader_build_is_the_public_way(c_env: Any, tmp_path: Path) -> None:
    import assay

    with assay.Grader(key=tmp_path / "k" / "signing.key") as grader:
        assert grader.build(C_TASK) == c_env.ref  # cached: found, not built
        assert grader.build(EXAMPLES / "add") is None  # no [environment]: the base image
