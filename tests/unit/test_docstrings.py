"""The examples in the docstrings of assay's public modules (every module whose dotted name has
no part starting with "_", `assay.cli` aside) stay true to the API they show.

- `>>>` examples run, with doctest, in their module's namespace.
- Every other example (a block indented under the text, as `help()` shows it) is Python unless
  its first line is a comment saying "not Python". Most need an engine or a server, so they
  are not run: each compiles, every `assay` import in it resolves, every name it reads from a
  module of assay exists, and every call of assay's that can be resolved (a function, a class,
  or a method of an object the example made from a class) binds its arguments to the callee's
  signature, so a keyword the callee does not take fails here (the `assay.serve.serve(...,
  token=...)` example of issue 37 did)."""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import inspect
import subprocess
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def public_modules() -> list[str]:
    names = []
    for path in sorted((SRC / "assay").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(p.startswith("_") for p in parts) or parts[1:2] == ["cli"]:
            continue
        names.append(".".join(parts))
    return names


def examples(source: str) -> list[tuple[int, str]]:
    """(line, code) of each indented block in the docstrings of `source` (the module's, and
    those of its classes and functions), blocks of another language left out."""
    found = []
    tree = ast.parse(source)
    for node in [tree, *ast.walk(tree)]:
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node, clean=True)
        if not doc or not node.body:
            continue
        start = node.body[0].lineno
        block: list[str] = []
        first = 0
        for n, line in enumerate([*doc.splitlines(), "(end)"]):
            if line.startswith("    ") or (block and not line.strip()):
                if not block:
                    first = n
                block.append(line)
                continue
            if block:
                code = textwrap.dedent("\n".join(block)).strip("\n")
                head = code.splitlines()[0]
                if not (head.startswith("#") and "not Python" in head):
                    found.append((start + first, code))
                block = []
    return found


class _Unknown:
    """A name the example leaves to its reader (`row`, `MyRuntime`) or a module not installed."""


UNKNOWN = _Unknown()


def check(code: str, namespace: dict[str, Any]) -> list[str]:
    """What is wrong with one example (see the module): one line per problem."""
    try:
        tree = ast.parse(code)
        compile(tree, "<example>", "exec")
    except SyntaxError as exc:
        return [f"does not compile: {exc}"]
    names: dict[str, Any] = dict(namespace)
    made: dict[str, type] = {}  # variable -> the class the example made it from
    problems: list[str] = []

    def ours(obj: object) -> bool:
        return (getattr(obj, "__module__", None) or getattr(obj, "__name__", "")).startswith(
            "assay"
        )

    def resolve(node: ast.expr) -> tuple[object, type | None]:
        """(the object `node` names, or UNKNOWN; the class whose method it is, if one)."""
        if isinstance(node, ast.Name):
            if node.id in made:
                return UNKNOWN, None
            return names.get(node.id, UNKNOWN), None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in made:
                cls = made[node.value.id]
                if not hasattr(cls, node.attr):
                    problems.append(f"line {node.lineno}: {cls.__name__} has no {node.attr}")
                    return UNKNOWN, None
                return getattr(cls, node.attr), cls
            base, _ = resolve(node.value)
            if base is UNKNOWN or not ours(base):
                return UNKNOWN, None
            if not hasattr(base, node.attr) and isinstance(base, types.ModuleType):
                try:
                    return importlib.import_module(f"{base.__name__}.{node.attr}"), None
                except ImportError:
                    pass
            if not hasattr(base, node.attr):
                problems.append(f"line {node.lineno}: {ast.unparse(node)} does not exist")
                return UNKNOWN, None
            return getattr(base, node.attr), None
        return UNKNOWN, None

    def made_from(value: ast.expr) -> type | None:
        if isinstance(value, ast.Call):
            callee, _ = resolve(value.func)
            if isinstance(callee, type) and ours(callee):
                return callee
        return None

    def bind(call: ast.Call) -> None:
        callee, owner = resolve(call.func)
        if callee is UNKNOWN or not callable(callee) or not ours(callee):
            return
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return
        try:
            signature = inspect.signature(callee)
        except (TypeError, ValueError):
            return
        args: list[object] = [UNKNOWN] * len(call.args)
        if owner is not None and not isinstance(
            inspect.getattr_static(owner, getattr(callee, "__name__", "")), staticmethod
        ):
            args.insert(0, UNKNOWN)  # self
        try:
            signature.bind(*args, **{k.arg: UNKNOWN for k in call.keywords if k.arg})
        except TypeError as exc:
            problems.append(f"line {call.lineno}: {ast.unparse(call.func)}(...): {exc}")

    class Walk(ast.NodeVisitor):
        def visit_Import(self, node: ast.Import) -> None:
            for alias in node.names:
                try:
                    importlib.import_module(alias.name)
                    top = alias.name.partition(".")[0]
                    names[alias.asname or top] = importlib.import_module(
                        alias.name if alias.asname else top
                    )
                except ImportError as exc:
                    if alias.name.startswith("assay"):
                        problems.append(f"line {node.lineno}: {exc}")
                    names[alias.asname or alias.name.partition(".")[0]] = UNKNOWN

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            mod_name = node.module or ""
            try:
                module = importlib.import_module(mod_name)
            except ImportError as exc:
                if mod_name.startswith("assay"):
                    problems.append(f"line {node.lineno}: {exc}")
                for alias in node.names:
                    names[alias.asname or alias.name] = UNKNOWN
                return
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{mod_name}.{alias.name}")
                    except ImportError:
                        problems.append(f"line {node.lineno}: {mod_name} has no {alias.name}")
                names[alias.asname or alias.name] = getattr(module, alias.name, UNKNOWN)

        def visit_Assign(self, node: ast.Assign) -> None:
            self.generic_visit(node)
            cls = made_from(node.value)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.pop(target.id, None)
                    made.pop(target.id, None)
                    if cls is not None:
                        made[target.id] = cls

        def visit_With(self, node: ast.With) -> None:
            for item in node.items:
                self.visit(item.context_expr)
                cls = made_from(item.context_expr)
                if isinstance(item.optional_vars, ast.Name):
                    names.pop(item.optional_vars.id, None)
                    made.pop(item.optional_vars.id, None)
                    if cls is not None and hasattr(cls, "__enter__"):
                        made[item.optional_vars.id] = cls
            for stmt in node.body:
                self.visit(stmt)

        def visit_Call(self, node: ast.Call) -> None:
            self.generic_visit(node)
            bind(node)

        def visit_Attribute(self, node: ast.Attribute) -> None:
            self.generic_visit(node)
            if isinstance(node.ctx, ast.Load) and not (
                isinstance(node.value, ast.Name) and node.value.id in made
            ):
                resolve(node)

    Walk().visit(tree)
    return sorted(set(problems))


MODULES = public_modules()


def test_the_public_modules_are_found() -> None:
    assert {"assay", "assay.serve", "assay.wire", "assay.integrations.rewards"} <= set(MODULES)
    assert not [m for m in MODULES if "._" in m or m.startswith("assay.cli")]


HARBOR_PYTHON = Path(__file__).resolve().parents[2] / ".venv-harbor" / "bin" / "python"
NEEDS_HARBOR = {"assay.integrations.harbor"}
"""Modules of an integration whose library needs a newer Python than this venv's: their tests
run in the venv `scripts/setup.sh` makes for it."""


def _has_harbor() -> bool:
    try:
        return importlib.util.find_spec("harbor.environments") is not None
    except ModuleNotFoundError:
        return False


def _elsewhere(name: str, test: str) -> bool:
    """Run `test[name]` of this file in Harbor's venv when `name` needs Harbor and this
    interpreter has none; True if it was run there (and passed)."""
    if name not in NEEDS_HARBOR or _has_harbor():
        return False
    assert HARBOR_PYTHON.is_file(), f"{HARBOR_PYTHON} is missing: `bash scripts/setup.sh` makes it"
    proc = subprocess.run(
        [str(HARBOR_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"{__file__}::{test}[{name}]"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return True


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_of_public_modules(name: str) -> None:
    if _elsewhere(name, "test_the_docstring_examples_of_public_modules"):
        return
    module = importlib.import_module(name)
    path = Path(inspect.getsourcefile(module) or "")
    for line, code in examples(path.read_text()):
        assert check(code, vars(module)) == [], f"{path.name}, the example at line {line}:\n{code}"


@pytest.mark.parametrize("name", MODULES)
def test_the_doctests_of_public_modules_run(name: str) -> None:
    if _elsewhere(name, "test_the_doctests_of_public_modules_run"):
        return
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, name, globs=vars(module).copy()):
        runner.run(test)
    assert runner.failures == 0


def _source(name: str) -> Path:
    spec = importlib.util.find_spec(name) if name not in NEEDS_HARBOR else None
    if spec is not None and spec.origin:
        return Path(spec.origin)
    return SRC / (name.replace(".", "/") + ".py")


def test_there_are_examples_of_each_kind() -> None:
    """The checks above are not vacuous: the modules hold examples of both kinds, among them
    `assay.serve`'s and `assay.wire`'s."""
    indented = {m: examples(_source(m).read_text()) for m in MODULES}
    assert sum(len(v) for v in indented.values()) >= 8 and indented["assay.serve"]
    wire = importlib.import_module("assay.wire")
    assert doctest.DocTestFinder().find(wire)[0].examples


ISSUE_37_EXAMPLE = """
import assay, assay.serve
with assay.Grader(reuse_judges=True) as g:
    assay.serve.serve(g, host="127.0.0.1", port=8000, token="...", tasks={},
                      settings=assay.serve.Settings(token="..."))
"""


def test_the_check_sees_what_drifted() -> None:
    """The `assay.serve` example before issue 37's fix, and other drifts, are each caught."""
    import assay.serve

    assert check(ISSUE_37_EXAMPLE, {}) == [
        "line 4: assay.serve.serve(...): got an unexpected keyword argument 'token'"
    ]
    assert check("import assay\nassay.Grader(runtim=None)", {}) == [
        "line 2: assay.Grader(...): got an unexpected keyword argument 'runtim'"
    ]
    assert check("import assay\nwith assay.Grader() as g:\n    g.grade('t')", {}) == [
        "line 3: g.grade(...): missing a required argument: 'submission'"
    ]
    assert check("import assay\nassay.serve.no_such_thing()", {"assay": assay}) == [
        "line 2: assay.serve.no_such_thing does not exist"
    ]
    assert check("from assay.wire import nothing_here", {}) == [
        "line 1: assay.wire has no nothing_here"
    ]
    assert check("def f(:\n", {})[0].startswith("does not compile")
    assert check("from trl import GRPOTrainer\nGRPOTrainer(x=1)", {}) == []  # not assay's
