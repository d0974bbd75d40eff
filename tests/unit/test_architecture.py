"""The package layout is the one docs/architecture.md draws: the import rules in its table hold
for every module, and no modules import each other in a cycle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
ARCH = ROOT / "docs" / "architecture.md"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """Every module, the in-container scripts included: they import nothing of assay, but host
    code importing them is an edge the table must allow."""
    return {_module_name(path): path for path in sorted((SRC / "assay").rglob("*.py"))}


def imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's assay imports, as module names (`from pkg import mod` names the module)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [
                    f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target
                    for a in node.names
                ]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def rules() -> dict[str, set[str]]:
    """The 'may import' column of docs/architecture.md's package table."""
    table: dict[str, set[str]] = {}
    for line in ARCH.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        package = cells[0].strip("`")
        table[package] = set(re.findall(r"`([a-z_.]+)`", cells[2]))
    return table


def allowed(target: str, listed: set[str]) -> bool:
    """A listed package allows its subpackages too, but not across a private name: listing
    `assay` (the public API) allows `assay.wire`, never `assay._internal.serve`, which a row
    must name itself."""
    for p in listed:
        if target == p:
            return True
        rest = target.removeprefix(p + ".")
        if rest != target and not any(part.startswith("_") for part in rest.split(".")):
            return True
    return False


def violations(graph: dict[str, set[str]], table: dict[str, set[str]]) -> list[str]:
    broken = []
    for module, targets in sorted(graph.items()):
        mine = owner(module, set(table))
        for target in sorted(targets):
            theirs = owner(target, set(table))
            if theirs != mine and not allowed(theirs, table[mine]):
                broken.append(f"{module} -> {target} ({mine} may not import {theirs})")
    return broken


def owner(module: str, packages: set[str]) -> str:
    """The table row a module belongs to: its longest listed package prefix."""
    best = ""
    for p in packages:
        if (module == p or module.startswith(p + ".")) and len(p) > len(best):
            best = p
    return best


def test_no_import_cycles() -> None:
    assert cycles(imports(_modules())) == []


def test_cycle_check_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_every_module_has_a_row_in_the_map() -> None:
    table = rules()
    assert table, "docs/architecture.md has no package table"
    unowned = [m for m in _modules() if not owner(m, set(table))]
    assert unowned == []


def test_imports_follow_the_map() -> None:
    assert violations(imports(_modules()), rules()) == []


TIERS = "assay._internal.tiers"


@pytest.mark.parametrize(
    ("module", "target"),
    [
        (f"{TIERS}.strict.grade", f"{TIERS}.compat.junit"),  # a tier importing a sibling
        (f"{TIERS}.harbor.grade", f"{TIERS}.repo.policy"),
        (f"{TIERS}.compat.grade", f"{TIERS}.repo.tree"),  # a tier importing one built on it
        (f"{TIERS}.core.intake", f"{TIERS}.strict.judgespec"),  # the core importing a tier
        (f"{TIERS}.repo.grade", f"{TIERS}.dispatch"),  # a tier importing the dispatch
        ("assay._internal.runtime.docker", "assay._incontainer.runner"),  # host -> in-container
        ("assay._internal.tiers.strict.grade", "assay._incontainer.judge"),
        ("assay._incontainer.judge", "assay._internal.model.task"),  # in-container -> host
        # The public API's adapters reach the implementation only through the public API.
        ("assay.integrations.rewards", "assay._internal.serve.native"),
        ("assay.integrations.verl", "assay._internal.model.strict_json"),
        ("assay.wire", "assay._internal.serve.app"),  # the wire format stays pure
    ],
)
def test_the_map_rejects_a_forbidden_import(module: str, target: str) -> None:
    """The rules bite on the real table: each edge below, added to the real graph, is reported."""
    graph = imports(_modules())
    assert target in graph or target in _modules(), target
    graph[module] = graph.get(module, set()) | {target}
    assert any(v.startswith(f"{module} -> {target} ") for v in violations(graph, rules()))


def test_the_tiers_have_one_package_each() -> None:
    packages = {p.name for p in (SRC / "assay/_internal/tiers").iterdir() if p.is_dir()}
    assert packages - {"__pycache__"} == {"core", "strict", "compat", "repo", "harbor", "baselines"}
    loose = {p.name for p in (SRC / "assay/_internal/tiers").glob("*.py")}
    assert loose == {"__init__.py", "dispatch.py"}


def test_the_in_container_path_is_defined_once() -> None:
    """Every bind of the in-container programs starts from one constant, not a path built from
    `__file__` with a count of parents that breaks when a module moves."""
    hits = [
        str(path.relative_to(SRC))
        for path in sorted((SRC / "assay/_internal").rglob("*.py"))
        if '"_incontainer"' in path.read_text()
    ]
    assert hits == []


# The user's commands, and what they share, run on the public API only (docs/architecture.md);
# the proof tools (`matrix`, `bench`) and `gc`, `import` may use the internals.
PUBLIC_API_COMMANDS = (
    "assay.cli.grade",
    "assay.cli.grade_many",
    "assay.cli.keys",
    "assay.cli.build",
    "assay.cli.firewall",
    "assay.cli.report",
    "assay.cli.doctor",
    "assay.cli.serve",
    "assay.cli.validate",
)


def internal_imports_of(starts: tuple[str, ...], graph: dict[str, set[str]]) -> list[str]:
    """Every `assay._internal` import reached from `starts` through other `assay.cli` modules
    (a command that reached the internals through `common` would still be on them)."""
    found, seen, todo = [], set(), list(starts)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for target in sorted(graph[module]):
            if target.startswith("assay._internal"):
                found.append(f"{module} -> {target}")
            elif target.startswith("assay.cli."):
                todo.append(target)
    return found


def test_the_users_commands_run_on_the_public_api() -> None:
    graph = imports(_modules())
    assert set(PUBLIC_API_COMMANDS) <= set(graph)
    assert internal_imports_of(PUBLIC_API_COMMANDS, graph) == []
    assert not {p for p in rules()["assay.cli"] if p.startswith("assay._internal")}


def test_the_public_cli_check_sees_an_internal_import() -> None:
    graph = {
        "assay.cli.grade": {"assay", "assay.cli.common"},
        "assay.cli.common": {"assay._internal.runtime.engine"},
    }
    assert internal_imports_of(("assay.cli.grade",), graph) == [
        "assay.cli.common -> assay._internal.runtime.engine"
    ]


def test_no_runtime_module_is_over_500_lines() -> None:
    """Issue 37: the runc backend was three 700-800-line modules holding two or three jobs
    each; a module of `runtime/` stays small enough to read in one sitting."""
    long = {
        str(p.relative_to(SRC)): n
        for p in sorted((SRC / "assay/_internal/runtime").rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert long == {}
