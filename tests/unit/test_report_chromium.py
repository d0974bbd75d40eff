"""The HTML report in a real headless Chromium: candidate bytes stay text, no script of theirs
runs, the page asks for nothing over the network. The last tests remove the protections and
show these checks then see the script run and the request go out (so they can fail)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers.chromium import Elements, assert_inert, foreign, render

from assay._incontainer import judge
from assay._internal.batch.journal import DIAGNOSTICS_SUFFIX, ENVELOPE_SUFFIX
from assay._internal.model.diagnostics import Diagnostics, parse_cases
from assay._internal.model.verdict import CaseResult, ControllerFacts
from assay._internal.report import page
from assay._internal.report.batch import batch_data
from assay._internal.report.collect import collect
from assay.cli import main

ROOT = Path(__file__).resolve().parents[2]
MARK = "PWNED"
# No spaces and no double quotes: it must also work as an unquoted attribute value.
RUN = f"document.title='{MARK}';var/**/d=document.createElement('div');d.id='pwned';document.body.appendChild(d)"
HOSTILE = (
    f"<script>{RUN}</script>\n"
    f"<img src=http://203.0.113.7/x.png onerror={RUN}>\n"
    f"</textarea><script>{RUN}</script>\n"
    f"</script><script>{RUN}</script>\n"
    "\u202eexe.txt \u2066isolated\u2069 \u2028sep\n"
)
JOB = "<img src=x onerror=alert(1)>"


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "report_bench", ROOT / "scripts" / "report_bench.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["report_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A grade-many directory: a few ordinary gradings, and one whose candidate printed
    HOSTILE and a 10 MB line, explained by the judge's own `diagnose` as it would be."""
    tmp = tmp_path_factory.mktemp("report")
    bench = _bench()
    out = tmp / "out"
    pub = bench.synthesize(out, 6, tmp / "keys")
    from assay._internal.model.verdict import build_verdict
    from assay._internal.signing.keys import load_private_key
    from assay._internal.signing.sign import sign_verdict

    case = {"id": "c1", "input": {"stdin": "x"}, "expected": {"stdout": "4\n", "exit_code": 0}}
    actual = {"stdout": HOSTILE + "A" * (10 << 20) + "\n", "exit_code": 0}
    explained = parse_cases([judge.diagnose(case, actual, "compare:mismatch")])
    assert explained is not None
    facts = ControllerFacts(
        grading_id="g-00000000000000ff", task_id="wordcount", task_digest="sha256:" + "a1" * 32,
        tier="t3", runtime="docker/runc", submission_digest="sha256:" + "ee" * 32,
        started_at=bench.START, ended_at=bench.START, timings={"candidate": 1.5},
    )  # fmt: skip
    v = build_verdict(facts, [CaseResult(id="c1", status="fail", duration_s=0.1)], 1,
                      ["compare:mismatch"])  # fmt: skip
    key = load_private_key(tmp / "keys" / "signing.key")
    (out / f"{JOB}{ENVELOPE_SUFFIX}").write_bytes(sign_verdict(v, key))
    diag = Diagnostics(grading_id=v.grading_id, cases=explained)
    (out / f"{JOB}{DIAGNOSTICS_SUFFIX}").write_bytes(diag.to_json())
    html = tmp / "report.html"
    res = CliRunner().invoke(main, ["report", str(out), "--html", str(html), "--key", str(pub)])
    assert res.exit_code == 0, res.output
    return html, out


def _index(html: Path, job: str) -> int:
    text = html.read_text()
    data = json.loads(re.search(r'id="assay-data">(.*?)</script>', text, re.S).group(1))  # type: ignore[union-attr]
    return next(i for i, r in enumerate(data["records"]) if r["id"] == job)


def test_summary_renders_hostile_ids_as_text_with_no_request(hostile: tuple[Path, Path]) -> None:
    html, _ = hostile
    got = render(html.as_uri())
    assert_inert(got.dom, "batch:summary")
    assert "&lt;img src=x onerror=alert(1)&gt;" in got.dom  # the job id, shown as text
    assert got.requests == [] and foreign(got.proxied) == []


def test_grading_view_shows_candidate_markup_as_text(hostile: tuple[Path, Path]) -> None:
    html, _ = hostile
    got = render(f"{html.as_uri()}#g={_index(html, JOB)}")
    assert_inert(got.dom, "batch:grading")
    assert got.requests == [] and foreign(got.proxied) == []
    # The candidate's markup is there, as text; its bidi controls as visible escapes.
    assert "&lt;/textarea&gt;&lt;script&gt;document.title=" in got.dom
    assert "\\u202eexe.txt \\u2066isolated\\u2069 \\u2028sep" in got.dom
    assert "\u202e" not in got.dom and "\u2066" not in got.dom
    # The 10 MB line was cut by the judge's cap, not shipped into the page.
    assert "AAAA" in got.dom and len(got.dom) < 1 << 20


def _hostile_data(out: Path, huge: bool) -> dict[str, Any]:
    recs = collect(out, None)
    data = batch_data(recs, "test", "unchecked")
    if huge:  # straight into the page, past every cap: the page alone must keep it text
        rec = next(r for r in data["records"] if r["id"] == JOB)
        rec["diag"][0]["actual"] = HOSTILE + "B" * (10 << 20) + "\n" + HOSTILE
    return data


def test_a_10_mb_line_of_markup_in_the_page_stays_text(
    hostile: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = hostile
    data = _hostile_data(out, huge=True)
    html = tmp_path / "huge.html"
    html.write_text(page.render(data))
    got = render(
        f"{html.as_uri()}#g={next(i for i, r in enumerate(data['records']) if r['id'] == JOB)}"
    )
    assert_inert(got.dom, "batch:grading")
    assert got.requests == [] and foreign(got.proxied) == []
    assert "B" * (10 << 20) in got.dom
    assert got.dom.count("&lt;script&gt;document.title=") >= 2


def _unprotected(data: dict[str, Any], keep_csp: bool) -> str:
    """The page as it would be without its JSON escaping (and without its CSP)."""
    raw = json.dumps(data, ensure_ascii=False)
    html = page.render(data).replace(page.embed_json(data), raw)
    if not keep_csp:
        html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    return html


def test_the_checks_see_a_script_run_and_a_request_go_out_without_the_protections(
    hostile: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = hostile
    data = _hostile_data(out, huge=False)
    bare = tmp_path / "bare.html"
    bare.write_text(_unprotected(data, keep_csp=False))
    got = render(bare.as_uri())
    found = Elements(got.dom)
    assert found.title == MARK and found.with_id("pwned")  # the candidate's script ran
    assert "http://203.0.113.7/x.png" in got.requests and got.blocked == []  # and it fetched
    assert any("203.0.113.7" in r for r in foreign(got.proxied))
    # Escaping removed but the policy kept: the markup breaks out, yet nothing runs or loads.
    csp_only = tmp_path / "csp-only.html"
    csp_only.write_text(_unprotected(data, keep_csp=True))
    got = render(csp_only.as_uri())
    found = Elements(got.dom)
    assert found.title == "assay report" and found.with_id("pwned") == []
    assert set(got.requests) == {"http://203.0.113.7/x.png"}  # tried by the injected <img>s...
    assert set(got.blocked) == {"csp http://203.0.113.7/x.png"}  # ...refused by the policy
    assert len(got.blocked) == len(got.requests)
    assert foreign(got.proxied) == []  # so nothing reached the network


def test_screenshots_of_the_summary_and_a_grading(
    hostile: tuple[Path, Path], tmp_path: Path
) -> None:
    html, _ = hostile
    for name, frag in (("summary", ""), ("grading", f"#g={_index(html, JOB)}")):
        shot = tmp_path / f"{name}.png"
        render(html.as_uri() + frag, screenshot=shot)
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_matrix_page_draws_a_recorded_result(tmp_path: Path) -> None:
    from assay._internal.proof.matrix import Row, load_corpus
    from assay.cli.matrix import class_names, render_html

    corpus = ROOT / "corpus"
    attacks = load_corpus([corpus])[:2]
    rows = [Row("control", "add-correct", "control", "t3", "pass", "pass", "")]
    rows += [Row("attack", a.id, a.cls, "t3", "blocked", "blocked", "compare:mismatch")
             for a in attacks]  # fmt: skip
    # One surprise, whose reason carries markup (reasons can name candidate-chosen things).
    rows.append(Row("attack", attacks[0].id, attacks[0].cls, "t2", "blocked", "exploit",
                    f"<script>{RUN}</script>"))  # fmt: skip
    html = tmp_path / "matrix.html"
    html.write_text(render_html(rows, attacks, ["t2", "t3"], class_names([corpus])))
    got = render(html.as_uri())
    found = Elements(got.dom)
    assert found.root().get("data-rendered") == "matrix:summary"
    assert found.title == "assay report" and found.with_id("pwned") == []
    assert got.requests == [] and foreign(got.proxied) == []
    assert "1 unexpected outcome(s)" in got.dom
    assert (
        sum(
            1
            for tag, a in found.found
            if tag == "td" and "cell-unexpected" in (a.get("class") or "")
        )
        == 1
    )
    assert f"&lt;script&gt;{RUN}" in got.dom.replace("&amp;", "&")


def test_the_cheat_rates_render_as_text_and_filter(tmp_path: Path) -> None:
    from test_report_rates import write_run

    out, pub = write_run(tmp_path)
    html = tmp_path / "rates.html"
    res = CliRunner().invoke(main, ["report", str(out), "--html", str(html), "--key", str(pub)])
    assert res.exit_code == 0, res.output
    got = render(html.as_uri())
    found = assert_inert(got.dom, "batch:summary")
    assert got.requests == [] and foreign(got.proxied) == []
    text = re.sub(r"<[^>]+>", "|", got.dom)
    # the cards, then each task's row and the run's (test_report_rates.py counts them by hand)
    for shown in ("|25.0%||pass rate||2 of 8|", "|36.4%||tamper rate||4 of 11|",
                  "|33.3%||twins passed||1 of 3|",
                  "|add||8||2/8 (25.0%)||3/8 (37.5%)||-|",
                  "|add.impossible||3||-||1/3 (33.3%)||1/3 (33.3%)|",
                  "|(run)||11||2/8 (25.0%)||4/11 (36.4%)||1/3 (33.3%)|",
                  "|tamper 4: firewall:link 1, policy:conftest 1, twin:passed 1, yy:forge 1|",
                  "|unknown 1: zz:new 1|",
                  "|2 verdict(s) signed before the tamper field: read from their reason codes|"):  # fmt: skip
        assert shown in text, shown
    assert sum(1 for tag, a in found.found if tag == "tr" and a.get("class") == "task-rates") == 2
    for frag, matches in (("st=tampered", "4"), ("st=twin", "3"), ("st=failed", "9")):
        got = render(f"{html.as_uri()}#{frag}")
        assert Elements(got.dom).root().get("data-matches") == matches, frag
