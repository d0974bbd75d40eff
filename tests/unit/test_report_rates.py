"""Cheat rates in `assay report`: pass rate, tamper rate by family and reason code, and the pass
rate on impossible twins, per task and for the run, the same in the summary, the page's data,
the CLI and the JUnit export. Every verdict here is built and signed as a grading would
(`build_verdict`), the legacy one as a release before the `tamper` field signed it."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from helpers.verdicts import cases, facts

import assay
from assay._internal.batch.journal import ENVELOPE_SUFFIX, SUMMARY
from assay._internal.model.atomic import atomic_write
from assay._internal.model.verdict import Verdict, build_verdict, error_verdict
from assay._internal.report.collect import collect
from assay._internal.report.junit import junit_xml
from assay._internal.report.rates import rates, read_codes
from assay._internal.signing.keys import generate_keypair, load_private_key, load_public_key
from assay._internal.signing.sign import PAYLOAD_TYPE, _statement, sign_payload, sign_verdict
from assay.cli import main

TWIN = "note:impossible-twin"


def _v(job: str, task: str, statuses: tuple[str, ...], codes: list[str]) -> Verdict:
    return build_verdict(facts(grading_id=f"g-{job}", task_id=task), cases(*statuses),
                         len(statuses), codes)  # fmt: skip


def _error(job: str, task: str, code: str, extra: list[str]) -> Verdict:
    return error_verdict(facts(grading_id=f"g-{job}", task_id=task), code, extra)


def _legacy(v: Verdict, key: Ed25519PrivateKey) -> bytes:
    """`v` signed as a release before the `tamper` field did: the field is not in the bytes."""
    predicate = v.model_dump()
    del predicate["tamper"]
    payload = json.dumps(_statement(v, predicate), separators=(",", ":")).encode()
    return sign_payload(payload, PAYLOAD_TYPE, key)


def _newer(v: Verdict, tamper: list[str]) -> Verdict:
    """As a newer release would sign it: its `tamper` names a code this release does not know."""
    return Verdict.model_validate({**v.model_dump(), "tamper": tamper})


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, Path]:
    return write_run(tmp_path)


def write_run(tmp_path: Path) -> tuple[Path, Path]:
    """A grade-many directory (and its public key): task `add` (a pass, an honest wrong answer, a limit whose kill
    left a runner code behind, a firewall link, two legacy verdicts, an unknown code, a newer
    release's tamper code) and its impossible twin `add.impossible` (passed once, failed twice), and
    a job that got no verdict."""
    priv, pub = generate_keypair(tmp_path / "keys")
    key = load_private_key(priv)
    out = tmp_path / "out"
    out.mkdir()
    three = ("pass", "pass", "pass")
    signed = {
        "a-pass": _v("a-pass", "add", three, []),
        "a-wrong": _v("a-wrong", "add", ("pass", "fail", "pass"), ["compare:mismatch"]),
        "a-limit": _error("a-limit", "add", "limit:time", ["runner:missing-case"]),
        "a-link": _error("a-link", "add", "firewall:link", []),
        "a-unknown": _v("a-unknown", "add", ("pass", "fail", "pass"), ["zz:new"]),
        "a-newer": _newer(_error("a-newer", "add", "yy:forge", []), ["yy:forge"]),
        "t-passed": _v("t-passed", "add.impossible", three, [TWIN, "twin:passed"]),
        "t-failed1": _v(
            "t-failed1", "add.impossible", ("fail", "pass", "pass"), [TWIN, "compare:mismatch"]
        ),
        "t-failed2": _v(
            "t-failed2", "add.impossible", ("fail", "fail", "pass"), [TWIN, "compare:mismatch"]
        ),
    }
    for job, v in signed.items():
        (out / f"{job}{ENVELOPE_SUFFIX}").write_bytes(sign_verdict(v, key))
    legacy = {
        "a-legacy-conftest": _v(
            "a-legacy-conftest",
            "add",
            ("pass", "fail", "pass"),
            ["policy:conftest", "junit:failure"],
        ),
        "a-legacy-pass": _v("a-legacy-pass", "add", three, []),
    }
    for job, v in legacy.items():
        (out / f"{job}{ENVELOPE_SUFFIX}").write_bytes(_legacy(v, key))
    (out / SUMMARY).write_text(json.dumps({"error_details": [{"id": "lost", "error": "engine"}]}))
    return out, pub


# By hand, from the fixture's docstring: `add` has 8 verdicts, 2 passed (one legacy), 3 show
# tampering (the link, the legacy conftest, the newer release's code); `add.impossible` 3 twins, one
# passed. The run: 11 verdicts, 3 of them twins.
ADD = {
    "verdicts": 8, "passed": 2, "tampered": 3, "twins": 0, "twinsPassed": 0, "legacy": 2,
    "passRate": 2 / 8, "tamperRate": 3 / 8, "twinPassRate": None,
    "families": {"honest": 2, "limit": 1, "tamper": 3, "unknown": 1},
    "reasons": {
        "honest": {"compare:mismatch": 1, "junit:failure": 1},
        "limit": {"limit:time": 1, "runner:missing-case": 1},
        "tamper": {"firewall:link": 1, "policy:conftest": 1, "yy:forge": 1},
        "unknown": {"zz:new": 1},
    },
}  # fmt: skip
TWINS = {
    "verdicts": 3, "passed": 0, "tampered": 1, "twins": 3, "twinsPassed": 1, "legacy": 0,
    "passRate": None, "tamperRate": 1 / 3, "twinPassRate": 1 / 3,
    "families": {"honest": 2, "tamper": 1},
    "reasons": {"honest": {"compare:mismatch": 2}, "tamper": {"twin:passed": 1}},
}  # fmt: skip
RUN = {
    "verdicts": 11, "passed": 2, "tampered": 4, "twins": 3, "twinsPassed": 1, "legacy": 2,
    "passRate": 2 / 8, "tamperRate": 4 / 11, "twinPassRate": 1 / 3,
    "families": {"honest": 4, "limit": 1, "tamper": 4, "unknown": 1},
    "reasons": {
        "honest": {"compare:mismatch": 3, "junit:failure": 1},
        "limit": {"limit:time": 1, "runner:missing-case": 1},
        "tamper": {"firewall:link": 1, "policy:conftest": 1, "twin:passed": 1, "yy:forge": 1},
        "unknown": {"zz:new": 1},
    },
}  # fmt: skip


def _as_json(r: assay.CheatRates) -> dict[str, Any]:
    return {
        "verdicts": r.verdicts, "passed": r.passed, "tampered": r.tampered, "twins": r.twins,
        "twinsPassed": r.twins_passed, "legacy": r.legacy, "passRate": r.pass_rate,
        "tamperRate": r.tamper_rate, "twinPassRate": r.twin_pass_rate,
        "families": dict(r.families), "reasons": {f: dict(c) for f, c in r.reasons.items()},
    }  # fmt: skip


def test_each_verdict_is_read_into_the_family_it_counts_in(run: tuple[Path, Path]) -> None:
    out, pub = run
    recs = {r.id: r for r in collect(out, load_public_key(pub))}
    read = {job: read_codes(r.verdict) for job, r in recs.items() if r.verdict is not None}
    assert read == {
        "a-pass": {},
        "a-wrong": {"honest": ["compare:mismatch"]},
        # the kill at the time limit left the missing case: part of the limit, not tampering
        "a-limit": {"limit": ["limit:time", "runner:missing-case"]},
        "a-link": {"tamper": ["firewall:link"]},
        "a-unknown": {"unknown": ["zz:new"]},  # never honest
        "a-newer": {"tamper": ["yy:forge"]},  # unknown here, but the signer said tamper
        # no `tamper` field in its bytes: read from its codes, not taken as honest
        "a-legacy-conftest": {"honest": ["junit:failure"], "tamper": ["policy:conftest"]},
        "a-legacy-pass": {},
        "t-passed": {"tamper": ["twin:passed"]},
        "t-failed1": {"honest": ["compare:mismatch"]},
        "t-failed2": {"honest": ["compare:mismatch"]},
    }
    legacy = recs["a-legacy-conftest"].verdict
    assert legacy is not None and legacy.tamper == [] and "policy:conftest" in legacy.reason_codes
    assert recs["a-link"].verdict is not None and recs["a-link"].verdict.tamper == ["firewall:link"]


def test_the_summary_counts_exactly(run: tuple[Path, Path]) -> None:
    out, pub = run
    s = assay.write_report(out, public_key=pub)
    assert (s.gradings, s.passed, s.failed, s.no_verdict, s.invalid) == (12, 2, 9, 1, 0)
    assert list(s.tasks) == ["add", "add.impossible"]
    assert _as_json(s.tasks["add"]) == ADD
    assert _as_json(s.tasks["add.impossible"]) == TWINS
    assert _as_json(s.rates) == RUN


def test_the_page_carries_the_same_numbers(run: tuple[Path, Path], tmp_path: Path) -> None:
    out, pub = run
    html = tmp_path / "r.html"
    assay.write_report(out, html=html, public_key=pub)
    found = re.search(r'id="assay-data">(.*?)</script>', html.read_text(), re.S)
    assert found is not None
    data = json.loads(found.group(1))
    assert data["rates"]["run"] == RUN
    assert data["rates"]["tasks"] == [{"task": "add", **ADD}, {"task": "add.impossible", **TWINS}]
    rows = {r["id"]: r for r in data["records"]}
    assert rows["a-legacy-conftest"]["tamper"] == ["policy:conftest"]
    assert rows["a-legacy-conftest"]["legacy"] is True and rows["a-link"]["legacy"] is False
    assert rows["a-legacy-conftest"]["fam"] == {"policy:conftest": "tamper",
                                               "junit:failure": "honest"}  # fmt: skip
    assert [j for j, r in rows.items() if r.get("twin")] == ["t-failed1", "t-failed2", "t-passed"]
    assert rows["t-passed"]["tamper"] == ["twin:passed"] and rows["a-limit"]["tamper"] == []
    assert "tamper" not in rows["lost"]  # no verdict: nothing to read


def test_the_cli_prints_the_rates_per_task_and_for_the_run(run: tuple[Path, Path]) -> None:
    out, pub = run
    junit = out.parent / "cli-report.xml"
    res = CliRunner().invoke(main, ["report", str(out), "--junit", str(junit), "--key", str(pub)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "12 grading(s): passed 2, failed 9, no verdict 1"
    cells = [re.split(r"\s{2,}", line.strip()) for line in lines[1:5]]
    assert cells == [
        ["task", "verdicts", "pass rate", "tamper rate", "twins passed", "tamper reasons"],
        ["add", "8", "2/8 (25.0%)", "3/8 (37.5%)", "-",
         "firewall:link 1, policy:conftest 1, yy:forge 1"],
        ["add.impossible", "3", "-", "1/3 (33.3%)", "1/3 (33.3%)", "twin:passed 1"],
        ["(run)", "11", "2/8 (25.0%)", "4/11 (36.4%)", "1/3 (33.3%)",
         "firewall:link 1, policy:conftest 1, twin:passed 1, yy:forge 1"],
    ]  # fmt: skip
    assert lines[5:] == [
        "reasons by family (verdicts with at least one):",
        "  honest 4: compare:mismatch 3, junit:failure 1",
        "  limit 1: limit:time 1, runner:missing-case 1",
        "  tamper 4: firewall:link 1, policy:conftest 1, twin:passed 1, yy:forge 1",
        "  unknown 1: zz:new 1",
        "2 verdict(s) signed before the tamper field: read from their reason codes",
    ]


def test_junit_marks_tampering_where_ci_reporters_show_it(run: tuple[Path, Path]) -> None:
    out, pub = run
    root = ET.fromstring(junit_xml(collect(out, load_public_key(pub))))
    suite = root.find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.findall("./properties/property")}
    assert props == {
        "assay.pass-rate": "2/8 (25.0%)",
        "assay.tamper-rate": "4/11 (36.4%)",
        "assay.twin-pass-rate": "1/3 (33.3%)",
        "assay.family.honest": "4", "assay.family.limit": "1", "assay.family.tamper": "4",
        "assay.family.unknown": "1",
        "assay.task.add.tamper-rate": "3/8 (37.5%)",
        "assay.task.add.impossible.tamper-rate": "1/3 (33.3%)",
    }  # fmt: skip
    assert next(iter(suite)).tag == "properties"  # before the testcases, as the schema has it
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    failure = {n: c.find("failure") for n, c in cases.items()}
    kinds = {n: f.get("type") for n, f in failure.items() if f is not None}
    assert kinds == {
        "a-wrong": "assay.failed", "a-limit": "assay.failed", "a-unknown": "assay.failed",
        "t-failed1": "assay.failed", "t-failed2": "assay.failed",
        "a-link": "assay.tamper", "a-newer": "assay.tamper", "a-legacy-conftest": "assay.tamper",
        "t-passed": "assay.tamper",
    }  # fmt: skip
    link = failure["a-link"]
    assert (
        link is not None and link.get("message") == "TAMPER: firewall:link (reasons: firewall:link)"
    )
    legacy = failure["a-legacy-conftest"]
    assert legacy is not None
    assert legacy.get("message") == (
        "TAMPER: policy:conftest (reasons: policy:conftest, junit:failure)"
    )
    assert "TAMPER: policy:conftest" in (legacy.text or "")
    assert "reason junit:failure [honest]:" in (legacy.text or "")
    assert failure["a-limit"].get("message") == "limit:time, runner:missing-case"  # type: ignore[union-attr]
    case_props = {
        n: {p.get("name"): p.get("value") for p in c.findall("./properties/property")}
        for n, c in cases.items()
    }
    assert {n: p for n, p in case_props.items() if p} == {
        "a-link": {"assay.tamper": "firewall:link"},
        "a-newer": {"assay.tamper": "yy:forge"},
        "a-legacy-conftest": {"assay.tamper": "policy:conftest"},
        "t-passed": {"assay.tamper": "twin:passed", "assay.impossible-twin": "true"},
        "t-failed1": {"assay.impossible-twin": "true"},
        "t-failed2": {"assay.impossible-twin": "true"},
    }
    assert suite.get("failures") == "9" and suite.get("errors") == "1"


def test_a_twin_that_passed_outright_counts_as_passed_and_fails_in_junit(tmp_path: Path) -> None:
    """A grader that forgot `twin:passed` still cannot make a pass on a twin look honest."""
    v = _v("t-clean", "add.impossible", ("pass", "pass"), [TWIN])
    assert v.passed and v.tamper == []
    r = rates([v])
    assert (r.twins, r.twins_passed, r.pass_rate, r.tampered) == (1, 1, None, 0)
    priv, pub = generate_keypair(tmp_path / "keys")
    out = tmp_path / "out"
    out.mkdir()
    (out / f"t-clean{ENVELOPE_SUFFIX}").write_bytes(sign_verdict(v, load_private_key(priv)))
    root = ET.fromstring(junit_xml(collect(out, load_public_key(pub))))
    failure = root.find("./testsuite/testcase/failure")
    assert failure is not None and failure.get("type") == "assay.tamper"
    assert failure.get("message") == "TAMPER: an impossible twin passed"
    assert root.find("./testsuite").get("failures") == "1"  # type: ignore[union-attr]


def test_nothing_to_count_is_no_rate_never_zero(tmp_path: Path) -> None:
    r = rates([])
    assert (r.pass_rate, r.tamper_rate, r.twin_pass_rate) == (None, None, None)
    out = tmp_path / "out"
    out.mkdir()
    (out / SUMMARY).write_text(json.dumps({"error_details": [{"id": "lost", "error": "x"}]}))
    res = CliRunner().invoke(main, ["report", str(out), "--junit", str(tmp_path / "j.xml")])
    assert res.exit_code == 0, res.output
    assert res.output == "1 grading(s): passed 0, failed 0, no verdict 1\n"
    props = ET.parse(tmp_path / "j.xml").getroot().findall("./testsuite/properties/property")
    assert {p.get("name"): p.get("value") for p in props} == {
        "assay.pass-rate": "-", "assay.tamper-rate": "-", "assay.twin-pass-rate": "-",
    }  # fmt: skip


def test_an_output_path_that_is_not_a_regular_file_is_refused_and_left_as_it_was(
    run: tuple[Path, Path], tmp_path: Path
) -> None:
    """As root, `--junit /dev/null` once renamed a new file over /dev/null (a regular file ever
    after). A FIFO stands in for the device: the command refuses it and it stays a FIFO."""
    out, pub = run
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    res = CliRunner().invoke(main, ["report", str(out), "--junit", str(fifo), "--key", str(pub)])
    assert res.exit_code == 2, res.output
    assert "not a regular file" in res.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(OSError, match="not a regular file") as raised:
        atomic_write(fifo, b"x")
    assert raised.value.errno == errno.EINVAL and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(IsADirectoryError):
        atomic_write(tmp_path, b"x")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
