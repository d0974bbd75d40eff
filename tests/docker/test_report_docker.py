"""End to end: `assay grade-many` of examples/wordcount on the real engine with a correct, a wrong
and a markup-printing submission, then `assay report`: the page renders in headless Chromium
with no script of the candidate's running and no request, the JUnit file has exactly one
testcase per grading, and the failed gradings carry the judge's diagnostics.

ASSAY_REPORT_SCREENSHOTS=DIR also saves the summary and the markup grading's view there (that
is how docs/images/report-*.png are made)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from e2e import EXAMPLES
from helpers.chromium import assert_inert, foreign, render

pytestmark = pytest.mark.docker

WORDCOUNT = EXAMPLES / "wordcount"
MARKUP = r"""import sys
sys.stdin.read()
run = "document.title='PWNED';var/**/d=document.createElement('div');d.id='pwned';document.body.appendChild(d)"
print("<script>" + run + "</script>")
print("<img src=http://203.0.113.7/x.png onerror=" + run + ">")
print("</textarea></script><script>" + run + "</script>")
print("\u202egnp.exe \u2066isolate \x1b[2J\x1b]0;owned\x07")
print("A" * 200000)
"""


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp / "config"))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    env["ASSAY_RUNTIME"] = "runc"  # the default backend: these check the report, not the engine
    return env


def test_grade_many_report_renders_inert_with_one_testcase_per_grading(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    for name in ("correct", "wrong"):
        shutil.copytree(WORDCOUNT / "solutions" / name, subs / name)
    (subs / "markup").mkdir()
    (subs / "markup" / "wc.py").write_text(MARKUP)
    out, env = tmp_path / "out", _env(tmp_path)
    grade = [sys.executable, "-m", "assay", "grade-many", str(WORDCOUNT), "--submissions",
             str(subs), "--out", str(out), "--jobs", "2"]  # fmt: skip
    proc = subprocess.run(grade, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.glob("*.diag.json")) == [
        "markup.diag.json",
        "wrong.diag.json",
    ]

    html, junit = tmp_path / "report.html", tmp_path / "junit.xml"
    pub = tmp_path / "config" / "assay" / "signing.pub"
    report = [sys.executable, "-m", "assay", "report", str(out), "--html", str(html),
              "--junit", str(junit), "--key", str(pub)]  # fmt: skip
    proc = subprocess.run(report, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "3 grading(s): passed 1, failed 2, no verdict 0" in proc.stdout

    cases = ET.parse(junit).getroot().findall("./testsuite/testcase")
    assert sorted(c.get("name") or "" for c in cases) == ["correct", "markup", "wrong"]
    assert [c.get("name") for c in cases if c.find("failure") is not None] == ["markup", "wrong"]

    data = json.loads(re.search(r'id="assay-data">(.*?)</script>', html.read_text(), re.S).group(1))  # type: ignore[union-attr]
    index = {r["id"]: i for i, r in enumerate(data["records"])}
    assert {r["id"]: r["sig"] for r in data["records"]} == dict.fromkeys(index, "verified")
    shots = os.environ.get("ASSAY_REPORT_SCREENSHOTS")
    for view, frag in (("summary", ""), ("grading", f"#g={index['markup']}")):
        got = render(html.as_uri() + frag)
        assert_inert(got.dom, f"batch:{view}")
        assert got.requests == [] and foreign(got.proxied) == []
        if shots:
            render(html.as_uri() + frag, screenshot=Path(shots) / f"report-{view}.png",
                   size=(1100, 1500 if view == "grading" else 520))  # fmt: skip
    # The grading view shows what the candidate printed, as text, with its bidi escaped.
    assert "&lt;/textarea&gt;&lt;/script&gt;&lt;script&gt;document.title=" in got.dom
    assert "\\u202egnp.exe \\u2066isolate \\u001b[2J" in got.dom


def test_assay_grade_prints_the_diagnostics_escaped(tmp_path: Path) -> None:
    (tmp_path / "markup").mkdir()
    (tmp_path / "markup" / "wc.py").write_text(MARKUP)
    target = tmp_path / "v.dsse.json"
    argv = [sys.executable, "-m", "assay", "grade", str(WORDCOUNT), "--submission",
            str(tmp_path / "markup"), "--out", str(target)]  # fmt: skip
    proc = subprocess.run(argv, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr  # FAILED
    assert "case empty: compare:mismatch" in proc.stdout
    assert "+\\u202egnp.exe \\u2066isolate \\u001b[2J\\u001b]0;owned\\u0007" in proc.stdout
    assert not any(c in proc.stdout for c in "\x1b\x07\u202e\u2066")
    saved = json.loads((tmp_path / "v.diag.json").read_text())
    statement = json.loads(base64.b64decode(json.loads(target.read_text())["payload"]))
    assert saved["grading_id"] == statement["predicate"]["grading_id"]
