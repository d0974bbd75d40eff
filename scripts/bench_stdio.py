"""The `stdio` kind's cost: a problem with N tests graded in one candidate container (a fresh
process per test), for a Python and a C++ solution, on one backend. Prints the medians of the
whole grading, its phases, and the candidate phase per test.

    .venv/bin/python scripts/bench_stdio.py [--tests 100] [--rounds 5] [--runtime runc]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from datetime import datetime
from pathlib import Path

import assay

PY = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n"
CPP = (
    "#include <cstdio>\n"
    'int main() { long long a, b; if (std::scanf("%lld %lld", &a, &b) != 2) return 1;\n'
    '  std::printf("%lld\\n", a + b); return 0; }\n'
)


def make_task(root: Path, n: int) -> Path:
    rng = random.Random(n)
    (root / "inputs").mkdir(parents=True)
    (root / "judge").mkdir()
    (root / "inputs" / "README.md").write_text("Print a + b.\n")
    (root / "task.toml").write_text(
        'id = "bench-a-plus-b"\nkind = "stdio"\n\n[stdio]\nlanguages = ["python3", "cpp"]\n'
        'checker = "tokens"\n\n[judge]\ncases = "tests.json"\n\n[limits]\ntotal_timeout = 600.0\n'
    )
    cases = []
    for i in range(n):
        a, b = rng.randint(-(10**12), 10**12), rng.randint(-(10**12), 10**12)
        cases.append(
            {"id": f"t{i}", "input": {"stdin": f"{a} {b}\n"}, "expected": {"stdout": f"{a + b}\n"}}
        )
    (root / "judge" / "tests.json").write_text(json.dumps(cases))
    return root


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runtime", default=None)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        task = make_task(Path(tmp) / "task", a.tests)
        grader = assay.Grader(oci_runtime=a.runtime, reuse_judges=True)
        try:
            grader.grade(task, {"main.py": PY})  # warm: the judge, the page cache
            rows: dict[str, list[dict[str, float]]] = {"python3": [], "cpp": []}
            for _ in range(a.rounds):
                for lang, files in (("python3", {"main.py": PY}), ("cpp", {"main.cpp": CPP})):
                    v = grader.grade(task, files).verdict
                    assert v.passed, (lang, v.reason_codes)
                    span = datetime.fromisoformat(v.ended_at) - datetime.fromisoformat(v.started_at)
                    total = span.total_seconds()
                    rows[lang].append({"total": total, **v.timings})
        finally:
            grader.close()
    print(f"{a.tests} tests per grading, {a.rounds} gradings per language, runtime "
          f"{a.runtime or 'default'}; medians in seconds")  # fmt: skip
    for lang, got in rows.items():
        med = {k: statistics.median(r.get(k, 0.0) for r in got) for k in got[0]}
        per_test = med.get("candidate", 0.0) / a.tests
        phases = ", ".join(f"{k} {v:.3f}" for k, v in med.items() if k != "total")
        print(f"{lang:8} grading {med['total']:.3f}  per test {per_test * 1000:.1f} ms  ({phases})")


if __name__ == "__main__":
    main()
