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
import sys
import tarfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

import pydantic
import pytest

import assay
import assay.batch
import assay.errors
import assay.firewall
import assay.runtime
import assay.runtime.conformance
import assay.wire
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
    assay.wire,
)


def test_all_is_pinned() -> None:
    assert sorted(assay.__all__) == [
        "Agent",
        "CheatRates",
        "Diagnostics",
        "EnvImage",
        "EnvironmentSpec",
        "ExecResult",
        "Family",
        "Graded",
        "Grader",
        "InlineTasks",
        "Job",
        "LanguageImage",
        "MAX_ENVELOPE_BYTES",
        "Patch",
        "ReportSummary",
        "Session",
        "Submission",
        "TIER_TITLES",
        "Task",
        "TaskConfig",
        "TaskLike",
        "Tier",
        "UNSAFE_TIERS",
        "ValidationCheck",
        "ValidationReport",
        "Verdict",
        "__version__",
        "batch",
        "build_environment",
        "build_languages",
        "code_submission",
        "errors",
        "firewall",
        "import_harbor",
        "keygen",
        "keyid",
        "load_public_key",
        "load_task",
        "make_impossible",
        "printable",
        "reason_family",
        "runtime",
        "validate",
        "verify",
        "write_report",
    ]
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
    assert assay.firewall.__all__ == [
        "RULES",
        "Accepted",
        "FirewallLimits",
        "ManifestEntry",
        "Rejected",
        "check",
        "display",
        "materialise",
    ]
    assert sorted(assay.runtime.__all__) == [
        "BACKENDS",
        "BackendStatus",
        "Bind",
        "ContainerSpec",
        "DEFAULT_BACKEND",
        "DEFAULT_BASE_IMAGE",
        "ExecResult",
        "LABEL",
        "Limits",
        "OCI_RUNTIMES",
        "Runtime",
        "START_DOCKER_FIX",
        "Scratch",
        "Spawned",
        "UNPRIVILEGED_USER",
        "diagnose",
        "open_runtime",
        "run_spawned",
    ]
    assert sorted(assay.runtime.conformance.__all__) == [
        "CHECKS",
        "Check",
        "CheckResult",
        "run_conformance",
        "self_check",
    ]
    assert sorted(assay.wire.__all__) == [
        "Answer",
        "FIELDS",
        "MAX_ANSWER_BYTES",
        "STATUSES",
        "Status",
        "parse_answer",
        "read_answer",
        "read_results",
        "reward_of",
    ]
    assert sorted(assay.batch.__all__) == [
        "Batch",
        "BatchJob",
        "BatchResult",
        "Outcome",
        "Progress",
        "Tally",
        "drain",
        "jobs_from_dir",
        "jobs_from_manifest",
        "jobs_from_predictions",
    ]


SIGNATURES = {
    "load_task": "(path: 'Path | str') -> 'Task'",
    "keygen": "(directory: 'str | os.PathLike[str] | None' = None) -> 'tuple[Path, Path]'",
    "keyid": "(public_key: 'str | os.PathLike[str] | Ed25519PublicKey') -> 'str'",
    "load_public_key": "(path: 'str | os.PathLike[str]') -> 'Ed25519PublicKey'",
    "build_environment": "(task: 'TaskLike', *, progress: 'Callable[[str], None] | None' = None, "
    "runtime: 'Runtime | None' = None) -> 'EnvImage | None'",
    "build_languages": "(names: 'Iterable[str] | None' = None, *, "
    "progress: 'Callable[[str], None] | None' = None, "
    "done: 'Callable[[LanguageImage], None] | None' = None, "
    "runtime: 'Runtime | None' = None) -> 'list[LanguageImage]'",
    "write_report": "(out_dir: 'str | os.PathLike[str]', *, "
    "html: 'str | os.PathLike[str] | None' = None, "
    "junit: 'str | os.PathLike[str] | None' = None, "
    "public_key: 'str | os.PathLike[str] | Ed25519PublicKey | None' = None) -> 'ReportSummary'",
    "ReportSummary": "(gradings: 'int', passed: 'int', failed: 'int', no_verdict: 'int', "
    "invalid: 'int', key_note: 'str', rates: 'CheatRates' = <factory>, "
    "tasks: 'Mapping[str, CheatRates]' = <factory>) -> None",
    "CheatRates": "(verdicts: 'int' = 0, passed: 'int' = 0, tampered: 'int' = 0, "
    "twins: 'int' = 0, twins_passed: 'int' = 0, legacy: 'int' = 0, "
    "families: 'Mapping[Family, int]' = <factory>, "
    "reasons: 'Mapping[Family, Mapping[str, int]]' = <factory>) -> None",
    "Grader.batch": "(self, jobs: 'Iterable[Job | BatchJob]', *, parallel: 'int' = 2, "
    "ray: 'str | None' = None, ray_insecure_no_auth: 'bool' = False) -> 'Batch'",
    "batch.Batch.run": "(self, out: 'Path', progress: 'Progress | None' = None) "
    "-> 'Generator[Graded, None, BatchResult]'",
    "runtime.conformance.run_conformance": "(runtime: 'Runtime', image: 'str', *, "
    "checks: 'Sequence[Check] | None' = None) -> 'list[CheckResult]'",
    "verify": "(envelope: 'bytes', public_key: 'str | os.PathLike[str] | Ed25519PublicKey', *, "
    "subject: 'str | None' = None) -> 'Verdict'",
    "Grader": "(*, runtime: 'Runtime | None' = None, image: 'str | None' = None, "
    "oci_runtime: 'str | None' = None, key: 'str | os.PathLike[str] | None' = None, "
    "reuse_judges: 'bool' = False) -> 'None'",
    "Grader.grade": "(self, task: 'TaskLike', submission: 'Submission', *, "
    "tier: 'str | None' = None, unsafe_baseline: 'bool' = False) -> 'Graded'",
    "Grader.grade_many": "(self, jobs: 'Iterable[Job]', *, parallel: 'int' = 2, "
    "ray: 'str | None' = None, ray_insecure_no_auth: 'bool' = False) -> 'Iterator[Graded]'",
    "Grader.tier_for": "(task: 'TaskLike', tier: 'str | None' = None, *, "
    "unsafe_baseline: 'bool' = False) -> 'Tier'",
    "InlineTasks": "(max_tasks: 'int' = 4096, max_bytes: 'int' = 1073741824) -> 'None'",
    "InlineTasks.task": "(self, tests: 'Mapping[str, Any] | str', form: 'str' = 'apps', *, "
    "statement: 'str | None' = None, allow_visible_only: 'bool' = False) -> 'Task'",
    "InlineTasks.lease": "(self, tests: 'Mapping[str, Any] | str', form: 'str' = 'apps', *, "
    "statement: 'str | None' = None, allow_visible_only: 'bool' = False) -> 'Iterator[Task]'",
    "wire.reward_of": "(passed: 'bool', score: 'float') -> 'float'",
    "wire.read_answer": "(raw: 'bytes', *, max_bytes: 'int' = 67108864) -> 'Answer'",
    "wire.read_results": "(raw: 'bytes', count: 'int', *, max_bytes: 'int' = 67108864) "
    "-> 'list[Answer | AnswerError]'",
    "wire.parse_answer": "(obj: 'object') -> 'Answer'",
    "code_submission": "(task: 'Task', code: 'str', language: 'str | None' = None) "
    "-> 'dict[str, str]'",
    "import_harbor": "(src: 'str | Path', out: 'str | Path', step: 'str | None' = None) -> 'Path'",
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
    "validate": "(tasks: 'Iterable[TaskLike]', *, grader: 'Grader | None' = None, "
    "image: 'str | None' = None, oci_runtime: 'str | None' = None, jobs: 'int' = 1, "
    "progress: 'Callable[[ValidationReport], None] | None' = None) -> 'list[ValidationReport]'",
    "ValidationReport": "(task_id: 'str', path: 'Path', checks: 'tuple[ValidationCheck, ...]' = (), "
    "duration_s: 'float' = 0.0) -> None",
    "ValidationCheck": "(name: 'str', ok: 'bool', detail: 'str' = '', "
    "could_not_check: 'bool' = False) -> None",
    "Patch": "(diff: 'str | bytes') -> None",
    "reason_family": "(code: 'str') -> 'Family'",
    "make_impossible": "(task: 'TaskLike', out: 'str | os.PathLike[str]') -> 'Path'",
    "ExecResult": "(exit_code: 'int | None', stdout: 'bytes', stderr: 'bytes', "
    "timed_out: 'bool' = False, truncated: 'bool' = False) -> None",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signatures_are_pinned(name: str) -> None:
    obj: object = assay
    for part in name.split("."):
        obj = getattr(obj, part)
    assert str(inspect.signature(obj)) == SIGNATURES[name]  # type: ignore[arg-type]


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


def test_every_type_a_public_signature_names_is_public() -> None:
    signatures = _public_signatures()
    assert len(signatures) > 50  # the walk found the API, not nothing
    assert non_public_types(signatures) == []


def test_the_public_type_check_sees_an_internal_type() -> None:
    class Hidden:
        pass

    Hidden.__module__ = "assay._internal.somewhere"

    def grade(task: Hidden, tier: str) -> assay.Verdict:  # type: ignore[empty-body]
        ...

    # Annotations resolve in the namespace given: here `tier` names an alias assay made.
    grade.__annotations__["tier"] = "Tier"
    namespace = {"Hidden": Hidden, "Tier": Literal["t3"], "assay": assay}
    assert non_public_types([("grade", grade, namespace)]) == [
        "grade(task): Hidden",
        "grade(tier): Tier",
    ]


def test_firewall_check_signature() -> None:
    params = inspect.signature(assay.firewall.check).parameters
    assert list(params)[:3] == ["source", "sink", "limits"]
    assert {"artifacts", "strip_prefix"} <= set(params)


def test_every_public_error_is_named_error_and_explains_itself() -> None:
    assert assay.errors.__all__
    for name in assay.errors.__all__:
        cls = getattr(assay.errors, name)
        assert name.endswith("Error"), name
        assert issubclass(cls, assay.errors.AssayError), name
        assert callable(cls.diagnostics)
        assert cls.__doc__, name
    # Nothing else in the module is an exception class left out of __all__.
    for name, value in vars(assay.errors).items():
        if isinstance(value, type) and issubclass(value, BaseException):
            assert name in assay.errors.__all__, name


# Each exit code means one thing (README): 1 is a FAILED verdict or a failed verification, so
# no other error may take it; 2 is the caller's or the task's fault; 3 is no verdict.
EXIT_CODES = {
    "AnswerError": 3,
    "ArchiveTooLargeError": 3,
    "AssayError": 3,
    "BackendUnavailableError": 2,
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


def test_each_error_has_the_exit_code_of_what_it_means() -> None:
    assert {name: getattr(assay.errors, name).exit_code for name in assay.errors.__all__} == (
        EXIT_CODES
    )
    for name in assay.errors.__all__:
        cls = getattr(assay.errors, name)
        assert (cls.exit_code == 1) == issubclass(cls, assay.errors.VerificationError), name
        assert (cls.exit_code == 2) == issubclass(cls, assay.errors.UsageError), name


@pytest.mark.parametrize("name", sorted(EXIT_CODES))
def test_the_command_line_exits_with_the_errors_code(name: str) -> None:
    """What `assay` exits with when the error ends a command: the error's own code, so an
    archive over its cap (no verdict) never exits 1 like a FAILED grading."""
    from assay.cli.common import exit_codes

    e = assay.errors
    made: dict[str, e.AssayError] = {
        "ArchiveTooLargeError": e.ArchiveTooLargeError(64),
        "ContainerStuckError": e.ContainerStuckError("stuck", removed=True),
        "EnvironmentBuildError": e.EnvironmentBuildError("t", "failed", "log"),
        "ImageMissingError": e.ImageMissingError("img", "build it"),
        "InternalError": e.InternalError("g1", ValueError("bug")),
        "JudgeReportError": e.JudgeReportError("schema", "bad"),
        "TaskEnvironmentError": e.TaskEnvironmentError("t", "no image"),
        "TaskError": e.TaskError("t", "bad"),
        "UnsafeInputsError": e.UnsafeInputsError("t", "leak"),
        "VerificationError": e.VerificationError("signature:invalid", "bad"),
    }
    err = made.get(name) or getattr(e, name)("boom")
    with pytest.raises(SystemExit) as stopped, exit_codes():
        raise err
    assert stopped.value.code == EXIT_CODES[name]


def test_internal_errors_are_the_public_ones() -> None:
    """The errors assay raises on purpose live in assay.errors; the implementation's old names
    are the same classes, so no caller catches one and misses the other."""
    from assay._internal.runtime import ArchiveTooLarge, CensusUnavailable, RuntimeError_
    from assay._internal.runtime.observed import Cancelled
    from assay._internal.tiers.strict.judge_report import INVALID_OUTPUT, JudgeReportError

    assert ArchiveTooLarge is assay.errors.ArchiveTooLargeError
    assert CensusUnavailable is assay.errors.CensusUnavailableError
    assert RuntimeError_ is assay.errors.EngineError
    assert Cancelled is assay.errors.GradingCancelledError
    assert JudgeReportError is assay.errors.JudgeReportError
    assert JudgeReportError("schema", "x").reason_codes == (INVALID_OUTPUT, "judge:schema")


def test_an_unknown_oci_runtime_is_a_usage_error(tmp_path: Path) -> None:
    grader = assay.Grader(oci_runtime="kata", key=tmp_path / "signing.key")
    with pytest.raises(assay.errors.UsageError, match="unknown runtime backend 'kata'"):
        grader.runtime()


def test_verification_error_says_why() -> None:
    err = assay.errors.VerificationError("signature:invalid", "no signature verified")
    assert err.reason == "signature:invalid"
    assert "signature:invalid" in err.diagnostics()
    assert err.exit_code == 1


# -- mapping submissions at the firewall (no engine) -------------------------------------------


def _check(files: dict[str, str | bytes]) -> assay.firewall.Accepted | assay.firewall.Rejected:
    raw = io.BytesIO()
    write_mapping_tar(files, raw)
    raw.seek(0)
    return assay.firewall.check(raw, io.BytesIO(), assay.firewall.FirewallLimits())


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("../x.py", "dot-dot"),
        ("a/../../x.py", "dot-dot"),
        ("/etc/x.py", "absolute-path"),
        ("solution.py\x00.txt", "control-char"),
        ("\x00", "control-char"),
        ("a\\..\\x.py", "backslash"),
    ],
)
def test_mapping_with_an_escaping_name_is_rejected_by_the_named_rule(name: str, rule: str) -> None:
    result = _check({"solution.py": CORRECT, name: "x = 1"})
    assert isinstance(result, assay.firewall.Rejected), result
    assert result.rule == rule


def test_nul_is_refused_however_the_name_is_encoded() -> None:
    """A NUL in a ustar name field (Python's tarfile writes short names there) is refused as a
    format error; the mapping writer's PAX record gets the rule that names the NUL itself."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        info = tarfile.TarInfo("solution.py\x00.txt")
        info.size = len(CORRECT)
        tf.addfile(info, io.BytesIO(CORRECT.encode()))
    raw.seek(0)
    ustar = assay.firewall.check(raw, io.BytesIO(), assay.firewall.FirewallLimits())
    assert isinstance(ustar, assay.firewall.Rejected) and ustar.rule == "format"
    ours = _check({"solution.py\x00.txt": CORRECT})
    assert isinstance(ours, assay.firewall.Rejected) and ours.rule == "control-char"


def test_a_good_mapping_materialises_exactly(tmp_path: Path) -> None:
    raw, normalised = io.BytesIO(), io.BytesIO()
    write_mapping_tar({"solution.py": CORRECT, "pkg/data.bin": b"\x00\xff"}, raw)
    raw.seek(0)
    result = assay.firewall.check(raw, normalised, assay.firewall.FirewallLimits())
    assert isinstance(result, assay.firewall.Accepted)
    normalised.seek(0)
    out = tmp_path / "out"
    out.mkdir()
    assay.firewall.materialise(normalised, out)
    assert (out / "solution.py").read_text() == CORRECT
    assert (out / "pkg" / "data.bin").read_bytes() == b"\x00\xff"
    assert sorted(p.name for p in out.rglob("*")) == ["data.bin", "pkg", "solution.py"]


@pytest.mark.parametrize("bad", [{1: "x"}, {"a.py": 3}, {"a.py": None}])
def test_mapping_of_the_wrong_types_is_a_usage_error(bad: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(assay.errors.UsageError):
        write_mapping_tar(bad, io.BytesIO())


def test_keygen_and_verify_refuse_what_they_must(tmp_path: Path) -> None:
    key, pub = assay.keygen(tmp_path)
    assert key.stat().st_mode & 0o077 == 0
    with pytest.raises(assay.errors.KeyFileError):
        assay.keygen(tmp_path)  # never overwrites
    with pytest.raises(assay.errors.VerificationError) as caught:
        assay.verify(b'{"payload": "", "payloadType": "x", "signatures": []}', pub)
    assert caught.value.reason.startswith(("envelope:", "signature:"))


def test_tier_for_decides_in_one_place() -> None:
    task = assay.load_task(ADD)
    assert assay.Grader.tier_for(task) == "t3"
    with pytest.raises(assay.errors.UsageError):
        assay.Grader.tier_for(task, "t2")
    pytest_task = ROOT / "examples" / "add-pytest"
    assert assay.Grader.tier_for(pytest_task) == "t2"
    with pytest.raises(assay.errors.UsageError, match="unsafe"):
        assay.Grader.tier_for(pytest_task, "t0")
    assert assay.Grader.tier_for(pytest_task, "t0", unsafe_baseline=True) == "t0"


# -- through real gradings -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def grader(tmp_path_factory: pytest.TempPathFactory, base_image: str):  # type: ignore[no-untyped-def]
    key = tmp_path_factory.mktemp("key") / "signing.key"
    with assay.Grader(key=key, image=base_image) as g:
        yield g


def test_grade_many_refuses_bad_jobs_before_grading(tmp_path: Path) -> None:
    from assay._internal.runtime.fake import FakeRuntime

    g = assay.Grader(runtime=FakeRuntime(), key=tmp_path / "signing.key")
    dup = [assay.Job(ADD, {}, id="same"), assay.Job(ADD, {}, id="same")]
    with pytest.raises(assay.errors.UsageError):
        list(g.grade_many(dup))
    with pytest.raises(assay.errors.UsageError):
        list(g.grade_many([assay.Job(ADD, {}, id="../escape")]))
    with pytest.raises(assay.errors.TaskError):
        list(g.grade_many([assay.Job(tmp_path, {})]))
