"""The SWE-bench 5 fixtures under tests/swebench/ are faithful, run the way SWE-bench runs them.

For each instance, in a throwaway container of its locally built image (no network): the gold
patch applied with `git apply` and the task's eval.sh run with bash report every FAIL_TO_PASS
and PASS_TO_PASS test PASSED, as swebench's parse_log_pytest reads the log between the
markers; without the gold patch every FAIL_TO_PASS test fails and every PASS_TO_PASS test
passes. And the image leaks the fix as SWE-bench's did (issues #465/#581/#590): /testbed is
clean on the base commit, yet the fix commit is in its object store, on a branch and a tag,
and in main's reflog, so an importer's sanitization has something real to remove.
"""

from __future__ import annotations

import base64
import json
import subprocess
import uuid

import pytest
from helpers.swebench import (
    INSTANCE_IDS,
    LABEL,
    LABEL_VALUE,
    build_instance_images,
    failed,
    history,
    marked_output,
    parse_log_pytest,
    passed,
    status_of,
    task_dir,
)

pytestmark = pytest.mark.docker

RUN_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def images() -> dict[str, str]:
    return build_instance_images(None)


def run_in(image: str, script: str) -> subprocess.CompletedProcess[str]:
    """`script` through bash in a new container of `image`, removed whatever happens; its
    stdout and stderr interleaved, as the harness's exec_run reads them."""
    name = f"assay-swebench-fixture-{uuid.uuid4().hex[:12]}"
    argv = ["docker", "run", "--rm", "-i", "--name", name, "--network", "none"]
    argv += ["--label", f"{LABEL}={LABEL_VALUE}", image, "bash", "-c", "bash -s 2>&1"]
    try:
        return subprocess.run(argv, input=script, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)  # fmt: skip
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)


def staged(path: str, text: str) -> str:
    return f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > {path}\n"


def eval_log(instance_id: str, image: str, model_patch: str) -> str:
    """What SWE-bench's run_instance does: the patch to /tmp/patch.diff and `git apply
    --verbose` it in /testbed, then eval.sh to /eval.sh and `/bin/bash /eval.sh`."""
    script = "cd /testbed\n"
    if model_patch:
        script += staged("/tmp/patch.diff", model_patch)
        script += "git apply --verbose /tmp/patch.diff || { echo 'PATCH FAILED'; exit 97; }\n"
    script += staged("/eval.sh", (task_dir(instance_id) / "eval.sh").read_text())
    script += "/bin/bash /eval.sh\n"
    run = run_in(image, script)
    assert "PATCH FAILED" not in run.stdout, run.stdout[-3000:]
    return run.stdout


def listed_tests(instance_id: str) -> tuple[list[str], list[str]]:
    tests = json.loads((task_dir(instance_id) / "tests.json").read_text())
    return tests["FAIL_TO_PASS"], tests["PASS_TO_PASS"]


@pytest.mark.parametrize("instance_id", INSTANCE_IDS)
def test_gold_patch_passes_every_listed_test(images: dict[str, str], instance_id: str) -> None:
    log = eval_log(
        instance_id, images[instance_id], (task_dir(instance_id) / "gold.patch").read_text()
    )
    status = parse_log_pytest(marked_output(log))
    f2p, p2p = listed_tests(instance_id)
    assert [t for t in f2p + p2p if not passed(t, status)] == [], log[-4000:]
    # exactly the tests the files in the test patch hold: none missing from the lists
    assert len(status) == len(f2p) + len(p2p), status


@pytest.mark.parametrize("instance_id", INSTANCE_IDS)
def test_without_the_fix_fail_to_pass_fails(images: dict[str, str], instance_id: str) -> None:
    log = eval_log(instance_id, images[instance_id], "")
    status = parse_log_pytest(marked_output(log))
    f2p, p2p = listed_tests(instance_id)
    assert [t for t in f2p if not failed(t, status)] == [], log[-4000:]
    # and they fail as tests, not by being absent or by a collection error
    assert {status_of(t, status) for t in f2p} == {"FAILED"}, status
    assert [t for t in p2p if not passed(t, status)] == [], log[-4000:]


@pytest.mark.parametrize("instance_id", INSTANCE_IDS)
def test_the_image_leaks_the_fix_commit(images: dict[str, str], instance_id: str) -> None:
    shas = history()[instance_id]
    fix, base = shas["fix_commit"], shas["base_commit"]
    script = f"""cd /testbed
echo "head=$(git rev-parse HEAD)"
echo "dirty=$(git status --porcelain | wc -l)"
git cat-file -e {fix} && echo "fix-object=present"
echo "branch=$(git rev-parse --verify -q {shas["branch"]})"
echo "tag=$(git rev-parse --verify -q {shas["tag"]}^{{commit}})"
git reflog --format=%H main | grep -qx {fix} && echo "reflog=names-fix"
"""
    run = run_in(images[instance_id], script)
    out = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
    assert out == {
        "head": base,
        "dirty": "0",
        "fix-object": "present",
        "branch": fix,
        "tag": fix,
        "reflog": "names-fix",
    }, run.stdout
