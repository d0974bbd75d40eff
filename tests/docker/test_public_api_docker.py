"""The public Python API: its names and signatures are pinned here; a change to either is a
deliberate change to this file. The mapping submission's safety is shown both at the firewall
(no engine) and through a real grading (docker)."""

from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
import io
import re
import secrets
import sys
import tarfile
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pydantic
import pytest

import assay
import assay.batch
import assay.errors
import assay.firewall
import assay.runtime
import assay.runtime.conformance
from assay._internal.firewall.mapping import write_mapping_tar

ROOT = Path(__file__).resolve().parents[2]
ADD = ROOT / "examples" / "add"
CORRECT = "def add(a, b):\n    return a + b\n"
PUBLIC_MODULES = (
    assay,
    assay.errors,
    assay.firewall,
    assay.batch,
    assay.runtime,
    assay.runtime.conformance,
)
WRONG = "def add(a, b):\n    return a - b\n"


SIGNATURES = {
    "load_task": "(path: 'Path | str') -> 'Task'",
    "keygen": "(directory: 'str | os.PathLike[str] | None' = None) -> 'tuple[Path, Path]'",
    "keyid": "(public_key: 'str | os.PathLike[str] | Ed25519PublicKey') -> 'str'",
    "load_public_key": "(path: 'str | os.PathLike[str]') -> 'Ed25519PublicKey'",
    "build_environment": "(task: 'TaskLike', *, progress: 'Callable[[str], None] | None' = None) "
    "-> 'EnvImage | None'",
    "write_report": "(out_dir: 'str | os.PathLike[str]', *, "
    "html: 'str | os.PathLike[str] | None' = None, "
    "junit: 'str | os.PathLike[str] | None' = None, "
    "public_key: 'str | os.PathLike[str] | Ed25519PublicKey | None' = None) -> 'ReportSummary'",
    "Grader.batch": "(self, jobs: 'Iterable[Job | BatchJob]', *, parallel: 'int' = 2, "
    "ray: 'str | None' = None, ray_insecure_no_auth: 'bool' = False) -> 'Batch'",
    "batch.Batch.run": "(self, out: 'Path', progress: 'Progress | None' = None) "
    "-> 'Generator[Graded, None, BatchResult]'",
    "runtime.conformance.run_conformance": "(runtime: 'Runtime', image: 'str', *, "
    "checks: 'Sequence[Check] | None' = None) -> 'list[CheckResult]'",
    "verify": "(envelope: 'bytes', public_key: 'str | os.PathLike[str] | Ed25519PublicKey', *, "
    "subject: 'str | None' = None) -> 'Verdict'",
    "Grader": "(*, runtime: 'Runtime | None' = None, image: 'str | None' = None, "
    "oci_runtime: 'str' = 'runc', key: 'str | os.PathLike[str] | None' = None, "
    "reuse_judges: 'bool' = False) -> 'None'",
    "Grader.grade": "(self, task: 'TaskLike', submission: 'Submission', *, "
    "tier: 'str | None' = None, unsafe_baseline: 'bool' = False) -> 'Graded'",
    "Grader.grade_many": "(self, jobs: 'Iterable[Job]', *, parallel: 'int' = 2, "
    "ray: 'str | None' = None, ray_insecure_no_auth: 'bool' = False) -> 'Iterator[Graded]'",
    "Grader.tier_for": "(task: 'TaskLike', tier: 'str | None' = None, *, "
    "unsafe_baseline: 'bool' = False) -> 'Tier'",
    "Job": "(task: 'TaskLike', submission: 'Submission', id: 'str | None' = None) -> None",
    "Agent": "(command: 'str', directory: 'str | os.PathLike[str] | None' = None) -> None",
    "Graded": "(verdict: 'Verdict', envelope: 'bytes', job_id: 'str | None' = None, "
    "diagnostics: 'Diagnostics | None' = None) -> None",
    "Grader.session": "(self, task: 'TaskLike') -> 'Session'",
    "Session.exec": "(self, cmd: 'Sequence[str] | str', *, input: 'str | bytes | None' = None, "
    "timeout: 'float | None' = None, cwd: 'str | None' = None, "
    "env: 'Mapping[str, str] | None' = None) -> 'ExecResult'",
    "Session.read_file": "(self, path: 'str') -> 'bytes'",
    "Session.write_file": "(self, path: 'str', data: 'str | bytes') -> 'None'",
    "Session.grade": "(self, *, tier: 'str | None' = None) -> 'Graded'",
    "ExecResult": "(exit_code: 'int | None', stdout: 'bytes', stderr: 'bytes', "
    "timed_out: 'bool' = False, truncated: 'bool' = False) -> None",
}


# -- every type a public signature names is public ------------------------------------------


def _assigned_names() -> set[str]:
    """Names bound by an assignment at the top of any assay module (type aliases such as
    `Tier = Literal[...]` are objects of `typing`, so only their name says they are ours)."""
    names: set[str] = set()
    for path in (ROOT / "src" / "assay").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def _public_signatures() -> list[tuple[str, Callable[..., object], dict[str, object]]]:
    """(where, callable, the namespace its annotations resolve in) for each public function,
    constructor and public method of a public class. A pydantic model's constructor is its
    fields (a record assay hands out, documented in docs/verdicts.md and docs/tasks.md), so
    only its own methods count."""
    found = []
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            where = f"{module.__name__}.{name}"
            if inspect.isfunction(obj):
                found.append((where, obj, obj.__globals__))
            if not (inspect.isclass(obj) and obj.__module__.startswith("assay")):
                continue
            namespace = vars(sys.modules[obj.__module__])
            if not issubclass(obj, pydantic.BaseModel) and (
                "__init__" in vars(obj) or dataclasses.is_dataclass(obj)
            ):
                found.append((where, obj.__init__, namespace))
            for attr, value in vars(obj).items():
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if isinstance(value, property) and value.fget is not None:
                    value = value.fget
                if not attr.startswith("_") and inspect.isfunction(value):
                    found.append((f"{where}.{attr}", value, namespace))
    return found


def _resolve(dotted: str, namespace: dict[str, object]) -> object:
    head, *rest = dotted.split(".")
    obj = namespace[head] if head in namespace else getattr(builtins, head)
    for part in rest:
        obj = getattr(obj, part)
    return obj


def non_public_types(
    signatures: list[tuple[str, Callable[..., object], dict[str, object]]],
) -> list[str]:
    """Each name in a signature that resolves to a type or alias assay made but does not
    export from a public module (`where(parameter): name`)."""
    public = {id(getattr(m, n)) for m in PUBLIC_MODULES for n in m.__all__}
    assigned = _assigned_names()
    bad = []
    for where, fn, namespace in signatures:
        for param, annotation in inspect.get_annotations(fn).items():
            text = annotation if isinstance(annotation, str) else repr(annotation)
            for name in re.findall(r"[A-Za-z_][\w.]*", re.sub(r"'[^']*'|\"[^\"]*\"", "", text)):
                try:
                    obj = _resolve(name, namespace)
                except (KeyError, AttributeError):
                    bad.append(f"{where}({param}): {name} does not resolve")
                    continue
                if id(obj) in public or isinstance(obj, (types.ModuleType, TypeVar)):
                    continue
                ours = (getattr(obj, "__module__", None) or "").startswith("assay") or (
                    not inspect.isclass(obj) and name.rpartition(".")[2] in assigned
                )
                if ours:
                    bad.append(f"{where}({param}): {name}")
    return sorted(set(bad))


# Each exit code means one thing (README): 1 is a FAILED verdict or a failed verification, so
# no other error may take it; 2 is the caller's or the task's fault; 3 is no verdict.
EXIT_CODES = {
    "ArchiveTooLargeError": 3,
    "AssayError": 3,
    "CensusUnavailableError": 3,
    "ClusterError": 2,
    "ContainerStuckError": 3,
    "EngineError": 3,
    "EngineUnavailableError": 3,
    "EnvironmentBuildError": 2,
    "FirewallError": 3,
    "GradingCancelledError": 3,
    "ImageMissingError": 3,
    "InfrastructureError": 3,
    "InternalError": 3,
    "JudgeReportError": 3,
    "KeyFileError": 2,
    "NodeLostError": 3,
    "TaskEnvironmentError": 2,
    "TaskError": 2,
    "UnsafeInputsError": 2,
    "UsageError": 2,
    "VerificationError": 1,
}


# -- mapping submissions at the firewall (no engine) -------------------------------------------


def _check(files: dict[str, str | bytes]) -> assay.firewall.Accepted | assay.firewall.Rejected:
    raw = io.BytesIO()
    write_mapping_tar(files, raw)
    raw.seek(0)
    return assay.firewall.check(raw, io.BytesIO(), assay.firewall.FirewallLimits())


# -- through real gradings -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def grader(tmp_path_factory: pytest.TempPathFactory, base_image: str):  # type: ignore[no-untyped-def]
    key = tmp_path_factory.mktemp("key") / "signing.key"
    with assay.Grader(key=key, image=base_image) as g:
        yield g


def _landing_places(name: str, cwd: Path) -> list[Path]:
    """Where a `../name` or absolute name would land if anything unpacked it naively."""
    return [
        cwd.parent / name,
        Path(tempfile.gettempdir()) / name,
        Path("/") / name,
        Path(tempfile.gettempdir()).parent / name,
    ]


@pytest.mark.docker
def test_mapping_grades_pass_fail_and_refuse_escapes(
    grader: assay.Grader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    escape = f"assay-escape-{secrets.token_hex(4)}.py"
    ok = grader.grade(ADD, {"solution.py": CORRECT})
    bad = grader.grade(ADD, {"solution.py": WRONG})
    dotdot = grader.grade(ADD, {"solution.py": CORRECT, f"../{escape}": "import os"})
    absolute = grader.grade(ADD, {"solution.py": CORRECT, f"/tmp/{escape}": "x = 1"})
    nul = grader.grade(ADD, {"solution.py\x00.txt": CORRECT})
    assert ok.verdict.passed and ok.verdict.tier == "t3"
    assert not bad.verdict.passed
    assert not dotdot.verdict.passed and "firewall:dot-dot" in dotdot.verdict.reason_codes
    assert not absolute.verdict.passed
    assert "firewall:absolute-path" in absolute.verdict.reason_codes
    assert not nul.verdict.passed and "firewall:control-char" in nul.verdict.reason_codes
    assert [p for p in _landing_places(escape, tmp_path) if p.exists()] == []
    for graded in (ok, bad, dotdot, absolute, nul):
        assert assay.verify(graded.envelope, grader.public_key) == graded.verdict


@pytest.mark.docker
def test_tar_file_object_and_directory_submissions(grader: assay.Grader) -> None:
    correct = ADD / "solutions" / "correct"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        for child in sorted(correct.iterdir()):
            tf.add(child, arcname=child.name)
    raw.seek(0)
    from_object = grader.grade(ADD, raw)
    from_dir = grader.grade(ADD, correct)
    assert from_object.verdict.passed and from_dir.verdict.passed
    assert from_object.verdict.submission_digest == from_dir.verdict.submission_digest


@pytest.mark.docker
def test_grade_many_yields_every_job(grader: assay.Grader) -> None:
    jobs = [
        assay.Job(ADD, {"solution.py": CORRECT}, id="right"),
        assay.Job(ADD, {"solution.py": WRONG}, id="wrong"),
        assay.Job(ADD, {"../x.py": "x = 1"}, id="escape"),
    ]
    results = {g.job_id: g for g in grader.grade_many(jobs, parallel=2)}
    assert sorted(results) == ["escape", "right", "wrong"]
    assert results["right"].verdict.passed
    assert not results["wrong"].verdict.passed
    assert "firewall:dot-dot" in results["escape"].verdict.reason_codes
    for graded in results.values():
        assert assay.verify(graded.envelope, grader.public_key) == graded.verdict
