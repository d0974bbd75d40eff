"""SWE-bench instances as assay repository tasks (T2), from a task repository or dataset rows.

Sources (read locally; nothing is downloaded or pulled):
- a SWE-bench 5 task repository: `tasks/<instance_id>/` with `task.yaml`, `tests.json`,
  `problem_statement.md`, `gold.patch`, `test.patch`, `eval.sh`, `Dockerfile` (its context is
  the task directory), or one such task directory;
- dataset rows (JSONL or a .json list): `instance_id`, `repo`, `base_commit`, `patch`,
  `test_patch`, `problem_statement`, `FAIL_TO_PASS` / `PASS_TO_PASS` (JSON strings, as on
  HuggingFace, or lists), and SWE-bench 5's `image` / `eval_script` when the row has them.

Each instance becomes DIR/<instance id, lower-cased>/:
    task.toml              kind "pytest", a repository task: fail_to_pass, pass_to_pass,
                           test_dirs, workdir /testbed
    inputs/ISSUE.md        the problem statement (hints are not shown, as in SWE-bench)
    judge/test.patch       the test patch
    solutions/gold.patch   the reference fix (`assay validate` grades it as a Patch)
    environment/Dockerfile the instance image, `FROM` it when it is on the engine, else the
                           task's own Dockerfile (with its context), plus assay's layer: the
                           activation as ENV, and the repository's history cut to base_commit

The history: the instance image's /testbed is a clone of the upstream repository, whose later
commits (the fix among them) are reachable from branches, tags, the reflog or packed objects
(SWE-bench #465, #581, #590). assay's layer replaces /testbed/.git with a one-commit clone of
base_commit, made over git's pack protocol so that no other object is copied, with no remote,
no tag and no reflog, and checks that this is so; the build fails otherwise.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from assay.errors import AssayError, InfrastructureError, UsageError

from ..model.strict_json import StrictJSONError, loads_strict
from ..model.task import load_task
from ..model.testpatch import PatchError, parse_patch
from .stdio_task import read_rows, toml_str, unexpected
from .swebench_eval import Activation, EvalScript, EvalScriptRefused, parse_eval_script, runner_of

WORKDIR = "/testbed"
MAX_TEXT = 16 << 20
MAX_SMALL_FILE = 1 << 20
MAX_IDS = 20_000
MAX_ID_CHARS = 2048
_INSTANCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/-]{0,200}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$")
_TASK_FILES = ("task.yaml", "tests.json", "problem_statement.md", "hints.md", "eval.sh")
_NOT_CONTEXT = frozenset({*_TASK_FILES, "problem_assets"})
# swebench 5.0.2's Python log parsers (harness/log_parsers/python.py), by what runs the tests,
# for rows that carry no eval script.
NOT_JUNIT_REPOS = {
    "django/django": "Django's tests/runtests.py",
    "sympy/sympy": "SymPy's bin/test",
    "sphinx-doc/sphinx": "tox",
}
PYTEST_REPOS = frozenset({
    "astropy/astropy", "marshmallow-code/marshmallow", "matplotlib/matplotlib", "mwaskom/seaborn",
    "pallets/flask", "psf/requests", "pvlib/pvlib-python", "pydata/xarray", "pydicom/pydicom",
    "pylint-dev/astroid", "pylint-dev/pylint", "pytest-dev/pytest", "pyvista/pyvista",
    "scikit-learn/scikit-learn", "sqlfluff/sqlfluff",
})  # fmt: skip
SWEBENCH_ACTIVATION = Activation("/opt/miniconda3", "testbed")
"""Every SWE-bench Python image's: `source /opt/miniconda3/bin/activate; conda activate testbed`."""

LIMITS = {
    "total_timeout": 1800,
    "agent_timeout": 3600,
    "memory_mb": 4096,
    "pids": 1024,
    "cpus": 2,
    "artifact_bytes": 1 << 30,
    "artifact_entries": 200_000,
}
"""Real repositories are large: the defaults of a small task would refuse most of them."""


class Refused(Exception):
    """This instance is not written; the message says why (and names the runner or field)."""


@dataclass(frozen=True)
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    gold_patch: str
    test_patch: str
    problem_statement: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    image: str
    """The row's `image` (SWE-bench 5), else swebench's local name for the instance image."""
    eval_script: str | None
    dockerfile_dir: Path | None = None
    """The task directory whose Dockerfile builds the image (task repositories only)."""


@dataclass
class Result:
    """One instance: written to `out`, or refused with `reason`."""

    source: str
    instance_id: str | None = None
    task_id: str | None = None
    out: Path | None = None
    image: str | None = None
    reason: str | None = None
    notes: list[str] = field(default_factory=list)


HasImage = Callable[[str], bool]


def default_image(instance_id: str) -> str:
    """swebench's local name for an instance image (`ImageSpec.name`, amd64, tag latest)."""
    return f"sweb.eval.x86_64.{instance_id}:latest".lower()


def task_id_of(instance_id: str) -> str:
    tid = instance_id.lower()
    if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", tid):
        return tid
    digest = hashlib.sha256(instance_id.encode()).hexdigest()[:12]
    stem = re.sub(r"[^a-z0-9._-]", "_", tid)[:50].lstrip("._-") or "swebench"
    return f"{stem}-{digest}"


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def _text(row: dict[str, Any], key: str, cap: int = MAX_TEXT, required: bool = True) -> str:
    value = row.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise Refused(f"field {key!r} is {'missing' if key not in row else 'not a string'}")
    if len(value.encode("utf-8", "surrogatepass")) > cap:
        raise Refused(f"field {key!r} is longer than {cap} bytes")
    return value


def _ids(row: dict[str, Any], key: str) -> tuple[str, ...]:
    value = row.get(key)
    if isinstance(value, str):  # the HuggingFace form: a JSON string holding the list
        try:
            value = loads_strict(value.encode("utf-8", "surrogatepass"), max_bytes=MAX_TEXT,
                                 max_depth=2)  # fmt: skip
        except StrictJSONError as exc:
            raise Refused(f"field {key!r} is not a JSON list ({exc.code})") from None
    if not isinstance(value, list):
        raise Refused(f"field {key!r} is {'missing' if key not in row else 'not a list'}")
    if len(value) > MAX_IDS:
        raise Refused(f"field {key!r} lists more than {MAX_IDS} tests")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item or len(item) > MAX_ID_CHARS:
            raise Refused(f"field {key!r} holds an entry that is not a test id")
        if not item.isprintable():
            raise Refused(f"field {key!r} holds a test id with control characters: {item!r}")
        out.append(item)
    if len(set(out)) != len(out):
        raise Refused(f"field {key!r} lists a test twice")
    return tuple(out)


def instance_from_row(row: Any, dockerfile_dir: Path | None = None) -> Instance:
    if not isinstance(row, dict):
        raise Refused("row is not a JSON object")
    iid = _text(row, "instance_id", 256)
    if not _INSTANCE.match(iid) or ".." in iid:
        raise Refused(f"instance_id {iid[:80]!r} is not a safe name")
    base = _text(row, "base_commit", 64)
    if not _COMMIT.match(base):
        raise Refused(f"base_commit {base[:80]!r} is not a 40-hex commit id")
    image = _text(row, "image", 256, required=False) or default_image(iid)
    if not _IMAGE.match(image) or ".." in image:
        raise Refused(f"image {image[:80]!r} is not an image name assay uses")
    f2p = _ids(row, "FAIL_TO_PASS")
    if not f2p:
        raise Refused("FAIL_TO_PASS is empty: nothing decides whether the issue is resolved")
    p2p = _ids(row, "PASS_TO_PASS")
    if overlap := sorted(set(f2p) & set(p2p)):
        raise Refused(f"test {overlap[0]!r} is in FAIL_TO_PASS and PASS_TO_PASS")
    script = row.get("eval_script")
    if script is not None and not isinstance(script, str):
        raise Refused("field 'eval_script' is not a string")
    return Instance(
        instance_id=iid, repo=_text(row, "repo", 256), base_commit=base,
        gold_patch=_text(row, "patch"), test_patch=_text(row, "test_patch"),
        problem_statement=_text(row, "problem_statement"), fail_to_pass=f2p, pass_to_pass=p2p,
        image=image, eval_script=script or None, dockerfile_dir=dockerfile_dir,
    )  # fmt: skip


def _read(path: Path, cap: int) -> str:
    try:
        with path.open("rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        raise Refused(f"{path.name}: cannot read ({exc.strerror})") from None
    if len(data) > cap:
        raise Refused(f"{path.name}: larger than {cap} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{path.name}: not UTF-8") from None


def instance_from_task_dir(d: Path) -> Instance:
    """One task directory of a SWE-bench 5 task repository (swebench/task/repo.py's load_task)."""
    import yaml

    for name in ("task.yaml", "tests.json", "gold.patch", "test.patch", "problem_statement.md"):
        if (d / name).is_symlink() or not (d / name).is_file():
            raise Refused(f"{name} is missing (or not a regular file)")
    try:
        meta = yaml.safe_load(_read(d / "task.yaml", MAX_SMALL_FILE))
    except yaml.YAMLError as exc:
        raise Refused(f"task.yaml is not YAML: {str(exc)[:200]}") from None
    if not isinstance(meta, dict):
        raise Refused("task.yaml is not a mapping")
    row: dict[str, Any] = {k: v for k, v in meta.items() if isinstance(k, str)}
    try:
        tests = loads_strict(_read(d / "tests.json", MAX_TEXT).encode(), max_bytes=MAX_TEXT,
                             max_depth=3)  # fmt: skip
    except StrictJSONError as exc:
        raise Refused(f"tests.json is not JSON ({exc.code})") from None
    if not isinstance(tests, dict):
        raise Refused("tests.json is not an object")
    row["FAIL_TO_PASS"] = tests.get("FAIL_TO_PASS")
    row["PASS_TO_PASS"] = tests.get("PASS_TO_PASS", [])
    row["patch"] = _read(d / "gold.patch", MAX_TEXT)
    row["test_patch"] = _read(d / "test.patch", MAX_TEXT)
    row["problem_statement"] = _read(d / "problem_statement.md", MAX_TEXT)
    if (d / "eval.sh").is_file():
        row["eval_script"] = _read(d / "eval.sh", MAX_TEXT)
    if str(row.get("instance_id", d.name)) != d.name:
        raise Refused(f"task.yaml's instance_id is not the directory's name {d.name!r}")
    row.setdefault("instance_id", d.name)
    dockerfile = d / "Dockerfile"
    own = dockerfile.is_file() and not dockerfile.is_symlink()
    return instance_from_row(row, d if own else None)


def read_source(
    src: Path, only: frozenset[str] = frozenset()
) -> Iterator[tuple[str, Instance | Refused]]:
    """(where, instance or refusal) for each instance of `src`: a task repository (a directory
    with tasks/), one task directory (with task.yaml), or a rows file. Raises UsageError when
    `src` is none of them."""
    if src.is_dir():
        if (src / "task.yaml").is_file():
            dirs = [src]
        elif (src / "tasks").is_dir():
            dirs = sorted(p for p in (src / "tasks").iterdir() if (p / "task.yaml").is_file())
        else:
            raise UsageError(f"{src}: neither a SWE-bench task repository (tasks/) nor a task "
                             "directory (task.yaml)")  # fmt: skip
        for d in dirs:
            if only and d.name not in only:
                continue
            try:
                found: Instance | Refused = instance_from_task_dir(d)
            except Refused as exc:
                found = exc
            except Exception as exc:  # this instance's refusal, named; the import goes on
                found = Refused(unexpected(exc))
            yield str(d), found
        return
    if not src.is_file():
        raise UsageError(f"{src}: no such file or directory")
    for n, row in read_rows(src):
        where = f"{src}:{n}"
        if not isinstance(row, dict):
            yield where, Refused(str(row) if isinstance(row, Exception) else "row is not an object")
            continue
        if only and row.get("instance_id") not in only:
            continue
        try:
            made: Instance | Refused = instance_from_row(row)
        except Refused as exc:
            made = exc
        except Exception as exc:
            made = Refused(unexpected(exc))
        yield where, made


# ---------------------------------------------------------------------------------------------
# Converting
# ---------------------------------------------------------------------------------------------


def eval_facts(inst: Instance, runner: str | None) -> EvalScript:
    """How the image runs the tests: from the eval script when the instance has one, else from
    what swebench knows of the repository (or --runner)."""
    if inst.eval_script is not None:
        try:
            return parse_eval_script(inst.eval_script, WORKDIR)
        except EvalScriptRefused as exc:
            raise Refused(str(exc)) from None
    if inst.repo in NOT_JUNIT_REPOS:
        raise Refused(f"the instance's tests run with {NOT_JUNIT_REPOS[inst.repo]}, whose results "
                      "assay cannot read as JUnit (assay never grades from a log)")  # fmt: skip
    if inst.repo not in PYTEST_REPOS and runner != "pytest":
        raise Refused(f"the row has no eval_script and the test runner of {inst.repo!r} is not "
                      "known; give --runner pytest if its tests run under pytest")  # fmt: skip
    return EvalScript(SWEBENCH_ACTIVATION, WORKDIR, "pytest", "pytest")


def test_dirs_of(inst: Instance) -> list[str]:
    """What the submission may not change: the directory of every file the test patch touches
    and of every listed test (the file itself when it sits at the repository's root)."""
    try:
        patches = parse_patch(inst.test_patch.encode("utf-8", "surrogateescape"))
    except PatchError as exc:
        raise Refused(f"test_patch: {exc}") from None
    listed = (*inst.fail_to_pass, *inst.pass_to_pass)
    files = {fp.path for fp in patches} | {i.split("::", 1)[0] for i in listed}
    dirs: set[str] = set()
    for f in files:
        p = PurePosixPath(f)
        if p.is_absolute() or ".." in p.parts or not p.parts:
            raise Refused(f"test path {f[:120]!r} is not inside the repository")
        dirs.add(str(p.parent) if str(p.parent) != "." else str(p))
    kept = [d for d in sorted(dirs) if not any(d.startswith(o + "/") for o in dirs if o != d)]
    return kept


HISTORY_SCRIPT = "assay-history.sh"


def history_script(base: str) -> str:
    """The shell run at build time in the instance image: /testbed's .git replaced by a
    one-commit clone of its HEAD (over git's pack protocol, so no other object comes along),
    with no remote, tag or reflog; then checked, failing the build otherwise. HEAD must be
    `base` or a commit after it (SWE-bench 5's images commit their own set-up on top of
    base_commit); a repository with no .git is left as it is."""
    return f"""set -eu
cd {WORKDIR}
if [ ! -e .git ]; then exit 0; fi
head="$(git rev-parse HEAD)"
if [ "$head" != "{base}" ] && ! git merge-base --is-ancestor {base} "$head"; then
  echo "assay: {WORKDIR} is at $head, which is not base_commit {base} nor after it" >&2
  exit 1
fi
branch="$(git symbolic-ref -q --short HEAD || echo main)"
git branch -f assay-base-commit "$head"
rm -rf /tmp/assay-history
git -c protocol.file.allow=always clone -q --no-checkout --no-tags --depth 1 \\
  --single-branch --branch assay-base-commit file://{WORKDIR} /tmp/assay-history
cd /tmp/assay-history
git config core.logAllRefUpdates false
git remote remove origin
git branch -m assay-base-commit "$branch"
git reflog expire --expire=now --all
git gc -q --prune=now
rm -rf {WORKDIR}/.git
mv /tmp/assay-history/.git {WORKDIR}/.git
cd {WORKDIR}
rm -rf /tmp/assay-history
git reset -q
rm -rf .git/logs .git/ORIG_HEAD
test "$(git rev-parse HEAD)" = "$head"
test "$(git rev-list --all | wc -l)" = 1
test "$(git for-each-ref | wc -l)" = 1
test -z "$(git tag -l)"
test -z "$(git reflog --all)"
"""


def assay_layer(facts: EvalScript) -> str:
    """What assay adds at the end of the instance's Dockerfile."""
    act = facts.activation
    lines = [
        "",
        "# ---- added by `assay import swebench` ----",
        "# The environment eval.sh activates, as the image's own (assay's launcher runs python3",
        "# from PATH), and /testbed's history cut to base_commit (assay-history.sh).",
        "USER root",
    ]
    if act.prefix is not None and act.conda_root is not None:
        path = f"{act.prefix}/bin:{act.conda_root}/condabin:{act.conda_root}/bin:$PATH"
        lines.append(f'ENV PATH="{path}" CONDA_PREFIX="{act.prefix}" '
                     f'CONDA_DEFAULT_ENV="{act.env_name}" CONDA_SHLVL="1"')  # fmt: skip
    for name, value in act.exports:
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        lines.append(f'ENV {name}="{escaped}"')
    lines += [
        f"COPY {HISTORY_SCRIPT} /tmp/{HISTORY_SCRIPT}",
        f"RUN sh /tmp/{HISTORY_SCRIPT} && rm -f /tmp/{HISTORY_SCRIPT}",
        f"WORKDIR {WORKDIR}",
    ]
    return "\n".join(lines) + "\n"


def convert(inst: Instance, out: Path, has_image: HasImage, runner: str | None = None) -> Result:
    """Write `inst` as an assay task under `out`; raises Refused (nothing left behind)."""
    facts = eval_facts(inst, runner)
    test_dirs = test_dirs_of(inst)
    tid = task_id_of(inst.instance_id)
    result = Result(source="", instance_id=inst.instance_id, task_id=tid)
    notes = [f"not run: {line}" for line in facts.skipped]
    local = default_image(inst.instance_id)
    found = next((ref for ref in dict.fromkeys((inst.image, local)) if has_image(ref)), None)
    context: Path | None = None
    if found is not None:
        dockerfile = f"FROM {found}\n"
        result.image = found
    elif inst.dockerfile_dir is not None:
        dockerfile = _read(inst.dockerfile_dir / "Dockerfile", MAX_SMALL_FILE)
        if not dockerfile.endswith("\n"):
            dockerfile += "\n"
        context = inst.dockerfile_dir
        result.image = f"built from {inst.dockerfile_dir / 'Dockerfile'}"
        notes.append(f"{inst.image} is not on the engine: built from the task's Dockerfile")
    else:
        raise Refused(
            f"the image {inst.image} is not on the engine and the instance has no Dockerfile "
            "to build it from (assay never pulls: load or build it)"
        )
    dest = out / tid
    if dest.exists():
        raise Refused(f"{dest} already exists")
    tmp = out / f".{tid}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _write(tmp, inst, facts, test_dirs, dockerfile + assay_layer(facts), context)
        try:
            load_task(tmp)
        except AssayError as exc:
            raise Refused(f"the written task does not load: {exc}") from None
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result.out = dest
    result.notes = notes
    return result


def _write(
    root: Path, inst: Instance, facts: EvalScript, test_dirs: list[str], dockerfile: str,
    context: Path | None,
) -> None:  # fmt: skip
    for sub in ("inputs", "judge", "solutions", "environment"):
        (root / sub).mkdir(parents=True)
    if context is not None:
        for child in sorted(context.iterdir()):
            if child.name in _NOT_CONTEXT or child.name == "Dockerfile":
                continue
            if child.name in ("gold.patch", "test.patch") and child.name not in dockerfile:
                continue  # the answers go into a build context only when the Dockerfile names them
            if child.is_symlink():
                raise Refused(f"{child.name}: a symbolic link in the Dockerfile's context")
            if child.is_dir():
                shutil.copytree(child, root / "environment" / child.name, symlinks=True)
            elif child.is_file():
                shutil.copyfile(child, root / "environment" / child.name)
    if (root / "environment" / HISTORY_SCRIPT).exists():
        raise Refused(f"the Dockerfile's context already has a file {HISTORY_SCRIPT}")
    (root / "environment" / HISTORY_SCRIPT).write_text(history_script(inst.base_commit))
    (root / "environment" / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    (root / "inputs" / "ISSUE.md").write_text(inst.problem_statement, encoding="utf-8")
    (root / "judge" / "test.patch").write_bytes(inst.test_patch.encode("utf-8", "surrogateescape"))
    (root / "solutions" / "gold.patch").write_bytes(
        inst.gold_patch.encode("utf-8", "surrogateescape")
    )

    def ids(xs: tuple[str, ...] | list[str]) -> str:
        return "[" + ", ".join(toml_str(x) for x in xs) + "]"

    limits = "\n".join(f"{k} = {v}" for k, v in LIMITS.items())
    (root / "task.toml").write_text(
        f"# SWE-bench instance {inst.instance_id} ({inst.repo} at {inst.base_commit}), written by\n"
        f"# `assay import swebench`; its test command in eval.sh: {facts.test_command[:200]}\n"
        f"id = {toml_str(task_id_of(inst.instance_id))}\n"
        'kind = "pytest"\n'
        f"description = {toml_str(f'SWE-bench {inst.instance_id} ({inst.repo})')}\n"
        'artifacts = ["**"]\n\n'
        "[pytest]\n"
        'test_patch = "test.patch"\n'
        f"fail_to_pass = {ids(inst.fail_to_pass)}\n"
        f"pass_to_pass = {ids(inst.pass_to_pass)}\n"
        f"test_dirs = {ids(test_dirs)}\n\n"
        f"[limits]\n{limits}\n\n"
        "[environment]\n"
        'dockerfile = "environment/Dockerfile"\n'
        f'workdir = "{WORKDIR}"\n',
        encoding="utf-8",
    )


def import_swebench(
    src: Path, out: Path | None, has_image: HasImage, runner: str | None = None,
    only: frozenset[str] = frozenset(),
) -> list[Result]:  # fmt: skip
    """Convert every instance of `src` (see read_source); with `out` None, write nothing and
    only check. Raises UsageError when `src` cannot be read at all."""
    results: list[Result] = []
    seen: set[str] = set()
    scratch = None
    if out is None:
        import tempfile

        scratch = Path(tempfile.mkdtemp(prefix="assay-swebench-check-"))
    try:
        for where, item in read_source(src, only):
            if isinstance(item, Refused):
                results.append(Result(source=where, reason=str(item)))
                continue
            if item.instance_id in seen:
                results.append(Result(source=where, instance_id=item.instance_id,
                                      reason="instance listed twice"))  # fmt: skip
                continue
            seen.add(item.instance_id)
            try:
                r = convert(item, out if out is not None else scratch, has_image, runner)  # type: ignore[arg-type]
            except Refused as exc:
                results.append(Result(source=where, instance_id=item.instance_id, reason=str(exc)))
                continue
            except InfrastructureError:
                raise  # the engine, not this instance: no verdict on any (exit 3)
            except Exception as exc:  # this instance's refusal, named; the import goes on
                results.append(Result(source=where, instance_id=item.instance_id,
                                      reason=unexpected(exc)))  # fmt: skip
                continue
            r.source = where
            if out is None:
                r.out = None
            results.append(r)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return results


__all__ = [
    "Instance",
    "Refused",
    "Result",
    "default_image",
    "import_swebench",
    "runner_of",
]
