"""The trusted judge, inside the judge container. It never imports or runs candidate code.

`prepare` loads or generates the cases (expected values stay in /state, inside this
container); it prints the inputs only. `compare` reads the runner's output bytes as
data, with size, depth and number limits, and prints a report of per-case statuses.
"""

import argparse
import base64
import importlib.util
import json
import math
import os
import sys
from typing import Any, NoReturn

MAX_RUNNER_BYTES = 256 << 20
MAX_DEPTH = 64
MAX_FILE_BYTES = 16 << 20
STATE = "/state/cases.json"


class Invalid(Exception):
    pass


def _no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise Invalid(f"duplicate key {k[:40]!r}")
        obj[k] = v
    return obj


def _no_constants(name: str) -> NoReturn:
    raise Invalid(f"non-finite number {name}")


def parse_json(raw: bytes, cap: int) -> Any:
    if len(raw) > cap:
        raise Invalid("oversize")
    try:
        text = raw.decode("utf-8", errors="strict")
        value = json.loads(text, object_pairs_hook=_no_dupes, parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Invalid(type(exc).__name__) from None
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            raise Invalid("too deep")
        if isinstance(v, float) and not math.isfinite(v):
            raise Invalid("non-finite number")
        if isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
        elif isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
    return value


def load_module(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"judge: cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cmd_prepare(a: argparse.Namespace) -> None:
    if a.cases:
        with open(os.path.join("/judge", a.cases), "rb") as fh:
            cases = json.loads(fh.read())
    else:
        gen = load_module(os.path.join("/judge", a.generator), "assay_task_generator")
        cases = gen.generate(int(a.seed))
    ids = [c["id"] for c in cases]
    if not cases or len(set(ids)) != len(ids) or not all(isinstance(i, str) for i in ids):
        raise SystemExit("judge: cases must be non-empty with unique string ids")
    with open(STATE, "w", encoding="utf-8") as fh:
        json.dump(cases, fh)
    json.dump([{"id": c["id"], "input": c["input"]} for c in cases], sys.stdout)


def same(expected: Any, actual: Any) -> bool:
    """Type-aware equality: True != 1 != 1.0 here, unlike Python's ==."""
    if type(expected) is not type(actual):
        if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
            if isinstance(expected, bool) or isinstance(actual, bool):
                return False
            return expected == actual
        return False
    if isinstance(expected, list):
        return len(expected) == len(actual) and all(map(same, expected, actual))
    if isinstance(expected, dict):
        return expected.keys() == actual.keys() and all(
            same(expected[k], actual[k]) for k in expected
        )
    return bool(expected == actual)


def close(expected: Any, actual: Any, tol: float) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return same(expected, actual)
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(expected, actual, rel_tol=tol, abs_tol=tol)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            close(e, x, tol) for e, x in zip(expected, actual, strict=True)
        )
    return same(expected, actual)


def canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def read_tree(root: str) -> dict[str, str]:
    """Regular files under root as {relpath: text}; the controller's firewall already
    normalised this tree, and anything else is refused rather than followed."""
    files: dict[str, str] = {}
    if not os.path.isdir(root):
        return files
    for dirpath, _dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            p = os.path.join(dirpath, name)
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise Invalid("output file too large")
            files[os.path.relpath(p, root)] = data.decode("utf-8")
    return files


def actual_value(kind: str, rc: dict[str, Any], index: int, cap: int) -> Any:
    raw = base64.b64decode(rc["output_b64"], validate=True)
    if kind == "function":
        return parse_json(raw, cap)
    if kind == "cli":
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Invalid("stdout is not UTF-8") from None
        return {"stdout": text, "exit_code": rc["exit_code"]}
    return {"files": read_tree(f"/exchange/output/{index}")}


def cmd_compare(a: argparse.Namespace) -> None:
    with open(STATE, encoding="utf-8") as fh:
        cases = json.load(fh)
    reasons = []
    report = []
    try:
        with open(a.runner_output, "rb") as fh:
            runner = parse_json(fh.read(MAX_RUNNER_BYTES + 1), MAX_RUNNER_BYTES)
        by_id = {}
        for rc in runner["cases"]:
            if rc["id"] in by_id:
                raise Invalid("duplicate case id from runner")
            by_id[rc["id"]] = rc
    except (Invalid, KeyError, TypeError, OSError) as exc:
        by_id = {}
        reasons.append("runner:invalid-output")
        sys.stderr.write(f"judge: runner output rejected: {exc}\n")
    custom = None
    if a.comparator == "custom":
        custom = load_module(os.path.join("/judge", a.custom), "assay_task_comparator").compare
    for index, case in enumerate(cases):
        rc = by_id.get(case["id"])
        duration = 0.0
        if rc is None:
            status = "error"
            reasons.append("runner:missing-case")
        else:
            duration = float(rc.get("duration_s") or 0.0)
            rstatus = rc.get("status")
            if rstatus == "timeout":
                status = "timeout"
                reasons.append("limit:time")
            elif rstatus == "limit":
                status = "limit"
                reasons.append(f"limit:{rc.get('limit')}")
            elif rstatus == "residue":
                status = "error"  # the runner could not empty what the case wrote
                reasons.append("candidate:left-state")
            elif rstatus != "ok":
                status = "error"
                reasons.append("candidate:crash")
            else:
                try:
                    actual = actual_value(a.kind, rc, index, a.output_cap)
                except (Invalid, ValueError, UnicodeDecodeError, OSError):
                    status = "error"
                    reasons.append("candidate:invalid-output")
                else:
                    exp = case["expected"]
                    if custom is not None:
                        ok = custom(exp, actual) is True
                    elif a.comparator == "float":
                        ok = close(exp, actual, a.tolerance)
                    elif a.comparator == "unordered":
                        ok = (
                            isinstance(exp, list)
                            and isinstance(actual, list)
                            and sorted(map(canon, exp)) == sorted(map(canon, actual))
                        )
                    else:
                        ok = same(exp, actual)
                    status = "pass" if ok else "fail"
                    if not ok:
                        reasons.append("compare:mismatch")
        report.append({"id": case["id"], "status": status, "duration_s": duration})
    json.dump({"cases": report, "reasons": sorted(set(reasons))}, sys.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--seed", required=True)
    p.add_argument("--cases")
    p.add_argument("--generator")
    c = sub.add_parser("compare")
    c.add_argument("--kind", required=True)
    c.add_argument("--comparator", required=True)
    c.add_argument("--tolerance", type=float, default=1e-9)
    c.add_argument("--custom")
    c.add_argument("--output-cap", type=int, required=True)
    c.add_argument("--runner-output", default="/exchange/runner.json")
    a = ap.parse_args()
    sys.setrecursionlimit(200)
    (cmd_prepare if a.cmd == "prepare" else cmd_compare)(a)


if __name__ == "__main__":
    main()
