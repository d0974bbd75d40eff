"""The harbor tier on a real engine: both Harbor-format examples, imported and graded with their
own solve.sh (pass) and a wrong solution (fail), and the attacks on a Harbor verifier: a reward
planted by the candidate, and processes the candidate leaves to write the reward after the
tests. Each attack is shown live where its protection is absent (Harbor's shared mode, T0, or
Harbor's own separate verifier, T1) and blocked on the harbor tier."""

from __future__ import annotations

from typing import Literal

import pytest
from e2e import EXAMPLES, ROOT

from assay._internal.environment.build import ensure_environment
from assay._internal.importers.harbor import import_harbor
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import Verdict
from assay._internal.runtime.docker import DockerRuntime, connect
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.harbor.grade import grade_harbor
from assay._internal.tiers.strict.grade import new_grading_id

pytestmark = pytest.mark.docker

HARBOR = EXAMPLES / "harbor"
CORPUS = ROOT / "corpus"
PLANT = "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; printf 'exit 3\\n' > greet.sh"
# A total.py that prints a wrong answer and leaves a detached loop that keeps replacing
# reward.json with all ones, so whatever the test script writes is overwritten after it ends.
DAEMON = r"""cat > total.py <<'PY'
import json
import subprocess
ones = json.dumps({k: 1 for k in ("sum", "negative", "empty", "prices")})
loop = (f"while :; do printf '%s' '{ones}' > /logs/verifier/r.tmp"
        " && mv -f /logs/verifier/r.tmp /logs/verifier/reward.json; sleep 0.01; done")
subprocess.Popen(["sh", "-c", loop], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("0.00")
PY"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Task]:
    """Both examples imported and their environment images built (once for the module)."""
    out = tmp_path_factory.mktemp("harbor")
    client = connect()
    tasks = {}
    for name in ("greet", "csv-total"):
        task = load_task(import_harbor(HARBOR / name, out / name))
        ensure_environment(client, task)
        tasks[name] = task
    return tasks


def grade(
    rt: DockerRuntime,
    image: str,
    task: Task,
    source: Source,
    baseline: Literal["t0", "t1"] | None = None,
) -> Verdict:
    gid = new_grading_id()
    verdict = grade_harbor(rt, task, source, image, grading_id=gid, baseline=baseline)
    assert rt.leftovers(gid) == [], "the grading left something behind"
    return verdict


def reference(task: Task) -> Source:
    return Source(agent_cmd="bash /agent/solve.sh", agent_dir=task.root / "solutions/reference")


def wrong(name: str) -> Source:
    return Source(agent_cmd=f"bash /agent/{name}.sh", agent_dir=HARBOR / "wrong")


def test_greet_reference_passes_and_wrong_fails(docker_runtime, base_image, imported) -> None:
    task = imported["greet"]
    ok = grade(docker_runtime, base_image, task, reference(task))
    assert ok.passed, ok.reason_codes
    assert ok.tier == "harbor" and [(c.id, c.status) for c in ok.cases] == [("reward", "pass")]
    # seed: the image's /app; verifier: the container holding the files; tests: test.sh's own
    assert set(ok.image_digests) == {"agent", "seed", "verifier", "tests"}
    bad = grade(docker_runtime, base_image, task, wrong("greet"))
    assert not bad.passed
    assert bad.reason_codes == ["harbor:no-reward"]  # set -e stopped the script before it


def test_csv_total_reference_passes_and_wrong_fails(docker_runtime, base_image, imported) -> None:
    task = imported["csv-total"]
    ok = grade(docker_runtime, base_image, task, reference(task))
    assert ok.passed, ok.reason_codes
    assert [c.id for c in ok.cases] == [
        "reward.sum", "reward.negative", "reward.empty", "reward.prices",
    ]  # fmt: skip
    bad = grade(docker_runtime, base_image, task, wrong("csv-total"))
    assert not bad.passed and bad.reason_codes == []
    assert [c.status for c in bad.cases] == ["pass", "pass", "fail", "pass"]  # crashes on no rows


def test_planted_reward_live_on_shared_mode_blocked_on_harbor(
    docker_runtime, base_image, imported
) -> None:
    task = imported["greet"]
    shared = grade(docker_runtime, base_image, task, Source(agent_cmd=PLANT), baseline="t0")
    assert shared.passed and shared.tier == "t0"  # live: the planted 1 is read as the reward
    blocked = grade(docker_runtime, base_image, task, Source(agent_cmd=PLANT))
    assert not blocked.passed
    assert blocked.reason_codes == ["harbor:no-reward"]


def test_leftover_writer_live_on_harbors_verifier_blocked_on_harbor(
    docker_runtime, base_image, imported
) -> None:
    task = imported["csv-total"]
    source = Source(agent_cmd=DAEMON)
    harbors = grade(docker_runtime, base_image, task, source, baseline="t1")
    assert harbors.passed, harbors.reason_codes  # live: the loop's ones replaced the zeros
    blocked = grade(docker_runtime, base_image, task, source)
    assert not blocked.passed and blocked.reason_codes == ["harbor:leftover-process"]


def test_a_process_alive_when_the_script_ends_fails_an_honest_answer(
    docker_runtime, base_image, imported
) -> None:
    """The init's report, on its own: a right greet.sh that leaves an idle process behind."""
    greet = "#!/bin/sh\n(setsid sleep 30 </dev/null >/dev/null 2>&1 &)\nprintf 'Hello, %s!\\n' \"${1:-world}\"\n"
    source = Source(agent_cmd=f"printf '%s' '{greet}' > greet.sh")
    verdict = grade(docker_runtime, base_image, imported["greet"], source)
    assert not verdict.passed and verdict.reason_codes == ["harbor:leftover-process"]


@pytest.fixture(scope="module")
def canary() -> Task:
    """The Harbor-format canary of the proof matrix: test.sh draws its answer per run."""
    task = load_task(EXAMPLES / "canary-harbor")
    ensure_environment(connect(), task)
    return task


def corpus_attack(name: str) -> Source:
    return Source(agent_cmd="sh /agent/run.sh", agent_dir=CORPUS / name / "agent")


def test_a_reward_written_after_the_tests_ended_is_never_read(
    docker_runtime, base_image, canary
) -> None:
    """corpus/harbor-late-reward-writer: a double-forked writer waits for the test script's
    process to exit, writes reward 1 and exits at once (gone before any listing of the
    container). The tests run under assay's init in a container of their own: it stops the
    script at its exit, kills the writer and reports it, and the container ends with it."""
    late = corpus_attack("harbor-late-reward-writer")
    harbors = grade(docker_runtime, base_image, canary, late, baseline="t1")
    assert harbors.passed, harbors.reason_codes  # live on Harbor's own separate verifier
    for _ in range(3):  # a race the writer would win some of the time would show here
        blocked = grade(docker_runtime, base_image, canary, late)
        assert not blocked.passed and blocked.reason_codes == ["harbor:leftover-process"]


def test_the_late_writer_is_blocked_under_gvisor_too(docker_runtime, base_image, canary) -> None:
    """The same attack with every container under runsc: its init, ptrace and PID namespace."""
    assert "runsc" in docker_runtime.client.info().get("Runtimes", {}), "runsc not registered"
    gvisor = DockerRuntime(oci_runtime="runsc")
    late = corpus_attack("harbor-late-reward-writer")
    harbors = grade(gvisor, base_image, canary, late, baseline="t1")
    assert harbors.passed, harbors.reason_codes
    blocked = grade(gvisor, base_image, canary, late)
    assert not blocked.passed and blocked.reason_codes == ["harbor:leftover-process"]


# A right greet.sh, except that it first tries to trace the tests container's PID 1 (assay's
# init, same uid) or open its memory: it answers wrong if it could, so a pass means the init
# was out of reach.
TRACER = """#!/bin/sh
python3 - <<'PY' || exit 3
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(16, 1, None, None) == 0:  # PTRACE_ATTACH
    sys.exit(1)
try:
    open("/proc/1/mem", "r+b").close()  # its memory, to rewrite
except OSError:
    sys.exit(0)
sys.exit(1)
PY
printf 'Hello, %s!\\n' "${1:-world}"
"""


@pytest.mark.parametrize("oci", ["runc", "runsc"])
def test_the_candidate_cannot_trace_the_init(base_image, imported, oci: str) -> None:
    rt = DockerRuntime(oci_runtime=oci)
    source = Source(agent_cmd=f"cat > greet.sh <<'SH'\n{TRACER}SH")
    verdict = grade(rt, base_image, imported["greet"], source)
    assert verdict.passed, verdict.reason_codes
