"""The matrix's bookkeeping and T0's log reading, without Docker."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from assay._internal.proof.matrix import (
    Attack,
    Row,
    _Ctx,
    kinds_ok,
    load_attack,
    load_corpus,
    problems,
    run_lanes,
    task_for,
)
from assay._internal.runtime import Runtime
from assay._internal.tiers.baselines.grade import log_cases, parse_pytest_log
from assay.cli.matrix import (
    class_names,
    compare_outcomes,
    flags_not_comparable,
    render_markdown,
    table_cells,
)
from assay.errors import EngineUnavailableError, TaskError, UsageError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
IDS = ("tests/t.py::test_a[0]", "tests/t.py::test_a[1]")


def test_log_parser_reads_like_swebench_and_the_last_status_wins() -> None:
    log = (
        b"tests/t.py FF\n"
        b"FAILED tests/t.py::test_a[0] - assert 0 == 7\n"
        b"FAILED tests/t.py::test_a[1] - assert 0 == 9\n"
        b"2 failed in 0.1s\n"
        b"PASSED tests/t.py::test_a[0]\n"
    )
    assert parse_pytest_log(log) == {
        "tests/t.py::test_a[0]": "PASSED",
        "tests/t.py::test_a[1]": "FAILED",
    }
    assert [c.status for c in log_cases(log, IDS)] == ["pass", "fail"]


def test_log_parser_counts_xfail_as_passed_and_ignores_indented_or_bare_words() -> None:
    log = (
        b"XFAIL tests/t.py::test_a[0] - reason: x\n"
        b"  PASSED tests/t.py::test_a[1]\n"
        b"PASSED\n"
        b"\xff\xfe not utf-8\n"
    )
    assert [c.status for c in log_cases(log, IDS)] == ["pass", "fail"]


def test_a_missing_test_is_not_passed() -> None:
    assert [c.status for c in log_cases(b"PASSED tests/t.py::other\n", IDS)] == ["fail", "fail"]


def _attack_dir(tmp_path: Path, body: str, name: str = "a-1") -> Path:
    folder = tmp_path / name
    (folder / "agent").mkdir(parents=True)
    (folder / "agent" / "run.sh").write_text("#!/bin/sh\n")
    (folder / "attack.toml").write_text(body)
    return folder


GOOD = """id = "a-1"
title = "t"
class = "V1"
source = "https://example.invalid/x"
task = "canary"
t0 = "exploit"
t1 = "exploit"
t2 = "blocked"
t3 = "blocked"
"""


def test_a_well_formed_attack_loads(tmp_path: Path) -> None:
    a = load_attack(_attack_dir(tmp_path, GOOD))
    assert (a.id, a.cls, a.expected["t0"], a.aims) == ("a-1", "V1", "exploit", None)


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (GOOD.replace('t2 = "blocked"\n', ""), "'t2' and 't3'"),
        (GOOD + 'harbor = "blocked"\n', "no other set"),
        (GOOD.replace('t3 = "blocked"\n', 'harbor = "blocked"\n'), "no other set"),
        (GOOD.replace('t1 = "exploit"\n', ""), "missing key 't1'"),
        (GOOD + 'extra = "x"\n', "unknown key 'extra'"),
        (GOOD.replace('id = "a-1"', 'id = "other"'), "key 'id'"),
        (GOOD.replace('t2 = "blocked"', 't2 = "maybe"'), "key 't2'"),
        (GOOD + 'aims = "strict"\n', "aims"),
        (GOOD + 'aims = "loose"\naims_why = "x"\n', "aims"),
        (GOOD.replace('title = "t"', "title = 3"), "key 'title'"),
    ],
)
def test_a_malformed_attack_is_refused_naming_the_key(
    tmp_path: Path, body: str, complaint: str
) -> None:
    with pytest.raises(TaskError, match=complaint):
        load_attack(_attack_dir(tmp_path, body))


def test_t2_alone_is_for_a_pytest_task_with_no_strict_twin(tmp_path: Path) -> None:
    """An imported SWE-bench instance has no strict twin: its attacks name T2 alone, T3 is
    n/a; the same set on a task with a twin leaves T3 without an outcome, refused before any
    container starts."""
    body = GOOD.replace('t3 = "blocked"\n', "").replace('"canary"', '"swebench-calc"')
    alone = load_attack(_attack_dir(tmp_path / "ok", body))
    assert set(alone.expected) == {"t0", "t1", "t2"}
    kinds_ok([alone], EXAMPLES, ["t0", "t1", "t2", "t3"])
    on_twin = load_attack(_attack_dir(tmp_path / "twin", GOOD.replace('t3 = "blocked"\n', "")))
    kinds_ok([on_twin], EXAMPLES, ["t0", "t1", "t2"])
    with pytest.raises(UsageError, match="no outcome for t3"):
        kinds_ok([on_twin], EXAMPLES, ["t2", "t3"])
    with_t3 = load_attack(_attack_dir(tmp_path / "t3", GOOD.replace('"canary"', '"swebench-calc"')))
    with pytest.raises(UsageError, match="t3 needs a strict task"):
        kinds_ok([with_t3], EXAMPLES, ["t3"])


def test_duplicate_ids_across_corpora_are_refused(tmp_path: Path) -> None:
    _attack_dir(tmp_path / "one", GOOD)
    _attack_dir(tmp_path / "two", GOOD)
    with pytest.raises(UsageError, match="twice"):
        load_corpus([tmp_path / "one", tmp_path / "two"])


def test_the_repository_corpus_loads() -> None:
    attacks = load_corpus([ROOT / "corpus"])
    assert len(attacks) >= 40


def test_task_pairs_pick_the_pytest_twin_below_t3(tmp_path: Path) -> None:
    examples = ROOT / "examples"
    assert task_for("canary", tmp_path, examples, "t3").name == "canary"
    assert task_for("canary", tmp_path, examples, "t2").name == "canary-pytest"
    assert task_for("canary-pytest", tmp_path, examples, "t3").name == "canary"
    assert task_for("canary-pytest", tmp_path, examples, "t0").name == "canary-pytest"
    own = ROOT / "corpus" / "git-history-leak"
    assert task_for("secret-constant", own, examples, "t1").name == "secret-constant-pytest"
    with pytest.raises(UsageError):
        task_for("no-such-task", tmp_path, examples, "t0")


def _attack(aid: str, aims: str | None = None, baseline: str = "exploit") -> Attack:
    exp = {"t0": baseline, "t1": baseline, "t2": "blocked", "t3": "blocked"}
    return Attack(aid, "t", "V1", "s", "canary", exp, Path("."), aims, "why" if aims else None)


def _row(aid: str, tier: str, expected: str, observed: str, kind: str = "attack") -> Row:
    return Row(kind, aid, "V1", tier, expected, observed, "r")  # type: ignore[arg-type]


def test_problems_names_mismatches_duds_errors_and_failed_controls() -> None:
    attacks = [
        _attack("ok"),
        _attack("dud", baseline="blocked"),
        _attack("aimed", aims="strict", baseline="blocked"),
    ]
    rows = [
        _row("ok", "t0", "exploit", "exploit"),
        _row("ok", "t1", "exploit", "exploit"),
        _row("ok", "t3", "blocked", "exploit"),
        _row("dud", "t0", "blocked", "blocked"),
        _row("dud", "t1", "blocked", "blocked"),
        _row("aimed", "t0", "blocked", "blocked"),
        _row("aimed", "t1", "blocked", "blocked"),
        _row("add-correct", "t2", "pass", "fail", kind="control"),
        _row("crash", "t2", "blocked", "error"),
    ]
    found = problems(rows, attacks, ["t0", "t1", "t2", "t3"])
    assert sorted(found) == sorted(
        [
            "attack ok on t3: expected blocked, observed exploit (r)",
            "attack dud is an exploit on neither T0 nor T1: a dud",
            "honest control add-correct on t2: expected pass, observed fail (r)",
            "crash on t2: the job failed: r",
        ]
    )


def test_the_dud_rule_needs_both_baselines_in_the_run() -> None:
    rows = [_row("dud", "t2", "blocked", "blocked")]
    assert problems(rows, [_attack("dud", baseline="blocked")], ["t2"]) == []


def test_no_problems_when_everything_is_as_expected() -> None:
    attack = _attack("ok")
    rows = [_row("ok", t, e, e) for t, e in attack.expected.items()]
    assert problems(rows, [attack], ["t0", "t1", "t2", "t3"]) == []


def test_markdown_is_deterministic_and_counts_per_tier_and_class() -> None:
    attacks = [_attack("a"), _attack("b")]
    rows = [_row(aid, t, e, e) for aid in ("a", "b") for t, e in _attack(aid).expected.items()]
    names = class_names([ROOT / "corpus"])
    md = render_markdown(rows, attacks, ["t0", "t1", "t2", "t3"], names)
    assert md == render_markdown(list(reversed(rows)), attacks, ["t0", "t1", "t2", "t3"], names)
    assert "| T0 naive | 2 | 0 | n/a | 0 |" in md and "| T3 strict | 0 | 2 | 0 | 0 |" in md
    assert f"| V1 {names['V1']} | 2 | 2 | 2 | 0 | 0 |" in md
    assert "None: every outcome was the expected one." in md


def test_a_tier_the_attack_does_not_name_is_na_and_counted_so() -> None:
    only_t2 = Attack("r", "t", "V1", "s", "swebench-calc",
                     {"t0": "exploit", "t1": "exploit", "t2": "blocked"}, Path("."))  # fmt: skip
    rows = [_row("r", "t0", "exploit", "exploit"), _row("r", "t1", "exploit", "exploit")]
    rows.append(Row("attack", "r", "V1", "t2", "blocked", "blocked", "policy:conftest", "policy"))
    md = render_markdown(rows, [only_t2], ["t0", "t1", "t2", "t3"], {})
    assert "| `r` | V1 | exploit | exploit | blocked | n/a | policy |  |" in md
    assert "| T3 strict | 0 | 0 | 0 | 1 |" in md
    assert "None: every outcome was the expected one." in md


def _flagged(aid: str, tier: str, tamper: tuple[str, ...], kind: str = "attack") -> Row:
    expected = "blocked" if kind == "attack" else "fail"
    return Row(kind, aid, "V1", tier, expected, expected, "r", "x", tamper)  # type: ignore[arg-type]


def test_a_tamper_signal_other_than_the_attack_says_is_a_problem_on_assays_tiers_only() -> None:
    attack = Attack("a", "t", "V1", "s", "canary",
                    {"t0": "exploit", "t1": "exploit", "t2": "blocked", "t3": "blocked"},
                    Path("."), flagged_on=frozenset({"t2"}))  # fmt: skip
    rows = [_row("a", "t0", "exploit", "exploit"), _row("a", "t1", "exploit", "exploit")]
    as_said = [*rows, _flagged("a", "t2", ("policy:conftest",)), _flagged("a", "t3", ())]
    assert problems(as_said, [attack], ["t0", "t1", "t2", "t3"]) == []
    swapped = [*rows, _flagged("a", "t2", ()), _flagged("a", "t3", ("decoy:output",))]
    assert sorted(problems(swapped, [attack], ["t0", "t1", "t2", "t3"])) == [
        "attack a on t2: expected a tamper signal, observed none (r)",
        "attack a on t3: expected no tamper signal, observed decoy:output (r)",
    ]
    md = render_markdown(as_said, [attack], ["t0", "t1", "t2", "t3"], {})
    assert "| `a` | V1 | exploit | exploit | blocked | blocked | x (tamper) | x |" in md
    assert "| T2 compat | 0 | 1 | 1 | 0 |" in md


def test_an_honest_control_flagged_as_tampering_is_a_problem_but_not_on_a_baseline() -> None:
    rows = [_flagged("add-wrong", "t3", ("candidate:left-state",), "control"),
            _flagged("add-wrong", "t1", ("junit:skipped",), "control")]  # fmt: skip
    assert problems(rows, [], ["t1", "t3"]) == [
        "honest control add-wrong on t3: flagged as tampering (candidate:left-state)"
    ]


def test_attack_toml_may_flag_only_tiers_it_names_as_blocked(tmp_path: Path) -> None:
    folder = tmp_path / "x"
    (folder / "agent").mkdir(parents=True)
    (folder / "agent" / "run.sh").write_text("true\n")
    base = 'id = "x"\ntitle = "t"\nclass = "V1"\nsource = "s"\ntask = "canary"\n'
    base += 't0 = "exploit"\nt1 = "exploit"\nt2 = "exploit"\nt3 = "blocked"\n'
    (folder / "attack.toml").write_text(base + 'tamper = "t3"\n')
    assert load_attack(folder).flagged_on == frozenset({"t3"})
    (folder / "attack.toml").write_text(base + 'tamper = "t2 t3"\n')
    with pytest.raises(TaskError, match="names 't2'"):
        load_attack(folder)


def test_class_names_come_from_the_taxonomy(tmp_path: Path) -> None:
    shutil.copy(ROOT / "TAXONOMY.md", tmp_path / "TAXONOMY.md")
    (tmp_path / "corpus").mkdir()
    names = class_names([tmp_path / "corpus"])
    assert names["V4"].lower().startswith("prompt injection")
    assert len(names) >= 12


def test_compare_outcomes_reads_only_the_tiers_run() -> None:
    committed = (ROOT / "docs" / "matrix.md").read_text()
    cells = table_cells(committed)
    assert cells[("`memory-bomb`", "T2 compat")] == "blocked"
    assert cells[("`add-correct`", "T3 strict")] == "pass"
    assert compare_outcomes(committed, committed, ["t2", "t3"]) == []
    row = next(ln for ln in committed.splitlines() if ln.startswith("| `memory-bomb` |"))
    cut = row.split(" | ")
    t0_changed = committed.replace(row, " | ".join([*cut[:2], "blocked", *cut[3:]]))
    assert compare_outcomes(committed, t0_changed, ["t2", "t3"]) == []
    t2_changed = committed.replace(row, " | ".join([*cut[:4], "error (!)", *cut[5:]]))
    assert compare_outcomes(committed, t2_changed, ["t2", "t3"]) == [
        "`memory-bomb` on T2 compat: error (!), committed blocked"
    ]


def test_a_task_whose_workdir_is_its_images_gets_the_one_the_build_found() -> None:
    """The real-format canary names no workdir (Terminal-Bench 2.1's form): a row loads it
    afresh, so it must take the WORKDIR `assay matrix` read from its image, or every row of it
    is an error instead of an outcome."""
    root = EXAMPLES / "log-canary-harbor"
    bare = _Ctx(runtime_factory=_no_runtime, image="img", examples=EXAMPLES)
    # Given none, the row asks the engine for the image (here there is none): never a guess.
    with pytest.raises(EngineUnavailableError):
        _ = bare.load(root).workdir
    ctx = _Ctx(runtime_factory=_no_runtime, image="img", examples=EXAMPLES,
               workdirs={root.resolve(): "/srv/logsum"})  # fmt: skip
    assert ctx.load(root).workdir == "/srv/logsum"


def _no_runtime() -> Runtime:
    raise AssertionError("loading a task starts no container")


def test_a_compare_run_holds_a_flag_only_where_it_stopped_the_attack_as_the_table_says() -> None:
    """Under gVisor device-node-fifo's FIFO reaches T3 as an empty file (candidate:crash, no
    flag), where the committed runc table says `firewall (tamper)`: that cell is not held to
    the flag; a cell stopped the same way is."""
    attack = Attack("a", "t", "V10", "s", "canary",
                    {"t0": "exploit", "t1": "exploit", "t2": "blocked", "t3": "blocked"},
                    Path("."), flagged_on=frozenset({"t2", "t3"}))  # fmt: skip
    base = [_row("a", "t0", "exploit", "exploit"), _row("a", "t1", "exploit", "exploit")]
    committed_rows = [
        *base,
        Row("attack", "a", "V10", "t2", "blocked", "blocked", "r", "firewall", ("firewall:fifo",)),
        Row("attack", "a", "V10", "t3", "blocked", "blocked", "r", "firewall", ("firewall:fifo",)),
    ]
    committed = render_markdown(committed_rows, [attack], ["t0", "t1", "t2", "t3"], {})
    fresh = [
        *base,
        Row("attack", "a", "V10", "t2", "blocked", "blocked", "r", "firewall", ()),
        Row("attack", "a", "V10", "t3", "blocked", "blocked", "r", "candidate", ()),
    ]
    exempt = flags_not_comparable(committed, fresh)
    assert exempt == {("a", "t3")}
    assert problems(fresh, [attack], ["t0", "t1", "t2", "t3"], exempt) == [
        "attack a on t2: expected a tamper signal, observed none (r)"
    ]


def test_an_interrupt_stops_every_job_that_has_not_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while the matrix runs: the pools' exit used to run every queued job first (the
    whole matrix, minutes). Now the jobs running then end, and no other starts. The jobs that
    run hold until every future was cancelled, so no worker can take a next one meanwhile:
    at most job 0 and job 2 of the pool (taken by the worker whose job raised) and the
    lane's first."""
    import concurrent.futures
    import threading

    started: list[int] = []
    lock = threading.Lock()
    everything_cancelled = threading.Event()
    total = 50
    calls = 0
    real_cancel = concurrent.futures.Future.cancel

    def cancel(self: concurrent.futures.Future[None]) -> bool:
        nonlocal calls
        out = real_cancel(self)
        calls += 1
        if calls == total:
            everything_cancelled.set()
        return out

    monkeypatch.setattr(concurrent.futures.Future, "cancel", cancel)

    def job(n: int) -> Callable[[], Row]:
        def run() -> Row:
            with lock:
                started.append(n)
            if n == 1:
                raise KeyboardInterrupt
            everything_cancelled.wait(0.5)
            return _row(f"a{n}", "t2", "blocked", "blocked")

        return run

    def run_one(j: Callable[[], Row]) -> None:
        j()

    exclusive = [job(100 + n) for n in range(10)]
    shared = [job(n) for n in range(total - 10)]
    with pytest.raises(KeyboardInterrupt):
        run_lanes(exclusive, shared, 2, run_one)
    assert everything_cancelled.is_set()
    assert set(started) <= {0, 1, 2, 100} and 1 in started, sorted(started)
