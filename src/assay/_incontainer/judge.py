"""The trusted judge, inside the judge container. It never imports or runs candidate code.

`prepare` loads or generates the cases (expected values stay in this container: generated
ones in /state, a fixed file's where the task keeps it); it prints the inputs only. `compare`
reads the runner's output bytes as data, with size, depth and number limits, and prints a
report of per-case statuses.
"""

import argparse
import base64
import importlib.util
import json
import math
import os
import sys
from typing import Any, NoReturn

try:  # on the host (tests, task loading) this is a package module
    from assay._incontainer import values
except ImportError:  # in the judge container only /assay holds it; -I keeps it off sys.path
    _spec = importlib.util.spec_from_file_location(
        "assay_values", os.path.join(os.path.dirname(os.path.abspath(__file__)), "values.py")
    )
    assert _spec is not None and _spec.loader is not None
    values = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(values)

try:  # the stdio checkers (issue 27), loaded the same way
    from assay._incontainer import checkers
except ImportError:
    _cspec = importlib.util.spec_from_file_location(
        "assay_checkers", os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkers.py")
    )
    assert _cspec is not None and _cspec.loader is not None
    checkers = importlib.util.module_from_spec(_cspec)
    _cspec.loader.exec_module(checkers)

MAX_RUNNER_BYTES = 256 << 20
MAX_DEPTH = 64
MAX_FILE_BYTES = 16 << 20
STATE = "/state/cases.json"
MAX_CASES_BYTES = 16 << 20
COMPARATORS = ("exact", "equal", "truthy", "falsy", "float", "unordered", "custom")
CASE_KEYS = frozenset({"id", "input", "expected", "comparator", "rel_tol", "abs_tol"})
STDIO_CASE_KEYS = frozenset({"id", "input", "expected", "checker", "rel_tol", "abs_tol"})
STDIO_CHECKERS = checkers.CHECKERS + checkers.PROGRAM_CHECKERS
STDIO_LIMITS = frozenset({"cpu", "memory", "output", "pids", "disk"})
# Diagnostics for the task owner (docs/verdicts.md): bounded so a huge output cannot swell the
# report; the host caps and escapes them again, since they hold candidate bytes.
DIAG_CASES = 20
DIAG_CHARS = 2000
DIAG_DIFF_LINES = 60
DIAG_BYTES = 256 << 10  # of the report's 1 MiB, as JSON (an escaped char can take 12 bytes)


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


class BadCase(Exception):
    """A case (from a file or a generator) that is not valid; the message names it."""


def check_case(case: Any, index: int, custom_file: bool, kind: str = "function") -> dict[str, Any]:
    """One case, validated: keys, id, input shape, expected, comparator and tolerances.
    Also used on the host when a task is loaded, so a bad case file fails there (exit 2).
    For kind "stdio", custom_file says the task names a checker program (stdio.checker_program),
    which a case's `checker` of python or testlib needs."""
    if not isinstance(case, dict):
        raise BadCase(f"case #{index}: not an object")
    cid = case.get("id")
    name = f"case {cid!r}" if isinstance(cid, str) else f"case #{index}"
    if not isinstance(cid, str) or not cid:
        raise BadCase(f"{name}: 'id' must be a non-empty string")
    if extra := sorted(set(case) - (STDIO_CASE_KEYS if kind == "stdio" else CASE_KEYS)):
        raise BadCase(f"{name}: unknown key {extra[0][:40]!r}")
    for key in ("input", "expected"):
        if key not in case:
            raise BadCase(f"{name}: missing key {key!r}")
    if kind == "stdio":
        _check_stdio_case(case, name, custom_file)
        return case
    try:
        given = values.decode(case["input"], "input")
        if kind == "function":
            values.call_args(given, "input")
        values.decode(case["expected"], "expected")
    except values.BadValue as exc:
        raise BadCase(f"{name}: {exc}") from None
    comp = case.get("comparator")
    if comp is not None and comp not in COMPARATORS:
        raise BadCase(f"{name}: unknown comparator {str(comp)[:40]!r}")
    if comp == "custom" and not custom_file:
        raise BadCase(f"{name}: comparator 'custom' needs judge.custom in task.toml")
    _check_tolerances(case, name)
    return case


def _check_stdio_case(case: dict[str, Any], name: str, checker_program: bool) -> None:
    for key, field in (("input", "stdin"), ("expected", "stdout")):
        v = case[key]
        if not (isinstance(v, dict) and list(v) == [field] and isinstance(v[field], str)):
            raise BadCase(f"{name}: {key!r} must be {{{field!r}: <string>}}")
        try:
            v[field].encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate escape in the JSON string
            raise BadCase(f"{name}: {key}.{field} is not valid Unicode text") from None
    checker = case.get("checker")
    if checker is not None and checker not in STDIO_CHECKERS:
        raise BadCase(f"{name}: unknown checker {str(checker)[:40]!r}")
    if checker in checkers.PROGRAM_CHECKERS and not checker_program:
        raise BadCase(f"{name}: checker {checker!r} needs stdio.checker_program in task.toml")
    _check_tolerances(case, name)


def _check_tolerances(case: dict[str, Any], name: str) -> None:
    for key in ("rel_tol", "abs_tol"):
        tol = case.get(key)
        if tol is not None and not (
            isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0 <= tol < math.inf
        ):
            raise BadCase(f"{name}: {key} must be a number >= 0")


def check_cases(cases: Any, custom_file: bool, kind: str = "function") -> list[dict[str, Any]]:
    if not isinstance(cases, list) or not cases:
        raise BadCase("cases must be a non-empty list")
    checked = [check_case(c, i, custom_file, kind) for i, c in enumerate(cases)]
    seen: set[str] = set()
    for c in checked:
        if c["id"] in seen:
            raise BadCase(f"case {c['id']!r}: duplicate id")
        seen.add(c["id"])
    return checked


def load_case_file(path: str, custom_file: bool, kind: str = "function") -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        raw = fh.read(MAX_CASES_BYTES + 1)
    try:
        tree = values.parse_json(raw, MAX_CASES_BYTES)
    except values.BadValue as exc:
        raise BadCase(str(exc)) from None
    return check_cases(tree, custom_file, kind)


def encode_generated(cases: Any) -> Any:
    """A generator returns Python values; they cross in the encoding like a file's would."""
    if not isinstance(cases, list):
        return cases
    out = []
    for c in cases:
        if isinstance(c, dict) and "input" in c and "expected" in c:
            try:
                enc = values.encode
                c = {**c, "input": enc(c["input"]), "expected": enc(c["expected"])}
            except values.Unencodable as exc:
                raise BadCase(f"case {c.get('id')!r}: {exc}") from None
        out.append(c)
    return out


def cmd_prepare(a: argparse.Namespace) -> None:
    try:
        if a.cases:
            cases = load_case_file(os.path.join("/judge", a.cases), a.custom_file, a.kind)
        else:
            gen = load_module(os.path.join("/judge", a.generator), "assay_task_generator")
            generated = encode_generated(gen.generate(int(a.seed)))
            cases = check_cases(generated, a.custom_file, a.kind)
    except BadCase as exc:
        raise SystemExit(f"judge: {exc}") from None
    with open(STATE, "w", encoding="utf-8") as fh:
        json.dump(cases, fh)
    json.dump([{"id": c["id"], "input": c["input"]} for c in cases], sys.stdout)


def same(expected: Any, actual: Any) -> bool:
    """`exact`: type-faithful equality. 1, 1.0 and True all differ, a tuple is not a list,
    a set is not a frozenset; dict keys match by the same rule; NaN matches NaN; 0.0 == -0.0."""
    return bool(values.canon(expected) == values.canon(actual))


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def close(expected: Any, actual: Any, rel_tol: float, abs_tol: float) -> bool:
    """`float`: numbers (int or float, never bool) within math.isclose(rel_tol, abs_tol),
    through lists, tuples and dict values; everything else as `exact`."""
    return _close(values.data(expected), values.data(actual), rel_tol, abs_tol)


def _close(expected: Any, actual: Any, rel_tol: float, abs_tol: float) -> bool:
    if _number(expected) and _number(actual):
        if isinstance(expected, float) and isinstance(actual, float):
            if math.isnan(expected) and math.isnan(actual):
                return True
        try:
            return math.isclose(expected, actual, rel_tol=rel_tol, abs_tol=abs_tol)
        except OverflowError:  # an int too big for a float: only equal ints are close
            return bool(expected == actual)
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, (list, tuple)):
        return len(expected) == len(actual) and all(
            _close(e, x, rel_tol, abs_tol) for e, x in zip(expected, actual, strict=True)
        )
    if isinstance(expected, values.Dict):
        # Keys pair up by their `exact` text, sorted: no hash of a hostile key is ever taken.
        exp, act = _by_exact_key(expected), _by_exact_key(actual)
        return [k for k, _ in exp] == [k for k, _ in act] and all(
            _close(e, x, rel_tol, abs_tol) for (_, e), (_, x) in zip(exp, act, strict=True)
        )
    return same(expected, actual)


def _by_exact_key(d: Any) -> list[tuple[str, Any]]:
    return sorted(((values.canon(k), v) for k, v in d.pairs), key=lambda p: p[0])


def unordered(expected: Any, actual: Any) -> bool:
    """`unordered`: two lists (or two tuples) holding the same elements as multisets, each
    element compared as by `exact`."""
    return (
        type(expected) is type(actual)
        and isinstance(expected, (list, tuple))
        and sorted(map(values.canon, expected)) == sorted(map(values.canon, actual))
    )


def equal(expected: Any, actual: Any) -> bool:
    """`equal`: Python's == on the decoded values (built-in types only, so no candidate code
    runs): what `assert f(x) == expected` does. 1 == 1.0 == True, and NaN != NaN at every
    depth: == itself lets a NaN match the same NaN object inside a list, a tuple, a dict or a
    set, so this walks the values with one rule instead of calling ==."""
    return _equal(values.data(expected), values.data(actual))


def _equal(e: Any, a: Any) -> bool:
    if isinstance(e, (bool, int, float)):
        return isinstance(a, (bool, int, float)) and bool(e == a)
    if e is None or isinstance(e, (str, bytes)):
        return type(a) is type(e) and bool(e == a)
    if isinstance(e, (list, tuple)):
        return (
            type(a) is type(e)
            and len(a) == len(e)
            and all(_equal(x, y) for x, y in zip(e, a, strict=True))
        )
    if isinstance(e, values.Set):  # a set equals a frozenset of the same elements
        return isinstance(a, values.Set) and not e.nan and not a.nan and e.keys == a.keys
    if isinstance(e, values.Dict):
        return (
            isinstance(a, values.Dict)
            and not e.nan
            and not a.nan
            and e.keys == a.keys
            and all(
                _equal(e.pairs[i][1], a.pairs[j][1]) for i, j in zip(e.order, a.order, strict=True)
            )
        )
    return False


class Comparator:
    def __init__(self, a: argparse.Namespace) -> None:
        self.default = a.comparator
        self.rel_tol, self.abs_tol = a.rel_tol, a.abs_tol
        self.custom: Any = None
        self.custom_takes_input = False
        if a.custom:
            self.custom = load_module(os.path.join("/judge", a.custom), "assay_task_comparator")
            fn = self.custom.compare
            # compare(expected, actual) is the older form; compare(input, expected, actual) sees
            # the case input too (property checks).
            import inspect  # only for a custom comparator: every compare pays its import

            self.custom_takes_input = len(inspect.signature(fn).parameters) >= 3

    def __call__(self, case: dict[str, Any], actual: Any) -> tuple[bool, str]:
        """Invalid when a custom comparator's Python value of `actual` cannot be built."""
        kind = case.get("comparator") or self.default
        if kind == "custom":
            try:  # the task's code needs real sets and dicts: built with a bound on collisions
                actual = values.native(actual)
            except values.BadValue as exc:
                raise Invalid(str(exc)) from None
            exp = values.decode(case["expected"])
            fn = self.custom.compare
            try:
                args = (values.decode(case["input"]), exp) if self.custom_takes_input else (exp,)
                ok = fn(*args, actual) is True
            except Exception:  # the task's own comparator failing on odd data is a failed case
                return False, "compare:custom-error"
            return ok, "compare:mismatch"
        exp, actual = values.decode_data(case["expected"]), values.data(actual)
        if kind == "float":
            rel = case.get("rel_tol", self.rel_tol)
            abs_ = case.get("abs_tol", self.abs_tol)
            return _close(exp, actual, rel, abs_), "compare:mismatch"
        if kind == "truthy":
            return bool(actual), "compare:not-truthy"
        if kind == "falsy":
            return not actual, "compare:not-falsy"
        if kind == "unordered":
            return unordered(exp, actual), "compare:mismatch"
        if kind == "equal":
            return _equal(exp, actual), "compare:mismatch"
        return same(exp, actual), "compare:mismatch"


def _excerpt(text: str) -> str:
    return text if len(text) <= DIAG_CHARS else text[:DIAG_CHARS] + f"... [{len(text)} chars]"


def _as_text(value: Any) -> str | None:
    """The text a cli or transform case compares, if it has one: a diff reads better."""
    if isinstance(value, str):
        return value
    if not isinstance(value, values.Dict):
        return None
    fields = {k: v for k, v in value.pairs if isinstance(k, str)}  # str hashes are keyed
    if isinstance(fields.get("stdout"), str):
        return str(fields["stdout"]) + f"\n[exit code {fields.get('exit_code')}]"
    files = fields.get("files")
    if isinstance(files, values.Dict):
        named = sorted((k, v) for k, v in files.pairs if isinstance(k, str) and isinstance(v, str))
        return "".join(f"=== {k}\n{v}" for k, v in named)
    return None


def diagnose(case: dict[str, Any], actual: Any, why: str) -> dict[str, Any]:
    """What the owner needs to tell a wrong solution from a wrong task: both sides, cut short,
    and a unified diff when both are text. Never leaves the controller (not the candidate's)."""
    expected, actual = values.decode_data(case["expected"]), values.data(actual)
    exp_text, act_text = _as_text(expected), _as_text(actual)
    both_text = exp_text is not None and act_text is not None
    exp_shown = exp_text if both_text and exp_text is not None else repr(expected)
    act_shown = act_text if both_text and act_text is not None else repr(actual)
    diff = ""
    if both_text:
        import difflib  # only for a failed case's diagnostics

        lines = difflib.unified_diff(
            exp_shown[: DIAG_CHARS * 8].splitlines(),
            act_shown[: DIAG_CHARS * 8].splitlines(),
            "expected", "actual", lineterm="", n=2,
        )  # fmt: skip
        kept = [ln[:200] for _, ln in zip(range(DIAG_DIFF_LINES), lines, strict=False)]
        diff = _excerpt("\n".join(kept))
    return {
        "id": case["id"], "reason": why,
        "expected": _excerpt(exp_shown), "actual": _excerpt(act_shown), "diff": diff,
    }  # fmt: skip


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


class UnencodableOutput(Exception):
    pass


def actual_value(kind: str, rc: dict[str, Any], index: int, cap: int) -> Any:
    raw = base64.b64decode(rc["output_b64"], validate=True)
    if kind == "stdio":  # the program's stdout, as bytes: the checkers never decode it
        if len(raw) > cap:
            raise Invalid("stdout over the output cap")
        return raw
    if kind == "function":
        try:
            tree = values.parse_json(raw, cap)
            if values.unencodable_reason(tree) is not None:
                raise UnencodableOutput
            return values.decode_data(tree)
        except values.BadValue as exc:
            raise Invalid(str(exc)) from None
    if kind == "cli":
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Invalid("stdout is not UTF-8") from None
        return {"stdout": text, "exit_code": rc["exit_code"]}
    return {"files": read_tree(f"/exchange/output/{index}")}


def stdio_runner_failure(rc: dict[str, Any]) -> tuple[str, str] | None:
    """(status, reason) of a stdio test the runner reports as not run to a clean exit, or None
    when its stdout is to be checked. A signal outranks the exit code it leaves."""
    rstatus = rc.get("status")
    if rstatus == "timeout":
        return "timeout", "limit:time"
    if rstatus == "limit":
        limit = rc.get("limit")
        if limit not in STDIO_LIMITS:
            return "error", "runner:invalid-output"
        return "limit", f"limit:{limit}"
    if rstatus == "residue":  # what the test left could not be removed (runner.py)
        return "error", "candidate:left-state"
    if rstatus == "error":  # the runner could not start the program
        return "error", "candidate:crash"
    if rstatus != "ok":
        return "error", "runner:invalid-output"
    if rc.get("signal") is not None:
        return "error", "runtime:signal"
    if type(rc.get("exit_code")) is not int or rc["exit_code"] != 0:
        return "error", "runtime:exit-code"
    return None


class StdioChecker:
    """The checker of each stdio test: the case's `checker`, else the task's; a program checker
    (python, testlib) is the task's judge/<checker_program>, prepared once per compare."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.default = getattr(a, "checker", None) or "lines"
        self.rel_tol, self.abs_tol = a.rel_tol, a.abs_tol
        self.timeout = float(getattr(a, "checker_timeout", None) or 10.0)
        program = getattr(a, "checker_program", None)
        self.program = os.path.join("/judge", program) if program else None
        self.programs: dict[str, Any] = {}

    def __call__(self, case: dict[str, Any], output: bytes) -> tuple[bool, str | None, str]:
        name = case.get("checker") or self.default
        answer = case["expected"]["stdout"].encode("utf-8")
        if name in checkers.PROGRAM_CHECKERS:
            if self.program is None:
                return False, checkers.FAILED, name
            run = self.programs.get(name)
            if run is None:
                run = self.programs[name] = checkers.ProgramChecker(name, self.program)
            given = case["input"]["stdin"].encode("utf-8")
            ok, why, _points = run(given, output, answer, self.timeout)
            if run.error:
                sys.stderr.write(f"judge: {name} checker, case {case['id'][:40]!r}: ")
                sys.stderr.write(run.error[:2000] + "\n")
            return ok, why, name
        rel = case.get("rel_tol", self.rel_tol)
        abs_ = case.get("abs_tol", self.abs_tol)
        ok, why = checkers.check(name, output, answer, abs_tol=abs_, rel_tol=rel)
        return ok, why, name


def cmd_compare(a: argparse.Namespace) -> None:
    if getattr(a, "cases", None):
        # A fixed cases file: the expected values are read where the task keeps them
        # (read-only), so a pooled judge needs no `prepare` per grading.
        try:
            cases = load_case_file(os.path.join("/judge", a.cases), a.custom_file, a.kind)
        except BadCase as exc:
            raise SystemExit(f"judge: {exc}") from None
    else:  # generated cases: prepare left them in /state
        with open(STATE, encoding="utf-8") as fh:
            cases = json.load(fh)
    reasons = []
    report = []
    diagnostics: list[dict[str, Any]] = []
    diag_bytes = 0
    try:
        with open(a.runner_output, "rb") as fh:
            runner = parse_json(fh.read(MAX_RUNNER_BYTES + 1), MAX_RUNNER_BYTES)
        by_id = {}
        for rc in runner["cases"]:
            if not isinstance(rc["id"], str):  # a hostile int id could collide in by_id's hash
                raise Invalid("case id from runner is not a string")
            if rc["id"] in by_id:
                raise Invalid("duplicate case id from runner")
            by_id[rc["id"]] = rc
    except (Invalid, KeyError, TypeError, OSError) as exc:
        by_id = {}
        reasons.append("runner:invalid-output")
        sys.stderr.write(f"judge: runner output rejected: {exc}\n")
    stdio = a.kind == "stdio"
    compare = None if stdio else Comparator(a)
    check_stdio = StdioChecker(a) if stdio else None
    for index, case in enumerate(cases):
        if check_stdio is not None:
            entry = _stdio_case(a, case, by_id.get(case["id"]), index, check_stdio)
            output = entry.pop("_stdout", None)
            if "reason" in entry:
                reasons.append(entry["reason"])
            if output is not None and a.diagnostics == "owner" and len(diagnostics) < DIAG_CASES:
                explained, size = _stdio_diagnostic(case, output, entry["reason"])
                if explained is not None and diag_bytes + size < DIAG_BYTES:
                    diagnostics.append(explained)
                    diag_bytes += size
            report.append(entry)
            continue
        assert compare is not None
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
                    ok, why = compare(case, actual)  # Invalid: a flood a custom one cannot get
                except UnencodableOutput:
                    status = "fail"
                    reasons.append("candidate:unencodable-output")
                except (Invalid, ValueError, UnicodeDecodeError, OSError):
                    status = "error"
                    reasons.append("candidate:invalid-output")
                else:
                    status = "pass" if ok else "fail"
                    if not ok:
                        reasons.append(why)
                        if a.diagnostics == "owner" and len(diagnostics) < DIAG_CASES:
                            try:
                                d = diagnose(case, actual, why)
                                size = len(json.dumps(d))
                            except Exception:  # an explanation never changes a status
                                size = DIAG_BYTES
                            if diag_bytes + size < DIAG_BYTES:
                                diagnostics.append(d)
                                diag_bytes += size
        report.append({"id": case["id"], "status": status, "duration_s": duration})
    out: dict[str, Any] = {"cases": report, "reasons": sorted(set(reasons))}
    if diagnostics:
        out["diagnostics"] = diagnostics
    json.dump(out, sys.stdout)


def _stdio_case(
    a: argparse.Namespace,
    case: dict[str, Any],
    rc: dict[str, Any] | None,
    index: int,
    check: StdioChecker,
) -> dict[str, Any]:
    """The report entry of one stdio test: id, status, duration_s, and reason when it did not
    pass, checker when a checker decided it. `_stdout` (popped by the caller) is the output a
    failed check saw, for the owner's diagnostics."""
    if rc is None:
        return {"id": case["id"], "status": "error", "duration_s": 0.0,
                "reason": "runner:missing-case"}  # fmt: skip
    entry: dict[str, Any] = {"id": case["id"], "duration_s": float(rc.get("duration_s") or 0.0)}
    failure = stdio_runner_failure(rc)
    if failure is not None:
        entry["status"], entry["reason"] = failure
        return entry
    try:
        output = actual_value("stdio", rc, index, a.output_cap)
    except (Invalid, ValueError, KeyError, TypeError):
        entry["status"], entry["reason"] = "error", "candidate:invalid-output"
        return entry
    ok, why, name = check(case, output)
    entry["checker"] = name
    if ok:
        entry["status"] = "pass"
    else:  # a checker that failed is the task's error, not a wrong answer: fails closed
        entry["status"] = "error" if why == checkers.FAILED else "fail"
        entry["reason"] = why
        entry["_stdout"] = output
    return entry


def _stdio_diagnostic(
    case: dict[str, Any], output: bytes, reason: str
) -> tuple[dict[str, Any] | None, int]:
    """A failed stdio test explained as text (the output decoded with replacement), and its
    size as JSON; (None, 0) when it cannot be built: an explanation never changes a status."""
    try:
        shown = output[: DIAG_CHARS * 8].decode("utf-8", errors="replace")
        d = diagnose({**case, "expected": case["expected"]["stdout"]}, shown, reason)
        return d, len(json.dumps(d))
    except Exception:
        return None, 0


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--seed", required=True)
    p.add_argument("--cases")
    p.add_argument("--generator")
    p.add_argument("--kind", default="function")
    p.add_argument("--custom-file", action="store_true")
    c = sub.add_parser("compare")
    c.add_argument("--kind", required=True)
    c.add_argument("--comparator", required=True)
    c.add_argument("--rel-tol", type=float, default=1e-9)
    c.add_argument("--abs-tol", type=float, default=1e-9)
    c.add_argument("--custom")
    c.add_argument("--output-cap", type=int, required=True)
    c.add_argument("--runner-output", default="/exchange/runner.json")
    c.add_argument("--diagnostics", choices=("none", "owner"), default="none")
    c.add_argument("--cases")
    c.add_argument("--custom-file", action="store_true")
    c.add_argument("--checker", choices=STDIO_CHECKERS, default="lines")  # stdio only
    c.add_argument("--checker-program")  # stdio: a path inside /judge
    c.add_argument("--checker-timeout", type=float, default=10.0)
    a = ap.parse_args()
    # Deep enough for MAX_DEPTH values (a $dict level is 3 JSON levels), and no deeper.
    sys.setrecursionlimit(1000)
    (cmd_prepare if a.cmd == "prepare" else cmd_compare)(a)


if __name__ == "__main__":
    main()
