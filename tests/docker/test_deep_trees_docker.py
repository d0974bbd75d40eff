"""Issue 36, item 2: a tree deeper than the runc backend's archive reader descends (256 levels)
made it raise `EngineError` before the firewall saw it, so a grading ended with no verdict
(exit 3; `grade-many` retried it, `/v1/grade` answered `infra_error`, verl's reward raised),
where the Docker backend's archive reached the firewall and failed on `firewall:depth`. The
tree came in through every door that reads a container: the agent's workspace, a compiler's
build directory, a diff applied in the agent container, the compat tier's report directory and
the harbor tier's /logs/verifier. Each now fails the same way on both backends, with the
firewall's reason; a transform's outputs, which the trusted runner packs, are shown too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e import EXAMPLES

import assay

pytestmark = pytest.mark.docker

BACKENDS = ["runc", "docker"]
LEVELS = 300  # past the runc reader's 256, far past the firewall's 32
SOLUTION = "printf 'def add(a, b):\\n    return a + b\\n' > solution.py; "


@pytest.fixture(scope="module", params=BACKENDS)
def grader(request: pytest.FixtureRequest) -> Iterator[assay.Grader]:
    with assay.Grader(oci_runtime=request.param) as g:
        yield g


def _failed_on(verdict: assay.Verdict, *reasons: str) -> None:
    assert not verdict.passed and verdict.score == 0.0
    assert list(verdict.reason_codes) == list(reasons), verdict.reason_codes


def _deep_java() -> str:
    package = ".".join(["a"] * LEVELS)
    return (
        f"package {package};\n"
        "public class Main { public static void main(String[] x) { System.out.println(3); } }\n"
    )


def test_a_deep_workspace_fails_on_depth(grader: assay.Grader) -> None:
    mkdir = SOLUTION + "mkdir -p " + "/".join(["a"] * LEVELS)
    _failed_on(grader.grade(EXAMPLES / "add", assay.Agent(mkdir)).verdict, "firewall:depth")
    # Past PATH_MAX too (3,000 levels, 6,000 bytes): Docker's archive loses what it cannot
    # stat, the runc reader stops at its bound; the firewall sees the same depth either way.
    walk = SOLUTION + (
        "python3 -c \"import os\nfor _ in range(3000):\n    os.mkdir('a'); os.chdir('a')\""
    )
    _failed_on(grader.grade(EXAMPLES / "add", assay.Agent(walk)).verdict, "firewall:depth")


def test_a_compile_that_leaves_a_deep_tree_fails_on_depth(grader: assay.Grader) -> None:
    """javac -d . writes a class of `package a.a...a` 300 directories down."""
    verdict = grader.grade(EXAMPLES / "stdio-java", {"Main.java": _deep_java()}).verdict
    _failed_on(verdict, "firewall:depth")


def _deep_diff() -> str:
    path = "/".join(["a"] * LEVELS) + "/f.txt"
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        "@@ -0,0 +1 @@\n+x\n"
    )


def test_a_patch_that_makes_a_deep_tree_fails_on_depth(grader: assay.Grader) -> None:
    verdict = grader.grade(EXAMPLES / "swebench-calc", assay.Patch(_deep_diff())).verdict
    _failed_on(verdict, "firewall:depth")


def test_a_deep_tree_in_the_compat_report_directory_is_no_report(grader: assay.Grader) -> None:
    """The candidate shares pytest's process, so it writes /out too: the report is read through
    the firewall, which refuses the tree, so there is none."""
    deep = (
        "import os\nd = '/out'\nfor _ in range(300):\n    d += '/a'\n    os.mkdir(d)\n"
        "def add(a, b):\n    return a + b\n"
    )
    verdict = grader.grade(EXAMPLES / "add-pytest", {"solution.py": deep}).verdict
    _failed_on(verdict, "junit:no-report", "pytest:exit-code")


def test_a_deep_tree_in_the_harbor_logs_makes_the_reward_unreadable(grader: assay.Grader) -> None:
    greet = (
        "#!/bin/bash\n"
        "p=/logs/verifier; for i in $(seq 300); do p=$p/a; done; mkdir -p $p\n"
        'echo "Hello, ${1:-world}!"\n'
    )
    verdict = grader.grade(EXAMPLES / "greet-harbor", {"greet.sh": greet}).verdict
    _failed_on(verdict, "harbor:reward-unreadable", "reward-firewall:depth")


def test_a_deep_transform_output_fails_the_output_firewall(grader: assay.Grader) -> None:
    deep = "import os, sys\nos.chdir(sys.argv[2])\nfor _ in range(300):\n    os.mkdir('a'); os.chdir('a')\n"
    verdict = grader.grade(EXAMPLES / "csv-sum", {"transform.py": deep}).verdict
    _failed_on(verdict, "output-firewall:depth")


# -- as a caller sees it: a failed verdict (exit 1), never a retry (exit 3) ---------------------


def _cli(tmp: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp / "config"))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    return subprocess.run(
        [sys.executable, "-m", "assay", *map(str, args)],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp,
    )  # fmt: skip


def test_the_command_line_fails_a_deep_build_and_grade_many_records_no_error(
    tmp_path: Path,
) -> None:
    subs = tmp_path / "subs"
    (subs / "deep").mkdir(parents=True)
    (subs / "deep" / "Main.java").write_text(_deep_java())
    correct = EXAMPLES / "stdio-java" / "solutions" / "correct"
    (subs / "correct").mkdir()
    (subs / "correct" / "Main.java").write_text((correct / "Main.java").read_text())

    one = _cli(tmp_path, "grade", EXAMPLES / "stdio-java", "--submission", subs / "deep",
               "--runtime", "runc", "--json", "--out", tmp_path / "v.dsse.json")  # fmt: skip
    assert one.returncode == 1, one.stderr
    assert json.loads(one.stdout)["reason_codes"] == ["firewall:depth"]

    out = tmp_path / "out"
    many = _cli(tmp_path, "grade-many", EXAMPLES / "stdio-java", "--submissions", subs,
                "--out", out, "--runtime", "runc", "--jobs", "2")  # fmt: skip
    assert many.returncode == 0, many.stderr  # every job has a verdict: nothing to retry
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["errors"]) == (1, 1, 0)
    pub = tmp_path / "config" / "assay" / "signing.pub"
    for job, passed in (("deep", False), ("correct", True)):
        verdict = assay.verify((out / f"{job}.dsse.json").read_bytes(), pub)
        assert verdict.passed is passed, verdict.reason_codes
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if line]
    assert not [e for e in log if e.get("event") == "error"], log


def test_grade_many_in_python_gives_failed_verdicts_for_every_door() -> None:
    """`Grader.grade_many` raises InfrastructureError when any job got no verdict."""
    mkdir = SOLUTION + "mkdir -p " + "/".join(["a"] * LEVELS)
    jobs = [
        assay.Job(EXAMPLES / "add", assay.Agent(mkdir)),
        assay.Job(EXAMPLES / "stdio-java", {"Main.java": _deep_java()}),
        assay.Job(EXAMPLES / "swebench-calc", assay.Patch(_deep_diff())),
    ]
    with assay.Grader(oci_runtime="runc") as g:
        graded = list(g.grade_many(jobs, parallel=2))
    assert [list(r.verdict.reason_codes) for r in graded] == [["firewall:depth"]] * 3
