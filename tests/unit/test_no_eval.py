"""No grader path evaluates, unpickles or imports candidate output (issue 36).

Graders that `eval()` what a candidate printed, or unpickle what it returned, run the
candidate's code with the grader's rights (UC Berkeley RDI's "eval() on untrusted input",
https://arxiv.org/abs/2605.12673). This walks the AST of every module under src/assay, host
side and in-container alike (the judge, its checkers and values, the runner, the compat and
harbor helpers), and finds every call that turns data into code or objects: `eval`, `exec`,
`compile`, `__import__`, the pickle family, `marshal`, `shelve`, `yaml.load` without a safe
loader, `ast.literal_eval`, importlib's loaders, `runpy`, and every import of a module whose
only job is that. Each one must be in ALLOWED with the reason it never sees candidate output; a
new one fails until it is reviewed and listed, and a listed one that is gone fails too.
"""

from __future__ import annotations

import ast
import shutil
from collections import Counter
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"

BUILTINS = frozenset({"eval", "exec", "compile", "__import__"})
# Modules that exist to turn bytes into objects (or code): importing one at all is a finding.
MODULES = frozenset(
    {"pickle", "_pickle", "cPickle", "pickletools", "marshal", "shelve", "dill", "cloudpickle",
     "jsonpickle", "joblib", "code", "codeop"}
)  # fmt: skip
CALLS = frozenset(
    {
        "ast.literal_eval",
        "importlib.import_module",
        "importlib.__import__",
        "importlib.reload",
        "importlib.util.spec_from_file_location",
        "importlib.util.spec_from_loader",
        "importlib.util.module_from_spec",
        "importlib.machinery.SourceFileLoader",
        "importlib.machinery.SourcelessFileLoader",
        "runpy.run_path",
        "runpy.run_module",
        "types.FunctionType",
        "types.CodeType",
        "zipimport.zipimporter",
    }
)
# A loader's methods, whatever the loader is called locally.
METHODS = frozenset({"exec_module", "load_module"})
SAFE_YAML_LOADERS = frozenset({"yaml.SafeLoader", "yaml.CSafeLoader", "yaml.BaseLoader"})
# yaml.load builds arbitrary objects unless told to use a safe loader; these always may.
YAML_UNSAFE = frozenset({"yaml.unsafe_load", "yaml.unsafe_load_all", "yaml.full_load",
                         "yaml.full_load_all"})  # fmt: skip

Finding = tuple[str, str]
"""(module path relative to src/assay, what it does)"""

ALLOWED: dict[Finding, tuple[int, str]] = {
    ("_incontainer/call.py", "importlib.import_module"): (
        1,
        "imports the candidate's module by design: in the candidate's own container, in "
        "the case's own process, as the candidate's uid (docs/security.md); no grader code "
        "or expected value is in that process",
    ),
    ("_incontainer/call.py", "importlib.util.spec_from_file_location"): (
        1,
        "loads assay's own values.py from the read-only /assay bind",
    ),
    ("_incontainer/call.py", "importlib.util.module_from_spec"): (1, "the same: values.py"),
    ("_incontainer/call.py", ".exec_module"): (1, "the same: values.py"),
    ("_incontainer/runner.py", "importlib.util.spec_from_file_location"): (
        1,
        "loads assay's own modules (confine, call) from the read-only /assay bind, before any case",
    ),
    ("_incontainer/runner.py", "importlib.util.module_from_spec"): (1, "the same"),
    ("_incontainer/runner.py", ".exec_module"): (1, "the same"),
    ("_incontainer/judge.py", "importlib.util.spec_from_file_location"): (
        3,
        "assay's values.py and checkers.py, and the task's own generator or comparator "
        "(judge/, the task owner's code), in the judge container; the candidate's bytes only "
        "ever reach values.parse_json, which builds data and never looks a name up",
    ),
    ("_incontainer/judge.py", "importlib.util.module_from_spec"): (3, "the same"),
    ("_incontainer/judge.py", ".exec_module"): (3, "the same"),
    ("_incontainer/judge_worker.py", "importlib.util.spec_from_file_location"): (
        1,
        "loads assay's own judge.py and confine.py from the read-only /assay bind, before any "
        "step; task code is loaded only by judge.py, in a step's child",
    ),
    ("_incontainer/judge_worker.py", "importlib.util.module_from_spec"): (1, "the same"),
    ("_incontainer/judge_worker.py", ".exec_module"): (1, "the same"),
    ("_incontainer/compat/truth.py", "importlib.util.spec_from_file_location"): (
        1,
        "the task's truth generator, in the trusted prep container, before any candidate exists",
    ),
    ("_incontainer/compat/truth.py", "importlib.util.module_from_spec"): (1, "the same"),
    ("_incontainer/compat/truth.py", ".exec_module"): (1, "the same"),
    ("_incontainer/compat/pytest_main.py", "importlib.util.spec_from_file_location"): (
        1,
        "assay's trusted conftest, registered as a plugin from read-only /assay/compat",
    ),
    ("_incontainer/compat/pytest_main.py", "importlib.util.module_from_spec"): (1, "the same"),
    ("_incontainer/compat/pytest_main.py", ".exec_module"): (1, "the same"),
    ("_incontainer/compat/probe.py", "importlib.util.spec_from_file_location"): (
        1,
        "assay's pytest_main.py, in the image probe's container, which holds no candidate",
    ),
    ("_incontainer/compat/probe.py", "importlib.util.module_from_spec"): (1, "the same"),
    ("_incontainer/compat/probe.py", ".exec_module"): (1, "the same"),
    ("_internal/tiers/repo/imports.py", "ast.literal_eval"): (
        1,
        "a `pytest_plugins` value parsed from the task's side of a repository (the pristine "
        "tree and the test patch), never the submission; literal_eval evaluates no code",
    ),
    ("_internal/importers/humaneval_probe.py", "builtins.compile"): (
        2,
        "the HumanEval dataset's own test code and canonical solution, in a throwaway "
        "subprocess of `assay import humaneval`; no candidate exists at import time",
    ),
    ("_internal/importers/humaneval_probe.py", "builtins.exec"): (2, "the same"),
    ("_internal/importers/safepickle.py", "import pickletools"): (
        1,
        "reads only pickletools' opcode table, to name the opcodes it refuses; the decoder "
        "is its own whitelist stack machine over dataset rows, never candidate output, and "
        "never calls pickle.load",
    ),
}


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Every name an import binds in the module, anywhere in it, to what it names."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    top = a.name.partition(".")[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """What an expression names, through the module's imports: `pickle.loads`, `builtins.eval`."""
    if isinstance(node, ast.Name):
        if node.id in aliases:
            return aliases[node.id]
        if node.id == "__builtins__":
            return "builtins"
        return f"builtins.{node.id}" if node.id in BUILTINS else None
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _safe_yaml(call: ast.Call, aliases: dict[str, str]) -> bool:
    loaders = [k.value for k in call.keywords if k.arg == "Loader"] + call.args[1:2]
    return any(_dotted(v, aliases) in SAFE_YAML_LOADERS for v in loaders)


def findings_in(source: str) -> list[str]:
    tree = ast.parse(source)
    aliases = _aliases(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            found += [f"import {n}" for n in names if n.partition(".")[0] in MODULES]
        elif isinstance(node, ast.Call):
            target = _dotted(node.func, aliases)
            if target is None:
                if isinstance(node.func, ast.Attribute) and node.func.attr in METHODS:
                    found.append(f".{node.func.attr}")
                continue
            top = target.partition(".")[0]
            if target in CALLS or (target.startswith("builtins.") and target[9:] in BUILTINS):
                found.append(target)
            elif target in ("getattr", "builtins.getattr") or target == "builtins":
                continue
            elif top in MODULES or target in YAML_UNSAFE:
                found.append(target)
            elif target in ("yaml.load", "yaml.load_all") and not _safe_yaml(node, aliases):
                found.append(target)
            elif isinstance(node.func, ast.Attribute) and node.func.attr in METHODS:
                found.append(f".{node.func.attr}")
        elif isinstance(node, ast.Attribute) and _dotted(node, aliases) in {
            f"builtins.{b}" for b in BUILTINS | {"__dict__"}
        }:
            found.append(f"{_dotted(node, aliases)} (reference)")
        elif isinstance(node, ast.Subscript) and _dotted(node.value, aliases) in {
            "builtins",
            "builtins.__dict__",
        }:
            found.append("builtins[...]")
    # getattr(builtins, name) reaches eval without naming it.
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and node.args
            and _dotted(node.args[0], aliases) == "builtins"
        ):
            found.append("getattr(builtins, ...)")
    return found


def scan(root: Path) -> Counter[Finding]:
    counts: Counter[Finding] = Counter()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for what in findings_in(path.read_text(encoding="utf-8")):
            counts[(rel, what)] += 1
    return counts


def _unlisted(counts: Counter[Finding]) -> list[str]:
    return sorted(
        f"{path}: {what} x{n}"
        for (path, what), n in counts.items()
        if ALLOWED.get((path, what), (0, ""))[0] != n
    )


def test_every_call_that_turns_data_into_code_is_listed_with_its_reason() -> None:
    counts = scan(SRC)
    assert _unlisted(counts) == [], "review each: eval/unpickle/import of what, from whom?"
    stale = sorted(f"{p}: {w}" for (p, w) in ALLOWED if (p, w) not in counts)
    assert stale == [], "listed but gone: remove the entry"
    assert all(reason.strip() for _n, reason in ALLOWED.values())


PLANTED = {
    "eval": "def grade(out):\n    return eval(out)\n",
    "exec": "def grade(out):\n    exec(out)\n",
    "compile": "def grade(out):\n    return compile(out, 'x', 'eval')\n",
    "__import__": "def grade(name):\n    return __import__(name)\n",
    "builtins-attribute": "import builtins\n\ndef grade(out):\n    return builtins.eval(out)\n",
    "builtins-getattr": "import builtins\n\ndef grade(out):\n    return getattr(builtins, 'ev' + 'al')(out)\n",
    "builtins-dunder": "def grade(out):\n    return __builtins__['eval'](out)\n",
    "pickle": "import pickle\n\ndef grade(raw):\n    return pickle.loads(raw)\n",
    "pickle-from-alias": "from pickle import loads as decode\n\ndef grade(raw):\n    return decode(raw)\n",
    "pickle-function-scope": "def grade(raw):\n    import pickle as p\n    return p.Unpickler(raw).load()\n",
    "marshal": "import marshal\n\ndef grade(raw):\n    return marshal.loads(raw)\n",
    "shelve": "import shelve\n\ndef grade(path):\n    return shelve.open(path)\n",
    "dill": "import dill\n\ndef grade(raw):\n    return dill.loads(raw)\n",
    "yaml-unsafe": "import yaml\n\ndef grade(text):\n    return yaml.load(text)\n",
    "yaml-full": "import yaml\n\ndef grade(text):\n    return yaml.load(text, Loader=yaml.FullLoader)\n",
    "yaml-unsafe-load": "import yaml\n\ndef grade(text):\n    return yaml.unsafe_load(text)\n",
    "literal_eval": "import ast\n\ndef grade(out):\n    return ast.literal_eval(out)\n",
    "import_module": "import importlib\n\ndef grade(name):\n    return importlib.import_module(name)\n",
    "spec_from_file": "from importlib.util import spec_from_file_location\n\ndef grade(p):\n    return spec_from_file_location('m', p)\n",
    "exec_module": "def grade(loader, module):\n    loader.exec_module(module)\n",
    "runpy": "import runpy\n\ndef grade(path):\n    runpy.run_path(path)\n",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_scan_finds_each_way_in(name: str) -> None:
    """Each planted grader is a way candidate output could become code or objects: the scan
    must see it, or the test above proves nothing."""
    assert findings_in(PLANTED[name]), name


@pytest.mark.parametrize(
    "source",
    [
        "import re\nPATTERN = re.compile('x')\n",
        "import yaml\n\ndef f(t):\n    return yaml.load(t, Loader=yaml.SafeLoader)\n",
        "import yaml\n\ndef f(t):\n    return yaml.safe_load(t)\n",
        "def f(rt, cid):\n    return rt.exec(cid, ('true',))\n",
        "import json\n\ndef f(raw):\n    return json.loads(raw)\n",
    ],
)
def test_the_scan_leaves_data_parsing_alone(source: str) -> None:
    assert findings_in(source) == []


def test_a_call_planted_in_a_copy_of_the_package_fails_the_check(tmp_path: Path) -> None:
    """The whole check, run on a copy of src/assay with one eval added to a host-side module:
    exactly that call is reported."""
    copy = tmp_path / "assay"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "_internal" / "tiers" / "strict" / "judge_report.py"
    target.write_text(
        target.read_text(encoding="utf-8") + "\n\ndef _planted(raw):\n    return eval(raw)\n",
        encoding="utf-8",
    )
    assert _unlisted(scan(copy)) == ["_internal/tiers/strict/judge_report.py: builtins.eval x1"]
    assert _unlisted(scan(SRC)) == []
