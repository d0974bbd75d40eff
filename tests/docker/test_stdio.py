"""The `stdio` kind end to end on the default backend (runc): every language's example, the
compile step's limits, each per-test reason, the language a submission names, and the task
checker programs (python, testlib compiled in the judge)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e import EXAMPLES

import assay
from assay._internal.model.languages import ALL_LANGUAGES

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
TESTLIB = ROOT / "tests" / "fixtures" / "testlib"
EXAMPLE_OF = {
    lang: EXAMPLES / f"stdio-{'python' if lang == 'python3' else lang}" for lang in ALL_LANGUAGES
}


@pytest.fixture(scope="module")
def grader() -> Iterator[assay.Grader]:
    g = assay.Grader(oci_runtime="runc")
    yield g
    g.close()


def _grade(grader: assay.Grader, task: Path, files: dict[str, str]) -> Any:
    return grader.grade(task, files).verdict


def _solution(task: Path, which: str) -> dict[str, str]:
    folder = task / "solutions" / which
    return {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("lang", ALL_LANGUAGES)
def test_each_language_example_passes_its_correct_solution_and_fails_its_wrong_one(
    grader: assay.Grader, lang: str
) -> None:
    task = EXAMPLE_OF[lang]
    checker = assay.load_task(task).config.stdio
    assert checker is not None
    good = _grade(grader, task, _solution(task, "correct"))
    assert good.passed and good.score == 1.0, good.reason_codes
    assert {c.checker for c in good.cases} == {checker.checker}
    bad = _grade(grader, task, _solution(task, "wrong"))
    assert not bad.passed and bad.score < 1.0
    failed = [c for c in bad.cases if c.status != "pass"]
    assert failed and all(c.reason in bad.reason_codes for c in failed)


def _task(tmp: Path, tests: list[dict[str, Any]], **stdio: Any) -> Path:
    limits = stdio.pop("limits", {})
    lines = ['id = "t"', 'kind = "stdio"', "", "[stdio]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in stdio.items()]
    lines += ["", "[judge]", 'cases = "tests.json"', "", "[limits]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in limits.items()]
    (tmp / "inputs").mkdir(parents=True)
    (tmp / "judge").mkdir()
    (tmp / "inputs" / "README.md").write_text("a test task\n")
    (tmp / "task.toml").write_text("\n".join(lines) + "\n")
    cases = [
        {"id": t["id"], "input": {"stdin": t["in"]}, "expected": {"stdout": t["out"]}}
        for t in tests
    ]
    (tmp / "judge" / "tests.json").write_text(json.dumps(cases))
    return tmp


ECHO = [{"id": "one", "in": "1 2\n", "out": "3\n"}]


G_BOMB = (
    # 2^24 distinct instantiations: far past the compile timeout, slowly in memory.
    "template<int N, long K> struct G {\n"
    "    enum { v = G<N - 1, 2 * K>::v + G<N - 1, 2 * K + 1>::v };\n"
    "};\n"
    "template<long K> struct G<0, K> { enum { v = 1 }; };\n"
    "int main() { return G<24, 0>::v; }\n"
)
COMPILE_FAILURES = {
    "compile:error": ("int main( { return 0 }\n", 256),
    "compile:memory": ('#include "/dev/zero"\nint main() {}\n', 256),
    "compile:output": (
        "\n".join(f"#warning {'x' * 400}" for _ in range(2000)) + "\nint main() {}\n",
        256,
    ),
    "compile:timeout": (G_BOMB, 3072),
}


@pytest.mark.parametrize("reason", sorted(COMPILE_FAILURES))
def test_a_compile_that_fails_or_overruns_its_limits_is_a_compile_failure(
    grader: assay.Grader, tmp_path: Path, reason: str
) -> None:
    source, memory_mb = COMPILE_FAILURES[reason]
    task = _task(
        tmp_path, ECHO, languages=["cpp"], compile_timeout=2.0, compile_memory_mb=memory_mb
    )
    v = _grade(grader, task, {"main.cpp": source})
    assert not v.passed and v.score == 0.0
    assert v.reason_codes == [reason]


PROGRAMS = {
    "limit:cpu": "while True:\n    pass\n",
    "limit:time": "import time\ntime.sleep(30)\n",
    "limit:memory": "x = bytearray(512 << 20)\nprint(len(x))\n",
    "limit:output": "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n",
    "runtime:exit-code": "print(3)\nraise SystemExit(3)\n",
    "runtime:signal": "import os, signal\nprint(3, flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n",
    "compare:wrong-answer": "print(4)\n",
    "compare:presentation": "print(3, end='\\r\\n')\n",
}


@pytest.mark.parametrize("reason", sorted(PROGRAMS))
def test_each_way_a_test_fails_has_its_own_reason(
    grader: assay.Grader, tmp_path: Path, reason: str
) -> None:
    # A busy loop is ended by its CPU seconds (RLIMIT_CPU), well before the wall limit.
    wall = 12.0 if reason == "limit:cpu" else 2.0
    limits = {"case_timeout": wall, "cpu_seconds": 1.0, "memory_mb": 128, "output_bytes": 1 << 16}
    task = _task(tmp_path, ECHO, languages=["python3"], checker="lines", limits=limits)
    v = _grade(grader, task, {"main.py": PROGRAMS[reason]})
    assert not v.passed
    (case,) = v.cases
    assert case.reason == reason and reason in v.reason_codes
    if reason == "limit:cpu":
        assert case.duration_s < wall / 2


def test_the_submission_names_one_accepted_language(grader: assay.Grader, tmp_path: Path) -> None:
    task = _task(tmp_path, ECHO, languages=["python3", "c"], checker="tokens")
    both = {"main.py": "print(3)\n", "main.c": "int main(void) { return 0; }\n"}
    assert "submission:ambiguous-language" in _grade(grader, task, both).reason_codes
    assert "submission:no-source" in _grade(grader, task, {"main.rs": "fn main() {}"}).reason_codes
    c = '#include <stdio.h>\nint main(void) { int a, b; scanf("%d %d", &a, &b); printf("%d\\n", a + b); }\n'
    assert _grade(grader, task, {"main.c": c}).passed


HALF = [{"id": "h", "in": "4\n", "out": "2\n"}]


def test_a_python_checker_decides_in_the_judge(grader: assay.Grader, tmp_path: Path) -> None:
    task = _task(tmp_path, HALF, languages=["python3"], checker="python",
                 checker_program="check.py")  # fmt: skip
    (task / "judge" / "check.py").write_text(
        "def check(input, output, answer):\n    return int(output) * 2 == int(input)\n"
    )
    assert _grade(grader, task, {"main.py": "print(int(input()) // 2)\n"}).passed
    v = _grade(grader, task, {"main.py": "print(3)\n"})
    assert not v.passed and v.cases[0].checker == "python"


def test_a_testlib_checker_source_is_compiled_and_run_in_the_judge(
    grader: assay.Grader, tmp_path: Path
) -> None:
    task = _task(tmp_path, HALF, languages=["python3"], checker="testlib",
                 checker_program="checker.cpp")  # fmt: skip
    shutil.copy(TESTLIB / "testlib.h", task / "judge" / "testlib.h")
    (task / "judge" / "checker.cpp").write_text(
        '#include "testlib.h"\n'
        "int main(int argc, char* argv[]) {\n"
        "    registerTestlibCmd(argc, argv);\n"
        "    long long n = inf.readLong(), got = ouf.readLong();\n"
        '    if (got * 2 != n) quitf(_wa, "expected half of %lld", n);\n'
        '    quitf(_ok, "half");\n'
        "}\n"
    )
    assert _grade(grader, task, {"main.py": "print(int(input()) // 2)\n"}).passed
    v = _grade(grader, task, {"main.py": "print(1)\n"})
    assert not v.passed and v.cases[0].checker == "testlib"
    assert v.cases[0].reason == "compare:wrong-answer"
