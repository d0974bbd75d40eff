"""The strict tier (T3): agent, candidate and judge in three containers; the controller between.

Data flow, each arrow a boundary the controller polices:
  judge(prepare) --inputs--> controller --inputs--> candidate(runner) --output bytes-->
  controller --bytes--> judge(compare) --report--> controller (schema-checked verdict)
The candidate never holds an expected value; the judge never runs candidate code.
"""

from __future__ import annotations

import io
import json
import secrets
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...firewall.check import FirewallLimits
from ...firewall.materialise import read_materialised
from ...model.diagnostics import CaseDiagnostic, Diagnostics, Judged
from ...model.strict_json import StrictJSONError, loads_strict
from ...model.task import Task
from ...runtime import ExecResult, GradingScope, Runtime, RuntimeError_
from ...runtime.scope import new_grading_id
from ..core import decoyfiles, decoys
from ..core.controller import Grading, Source
from ..core.intake import PAGE_BYTES, Crossing, Refused, through_firewall, tmpfs_bytes
from ..core.overlap import Background
from .candidate import (
    STOPPED_PROBE_S,
    candidate_spec,
    run_candidate,
    runner_argv,
    runner_deadline,
    write_cases,
)
from .fixedcases import INPUTS
from .judge_report import INVALID_OUTPUT, verdict_from_judge
from .judgepool import Resident
from .judgespec import EXCHANGE_BYTES, HANDOFF, judge_spec
from .program import NotBuilt, Program, build_program, judge_image_of
from .runner_report import UnreadableReport, b64_bytes, grading_report_cap, ok_outputs

if TYPE_CHECKING:
    from .judgepool import JudgePool

MAX_INPUTS_BYTES = 16 << 20
MAX_REPORT_BYTES = 8 << 20


def compare_argv(task: Task, runner_output: str = "/exchange/runner.json") -> tuple[str, ...]:
    j = task.config.judge
    assert j is not None
    st = task.config.stdio
    rel, abs_ = st.tolerances if st is not None else j.tolerances  # `numbers` or `float`
    argv = [
        "python3", "-I", "/assay/judge.py", "compare", "--kind", task.config.kind,
        "--comparator", j.comparator, "--rel-tol", repr(rel), "--abs-tol", repr(abs_),
        "--output-cap", str(task.config.limits.output_bytes),
        "--runner-output", runner_output, "--diagnostics", j.diagnostics,
    ]  # fmt: skip
    if j.custom:
        argv += ["--custom", j.custom]
    if st is not None:
        argv += ["--checker", st.checker]
        if st.checker_program:
            argv += ["--checker-program", st.checker_program]
    if j.cases:  # expected values read from the task's file, not from prepare's /state
        argv += ["--cases", j.cases] + (
            ["--custom-file"] if task.config.has_program_checker else []
        )
    return tuple(argv)


def prepare_argv(task: Task, seed: str) -> tuple[str, ...]:
    j = task.config.judge
    assert j is not None
    src = ["--cases", j.cases] if j.cases else ["--generator", str(j.generator)]
    if task.config.has_program_checker:
        src.append("--custom-file")
    return ("python3", "-I", "/assay/judge.py", "prepare", "--seed", seed,
            "--kind", task.config.kind, *src)  # fmt: skip


OUTPUTS_TOO_LARGE = "limit:outputs-total"


def transform_outputs(
    scope: GradingScope, runner_out: bytes, cases: list[dict[str, Any]], cap: int
) -> bytes | Refused:
    """Each case's output archive through the firewall on its own (the candidate -> judge
    boundary), then one archive of `output/<index>/...` for the judge. A runner report the
    controller cannot read yields no outputs: the judge then fails every case on it. Outputs
    that together would not fit the judge's /exchange fail the grading (`OUTPUTS_TOO_LARGE`)
    before any of them is sent: the engine refusing the upload would be no verdict at all."""
    by_id = ok_outputs(runner_out)
    if by_id is None:
        return single_dir_tar("output")
    index = {case["id"]: i for i, case in enumerate(cases)}
    used = PAGE_BYTES  # output/ itself
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as combined:
        add_dir(combined, "output")
        for case_id, encoded in by_id.items():
            if case_id not in index:
                continue
            try:
                raw = b64_bytes(encoded, "output_b64")
            except UnreadableReport:
                return Refused("output-firewall:bad-encoding", str(case_id)[:64], "not base64")
            how = Crossing(
                FirewallLimits(max_total_bytes=cap), None, None, "output", "output-firewall"
            )
            out = through_firewall(scope, io.BytesIO(raw), how)
            if isinstance(out, Refused):
                return out
            used += tmpfs_bytes(out.accepted.manifest) + PAGE_BYTES  # and output/<index>
            if used > EXCHANGE_BYTES:
                return Refused(
                    OUTPUTS_TOO_LARGE, str(case_id)[:64],
                    f"the outputs need more than the judge's {EXCHANGE_BYTES >> 20} MiB "
                    f"(a {PAGE_BYTES}-byte page per file and directory at least)",
                )  # fmt: skip
            prefix = f"output/{index[case_id]}"
            add_dir(combined, prefix)
            for entry in out.accepted.manifest:
                if entry.kind == "dir":
                    add_dir(combined, f"{prefix}/{entry.path}")
                else:
                    data = read_materialised(out.files, entry.path)
                    info = tarfile.TarInfo(f"{prefix}/{entry.path}")
                    info.size, info.mode = len(data), 0o644
                    combined.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def add_dir(tf: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    tf.addfile(info)


def single_dir_tar(name: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        add_dir(tf, name)
    return buf.getvalue()


def grade_strict(
    rt: Runtime,
    task: Task,
    source: Source,
    image: str,
    grading_id: str | None = None,
    judges: JudgePool | None = None,
) -> Judged:
    """The verdict with the judge's explanation of the failed cases. `judges`: borrow a reset
    judge from this pool instead of starting a fresh one (batch grading only;
    docs/security.md). The caller must call `judges.finish(gid)` afterwards. Either way the
    judge is resident: its `prepare` and `compare` are requests to the worker it runs
    (`judgepool.Resident`)."""
    g = Grading(rt, task, "t3", image, gid=grading_id or new_grading_id())
    lim = task.config.limits
    reasons: list[str] = []
    owned: list[Resident] = []  # a judge this grading started: its pipes closed at the end

    with g.scope() as scope, _closing(owned):
        inputs = scope.tempdir("inputs")
        inputs.chmod(0o755)
        seed = str(secrets.randbits(128))
        # Decoy answer keys (docs/tamper.md): a marker of this grading's alone, bait the
        # candidate finds where naive harnesses keep their answers; its output is scanned here.
        marker = decoys.new_marker() if task.config.decoys.enabled else None
        bait = None
        if marker is not None:  # in the inputs' directory: a temp dir of its own costs more
            bait = inputs / "tests"
            bait.mkdir()
        caught: list[str] = []  # `decoy:output`: in the agent's submission or the run's output

        # A fixed cases file's inputs are made by the controller: the judge then runs no
        # prepare (fixedcases.py); a generator runs in the judge with this grading's seed.
        fixed = INPUTS.inputs(task)

        # A testlib checker given as C++ is compiled by the judge, which then needs g++.
        judge_image = judge_image_of(rt, task, image)

        def start_judge() -> tuple[str, ExecResult | None, tuple[Resident, Path] | None]:
            """(the judge's container, prepare's result, and the judge and its handoff when
            this grading owns it)."""
            with g.timed("judge_prepare"):
                argv = None if fixed is not None else prepare_argv(task, seed)
                if judges is not None and judges.reusable(task):
                    lent = judges.acquire(
                        task, judge_image, g.gid, argv, lim.total_timeout, MAX_INPUTS_BYTES
                    )
                    g.used("judge", judge_image)  # the pool created it, not this grading's scope
                    if lent.reused:
                        reasons.append("note:judge-reused")
                    return lent.cid, lent.prepare, None
                # A judge of this grading alone: a worker all the same (one container start,
                # no exec), closed here and removed with the grading's scope.
                handoff = scope.tempdir("handoff")
                handoff.chmod(0o755)
                spec = judge_spec(task, judge_image, g.gid, handoff, resident=True)
                judge = Resident(rt, scope.container(spec, start=False))
                owned.append(judge)
                prep = None
                if argv is not None:
                    prep = judge.step(g.gid, argv, lim.total_timeout, MAX_INPUTS_BYTES)
                return judge.cid, prep, (judge, handoff)

        # The judge starts and prepares while the submission is taken and the candidate's
        # container is made (docs/performance.md). They share nothing, and the candidate's
        # container starts, its runner as its own process, only once its inputs are in place.
        cand: str | None = None
        program: Program | NotBuilt | None = None
        with Background(start_judge) as judge_job:
            taken = g.take_submission(scope, source)
            files, cand_image = None, g.task_image
            if not isinstance(taken, Refused):
                files = taken.files
                if taken.decoy_seen:  # the agent's decoy, in what it submitted
                    caught.append("decoy:output")
                if task.config.stdio is not None:
                    with g.timed("compile"):
                        program = build_program(scope, task, taken, g.image)
                    if isinstance(program, Program):
                        files, cand_image = program.files, program.image
                    else:
                        files = None
            if files is not None:
                command = program.language.run if isinstance(program, Program) else None
                env = decoys.environment(marker) if marker is not None else None
                runner = runner_argv(task, command=command, env=env)
                with g.timed("candidate_start"):
                    spec = candidate_spec(task, cand_image, g.gid, files, inputs, runner, bait)
                    cand = scope.container(spec, start=False)
        judge, prep, own = judge_job.result()
        if prep is not None and prep.exit_code != 0:
            # No candidate output exists yet, so nothing the submission did can explain this: it
            # is a broken task or engine, never a verdict on the submission (no signed fail).
            raise RuntimeError_(
                f"the judge's prepare step failed ({_how(prep)}): {_tail(prep.stderr)}"
            )
        try:
            raw = fixed if prep is None else prep.stdout
            assert raw is not None
            cases = loads_strict(raw, max_bytes=MAX_INPUTS_BYTES)
            n_cases = len(cases)
            write_cases(inputs, json.dumps(cases).encode())
        except (StrictJSONError, TypeError) as exc:
            why = f"judge:{getattr(exc, 'code', 'inputs')}"
            return Judged(g.fail("judge:invalid-inputs", [why]))
        if isinstance(taken, Refused):
            return Judged(g.fail(taken.reason))
        if isinstance(program, NotBuilt):
            failed = g.fail(program.reason, caught)
            if not program.detail or task.config.judge is None:
                return Judged(failed)
            if task.config.judge.diagnostics == "none":
                return Judged(failed)
            # The compiler's last lines, for the task's owner (the candidate's bytes, escaped).
            explained = CaseDiagnostic(
                id="compile", reason=program.reason, expected="", actual=program.detail
            )
            return Judged(failed, Diagnostics(grading_id=g.gid, cases=[explained]))
        assert cand is not None
        if marker is not None and bait is not None:
            given = [c for c in cases if isinstance(c, dict)] if isinstance(cases, list) else []
            decoyfiles.plant(bait, files, decoys.layout(marker, task.config.kind, given))

        with g.timed("candidate"):
            ran = run_candidate(
                scope, cand, runner_deadline(n_cases, lim.case_timeout, lim.total_timeout),
                grading_report_cap(n_cases, lim.output_bytes),
            )  # fmt: skip
            run = ran.result
            if run.timed_out:
                reasons.append("limit:total-time")
            if run.truncated:
                reasons.append("limit:runner-output")
            reasons.extend(f"limit:{c}" for c in reversed(ran.hit))
            if ran.late_memory:
                reasons.append("limit:memory")
            if marker is not None and not caught and decoys.in_report(marker, run.stdout):
                caught.append("decoy:output")
            reasons.extend(caught)
            if task.config.kind == "transform" and not (run.timed_out or run.truncated):
                outputs = transform_outputs(scope, run.stdout, cases, lim.artifact_bytes)
                if isinstance(outputs, Refused):
                    return Judged(g.fail(outputs.reason, caught))
                rt.put_archive(judge, "/exchange", outputs)

        # The candidate's removal overlaps the comparison; it is joined (and its failure
        # raised) before any verdict leaves this function.
        with Background(lambda: scope.discard(cand)) as removal:
            with g.timed("judge_compare"):
                argv = compare_argv(task, f"{HANDOFF}/runner.json")
                if own is None:  # a pooled judge (it may be another than the one prepared)
                    assert judges is not None
                    judge, cmp = judges.compare(
                        g.gid, task, argv, run.stdout, lim.total_timeout, MAX_REPORT_BYTES
                    )
                else:
                    resident, handoff = own
                    (handoff / "runner.json").write_bytes(run.stdout)
                    (handoff / "runner.json").chmod(0o644)
                    cmp = resident.step(g.gid, argv, lim.total_timeout, MAX_REPORT_BYTES)
        removal.result()
        if cmp.exit_code != 0:
            # Past its deadline or its report cap, the worker killed the step: the candidate's
            # output can make a judge that slow or that verbose, so that is the judge choking
            # on it (a fail), never the engine's (no verdict). A worker that died, hung or
            # answered out of frame raised before this (`judgewire.WorkerFault`: no verdict).
            overran = cmp.timed_out or cmp.truncated
            if not overran and (cmp.exited or rt.wait(judge, STOPPED_PROBE_S) is not None):
                # The judge's container itself stopped (killed from outside, engine fault):
                # candidate bytes cannot stop it, so this is no verdict rather than a fail.
                raise RuntimeError_("the judge's container stopped during compare")
            # A judge that ran and failed may have choked on the candidate's bytes: fail safe.
            return Judged(g.fail("judge:compare-failed", caught))
        judged = verdict_from_judge(g.facts(), cmp.stdout, n_cases, reasons)
        if judges is not None and INVALID_OUTPUT not in judged.verdict.reason_codes:
            judges.release(g.gid)  # only a judge that behaved to the end serves again
        return judged


@contextmanager
def _closing(judges: list[Resident]) -> Iterator[None]:
    try:
        yield
    finally:
        for judge in judges:
            judge.close()


def _how(res: ExecResult) -> str:
    return "timed out" if res.timed_out else f"exit {res.exit_code}"


def _tail(stderr: bytes, cap: int = 400) -> str:
    """The end of trusted judge stderr, one escaped line, for the infrastructure error."""
    text = stderr[-cap:].decode("utf-8", "replace").strip()
    return text.encode("unicode_escape").decode("ascii") or "(no output)"
