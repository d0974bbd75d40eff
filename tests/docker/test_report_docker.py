"""End to end: `assay grade-many` of examples/wordcount on the real engine with a correct, a
wrong, a markup-printing submission and one whose wc.py is a symbolic link, then `assay report`:
the page renders in headless Chromium with no script of the candidate's running and no request,
the JUnit file has exactly one testcase per grading and marks the link's as tampering, the
cheat rates count it, and the failed gradings carry the judge's diagnostics.

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
import tarfile
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
    with tarfile.open(subs / "link.tar", "w") as tar:  # the firewall refuses it: firewall:link
        member = tarfile.TarInfo("wc.py")
        member.type, member.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(member)
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
    assert "4 grading(s): passed 1, failed 3, no verdict 0" in proc.stdout
    # the cheat rates: one tampering (the link), two honest failures, one pass
    rows = [re.split(r"\s{2,}", line.strip()) for line in proc.stdout.splitlines()[1:4]]
    assert rows[1:] == [
        ["wordcount", "4", "1/4 (25.0%)", "1/4 (25.0%)", "-", "firewall:link 1"],
        ["(run)", "4", "1/4 (25.0%)", "1/4 (25.0%)", "-", "firewall:link 1"],
    ]
    assert "  honest 2: compare:mismatch 2" in proc.stdout
    assert "  tamper 1: firewall:link 1" in proc.stdout

    cases = ET.parse(junit).getroot().findall("./testsuite/testcase")
    assert sorted(c.get("name") or "" for c in cases) == ["correct", "link", "markup", "wrong"]
    failures = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert {n: f.get("type") for n, f in failures.items()} == {
        "link": "assay.tamper", "markup": "assay.failed", "wrong": "assay.failed"
    }  # fmt: skip
    assert (failures["link"].get("message") or "").startswith("TAMPER: firewall:link")

    data = json.loads(re.search(r'id="assay-data">(.*?)</script>', html.read_text(), re.S).group(1))  # type: ignore[union-attr]
    index = {r["id"]: i for i, r in enumerate(data["records"])}
    assert data["rates"]["run"]["tampered"] == 1 and data["rates"]["run"]["passRate"] == 0.25
    assert {r["id"]: r["tamper"] for r in data["records"]} == {
        "correct": [], "link": ["firewall:link"], "markup": [], "wrong": []
    }  # fmt: skip
    assert {r["id"]: r["sig"] for r in data["records"]} == dict.fromkeys(index, "verified")
    shots = os.environ.get("ASSAY_REPORT_SCREENSHOTS")
    for view, frag in (("summary", ""), ("grading", f"#g={index['markup']}")):
        got = render(html.as_uri() + frag)
        assert_inert(got.dom, f"batch:{view}")
        assert got.requests == [] and foreign(got.proxied) == []
        if shots:
            render(html.as_uri() + frag, screenshot=Path(shots) / f"report-{view}.png",
                   size=(1100, 1500 if view == "grading" else 700))  # fmt: skip
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
