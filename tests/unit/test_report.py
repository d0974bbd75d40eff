"""`assay report` without a browser: reading a grade-many directory back (signatures, stale or
hostile files), the JUnit export, the page's escaping and the reason-code table in the docs."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assay._internal.batch.journal import DIAGNOSTICS_SUFFIX, ENVELOPE_SUFFIX
from assay._internal.model.diagnostics import CaseDiagnostic, Diagnostics
from assay._internal.report import page, reasons
from assay._internal.report.collect import collect
from assay._internal.report.junit import junit_xml
from assay._internal.signing.keys import generate_keypair, load_public_key
from assay.cli import main
from assay.errors import TaskError

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "report_bench", ROOT / "scripts" / "report_bench.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["report_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def batch(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "out"
    return out, _bench().synthesize(out, 14, tmp_path / "keys")


def test_every_verdict_verifies_with_the_key_and_is_unchecked_without(
    batch: tuple[Path, Path],
) -> None:
    out, pub = batch
    with_key = collect(out, load_public_key(pub))
    assert len(with_key) == 14  # 12 verdicts + 2 jobs with none (summary.json)
    assert {r.signature for r in with_key if r.verdict} == {"verified"}
    assert [r.id for r in with_key if r.status == "no-verdict"] == ["sub-00006", "sub-00013"]
    assert {r.signature for r in collect(out, None) if r.verdict} == {"unchecked"}


def test_a_tampered_or_foreign_verdict_is_shown_as_invalid_never_as_a_verdict(
    batch: tuple[Path, Path], tmp_path: Path
) -> None:
    out, pub = batch
    path = out / f"sub-00001{ENVELOPE_SUFFIX}"
    env = json.loads(path.read_bytes())
    env["payload"] = env["payload"][:-8] + ("A" * 8 if env["payload"][-8:] != "A" * 8 else "B" * 8)
    path.write_text(json.dumps(env))
    _, other = generate_keypair(tmp_path / "other")
    recs = {r.id: r for r in collect(out, load_public_key(pub))}
    assert recs["sub-00001"].status == "no-verdict" and recs["sub-00001"].signature == "invalid"
    assert recs["sub-00001"].verdict is None
    foreign = collect(out, load_public_key(other))
    assert all(r.signature in ("invalid", "none") for r in foreign)
    assert all("signature:wrong-key" in r.detail for r in foreign if r.signature == "invalid"
               and r.id != "sub-00001")  # fmt: skip


def test_notes_are_shown_apart_from_the_reasons(batch: tuple[Path, Path]) -> None:
    out, pub = batch
    recs = {r.id: r.as_json() for r in collect(out, load_public_key(pub))}
    noted = recs["sub-00004"]  # every 4th job's judge was reused; the 3rd+1 fail
    assert noted["notes"] == ["note:judge-reused"]
    assert noted["reasons"] == ["compare:mismatch"]
    assert (
        recs["sub-00000"]["notes"] == ["note:judge-reused"] and recs["sub-00000"]["reasons"] == []
    )
    assert recs["sub-00002"]["notes"] == []


def test_diagnostics_of_another_grading_are_not_shown(batch: tuple[Path, Path]) -> None:
    out, pub = batch
    stale = Diagnostics(grading_id="g-other", cases=[CaseDiagnostic(
        id="case-1", reason="compare:mismatch", expected="1", actual="2")])  # fmt: skip
    (out / f"sub-00004{DIAGNOSTICS_SUFFIX}").write_bytes(stale.to_json())
    (out / f"sub-00007{DIAGNOSTICS_SUFFIX}").write_bytes(b"{not json")
    recs = {r.id: r for r in collect(out, load_public_key(pub))}
    assert recs["sub-00004"].diagnostics == [] and recs["sub-00007"].diagnostics == []
    assert recs["sub-00001"].diagnostics[0].actual == "1\n"


def test_a_link_in_the_directory_is_not_followed(batch: tuple[Path, Path], tmp_path: Path) -> None:
    out, pub = batch
    target = out / f"sub-00000{ENVELOPE_SUFFIX}"
    (out / f"linked{ENVELOPE_SUFFIX}").symlink_to(target)
    recs = {r.id: r for r in collect(out, load_public_key(pub))}
    assert recs["linked"].status == "no-verdict" and recs["linked"].signature == "invalid"


def test_junit_has_one_testcase_per_grading_and_survives_control_characters(
    batch: tuple[Path, Path],
) -> None:
    out, pub = batch
    recs = collect(out, load_public_key(pub))
    # model_construct: the schema already refuses a lone surrogate; the writer must not rely on it
    recs[1].diagnostics = [CaseDiagnostic.model_construct(
        id="c", reason="compare:mismatch", expected="\x00\x1b[2J]]>", actual="\ud800</x>&\x07",
        diff="")]  # fmt: skip
    xml = junit_xml(recs)
    root = ET.fromstring(xml)  # well-formed despite NUL, ESC, a lone surrogate, ]]> and </x>
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(recs) == int(root.find("testsuite").get("tests"))  # type: ignore[union-attr]
    assert sum(c.find("failure") is not None for c in cases) == sum(
        r.status == "failed" for r in recs
    )
    assert sum(c.find("error") is not None for c in cases) == 2
    body = cases[1].find("failure").text  # type: ignore[union-attr]
    assert body is not None and "</x>&" in body and "\x1b" not in body


def test_cli_writes_both_files(batch: tuple[Path, Path], tmp_path: Path) -> None:
    out, pub = batch
    html, xml = tmp_path / "r.html", tmp_path / "r.xml"
    args = ["report", str(out), "--html", str(html), "--junit", str(xml), "--key", str(pub)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    # synthesize(): every 7th job has no verdict, every 3rd (i % 3 == 1) of the others fails
    failed = sum(i % 7 != 6 and i % 3 == 1 for i in range(14))
    assert f"14 grading(s): passed {12 - failed}, failed {failed}, no verdict 2" in res.output
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert len(ET.parse(xml).getroot().findall(".//testcase")) == 14
    assert CliRunner().invoke(main, ["report", str(out)]).exit_code == 2
    assert (
        CliRunner().invoke(main, ["report", str(tmp_path / "nope"), "--html", "x"]).exit_code == 2
    )


def test_embedded_json_cannot_end_its_script_element() -> None:
    hostile = {"s": "</script><script>x()</script><!-- & \u2028\u2029 </SCRIPT >"}
    embedded = page.embed_json(hostile)
    assert not re.search(r"[<>&\u2028\u2029]", embedded)
    assert json.loads(embedded) == hostile
    html = page.render({"kind": "batch", "title": "", "subtitle": "", "explain": {}, "records": []})
    assert html.count("<script") == 2 and "default-src 'none'" in html


def test_the_page_policy_allows_exactly_its_own_script_and_style() -> None:
    html = page.render({"kind": "batch", "title": "", "subtitle": "", "explain": {}, "records": []})
    csp = re.search(r'Content-Security-Policy" content="([^"]+)"', html).group(1)  # type: ignore[union-attr]
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)  # type: ignore[union-attr]
    assert page._sha256(script) in csp and "unsafe-inline" not in csp
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script
    assert "document.write" not in script and "eval(" not in script


def test_the_reason_table_in_the_docs_is_the_one_the_report_uses() -> None:
    doc = (ROOT / "docs" / "verdicts.md").read_text()
    assert reasons.markdown_table() in doc


def test_assay_grade_prints_diagnostics_with_nothing_that_steers_a_terminal() -> None:
    import io

    from rich.console import Console

    from assay.cli.grade import diagnostics_target, print_diagnostics

    buf = io.StringIO()
    d = Diagnostics(grading_id="g-1", cases=[CaseDiagnostic(
        id="c1", reason="compare:mismatch", expected="4\n", actual="\x1b]0;owned\x07\x1b[2J\u202e[red]5",
        diff="-4\n+\x1b[2J\u202e5")])  # fmt: skip
    print_diagnostics(Console(file=buf, force_terminal=True, width=200), d)
    shown = buf.getvalue()
    # rich adds its own colour codes; strip exactly those, nothing of the candidate's may remain
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert "\x1b" not in plain and "\x07" not in plain and "\u202e" not in plain
    assert "+\\u001b[2J\\u202e5" in plain and "case c1: compare:mismatch" in plain
    assert diagnostics_target(Path("out/x.dsse.json")) == Path("out/x.diag.json")


def test_the_task_chooses_whether_the_judge_explains(tmp_path: Path) -> None:
    import shutil

    from assay._internal.model.task import load_task
    from assay._internal.tiers.strict.grade import compare_argv

    task = tmp_path / "wordcount"
    shutil.copytree(ROOT / "examples" / "wordcount", task)
    argv = compare_argv(load_task(task))
    assert argv[argv.index("--diagnostics") + 1] == "owner"  # the default
    toml = task / "task.toml"
    toml.write_text(toml.read_text() + 'diagnostics = "none"\n')  # [judge] is the last table
    argv = compare_argv(load_task(task))
    assert argv[argv.index("--diagnostics") + 1] == "none"
    toml.write_text(toml.read_text().replace('"none"', '"everyone"'))
    with pytest.raises(TaskError, match="diagnostics"):
        load_task(task)
