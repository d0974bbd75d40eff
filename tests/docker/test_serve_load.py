"""`assay serve` under load (issue 28), lean enough for CI: 256 requests in flight against two
workers, a seeded mix of correct, wrong, hostile and oversized submissions on the native route
and on /run_code (tests/helpers/serve_load.py). Nothing may be lost, every answer must be the
one its kind calls for (a verdict or a run's result; never an infrastructure error here), the
server's RSS must stay flat, its /metrics must count what was sent, and `running_server` checks
that it drains on SIGTERM, exits 0 and leaves no container and no temporary file.

The full figures (2,000 requests at 64 and 256 in flight, next to `assay grade-many`) come
from scripts/bench_serve.py and are quoted in docs/performance.md.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers import serve_load as load
from helpers.serve import owned_by, running_server

pytestmark = pytest.mark.docker

REQUESTS = 256  # all in flight at once
IN_FLIGHT = 256
HOSTILE = 10  # each of the five programs once on each route
MAX_BODY_MB = 1

RSS_GROWTH_MIB = 64
"""The end-of-run RSS may exceed the warm one by this much. The server settles at about 75 MiB
once warm; during the run it holds up to 256 open connections with their buffers and bodies (a
few MiB), and each flood's 1 MiB of output is parsed on a worker thread (a transient that is
given back; see the report of issue 28). What stays must not grow with the requests: a leak of
a container's state, an answer or a body per request (at least a few hundred KiB each here)
would pass this bound within the 256 requests."""


def test_256_in_flight_nothing_lost_every_answer_expected_rss_flat(tmp_path: Path) -> None:
    # 256 in flight on 2 workers is a deep queue by design: the last of a burst waits about a
    # minute here, so the queue's timeout (120 s by default) is raised for a slower CI machine;
    # an item that waited it out would be an infrastructure error, which this test forbids.
    args = ("--workers", "2", "--queue", "512", "--queue-timeout", "600",
            "--max-body-mb", str(MAX_BODY_MB))  # fmt: skip
    with running_server(tmp_path, *args) as s:
        items = load.build_mix(REQUESTS, seed=28, max_body_bytes=MAX_BODY_MB << 20,
                               hostile=HOSTILE)  # fmt: skip
        pid = s.proc.pid
        rss_start = load.rss_mib(pid)[0]
        load.drive(s.url, {}, load.warmup_mix(), 8)
        rss_warm = load.rss_mib(pid)[0]
        before = load.metrics(s.url, {})
        t0 = time.monotonic()
        results = load.drive(s.url, {}, items, IN_FLIGHT, timeout=300)
        wall = time.monotonic() - t0
        rss_end, rss_peak = load.rss_mib(pid)
        after = load.metrics(s.url, {})

        by_kind = Counter((r.item.kind, r.verdict) for r in results)
        print(f"\n{len(results)} requests, {IN_FLIGHT} in flight, {wall:.1f} s; RSS MiB start "
              f"{rss_start:.1f} warm {rss_warm:.1f} end {rss_end:.1f} peak {rss_peak:.1f}; "
              f"{dict(sorted(by_kind.items()))}")  # fmt: skip
        assert len(results) == REQUESTS
        assert {it.kind for it in items} == {"correct", "wrong", "hostile", "oversized"}
        assert not [r for r in results if r.verdict == "lost"], "lost:\n" + load.describe(
            r for r in results if r.verdict == "lost"
        )
        assert not [r for r in results if r.verdict == "infra"], "infrastructure errors:\n" + (
            load.describe(r for r in results if r.verdict == "infra")
        )
        unexpected = [r for r in results if r.verdict != "expected"]
        assert not unexpected, "unexpected answers:\n" + load.describe(unexpected)
        assert rss_end <= rss_warm + RSS_GROWTH_MIB, (rss_start, rss_warm, rss_end)

        # /metrics counted exactly what was sent and answered.
        def delta(name: str, **labels: str) -> float:
            return load.metric_delta(before, after, name, **labels)

        for (route, http), n in Counter((r.item.route, r.http) for r in results).items():
            assert delta("assay_serve_requests_total", route=route, status=str(http)) == n, (
                route, http, n,
            )  # fmt: skip
        for route in (load.NATIVE, load.RUN_CODE):
            sent = sum(r.item.route == route for r in results)
            assert delta("assay_serve_request_seconds_count", route=route) == sent
            statuses = Counter(r.status.lower() for r in results
                               if r.item.route == route and r.http == 200 and r.status)  # fmt: skip
            for status, n in statuses.items():
                assert delta("assay_serve_outcomes_total", route=route, outcome=status) == n
            assert delta("assay_serve_outcomes_total", route=route) == sum(statuses.values())
        assert delta("assay_serve_infra_errors_total") == 0
        assert delta("assay_serve_rejected_total") == 0
        gauges = {n: v for (n, _), v in after.items() if n.startswith("assay_serve_")}
        assert (gauges["assay_serve_queue_depth"], gauges["assay_serve_in_flight"]) == (0, 0)


SLOW = {"code": "import time\ntime.sleep(2)\nprint('done')", "language": "python"}


def test_a_full_queue_answers_429_with_retry_after_and_runs_nothing(tmp_path: Path) -> None:
    with running_server(tmp_path, "--workers", "1", "--queue", "2") as s:
        pid = s.proc.pid
        answers: list[tuple[int, dict[str, str], Any, float]] = []
        lock = threading.Lock()
        gate = threading.Barrier(10)

        def one() -> None:
            gate.wait()
            t0 = time.monotonic()
            r = requests.post(f"{s.url}/run_code", json=SLOW, timeout=120)
            with lock:
                answers.append((r.status_code, dict(r.headers), r.json(), time.monotonic() - t0))

        # Sample the server's containers while the burst runs: one worker, so at most one.
        most = 0
        threads = [threading.Thread(target=one) for _ in range(10)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            most = max(most, len(owned_by(pid)))
            time.sleep(0.05)
        for t in threads:
            t.join()
        metrics = load.metrics(s.url, {})

        codes = Counter(code for code, *_ in answers)
        assert set(codes) == {200, 429} and codes[200] + codes[429] == 10, codes
        # workers + queue = 3 are admitted; the rest arrive while those run or wait.
        assert codes[200] == 3 and codes[429] == 7, codes
        for code, headers, body, seconds in answers:
            if code == 429:
                assert headers.get("retry-after", "").isdigit(), headers
                assert int(headers["retry-after"]) >= 1, headers
                assert "full" in body["error"] and seconds < 1.5, (body, seconds)
            else:
                assert body["status"] == "Success" and body["run_result"]["stdout"] == "done\n"
        # The refused ones ran nothing: only the admitted were executed, one at a time.
        assert most <= 1, most
        total = sum(v for (n, _), v in metrics.items() if n == "assay_serve_outcomes_total")
        assert total == 3
        assert metrics[("assay_serve_rejected_total", (("reason", "full"),))] == 7
        assert metrics[("assay_serve_requests_total", (("route", "/run_code"), ("status", "429")))] == 7  # fmt: skip
        # Once the burst is over, the server takes work again.
        again = requests.post(f"{s.url}/run_code", json=SLOW, timeout=120).json()
        assert again["status"] == "Success"
