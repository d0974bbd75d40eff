"""Benchmark the archive firewall; prints figures (it is not a test and asserts nothing).

    python scripts/bench_firewall.py            # 100 MB / 1,000 files, 10 files, 1 GB, gzip
    python scripts/bench_firewall.py --quick    # skip the 1 GB archive
    python scripts/bench_firewall.py --names    # only the NFKC name flood (CPU per archive)

Each throughput figure comes from a fresh child process reading a tar file from disk (page cache
warm) and writing the normalised archive to a file, so its peak RSS (ru_maxrss) is the
firewall's plus the interpreter's; the interpreter's own RSS after imports is printed beside it.
The Python heap peak is measured in a second child under tracemalloc.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 10**6
MIB = 2**20


def _build(path: Path, files: int, file_bytes: int, compress: bool = False) -> None:
    """A tar of `files` distinct files; content varies so that no two files are identical."""
    from assay._internal.firewall.tarwrite import END_OF_ARCHIVE, header

    seed = os.urandom(MIB + file_bytes)
    opener = gzip.open if compress else open
    with opener(path, "wb") as out:  # type: ignore[operator]
        for i in range(files):
            out.write(header(f"src/pkg{i % 37}/file{i:05d}.bin", "file", file_bytes, 0o644))
            start = (i * 7919) % MIB
            out.write(seed[start : start + file_bytes])
            out.write(bytes(-file_bytes % 512))
        out.write(END_OF_ARCHIVE)


def _child(mode: str, archive: str, sink: str) -> None:
    """Run one check() (or materialise) and print JSON figures; called in a fresh process."""
    from dataclasses import replace

    from assay._internal.firewall.check import Accepted, FirewallLimits, check
    from assay._internal.firewall.materialise import materialise

    limits = replace(FirewallLimits(), max_total_bytes=4 * 2**30, max_archive_bytes=4 * 2**30)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if mode == "tracemalloc":
        import tracemalloc

        tracemalloc.start()
    started, cpu_started = time.perf_counter(), time.process_time()
    with open(archive, "rb") as source, open(sink, "wb") as out:
        result = check(source, out, limits)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert isinstance(result, Accepted), result
    figures = {"seconds": elapsed, "cpu_seconds": cpu, "baseline_kib": baseline}
    if mode == "tracemalloc":
        figures["heap_peak"] = tracemalloc.get_traced_memory()[1]
    if mode == "materialise":
        with tempfile.TemporaryDirectory(dir=Path(sink).parent) as dest:
            started = time.perf_counter()
            with open(sink, "rb") as normalised:
                materialise(normalised, Path(dest), limits)
            figures["materialise_seconds"] = time.perf_counter() - started
    figures["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(figures))


def _run_child(mode: str, archive: Path, workdir: Path) -> dict[str, float]:
    sink = workdir / f"out-{mode}-{archive.name}"
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(archive), str(sink)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    sink.unlink()
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _throughput(label: str, archive: Path, workdir: Path, materialise: bool = False) -> None:
    size = archive.stat().st_size
    runs = [
        _run_child("materialise" if materialise else "plain", archive, workdir) for _ in range(3)
    ]
    best = min(runs, key=lambda r: r["seconds"])
    heap = _run_child("tracemalloc", archive, workdir)["heap_peak"]
    rss, interpreter = best["maxrss_kib"] / 1024, best["baseline_kib"] / 1024
    cpu_rate = size / MB / min(r["cpu_seconds"] for r in runs)
    print(
        f"{label:<30} {size / MB:6.0f} MB  {size / MB / best['seconds']:5.0f} MB/s "
        f"({cpu_rate:4.0f} per CPU-s)  peak RSS {rss:4.1f} MiB (interpreter {interpreter:.1f})"
        f"  heap peak {heap / MIB:4.2f} MiB"
    )
    if materialise:
        rate = size / MB / best["materialise_seconds"]
        print(f"{'  then materialise it':<30} {'':9} {rate:5.0f} MB/s")


def _latency(archive: Path, rounds: int) -> None:
    import io

    from assay._internal.firewall.check import check

    data = archive.read_bytes()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        check(io.BytesIO(data), io.BytesIO())
        times.append(time.perf_counter() - started)
    times.sort()
    print(
        f"{'latency, 10 files of 1 KiB':<30} median {statistics.median(times) * 1000:.2f} ms, "
        f"p95 {times[int(rounds * 0.95)] * 1000:.2f} ms over {rounds} runs"
    )


def _names() -> None:
    """Controller CPU for hostile names: members named with U+FDFA, which NFKC expands 18-fold
    (the corpus case nfkc-expansion-flood), kept and dropped, against an ordinary archive."""
    import io

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dataclasses import replace

    from make_hostile_corpus import member, nfkc_flood, tar

    from assay._internal.firewall import FirewallLimits, check

    ordinary = tar(*(member(f"src/pkg{i % 37}/file{i:05d}.py".encode(), b"x") for i in range(2000)))
    flood = tar(*nfkc_flood(2000), member(b"solution.py", b"x"))
    unbudgeted = replace(FirewallLimits(), max_name_bytes=2**40)
    runs = [
        ("2,000 ordinary names, kept", ordinary, FirewallLimits(), None),
        ("2,000 U+FDFA names, kept", flood, FirewallLimits(), None),
        ("2,000 U+FDFA names, dropped", flood, FirewallLimits(), ["solution.py"]),
        ("  the same kept, no name budget", flood, unbudgeted, None),
    ]
    for label, data, limits, artifacts in runs:
        started = time.process_time()
        result = check(io.BytesIO(data), io.BytesIO(), limits, artifacts=artifacts)
        cpu = time.process_time() - started
        outcome = getattr(result, "rule", None) or f"accepted, {len(result.dropped)} dropped"  # type: ignore[union-attr]
        print(f"{label:<32} {len(data) / MB:5.1f} MB  {cpu * 1000:7.0f} ms CPU  ({outcome})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark the archive firewall.")
    parser.add_argument("--quick", action="store_true", help="skip the 1 GB archive")
    parser.add_argument("--names", action="store_true", help="only the NFKC name flood")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {os.uname().machine}, "
        f"load average {load} (wall-clock figures suffer under load; per-CPU-second ones less)"
    )
    _names()
    if args.names:
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-firewall-") as tmp:
        work = Path(tmp)
        small = work / "small.tar"
        _build(small, 10, 1024)
        _latency(small, 500)
        hundred = work / "100mb.tar"
        _build(hundred, 1000, 100_000)
        _throughput("100 MB, 1,000 files (tar)", hundred, work, materialise=True)
        gz = work / "100mb.tar.gz"
        _build(gz, 1000, 100_000, compress=True)
        _throughput("100 MB, 1,000 files (tar.gz)", gz, work)
        if not args.quick:
            hundred.unlink()
            gz.unlink()
            big = work / "1gb.tar"
            _build(big, 1000, 1_000_000)
            _throughput("1 GB, 1,000 files (tar)", big, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
