"""Turn one HumanEval problem's `check` into assay cases (run by humaneval.py in a subprocess
with a timeout: it executes the benchmark's test code and canonical solution).

Every `assert` in `check` is rewritten into a call that records one case: the arguments the
assert passes to `candidate` (evaluated where the assert stands, loops included), the value it
compares with, and a comparator with the assert's own semantics:

    assert candidate(x) == e               -> equal, expected e
    assert candidate(x)                    -> truthy
    assert not candidate(x)                -> falsy
    assert candidate(x) is True            -> exact, expected True
    assert abs(candidate(x) - e) < tol     -> float, expected e, abs_tol just below tol, rel_tol 0
    anything else using candidate's result -> custom: the assert's own expression, run by the
                                              judge on the decoded result (compare.py)

The canonical solution is called for each case; the case is kept only when the canonical
result, after the value encoding's round trip, passes the judge's own comparator.

Input: the problem as JSON on stdin. Output: {"cases": [...], "custom": source | null} or
{"error": "..."} (exit 1).
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from assay._incontainer import judge, values

RECORDER = "__assay_rec"
ACTUAL = "actual"


class Unsupported(Exception):
    """A `check` shape the importer does not turn into data."""


def _is_cand(n: ast.AST) -> bool:
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "candidate"


def _cand_calls(n: ast.AST) -> list[ast.Call]:
    return [x for x in ast.walk(n) if _is_cand(x)]  # type: ignore[misc]


def _names(n: ast.AST) -> set[str]:
    return {x.id for x in ast.walk(n) if isinstance(x, ast.Name)}


def _call_parts(call: ast.Call) -> tuple[str, str]:
    """Source of a lambda-ready args tuple and kwargs dict of a candidate call."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        raise Unsupported(f"line {call.lineno}: *args/**kwargs in a candidate call")
    args = "".join(f"({ast.unparse(a)}), " for a in call.args)
    kwargs = ", ".join(f"{k.arg!r}: ({ast.unparse(k.value)})" for k in call.keywords)
    return f"({args})", f"{{{kwargs}}}"


def _stmt(src: str) -> ast.stmt:
    return ast.parse(src).body[0]


class Rewriter(ast.NodeTransformer):
    def __init__(self, entry: str, imports: dict[str, str], local: set[str]) -> None:
        self.entry = entry
        self.imports = imports  # name bound by an import inside check -> that import's source
        self.local = local  # every name check binds
        self.pending: set[str] = set()  # names bound to a candidate result
        self.props: list[str] = []  # custom-comparator functions, by index

    def visit_Assign(self, node: ast.Assign) -> Any:
        if not _cand_calls(node.value):
            return node
        if not (_is_cand(node.value) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):  # fmt: skip
            raise Unsupported(f"line {node.lineno}: a candidate call in {ast.unparse(node)[:60]}")
        name = node.targets[0].id
        self.pending.add(name)
        args, kwargs = _call_parts(node.value)  # type: ignore[arg-type]
        new = _stmt(f"{name} = {RECORDER}.pending({name!r}, lambda: {args}, lambda: {kwargs})")
        return ast.copy_location(new, node)

    def visit_Expr(self, node: ast.Expr) -> Any:
        if _cand_calls(node):
            raise Unsupported(f"line {node.lineno}: a candidate call outside an assert")
        return node

    def visit_Assert(self, node: ast.Assert) -> Any:
        t = node.test
        uses_pending = bool(_names(t) & self.pending)
        calls = _cand_calls(t)
        if not calls and not uses_pending:
            return node  # independent of the candidate (`assert True`): nothing to grade
        line = node.lineno
        kind, call, exp, tol = self._classify(t) if not uses_pending else ("custom", None, "", "")
        if kind != "custom":
            assert call is not None
            args, kwargs = _call_parts(call)
            src = (f"{RECORDER}.case({kind!r}, {line}, lambda: {args}, lambda: {kwargs}, "
                   f"lambda: ({exp}), {tol or 'None'})")  # fmt: skip
            return ast.copy_location(_stmt(src), node)
        return ast.copy_location(_stmt(self._custom(t, calls, line)), node)

    def _classify(self, t: ast.expr) -> tuple[str, ast.Call | None, str, str]:
        if isinstance(t, ast.Compare) and len(t.ops) == 1:
            left, op, right = t.left, t.ops[0], t.comparators[0]
            if isinstance(op, ast.Eq) and _is_cand(left) and not _cand_calls(right):
                return "equal", left, ast.unparse(right), ""  # type: ignore[return-value]
            if isinstance(op, ast.Eq) and _is_cand(right) and not _cand_calls(left):
                return "equal", right, ast.unparse(left), ""  # type: ignore[return-value]
            if (isinstance(op, ast.Is) and _is_cand(left) and isinstance(right, ast.Constant)
                    and isinstance(right.value, bool)):  # fmt: skip
                return "exact", left, repr(right.value), ""  # type: ignore[return-value]
            if isinstance(op, (ast.Lt, ast.LtE)) and not _cand_calls(right):
                diff = _abs_diff(left)
                if diff is not None:
                    tol = ast.unparse(right)
                    strict = isinstance(op, ast.Lt)
                    return "float", diff[0], diff[1], f"({tol}, {strict})"
        if _is_cand(t):
            return "truthy", t, "None", ""  # type: ignore[return-value]
        if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and _is_cand(t.operand):
            return "falsy", t.operand, "None", ""  # type: ignore[return-value]
        return "custom", None, "", ""

    def _custom(self, t: ast.expr, calls: list[ast.Call], line: int) -> str:
        """The assert's own expression with the candidate's result as `actual`."""
        if len(calls) > 1 or (calls and set(_names(t)) & self.pending):
            raise Unsupported(f"line {line}: more than one candidate result in one assert")
        source_call = calls[0] if calls else None
        call_text = ast.unparse(source_call.args) if source_call else None  # type: ignore[arg-type]
        entry = self.entry
        pending = self.pending

        class Sub(ast.NodeTransformer):
            def visit_Call(self, n: ast.Call) -> Any:
                # In the benchmark the check runs in the completion's namespace, so a call of the
                # entry point by name on the same arguments is the candidate itself.
                same_args = call_text is not None and ast.unparse(n.args) == call_text  # type: ignore[arg-type]
                if _is_cand(n) or (isinstance(n.func, ast.Name) and n.func.id == entry
                                   and same_args and not n.keywords):  # fmt: skip
                    return ast.Name(ACTUAL, ast.Load())
                self.generic_visit(n)
                return n

            def visit_Name(self, n: ast.Name) -> Any:
                return ast.Name(ACTUAL, ast.Load()) if n.id in pending else n

        expr = ast.fix_missing_locations(Sub().visit(ast.parse(ast.unparse(t), mode="eval")))
        bound_inside = {
            x.id for x in ast.walk(expr) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)
        }
        free = sorted((_names(expr) & self.local) - bound_inside - {ACTUAL} - set(self.imports))
        if entry in _names(expr):
            raise Unsupported(f"line {line}: the entry point called on other arguments")
        index = len(self.props)
        params = "".join(f", {v}" for v in free)
        self.props.append(f"def _prop{index}({ACTUAL}{params}):\n"
                          f"    return bool({ast.unparse(expr)})\n")  # fmt: skip
        captured = "{" + ", ".join(f"{v!r}: {v}" for v in free) + "}"
        if source_call is not None:
            args, kwargs = _call_parts(source_call)
            return (f"{RECORDER}.custom({line}, {index}, lambda: {args}, lambda: {kwargs}, "
                    f"lambda: {captured})")  # fmt: skip
        (name,) = sorted(set(_names(t)) & self.pending)
        return f"{RECORDER}.custom_pending({line}, {index}, {name!r}, lambda: {captured})"


def _abs_diff(n: ast.expr) -> tuple[ast.Call, str] | None:
    """`abs(candidate(x) - e)` or `math.fabs(...)`: (the candidate call, e's source)."""
    if not (isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords):
        return None
    f = ast.unparse(n.func)
    d = n.args[0]
    if f not in ("abs", "math.fabs", "fabs") or not isinstance(d, ast.BinOp):
        return None
    if isinstance(d.op, ast.Sub) and _is_cand(d.left) and not _cand_calls(d.right):
        return d.left, ast.unparse(d.right)  # type: ignore[return-value]
    return None


class Recorder:
    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.cases: list[dict[str, Any]] = []
        self.pendings: dict[str, tuple[Any, Any]] = {}

    def _call(self, args_fn: Any, kwargs_fn: Any) -> tuple[Any, Any]:
        args, kwargs = list(args_fn()), kwargs_fn()
        # Encoded before the call: the canonical solution may mutate its arguments.
        wire = values.encode({"args": args, "kwargs": kwargs} if kwargs else args)
        return wire, self.fn(*args, **kwargs)

    def case(self, kind: str, line: int, args_fn: Any, kwargs_fn: Any, exp_fn: Any,
             tol: tuple[float, bool] | None) -> None:  # fmt: skip
        wire, result = self._call(args_fn, kwargs_fn)
        exp = exp_fn()  # after the call, as in `candidate(x) == e`
        case: dict[str, Any] = {"line": line, "input": wire, "comparator": kind}
        if kind in ("truthy", "falsy"):
            case["expected"] = _encode_or(result, kind == "truthy")
        else:
            case["expected"] = values.encode(exp)
        if tol is not None:
            limit, strict = float(tol[0]), tol[1]
            # abs(a - e) < tol is isclose(abs_tol=nextafter(tol, 0)): the same floats pass.
            case["abs_tol"] = math.nextafter(limit, 0.0) if strict else limit
            case["rel_tol"] = 0.0
        self.cases.append(case)

    def pending(self, name: str, args_fn: Any, kwargs_fn: Any) -> Any:
        wire, result = self._call(args_fn, kwargs_fn)
        self.pendings[name] = (wire, result)
        return result

    def custom(self, line: int, prop: int, args_fn: Any, kwargs_fn: Any, vars_fn: Any) -> None:
        wire, result = self._call(args_fn, kwargs_fn)
        self._custom_case(line, prop, wire, result, vars_fn())

    def custom_pending(self, line: int, prop: int, name: str, vars_fn: Any) -> None:
        wire, result = self.pendings[name]
        self._custom_case(line, prop, wire, result, vars_fn())

    def _custom_case(self, line: int, prop: int, wire: Any, result: Any, free: Any) -> None:
        expected = {"prop": prop, "vars": free, "canonical": _encode_or(result, None)}
        self.cases.append({"line": line, "input": wire, "comparator": "custom",
                           "expected": values.encode(expected)})  # fmt: skip


def _encode_or(v: Any, fallback: Any) -> Any:
    try:
        return values.encode(v)
    except values.Unencodable:
        return fallback


def custom_module(problem: dict[str, Any], imports: list[str], props: list[str]) -> str:
    prompt: str = problem["prompt"]
    head = f'"""Property checks of {problem["task_id"]}\'s `check`, generated by assay import."""\n'
    return (
        head
        + "\n# The problem's prompt (its helper functions and imports).\n"
        + prompt
        + "\n\n"
        + "".join(i + "\n" for i in imports)
        + "\n\n"
        + "\n\n".join(props)
        + f"\n\nPROPS = [{', '.join(f'_prop{i}' for i in range(len(props)))}]\n\n\n"
        "def compare(input, expected, actual):\n"
        '    return PROPS[expected["prop"]](actual, **expected["vars"]) is True\n'
    )


def convert(problem: dict[str, Any]) -> dict[str, Any]:
    tree = ast.parse(problem["test"])
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        raise Unsupported("no single check(candidate) function")
    check = checks[0]
    imports: dict[str, str] = {}
    local = {a.arg for a in check.args.args}
    for n in ast.walk(check):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for alias in n.names:
                imports[(alias.asname or alias.name).split(".")[0]] = ast.unparse(n)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            local.add(n.id)
    rw = Rewriter(problem["entry_point"], imports, local)
    ast.fix_missing_locations(rw.visit(tree))
    if left := _cand_calls(check):  # e.g. in an `if` test: a case the importer would not see
        raise Unsupported(f"line {left[0].lineno}: a candidate call the importer cannot record")
    namespace: dict[str, Any] = {}
    # The benchmark's own code, in this throwaway subprocess (humaneval.py runs it with a timeout).
    solution = problem["prompt"] + problem["canonical_solution"]
    exec(compile(solution, "<solution>", "exec"), namespace)  # noqa: S102
    rec = Recorder(namespace[problem["entry_point"]])
    namespace[RECORDER] = rec
    exec(compile(tree, "<check>", "exec"), namespace)  # noqa: S102
    random.seed(0)  # checks that draw random inputs get the same cases on every import

    def no_direct_call(*a: Any, **k: Any) -> Any:
        raise Unsupported("candidate called where the importer cannot see it")

    namespace["check"](no_direct_call)
    if not rec.cases:
        raise Unsupported("check makes no assert on the candidate")
    custom = custom_module(problem, sorted(set(imports.values())), rw.props) if rw.props else None
    cases = number(rec.cases)
    verify(cases, custom, rec)
    return {"cases": cases, "custom": custom}


def number(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Case ids from the assert's line in `check`: L12, or L12.0, L12.1... inside a loop."""
    per_line: dict[int, int] = {}
    for c in cases:
        per_line[c["line"]] = per_line.get(c["line"], 0) + 1
    seen: dict[int, int] = {}
    out = []
    for c in cases:
        line = c.pop("line")
        k = seen.get(line, 0)
        seen[line] = k + 1
        cid = f"L{line}" if per_line[line] == 1 else f"L{line}.{k}"
        out.append({"id": cid, **c})
    return out


def verify(cases: list[dict[str, Any]], custom: str | None, rec: Recorder) -> None:
    """Every case passes the judge's own comparator on the canonical result after the encoding's
    round trip, and the case file passes the judge's own checks."""
    judge.check_cases(cases, custom is not None)
    with tempfile.TemporaryDirectory() as tmp:
        path = None
        if custom is not None:
            path = str(Path(tmp) / "compare.py")
            Path(path).write_text(custom, encoding="utf-8")
        comp = judge.Comparator(
            argparse.Namespace(comparator="equal", custom=path, rel_tol=0.0, abs_tol=0.0)
        )
        for c in cases:
            args, kwargs = values.call_args(values.decode(c["input"]))
            result = values.loads(values.dumps(rec.fn(*args, **kwargs)), 1 << 24)
            ok, why = comp(c, result)
            if not ok:
                raise Unsupported(f"case {c['id']}: the canonical solution fails it ({why})")


def main() -> None:
    problem = json.loads(sys.stdin.read())
    try:
        out = convert(problem)
    except (Unsupported, values.Unencodable, values.BadValue, judge.BadCase) as exc:
        json.dump({"error": f"{type(exc).__name__}: {exc}"}, sys.stdout)
        sys.exit(1)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
