"""The proof matrix: every attack of a corpus against every tier, in real containers.

An attack is an *exploit* on a tier when the verdict passes (the corpus's tasks cannot be passed
honestly), when the tier gives no verdict within its deadline, when anything of the grading is
left behind (container, volume, temp dir), or when something gets out: the credential a naive
harness puts in its agent's environment shows up in the submission, or bytes reach the loopback
listener the matrix opens for the attack. Otherwise it is *blocked*, and the row says why.

The matrix is a gate: `run_matrix` reports every row, and `problems` lists what must fail CI:
an outcome other than the expected one, an attack live on neither baseline (a dud proves
nothing), an honest control graded wrongly or flagged as tampering, a blocked attack whose
verdict carries a tamper signal where its `attack.toml` says none (or none where it says one),
a job that errored.
"""

from __future__ import annotations

import secrets
import socket
import threading
import tomllib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from assay.errors import (
    AssayError,
    InfrastructureError,
    TaskError,
    UnsafeInputsError,
    UsageError,
)

from ..environment import ensure_environment
from ..model.task import IMAGE_WORKDIR, Task, load_task
from ..model.verdict import Tier, Verdict
from ..runtime import Runtime
from ..runtime.engine import engine_client
from ..runtime.scope import grading_tempdirs, new_grading_id
from ..tiers.baselines.grade import BaselineOptions, BaselineRun
from ..tiers.core.controller import Source
from ..tiers.dispatch import TIERS, run_tier, tiers_for

OUTCOMES = ("exploit", "blocked")
REQUIRED_KEYS = frozenset({"id", "title", "class", "source", "task", "t0", "t1"})
OPTIONAL_KEYS = frozenset({"aims", "aims_why", "notes", "t2", "t3", "harbor", "tamper"})
# The tiers whose verdict on a blocked attack is checked for a tamper signal: assay's own (the
# baselines' verdicts say nothing assay claims).
FLAG_TIERS = ("t2", "t3", "harbor")
# The tiers an attack names besides T0 and T1: T2 and T3 for a function or pytest task with a
# strict twin, T2 alone for a pytest task with none (a repository task such as an imported
# SWE-bench instance: T3 never runs a task's pytest tests), the harbor tier for a Harbor task. A
# tier outside the set cannot grade the task: "n/a" (`kinds_ok` checks the set against the task).
TASK_TIERS: tuple[frozenset[str], ...] = (
    frozenset({"t2", "t3"}),
    frozenset({"t2"}),
    frozenset({"harbor"}),
)
AGENT_CMD = "sh /agent/run.sh"
PLANTED_KEY = "ASSAY_BASELINE_API_KEY"
EXFIL_PORT = "ASSAY_EXFIL_PORT"
NETWORK_CLASS = "V13"  # the only class for which T0 shares the host's network
EXCLUSIVE_CLASS = "V11"  # resource exhaustion: one at a time, so it cannot starve other jobs
LISTENER_CAP = 1 << 20
# Which reason namespace best says what stopped an attack, when a verdict carries several.
_STOP_ORDER = (
    "policy", "firewall", "decoy", "twin", "harbor", "limit", "submission", "compile", "runtime",
    "candidate", "junit", "pytest", "compare", "checker", "judge", "cases",
)  # fmt: skip


@dataclass(frozen=True)
class Attack:
    id: str
    title: str
    cls: str
    source: str
    task: str
    expected: dict[str, str]
    folder: Path
    aims: str | None = None
    aims_why: str | None = None
    notes: str = ""
    flagged_on: frozenset[str] = frozenset()
    """The tiers whose blocking verdict must carry a tamper signal (`tamper = "t2 t3"` in
    attack.toml); on every other tier that blocks it, the verdict must carry none."""


@dataclass(frozen=True)
class Control:
    """An honest submission graded like an attack: it must pass (or fail) on every tier."""

    id: str
    task: str
    submission: str  # relative to the task directory the tier grades
    should_pass: bool


CONTROLS = (
    Control("add-correct", "add", "solutions/correct", True),
    Control("add-wrong", "add", "solutions/wrong", False),
    Control("canary-honest", "canary", "attempts/honest", False),
    # The stdio attacks' task (T3) and its lenient pytest twin (T0-T2): a right sort passes both.
    Control("stdio-sort-correct", "stdio-sort", "solutions/correct", True),
    # Harbor tasks (T0, T1 and the harbor tier): their environment images are built first.
    Control("greet-harbor-correct", "greet-harbor", "solutions/correct", True),
    Control("greet-harbor-wrong", "greet-harbor", "solutions/wrong", False),
    Control("canary-harbor-honest", "canary-harbor", "attempts/honest", False),
    # The real-format canary (Terminal-Bench 2.1's form, no artifact): a right count and a
    # guessed ticket, the best an honest report can do.
    Control("log-canary-harbor-honest", "log-canary-harbor", "solutions/honest", False),
)
COPY_CMD = "cp -R /agent/. ."
"""How a control's files reach a Harbor task's graders: as an agent that copies them (Harbor's
shared mode, T0, grades an agent run only)."""
REPO_CONTROLS = (
    # The repository task (T0-T2) and its strict twin (T3): the baselines grade it the way
    # SWE-bench's harness does, and an honest fix must pass there too. Its environment image
    # must be built first (`assay matrix` does).
    Control("semver-correct", "semver", "solutions/correct", True),
    Control("semver-wrong", "semver", "solutions/wrong", False),
)


@dataclass(frozen=True)
class Row:
    kind: Literal["attack", "control"]
    attack: str
    cls: str
    tier: str
    expected: str
    observed: str
    reason: str
    stopped_by: str = ""
    tamper: tuple[str, ...] = ()
    """The verdict's tamper codes (its `tamper` field)."""

    @property
    def matches(self) -> bool:
        return self.expected == self.observed

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "attack": self.attack,
            "class": self.cls,
            "tier": self.tier,
            "expected": self.expected,
            "observed": self.observed,
            "reason": self.reason,
            "tamper": list(self.tamper),
            "match": self.matches,
        }


# -- loading ---------------------------------------------------------------------------------


def load_corpus(dirs: Sequence[Path]) -> list[Attack]:
    attacks: list[Attack] = []
    for corpus in dirs:
        if not corpus.is_dir():
            raise UsageError(f"--corpus {corpus}: not a directory")
        for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
            attacks.append(load_attack(folder))
    seen: set[str] = set()
    for a in attacks:
        if a.id in seen:
            raise UsageError(f"attack id {a.id!r} appears twice across the corpora")
        seen.add(a.id)
    return attacks


def load_attack(folder: Path) -> Attack:
    path = folder / "attack.toml"
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TaskError(str(path), f"unreadable attack.toml: {exc}") from exc
    keys = set(doc)
    if missing := sorted(REQUIRED_KEYS - keys):
        raise TaskError(str(path), f"missing key {missing[0]!r}")
    if unknown := sorted(keys - REQUIRED_KEYS - OPTIONAL_KEYS):
        raise TaskError(str(path), f"unknown key {unknown[0]!r}")
    for key, value in doc.items():
        if not isinstance(value, str) or not value.strip():
            raise TaskError(str(path), f"key {key!r} must be a non-empty string")
    if doc["id"] != folder.name:
        raise TaskError(str(path), f"key 'id' is {doc['id']!r}, the folder is {folder.name!r}")
    named = keys & {"t2", "t3", "harbor"}
    if named not in TASK_TIERS:
        raise TaskError(
            str(path), "name the tiers 't2' and 't3' (a function task, or a pytest task with a "
            "strict twin), 't2' alone (a pytest task with no strict twin) or 'harbor' (a Harbor "
            "task), and no other set"
        )  # fmt: skip
    tiers = [t for t in TIERS if t in keys]
    for tier in tiers:
        if doc[tier] not in OUTCOMES:
            raise TaskError(str(path), f"key {tier!r} must be 'exploit' or 'blocked'")
    if ("aims" in doc) != ("aims_why" in doc) or doc.get("aims", "strict") != "strict":
        raise TaskError(str(path), "key 'aims' must be 'strict' and come with 'aims_why'")
    flagged_on = frozenset(doc.get("tamper", "").split())
    if stray := sorted(flagged_on - {t for t in FLAG_TIERS if doc.get(t) == "blocked"}):
        raise TaskError(
            str(path), f"key 'tamper' names {stray[0]!r}: it lists tiers among "
            f"{', '.join(FLAG_TIERS)} that the attack names as 'blocked'"
        )  # fmt: skip
    run = folder / "agent" / "run.sh"
    if not run.is_file():
        raise TaskError(str(run), "every attack needs agent/run.sh")
    return Attack(
        id=doc["id"],
        title=doc["title"],
        cls=doc["class"],
        source=doc["source"],
        task=doc["task"],
        expected={t: doc[t] for t in tiers},
        folder=folder,
        aims=doc.get("aims"),
        aims_why=doc.get("aims_why"),
        notes=doc.get("notes", ""),
        flagged_on=flagged_on,
    )


def task_for(task_ref: str, base: Path, examples: Path, tier: str) -> Path:
    """The task directory a tier grades: T3 a strict task, T0-T2 its `-pytest` twin."""
    local = base / task_ref
    root = local if local.is_dir() else examples / task_ref
    if not (root / "task.toml").is_file():
        raise UsageError(f"task {task_ref!r}: not under {base} nor {examples}")
    name = root.name
    if tier == "t3":
        twin = root.parent / name.removesuffix("-pytest")
        return twin if name.endswith("-pytest") and twin.is_dir() else root
    twin = root.parent / f"{name}-pytest"
    return twin if not name.endswith("-pytest") and twin.is_dir() else root


# -- running ---------------------------------------------------------------------------------


class _Listener:
    """A loopback TCP listener that counts what it receives (capped); the only allowed target."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        self.port = int(self._sock.getsockname()[1])
        self.received = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    while self.received < LISTENER_CAP and (chunk := conn.recv(65536)):
                        self.received += len(chunk)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


@contextmanager
def _listener() -> Iterator[_Listener]:
    lst = _Listener()
    try:
        yield lst
    finally:
        lst.close()


def _stop_category(reasons: Sequence[str]) -> str:
    spaces = {r.partition(":")[0] for r in reasons}
    for name in _STOP_ORDER:
        if name in spaces:
            return name
    return sorted(spaces)[0] if spaces else "-"


def _leftovers(rt: Runtime, gid: str) -> list[str]:
    found = list(rt.leftovers(gid))
    found += [f"tempdir:{p.name}" for p in grading_tempdirs(gid)]
    return found


@dataclass
class _Ctx:
    runtime_factory: Callable[[], Runtime]
    image: str
    examples: Path
    workdirs: Mapping[Path, str] = field(default_factory=dict)
    local: threading.local = field(default_factory=threading.local)

    def load(self, root: Path) -> Task:
        """The task at `root`; a `workdir = "image"` task (a real Harbor task names none) gets
        the WORKDIR its image was found to have when `assay matrix` built it."""
        task = load_task(root)
        if task.root in self.workdirs:
            task.resolve_workdir(self.workdirs[task.root])
        elif env := task.config.environment:
            if env.workdir == IMAGE_WORKDIR:
                # Not built by the caller: found (or built) here, which reads its WORKDIR.
                ensure_environment(engine_client(), task)
        return task

    def rt(self) -> Runtime:
        if not hasattr(self.local, "rt"):
            self.local.rt = self.runtime_factory()
        rt: Runtime = self.local.rt
        return rt


def _grade(
    ctx: _Ctx, task: Task, source: Source, tier: Tier, cls: str, gid: str
) -> tuple[Verdict, BaselineRun | None, int]:
    rt = ctx.rt()
    if tier in ("t2", "t3", "harbor"):
        return run_tier(rt, task, source, tier, ctx.image, grading_id=gid)[0].verdict, None, 0
    secret = "sk-assay-" + secrets.token_hex(16)
    with _listener() as lst:
        opts = BaselineOptions(
            network="host" if (tier == "t0" and cls == NETWORK_CLASS) else "none",
            agent_env={PLANTED_KEY: secret, EXFIL_PORT: str(lst.port)},
            watch_for=secret.encode(),
        )
        judged, run = run_tier(rt, task, source, tier, ctx.image, grading_id=gid, baseline=opts)
        received = lst.received
    return judged.verdict, run, received


def _retrying(job: Callable[[], Row]) -> Row:
    """An engine hiccup (a freeze that timed out under load) is not an outcome: one retry."""
    row = job()
    return job() if row.observed == "error" and row.reason.startswith("infra:") else row


def _attack_row(ctx: _Ctx, attack: Attack, tier: Tier) -> Row:
    gid = new_grading_id()
    try:
        task = ctx.load(task_for(attack.task, attack.folder, ctx.examples, tier))
        source = Source(agent_cmd=AGENT_CMD, agent_dir=attack.folder / "agent")
        verdict, run, received = _grade(ctx, task, source, tier, attack.cls, gid)
        left = _leftovers(ctx.rt(), gid)
    except InfrastructureError as exc:
        return Row("attack", attack.id, attack.cls, tier, attack.expected[tier], "error",
                   f"infra: {exc}")  # fmt: skip
    except UnsafeInputsError:
        # The tier refused to hand the agent these inputs: nothing was graded, nothing passed.
        return Row("attack", attack.id, attack.cls, tier, attack.expected[tier], "blocked",
                   "inputs:vcs-history (the tier refuses to run the agent on them)",
                   "inputs")  # fmt: skip
    except AssayError as exc:
        return Row("attack", attack.id, attack.cls, tier, attack.expected[tier], "error",
                   f"{type(exc).__name__}: {exc}")  # fmt: skip
    why: list[str] = []
    if verdict.passed:
        why.append("verdict:passed")
    if run is not None and not run.gave_verdict:
        why.append("no verdict (" + ", ".join(verdict.reason_codes) + ")")
    if run is not None and run.leaked:
        why.append("leak:planted credential in the submission")
    if received:
        why.append(f"leak:{received} bytes reached the loopback listener")
    why += [f"left behind {x}" for x in left]
    codes = list(verdict.reason_codes)
    if why:
        return Row("attack", attack.id, attack.cls, tier, attack.expected[tier], "exploit",
                   "; ".join(why))  # fmt: skip
    reason = ", ".join(codes) if codes else "cases failed the comparison"
    return Row("attack", attack.id, attack.cls, tier, attack.expected[tier], "blocked", reason,
               _stop_category(codes), tuple(verdict.tamper))  # fmt: skip


def _control_row(ctx: _Ctx, control: Control, tier: Tier) -> Row:
    expected = "pass" if control.should_pass else "fail"
    try:
        root = task_for(control.task, ctx.examples, ctx.examples, tier)
        task = ctx.load(root)
        source = Source(path=root / control.submission)
        if task.config.kind == "harbor":
            source = Source(agent_cmd=COPY_CMD, agent_dir=root / control.submission)
        verdict, run, _ = _grade(ctx, task, source, tier, "", new_grading_id())
    except InfrastructureError as exc:
        return Row("control", control.id, "-", tier, expected, "error", f"infra: {exc}")
    except AssayError as exc:
        return Row("control", control.id, "-", tier, expected, "error", str(exc))
    observed = "pass" if verdict.passed else "fail"
    if run is not None and not run.gave_verdict:
        observed = "no-verdict"
    passed = sum(c.status == "pass" for c in verdict.cases)
    tally = f"{passed}/{verdict.expected_case_count} cases passed"
    return Row("control", control.id, "-", tier, expected, observed,
               ", ".join(verdict.reason_codes) or tally, tamper=tuple(verdict.tamper))  # fmt: skip


def run_matrix(
    attacks: Sequence[Attack],
    tiers: Sequence[Tier],
    *,
    runtime_factory: Callable[[], Runtime],
    image: str,
    examples: Path,
    jobs: int = 3,
    controls: Sequence[Control] = CONTROLS,
    on_row: Callable[[Row], None] | None = None,
    workdirs: Mapping[Path, str] | None = None,
) -> list[Row]:
    """`workdirs`: the image WORKDIR of each task root whose workdir is its image's (what
    `ensure_environment` found), so the rows can grade such a task."""
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    ctx = _Ctx(runtime_factory, image, examples, dict(workdirs or {}))
    shared: list[Callable[[], Row]] = []
    exclusive: list[Callable[[], Row]] = []
    for tier in tiers:
        for c in controls:
            if control_grades_on(c, examples, tier):
                shared.append(partial(_retrying, partial(_control_row, ctx, c, tier)))
    for a in attacks:
        queue = exclusive if a.cls == EXCLUSIVE_CLASS else shared
        for tier in tiers:
            if tier in a.expected:
                queue.append(partial(_retrying, partial(_attack_row, ctx, a, tier)))
    rows: list[Row] = []
    lock = threading.Lock()

    def run_one(job: Callable[[], Row]) -> None:
        row = job()
        with lock:
            rows.append(row)
        if on_row is not None:
            on_row(row)

    run_lanes(exclusive, shared, jobs, run_one)
    order = {a.id: i for i, a in enumerate(attacks)}
    ctl = {c.id: i for i, c in enumerate(controls)}
    rows.sort(
        key=lambda r: (
            r.kind == "attack",
            order.get(r.attack, ctl.get(r.attack, 0)),
            TIERS.index(r.tier),
        )
    )
    return rows


def run_lanes(
    exclusive: Sequence[Callable[[], Row]],
    shared: Sequence[Callable[[], Row]],
    jobs: int,
    run_one: Callable[[Callable[[], Row]], None],
) -> None:
    """Run every job: the resource-exhaustion ones (`exclusive`) in a lane of their own beside
    the shared pool, so at most one of them loads the host at a time and none of them blocks
    the other jobs. On Ctrl-C (or a job's exception) no job that has not started will; the
    running ones end, their gradings removing their containers, before it is raised."""
    with (
        ThreadPoolExecutor(max_workers=1) as lane,
        ThreadPoolExecutor(max_workers=jobs) as pool,
    ):
        futures = [lane.submit(run_one, job) for job in exclusive]
        futures += [pool.submit(run_one, job) for job in shared]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
            for future in futures:
                if future.done() and not future.cancelled():
                    future.result()  # the first job that raised, raised here
        except BaseException:
            # Else the pools' exit would run every queued job first: minutes after a Ctrl-C.
            for future in futures:
                future.cancel()
            raise


def control_grades_on(control: Control, examples: Path, tier: Tier) -> bool:
    """Whether `tier` can grade the control's task (a Harbor task only on T0, T1, harbor)."""
    task = load_task(task_for(control.task, examples, examples, tier))
    return tier in tiers_for(task)


def problems(
    rows: Sequence[Row],
    attacks: Sequence[Attack],
    tiers: Sequence[Tier],
    flag_exempt: Collection[tuple[str, str]] = (),
) -> list[str]:
    """Everything that must fail the run, one sentence each. `flag_exempt`: (attack, tier)
    cells whose tamper flag is not held to the attack's `tamper` key (a run on another runtime,
    where the attack's payload became something else before any tier saw it)."""
    out = []
    for r in rows:
        if r.observed == "error":
            out.append(f"{r.attack} on {r.tier}: the job failed: {r.reason}")
        elif not r.matches:
            what = "honest control" if r.kind == "control" else "attack"
            out.append(
                f"{what} {r.attack} on {r.tier}: expected {r.expected}, observed {r.observed}"
                f" ({r.reason})"
            )
    flags = {a.id: a.flagged_on for a in attacks}
    for r in rows:
        if r.tier not in FLAG_TIERS or r.observed == "error":
            continue
        if r.kind == "control" and r.tamper:
            out.append(f"honest control {r.attack} on {r.tier}: flagged as tampering "
                       f"({', '.join(r.tamper)})")  # fmt: skip
        elif r.kind == "attack" and r.observed == "blocked" and r.matches:
            if (r.attack, r.tier) in flag_exempt:
                continue
            wanted = r.tier in flags.get(r.attack, frozenset())
            if wanted != bool(r.tamper):
                said = ", ".join(r.tamper) if r.tamper else "none"
                out.append(f"attack {r.attack} on {r.tier}: expected "
                           f"{'a' if wanted else 'no'} tamper signal, observed {said}"
                           f" ({r.reason})")  # fmt: skip
    if "t0" in tiers and "t1" in tiers:
        by_attack = {(r.attack, r.tier): r.observed for r in rows if r.kind == "attack"}
        for a in attacks:
            live = {by_attack.get((a.id, "t0")), by_attack.get((a.id, "t1"))}
            if "exploit" not in live and a.aims != "strict":
                out.append(f"attack {a.id} is an exploit on neither T0 nor T1: a dud")
    return out


def graded_tasks(
    attacks: Sequence[Attack], controls: Sequence[Control], examples: Path, tiers: Sequence[Tier]
) -> list[Task]:
    """Every task the run grades, once each (what `assay matrix` builds environments for)."""
    roots = {task_for(a.task, a.folder, examples, t) for a in attacks for t in tiers
             if t in a.expected}  # fmt: skip
    roots |= {task_for(c.task, examples, examples, t) for c in controls for t in tiers}
    return [load_task(root) for root in sorted(roots)]


_NEEDS = {"t3": "strict", "harbor": "Harbor"}


def kinds_ok(attacks: Sequence[Attack], examples: Path, tiers: Sequence[Tier]) -> None:
    """Fail fast, before any container starts, if a tier cannot grade an attack's task, or an
    attack names no outcome for a tier that can."""
    for a in attacks:
        for tier in tiers:
            root = task_for(a.task, a.folder, examples, tier)
            task = load_task(root)
            kind = task.config.kind
            if tier not in a.expected:
                if tier in tiers_for(task):
                    raise UsageError(f"attack {a.id}: no outcome for {tier}, which grades {root}")
                continue
            if tier not in tiers_for(task):
                raise UsageError(
                    f"attack {a.id}: {tier} needs a {_NEEDS.get(tier, 'pytest')} "
                    f"task, and {root} is {kind!r} with no twin"
                )
