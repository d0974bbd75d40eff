"""Issue 36, TAXONOMY V20, end to end on the runc backend: a program that hard-codes the
statement's samples of an imported CodeContests row fails its grading on the row's hidden tests
(and only on them), while the row's correct solution passes; the same row without hidden tests
is refused, and imported anyway only on request, where the hard-coded program passes: exactly
why the import refuses it by default."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import assay
from assay.cli import main

pytestmark = pytest.mark.docker

STATEMENT = (
    "Given two integers a and b (|a|, |b| <= 10^9), print a + b.\n\nInput\n\nOne line: a and b."
    "\n\nOutput\n\nPrint a + b.\n\nExamples\n\nInput\n\n1 2\n\nOutput\n\n3\n\nInput\n\n10 20\n\n"
    "Output\n\n30\n"
)
SAMPLES = ["1 2\n", "10 20\n"]
CORRECT = "a, b = map(int, input().split())\nprint(a + b)\n"
# What an agent that special-cases the visible tests writes (corpus/stdio-hardcode-samples):
# the statement's samples as a table, 0 for anything else.
HARDCODED = (
    "import sys\n\n"
    'TABLE = {"1 2": "3", "10 20": "30"}\n'
    'print(TABLE.get(" ".join(sys.stdin.read().split()), "0"))\n'
)


def pairs(inputs: list[str]) -> dict[str, list[str]]:
    return {"input": inputs, "output": [f"{sum(map(int, i.split()))}\n" for i in inputs]}


def row(private: list[str], generated: list[str]) -> dict[str, object]:
    # CodeContests' private tests often repeat the samples (Codeforces' test 1): the first
    # private test here is the first sample, so it is visible too.
    return {"name": "1000_A. Sum of Two", "description": STATEMENT,
            "public_tests": pairs(SAMPLES), "private_tests": pairs(private),
            "generated_tests": pairs(generated),
            "solutions": {"language": [3], "solution": [CORRECT]},
            "time_limit": {"seconds": 1, "nanos": 0}, "memory_limit_bytes": 256 << 20}  # fmt: skip


def import_rows(tmp: Path, rows: list[dict[str, object]], *flags: str) -> tuple[int, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    src = tmp / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp / "out"
    r = CliRunner().invoke(main, ["import", "codecontests", str(src), "--out", str(out), *flags])
    return r.exit_code, out


@pytest.fixture(scope="module")
def grader() -> Iterator[assay.Grader]:
    g = assay.Grader(oci_runtime="runc")
    yield g
    g.close()


def test_a_program_that_hardcodes_the_samples_fails_on_the_hidden_tests(
    grader: assay.Grader, tmp_path: Path
) -> None:
    code, out = import_rows(tmp_path, [row(["1 2\n", "5 3\n", "-7 2\n"], ["999999999 1\n"])])
    assert code == 0
    task = out / "cc-1000_a-sum-of-two"
    report = json.loads((out / "import-report.json").read_text())["rows"][0]
    assert (report["visible"], report["hidden"]) == (3, 3)
    verdict = grader.grade(task, {"main.py": HARDCODED}).verdict
    assert not verdict.passed, verdict
    by_id = {c.id: c for c in verdict.cases}
    assert sorted(by_id) == sorted(["visible:public-1", "visible:public-2", "visible:private-1",
                                    "hidden:private-2", "hidden:private-3",
                                    "hidden:generated-1"])  # fmt: skip
    # Every test it could see passes, every one it could not fails on its answer.
    for cid, case in by_id.items():
        if cid.startswith("visible:"):
            assert case.status == "pass", case
        else:
            assert case.status == "fail" and case.reason == "compare:wrong-answer", case
    assert verdict.score == pytest.approx(0.5)
    right = grader.grade(task, task / "solutions" / "correct-0").verdict
    assert right.passed and right.score == 1.0, right


def test_without_hidden_tests_the_row_is_refused_and_the_opt_in_shows_why(
    grader: assay.Grader, tmp_path: Path
) -> None:
    only_samples = row([SAMPLES[1]], [])  # the private test is the second sample again
    code, out = import_rows(tmp_path / "a", [only_samples])
    assert code == 1
    [refused] = json.loads((out / "import-report.json").read_text())["rows"]
    assert refused["status"] == "refused" and refused["reason"].startswith("no hidden tests:")
    assert not (out / "cc-1000_a-sum-of-two").exists()
    code, out = import_rows(tmp_path / "b", [only_samples], "--allow-visible-only")
    assert code == 0
    task = out / "cc-1000_a-sum-of-two"
    assert json.loads((out / "import-report.json").read_text())["rows"][0]["visible_only"]
    verdict = grader.grade(task, {"main.py": HARDCODED}).verdict
    assert verdict.passed and verdict.score == 1.0, verdict  # it cannot tell: hence the refusal
    assert all(c.id.startswith("visible:") for c in verdict.cases)
