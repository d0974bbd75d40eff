"""What a repository task's image imports before its tests: asked of the image, not of a list.

A fresh, offline, limited container of the task's environment image (the pristine repository
at its workdir, no candidate) runs assay's probe (`_incontainer/compat/probe.py`) twice: with
the test run's own interpreter flags, environment and pytest start-up (up to collection), and as
a plain `python3` (what a subprocess of the tests starts with: the image's PYTHONPATH, user
site, `.pth` files). Its JSON reports cross the firewall and are parsed here strictly, with
caps: the image is the task author's, the probe is assay's, but the bytes still come out of a
container. `repo_imports` decides what they mean.

A probe that fails, times out or reports anything malformed is the task's error (exit 2): the
grading never goes on without knowing what the image imports.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path

from assay.errors import TaskError

from ...firewall.check import FirewallLimits
from ...model.strict_json import StrictJSONError, exact_fields, loads_strict, shown
from ...model.task import Task
from ...runtime import Bind, ContainerSpec, GradingScope, Scratch
from ..compat.prep import INCONTAINER_COMPAT, PREP_LIMITS, PYTEST_ENV
from ..core.intake import Crossing, Refused, take_from_container

REPORT_BYTES = 16 << 20
MAX_ENTRIES = 1_000
MAX_NAMES = 200_000
MAX_MODULES = 50_000
MAX_TEXT = 4_096
MODES = ("isolated", "plain")
_FIELDS = frozenset(
    {
        "mode",
        "workdir_real",
        "entries",
        "pth_paths",
        "modules",
        "opened",
        "attempted",
        "stdlib",
        "builtin",
    }
)


class ProbeError(ValueError):
    """The probe's report is malformed or over a cap."""


@dataclass(frozen=True)
class PathEntry:
    path: str
    real: str
    names: frozenset[str]
    """Top-level module and package names found directly in the entry."""


@dataclass(frozen=True)
class ProbeRun:
    mode: str
    workdir_real: str
    entries: tuple[PathEntry, ...]
    pth_paths: tuple[str, ...]
    """Directories `.pth` files name, also ones `site` skipped because they did not exist."""
    modules: tuple[tuple[str, str | None], ...]
    """Every module loaded by the time the tests would be collected, with its file."""
    opened: tuple[str, ...]
    """Every file opened by then (imported, or run by a `.pth` line)."""
    attempted: frozenset[str]
    """Every top-level name something tried to import, found or not."""
    stdlib: frozenset[str]
    builtin: frozenset[str]


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT or "\x00" in value:
        raise ProbeError(f"{where}: not a string of at most {MAX_TEXT} characters")
    return value


def _abs(value: object, where: str) -> str:
    text = _text(value, where)
    if not text.startswith("/"):
        raise ProbeError(f"{where}: {shown(text)} is not an absolute path")
    return posixpath.normpath(text)


def _list(value: object, where: str, cap: int) -> list[object]:
    if not isinstance(value, list) or len(value) > cap:
        raise ProbeError(f"{where}: not a list of at most {cap} items")
    return value


def _names(value: object, where: str) -> frozenset[str]:
    names = frozenset(_text(v, where) for v in _list(value, where, MAX_NAMES))
    if bad := [n for n in names if not n.isidentifier()]:
        raise ProbeError(f"{where}: {shown(bad[0])} is not a module name")
    return names


def _entry(value: object, where: str) -> PathEntry:
    items = _list(value, where, 3)
    if len(items) != 3:
        raise ProbeError(f"{where}: an entry is [path, real path, names]")
    path = _text(items[0], where)
    # "" is the working directory, which the probe ran in and the tests run in: /tmp.
    return PathEntry(_abs(path or "/tmp", where), _abs(items[1], where), _names(items[2], where))


def _module(value: object, where: str) -> tuple[str, str | None]:
    items = _list(value, where, 2)
    if len(items) != 2:
        raise ProbeError(f"{where}: a module is [name, file]")
    file = None if items[1] is None else _text(items[1], where)
    return _text(items[0], where), file


def parse_probe(raw: bytes, mode: str) -> ProbeRun:
    """The probe's report for `mode`; ProbeError for anything but exactly its shape."""
    try:
        doc = exact_fields(loads_strict(raw, max_bytes=REPORT_BYTES, max_depth=4), _FIELDS, "probe")
    except StrictJSONError as exc:
        raise ProbeError(str(exc)) from None
    if doc["mode"] != mode:
        raise ProbeError(f"a report of mode {shown(str(doc['mode']))}, not {mode}")
    entries = _list(doc["entries"], "entries", MAX_ENTRIES)
    modules = _list(doc["modules"], "modules", MAX_MODULES)
    return ProbeRun(
        mode=mode,
        workdir_real=_abs(doc["workdir_real"], "workdir_real"),
        entries=tuple(_entry(e, "entries") for e in entries),
        pth_paths=tuple(
            _abs(p, "pth_paths") for p in _list(doc["pth_paths"], "pth_paths", MAX_NAMES)
        ),
        modules=tuple(_module(m, "modules") for m in modules),
        opened=tuple(_abs(p, "opened") for p in _list(doc["opened"], "opened", MAX_NAMES)),
        attempted=_names(doc["attempted"], "attempted"),
        stdlib=_names(doc["stdlib"], "stdlib"),
        builtin=_names(doc["builtin"], "builtin"),
    )


def run_probe(scope: GradingScope, task: Task, image: str) -> tuple[ProbeRun, ...]:
    """Both runs of the probe in one fresh container of the task's image. TaskError if the
    image cannot answer."""
    toml = str(task.root / "task.toml")
    workdir = task.workdir
    rt = scope.runtime
    cid = scope.container(
        ContainerSpec(
            image=image, grading_id=scope.grading_id, role="repository",
            binds=(Bind(INCONTAINER_COMPAT, "/assay/compat"),),
            scratch=(Scratch("/out", REPORT_BYTES * 2 + (1 << 20)),),
            limits=PREP_LIMITS, workdir="/tmp",
        )
    )  # fmt: skip
    # The test run's environment: a subprocess of the tests inherits it too.
    env = {**PYTEST_ENV, "ASSAY_CANDIDATE_DIR": workdir}
    deadline = float(task.config.limits.total_timeout)
    for mode in MODES:
        flags = ("-I", "-S") if mode == "isolated" else ("-S",)
        argv = ("python3", *flags, "/assay/compat/probe.py", mode, workdir, f"/out/{mode}.json")
        res = rt.exec(cid, argv, deadline_s=deadline, output_cap=1 << 20, env=env, workdir="/tmp")
        if res.exit_code != 0:
            tail = res.stderr[-2000:].decode(errors="replace")
            why = "timed out" if res.timed_out else f"exited {res.exit_code}"
            raise TaskError(toml, f"the import probe ({mode}) {why} in the task's image: {tail}")
    rt.pause(cid)
    limits = FirewallLimits(max_total_bytes=REPORT_BYTES * 2, max_file_bytes=REPORT_BYTES)
    names = [f"{m}.json" for m in MODES]
    how = Crossing(limits, names, "out", "probe", "judge-firewall")
    taken = take_from_container(scope, cid, "/out", REPORT_BYTES * 4, how)
    scope.discard(cid)
    if isinstance(taken, Refused):
        raise TaskError(toml, f"the import probe's report was refused: {taken.reason}")
    runs = []
    for mode in MODES:
        try:
            runs.append(parse_probe(_read(taken.files / f"{mode}.json"), mode))
        except (OSError, ProbeError) as exc:
            raise TaskError(toml, f"the import probe's {mode} report: {exc}") from None
    return tuple(runs)


def _read(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(REPORT_BYTES + 1)
