"""A load driver for `assay serve` (issue 28), shared by tests/docker/test_serve_load.py (lean,
in CI) and scripts/bench_serve.py (the figures in docs/performance.md).

`build_mix` makes a seeded, deterministic list of requests: correct and wrong Python solutions
of one APPS-style problem, given inline, on the native route (`POST /v1/grade`, `input_output`)
and on SandboxFusion's `POST /run_code` (one of the problem's tests as stdin); hostile programs
on both routes (a stdout flood, a fork bomb, /tmp filled, a sleep past the deadline, a memory
hog); and bodies over the server's `--max-body-mb` (some with a Content-Length, some chunked).
`drive` sends them with N in flight (a thread and a `requests.Session` each), records for each
its HTTP status, the answer's status field and its latency, and classifies the answer:

- expected: correct -> passed (native) / Success with the test's stdout (run_code); wrong ->
  failed / Success with another stdout, or Failed; hostile -> failed / not Success (a limit,
  TimeLimitExceeded, a non-zero exit); oversized -> 413;
- infra: an infrastructure status (native `infra_error`, SandboxFusion `SandboxError`), counted
  apart and never as an expected answer;
- lost: no HTTP answer at all (a connection error or a client timeout);
- unexpected: anything else.

It also samples the server's RSS (/proc/PID/status) and the machine's CPU seconds (/proc/stat).
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

# -- the problem: APPS-style, given inline by its tests ---------------------------------------

STATEMENT = "The first line holds n, the second n integers: print their sum, then their maximum."


def _case(rng: random.Random, n: int) -> tuple[str, str]:
    xs = [rng.randint(-1000, 1000) for _ in range(n)]
    return f"{n}\n{' '.join(map(str, xs))}\n", f"{sum(xs)}\n{max(xs)}\n"


_CASES = [_case(random.Random(i), n) for i, n in enumerate((2, 3, 8))]
INPUT_OUTPUT: dict[str, list[str]] = {
    "inputs": [i for i, _ in _CASES],
    "outputs": [o for _, o in _CASES],
}
"""The problem's tests in APPS's `input_output` form (3 tests)."""

CORRECT = [
    "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs))\nprint(max(xs))\n",
    "import sys\nd = sys.stdin.read().split()\nxs = [int(t) for t in d[1:]]\n"
    "print(sum(xs), max(xs), sep='\\n')\n",
    "input()\ns = m = None\nfor t in input().split():\n    v = int(t)\n"
    "    s = v if s is None else s + v\n    m = v if m is None or v > m else m\n"
    "print(s)\nprint(m)\n",
]
WRONG = [
    # the sum only
    "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs))\n",
    # the minimum for the maximum
    "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs))\nprint(min(xs))\n",
    # off by one
    "n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs) + 1)\nprint(max(xs))\n",
    # crashes
    "n = int(input())\nraise ValueError('no')\n",
]
HOSTILE = {
    "flood": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
    "fork": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    "disk": "f = open('/tmp/fill', 'wb')\nwhile True:\n    f.write(b'0' * (1 << 20))\n",
    "sleep": "import time\ntime.sleep(60)\n",
    "memory": "x = []\nwhile True:\n    x.append(bytearray(1 << 24))\n",
}
"""The hostile programs of tests/docker/test_serve_docker.py."""

RUN_TIMEOUT = 3
"""The `run_timeout` each /run_code request asks for (the sleeper's deadline there)."""

NATIVE, RUN_CODE = "/v1/grade", "/run_code"

DEFAULT_WEIGHTS = {"correct": 0.40, "wrong": 0.30, "hostile": 0.18, "oversized": 0.12}


@dataclass(frozen=True)
class Item:
    index: int
    kind: str  # correct wrong hostile oversized
    variant: str  # which solution / hostile program / how the body is sent
    route: str  # NATIVE or RUN_CODE
    body: bytes
    chunked: bool = False  # send without a Content-Length
    expected_stdout: str | None = None  # run_code: the test's expected output


def native_body(code: str) -> dict[str, Any]:
    return {"input_output": INPUT_OUTPUT, "code": code, "language": "python3"}


def run_code_body(code: str, test: int) -> dict[str, Any]:
    return {"code": code, "language": "python", "stdin": INPUT_OUTPUT["inputs"][test],
            "run_timeout": RUN_TIMEOUT}  # fmt: skip


def _item(
    index: int,
    kind: str,
    rng: random.Random,
    max_body_bytes: int,
    chunked_share: float,
    routes: tuple[str, ...],
) -> Item:
    route = rng.choice(routes)
    test = rng.randrange(len(INPUT_OUTPUT["inputs"]))
    expected = INPUT_OUTPUT["outputs"][test] if route == RUN_CODE else None
    if kind in ("correct", "wrong"):
        pool = CORRECT if kind == "correct" else WRONG
        k = rng.randrange(len(pool))
        code, variant = pool[k], f"{kind}{k}"
    elif kind == "hostile":
        variant = rng.choice(sorted(HOSTILE))
        code = HOSTILE[variant]
    else:  # oversized: a valid request padded past the cap with a comment
        pad = max_body_bytes + rng.randint(1, 256 << 10)
        code = CORRECT[0] + "#" + "x" * pad
        chunked = rng.random() < chunked_share
        body = native_body(code) if route == NATIVE else run_code_body(code, test)
        return Item(index, kind, "chunked" if chunked else "declared", route,
                    json.dumps(body).encode(), chunked)  # fmt: skip
    body = native_body(code) if route == NATIVE else run_code_body(code, test)
    return Item(index, kind, variant, route, json.dumps(body).encode(), False, expected)


def build_mix(
    n: int,
    seed: int,
    max_body_bytes: int,
    weights: dict[str, float] | None = None,
    hostile: int | None = None,
    chunked: float = 0.5,
    routes: tuple[str, ...] = (NATIVE, RUN_CODE),
) -> list[Item]:
    """`n` requests, the same ones for the same arguments: the kinds in proportion to
    `weights`, or exactly `hostile` hostile ones when given. The hostile ones go round-robin
    over every program on both routes, so that 10 of them are each program once per route.
    `chunked`: the share of the oversized bodies sent without a Content-Length; `routes`: the
    routes the requests go to, each equally likely."""
    rng = random.Random(seed)
    w = dict(weights or DEFAULT_WEIGHTS)
    fixed = {"hostile": hostile} if hostile is not None else {}
    w = {k: v for k, v in w.items() if k not in fixed}
    kinds = sorted([*w, *fixed])
    rest = n - sum(fixed.values())
    counts = {k: fixed.get(k, int(rest * w.get(k, 0) / sum(w.values()))) for k in kinds}
    counts["correct"] += n - sum(counts.values())
    order = [k for k in kinds for _ in range(counts[k])]
    rng.shuffle(order)
    items = [_item(i, kind, rng, max_body_bytes, chunked, routes) for i, kind in enumerate(order)]
    # The hostile ones cover every program on every route before repeating one.
    hostiles = [it for it in items if it.kind == "hostile"]
    combos = [(h, r) for h in sorted(HOSTILE) for r in routes]
    for it, (h, r) in zip(hostiles, combos * (len(hostiles) // len(combos) + 1), strict=False):
        test = rng.randrange(len(INPUT_OUTPUT["inputs"]))
        body = native_body(HOSTILE[h]) if r == NATIVE else run_code_body(HOSTILE[h], test)
        items[it.index] = Item(it.index, "hostile", h, r, json.dumps(body).encode())
    return items


def warmup_mix(seed: int = 1) -> list[Item]:
    """A few of each non-hostile kind on both routes: the judge, the inline task, the page
    cache and the server's own allocations settle before the RSS is sampled."""
    rng = random.Random(seed)
    items: list[Item] = []
    for i in range(16):
        kind = ("correct", "wrong")[i % 2]
        pool = CORRECT if kind == "correct" else WRONG
        code = pool[i % len(pool)]
        route = (NATIVE, RUN_CODE)[(i // 2) % 2]
        test = rng.randrange(len(INPUT_OUTPUT["inputs"]))
        body = native_body(code) if route == NATIVE else run_code_body(code, test)
        expected = INPUT_OUTPUT["outputs"][test] if route == RUN_CODE else None
        items.append(Item(i, kind, f"{kind}{i % len(pool)}", route, json.dumps(body).encode(),
                          False, expected))  # fmt: skip
    return items


# -- sending and classifying ------------------------------------------------------------------


@dataclass
class Result:
    item: Item
    http: int | None  # None: lost
    status: str | None  # the answer's status field
    seconds: float
    verdict: str  # expected, infra, lost, unexpected
    detail: str = ""


INFRA_STATUSES = frozenset({"infra_error", "SandboxError"})


def classify(item: Item, http: int, answer: Any) -> tuple[str | None, str, str]:
    """(the answer's status field, the class, a detail for an unexpected answer)."""
    status = answer.get("status") if isinstance(answer, dict) else None
    if item.kind == "oversized":
        return status, ("expected" if http == 413 else "unexpected"), f"HTTP {http}"
    if http != 200:
        return status, "unexpected", f"HTTP {http}: {str(answer)[:200]}"
    if status in INFRA_STATUSES:
        return status, "infra", str(answer.get("error") or answer.get("message"))[:300]
    if item.route == NATIVE:
        want = "passed" if item.kind == "correct" else "failed"
        ok = status == want and (answer.get("score") == 1.0) == (item.kind == "correct")
        return status, ("expected" if ok else "unexpected"), f"{status} {answer.get('score')}"
    run = answer.get("run_result") or {}
    stdout = run.get("stdout")
    if item.kind == "correct":
        ok = status == "Success" and stdout == item.expected_stdout
    elif item.kind == "wrong":
        ok = status == "Failed" or (status == "Success" and stdout != item.expected_stdout)
    else:  # hostile: a limit, a deadline or a failure; never a clean success
        ok = status == "Failed" or run.get("status") == "TimeLimitExceeded"
    limit = (answer.get("assay") or {}).get("limit")
    return status, ("expected" if ok else "unexpected"), f"{status} {run.get('status')} {limit}"


def _chunks(data: bytes, size: int = 64 << 10) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def send(session: requests.Session, url: str, headers: dict[str, str], item: Item,
         timeout: float) -> Result:  # fmt: skip
    hdrs = dict(headers, **{"Content-Type": "application/json"})
    t0 = time.monotonic()
    try:
        data: bytes | Iterator[bytes] = _chunks(item.body) if item.chunked else item.body
        r = session.post(url + item.route, data=data, headers=hdrs, timeout=timeout)
        try:
            answer: Any = r.json()
        except ValueError:
            answer = r.text[:200]
        http = r.status_code
    except requests.RequestException as exc:
        return Result(item, None, None, time.monotonic() - t0, "lost",
                      f"{type(exc).__name__}: {str(exc)[:200]}")  # fmt: skip
    seconds = time.monotonic() - t0
    status, verdict, detail = classify(item, http, answer)
    return Result(item, http, status, seconds, verdict, detail)


def drive(url: str, headers: dict[str, str], items: Iterable[Item], in_flight: int,
          timeout: float = 600.0) -> list[Result]:  # fmt: skip
    """Send every item with `in_flight` at once (each thread takes the next item as soon as
    its previous answer came back); results in the items' order."""
    todo = list(items)
    results: list[Result | None] = [None] * len(todo)
    lock = threading.Lock()
    nxt = iter(range(len(todo)))

    def worker() -> None:
        with requests.Session() as s:
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                results[i] = send(s, url, headers, todo[i], timeout)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # A thread that died on something other than a request error left its item unanswered.
    return [r if r is not None else Result(it, None, None, 0.0, "lost", "the driver failed")
            for r, it in zip(results, todo, strict=True)]  # fmt: skip


# -- the server's and the machine's figures ---------------------------------------------------


def rss_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of process `pid`, in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def machine_cpu_seconds() -> float:
    """CPU seconds the whole machine spent busy since boot (all cores; /proc/stat's first line
    without idle and iowait)."""
    parts = Path("/proc/stat").read_text().splitlines()[0].split()
    ticks = [int(x) for x in parts[1:9]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """CPU seconds of this process (the driver's threads)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""A /metrics scrape: (sample name, its labels sorted) -> value."""


def metrics(base_url: str, headers: dict[str, str]) -> Samples:
    """The server's /metrics samples."""
    r = requests.get(f"{base_url}/metrics", headers=headers, timeout=30)
    r.raise_for_status()
    out: Samples = {}
    for fam in text_string_to_metric_families(r.text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def metric_delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    """The sum over samples named `name` whose labels include `labels`, after minus before."""

    def total(m: Samples) -> float:
        return sum(
            v for (n, ls), v in m.items()
            if n == name and all(dict(ls).get(k) == x for k, x in labels.items())
        )  # fmt: skip

    return total(after) - total(before)


# -- summaries --------------------------------------------------------------------------------


def percentile(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, round(p / 100 * len(s) + 0.5) - 1))
    return s[k]


@dataclass
class Run:
    """One driven run and the figures sampled around it."""

    results: list[Result]
    wall: float
    machine_cpu: float
    driver_cpu: float
    rss: dict[str, float] = field(default_factory=dict)  # start, warm, end, peak (MiB)

    def by(self, pred: Callable[[Result], bool]) -> list[Result]:
        return [r for r in self.results if pred(r)]

    @property
    def lost(self) -> list[Result]:
        return self.by(lambda r: r.verdict == "lost")

    @property
    def infra(self) -> list[Result]:
        return self.by(lambda r: r.verdict == "infra")

    @property
    def unexpected(self) -> list[Result]:
        return self.by(lambda r: r.verdict == "unexpected")

    @property
    def graded(self) -> list[Result]:
        """Answered with a verdict or a run's result: HTTP 200 and no infrastructure status
        (an oversized body refused with 413 is not graded)."""
        return self.by(lambda r: r.http == 200 and r.verdict != "infra"
                       and r.item.kind != "oversized")  # fmt: skip

    def route_figures(self, route: str) -> dict[str, float]:
        """Over the requests of `route` that were graded: how many, per second of the run's
        wall time, and their latency percentiles."""
        rs = [r for r in self.graded if r.item.route == route]
        lat = [r.seconds for r in rs]
        return {
            "n": len(rs),
            "per_s": len(rs) / self.wall if self.wall else float("nan"),
            "p50": percentile(lat, 50),
            "p99": percentile(lat, 99),
            "mean": statistics.fmean(lat) if lat else float("nan"),
        }

    def tally(self) -> Counter[tuple[str, str, str]]:
        return Counter((r.item.kind, r.item.route, r.verdict) for r in self.results)


def describe(results: Iterable[Result], limit: int = 40) -> str:
    lines = [f"#{r.item.index} {r.item.kind}/{r.item.variant} {r.item.route}: {r.verdict} "
             f"HTTP {r.http} {r.status} {r.seconds:.1f}s {r.detail}" for r in results]  # fmt: skip
    more = f"\n... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


def run_load(url: str, headers: dict[str, str], pid: int, items: list[Item], in_flight: int,
             warmup: list[Item] | None = None, timeout: float = 600.0) -> Run:  # fmt: skip
    """Sample the server's RSS, warm it up, sample again, drive `items`, sample at the end."""
    rss: dict[str, float] = {"start": rss_mib(pid)[0]}
    if warmup:
        drive(url, headers, warmup, min(in_flight, 8), timeout)
    rss["warm"] = rss_mib(pid)[0]
    m0, d0, t0 = machine_cpu_seconds(), own_cpu_seconds(), time.monotonic()
    results = drive(url, headers, items, in_flight, timeout)
    wall = time.monotonic() - t0
    m1, d1 = machine_cpu_seconds(), own_cpu_seconds()
    rss["end"], rss["peak"] = rss_mib(pid)
    return Run(results, wall, m1 - m0, d1 - d0, rss)
