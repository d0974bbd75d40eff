"""How fast a big `assay report` opens and filters in a real headless Chromium.

    .venv/bin/python scripts/report_bench.py [--gradings 10000] [--runs 3]

Writes N synthetic signed verdicts (a mix of passes, failures with diagnostics and limit events,
and jobs without a verdict) into a temp grade-many directory, runs `assay report` on it, then
opens the page in Chromium (no network: an unused proxy, and the page's CSP) and prints the
figures the page itself measured with performance.now() (JSON parse, first render, filter)
and the wall time of each Chromium run. docs/performance.md publishes them. Not a test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from assay._internal.batch.journal import DIAGNOSTICS_SUFFIX, ENVELOPE_SUFFIX, SUMMARY
from assay._internal.model.diagnostics import CaseDiagnostic, Diagnostics
from assay._internal.model.verdict import CaseResult, ControllerFacts, build_verdict, error_verdict
from assay._internal.signing.keys import generate_keypair, load_private_key
from assay._internal.signing.sign import sign_verdict

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 11, 5, 14, 3, 7, tzinfo=UTC)


def synthesize(out: Path, n: int, key_dir: Path) -> Path:
    """`n` gradings in grade-many's layout, signed with a new key in `key_dir`; returns the
    public key's path. Every 7th job has no verdict (in summary.json), every 3rd fails."""
    key_path, pub_path = generate_keypair(key_dir)
    key = load_private_key(key_path)
    out.mkdir(parents=True, exist_ok=True)
    errors = []
    for i in range(n):
        job = f"sub-{i:05d}"
        if i % 7 == 6:
            errors.append({"id": job, "error": "engine: the engine went away"})
            continue
        task = ("wordcount", "add", "canary")[i % 3]
        failing = i % 3 == 1
        gid = f"g-{i:016x}"
        facts = ControllerFacts(
            grading_id=gid, task_id=task, task_digest="sha256:" + "a1" * 32, tier="t3",
            runtime="docker/runc", submission_digest="sha256:" + f"{i:064x}",
            started_at=START + timedelta(seconds=i), ended_at=START + timedelta(seconds=i + 2),
            timings={"firewall": 0.04, "judge_prepare": 0.3, "candidate_start": 0.2,
                     "candidate": 0.9 + (i % 10) / 10, "judge_compare": 0.25},
            image_digests={"candidate": "sha256:" + "c3" * 32},
        )  # fmt: skip
        if i % 31 == 30:
            v = error_verdict(facts, "limit:memory")
        else:
            cases = [
                CaseResult(id=f"case-{c}", status="fail" if failing and c == 1 else "pass",
                           duration_s=0.01 * c)
                for c in range(3)
            ]  # fmt: skip
            codes = (["compare:mismatch"] if failing else []) + (
                ["note:judge-reused"] if i % 4 == 0 else []
            )
            v = build_verdict(facts, cases, 3, codes)
        (out / f"{job}{ENVELOPE_SUFFIX}").write_bytes(sign_verdict(v, key))
        if failing and v.cases:
            d = Diagnostics(grading_id=gid, cases=[CaseDiagnostic(
                id="case-1", reason="compare:mismatch", expected="5\n", actual=f"{i}\n",
                diff=f"--- expected\n+++ actual\n@@ -1 +1 @@\n-5\n+{i}")])  # fmt: skip
            (out / f"{job}{DIAGNOSTICS_SUFFIX}").write_bytes(d.to_json())
    (out / SUMMARY).write_text(json.dumps({"error_details": errors}))
    return pub_path


def chromium(url: str, profile: Path, extra: list[str]) -> tuple[str, float]:
    """Headless Chromium's DOM of `url` after its scripts ran, and the run's wall time."""
    argv = [
        "chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
        "--proxy-server=127.0.0.1:9", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-extensions",
        *extra, url,
    ]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True)
    return done.stdout, time.monotonic() - t0


def figure(dom: str, name: str) -> float:
    import re

    m = re.search(rf'data-{name}="([0-9.]+)"', dom)
    if m is None:
        raise SystemExit(f"the page did not record {name}: did its script run?")
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gradings", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="assay-report-bench-"))
    try:
        t0 = time.monotonic()
        pub = synthesize(tmp / "out", a.gradings, tmp / "keys")
        t_gen = time.monotonic() - t0
        html = tmp / "report.html"
        t0 = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "assay", "report", str(tmp / "out"), "--html", str(html),
             "--key", str(pub)],
            check=True, capture_output=True,
        )  # fmt: skip
        t_report = time.monotonic() - t0
        print(f"{a.gradings} gradings: synthesized in {t_gen:.1f}s; `assay report --key` "
              f"(verify every signature, write the page) {t_report:.1f}s; "
              f"page {html.stat().st_size / 1e6:.1f} MB")  # fmt: skip
        views = {
            "open (summary)": "",
            "filter reason=compare:mismatch": "#reason=compare%3Amismatch",
            "search q=sub-09": "#q=sub-09",
            "one grading": "#g=1",
        }
        for name, frag in views.items():
            parse, render, filt, wall = [], [], [], []
            for run in range(a.runs):
                profile = tmp / f"profile-{run}"
                dom, secs = chromium(html.as_uri() + frag, profile, ["--dump-dom"])
                shutil.rmtree(profile, ignore_errors=True)
                parse.append(figure(dom, "parse-ms"))
                render.append(figure(dom, "render-ms"))
                if "grading" not in name:
                    filt.append(figure(dom, "filter-ms"))
                wall.append(secs)
            med = statistics.median
            line = f"{name:32} parse {med(parse):7.1f} ms  render {med(render):7.1f} ms"
            if filt:
                line += f"  (filter {med(filt):6.1f} ms)"
            print(line + f"  chromium wall {med(wall):5.2f} s  (median of {a.runs})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
