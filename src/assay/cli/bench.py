"""`assay bench`: measure grading overhead on this machine and print it (optionally as JSON)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from assay._internal.model.atomic import atomic_write
from assay._internal.proof.bench import Settings, run_bench
from assay._internal.proof.bench_values import COMPARATORS
from assay._internal.proof.locate import default_dir
from assay._internal.runtime.engine import engine_client, open_runtime
from assay._internal.runtime.observed import ObservedRuntime

from .common import engine_options, exit_codes


def _f(x: Any, unit: str = "", digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}{unit}" if isinstance(x, float) else f"{x}{unit}"


def render(r: dict[str, Any], console: Console) -> None:
    m = r["machine"]
    console.print(
        f"machine: {m['cpus']} cpus, {m['memory_gib']} GiB, {m['os']}, kernel {m['kernel']}, "
        f"Docker {m['docker']} ({m['oci_runtime']}, cgroup v{m['cgroup']}), "
        f"load {m['load_avg_at_start']}",
        markup=False,
    )
    fl = r["floor_s"]
    console.print(
        f"floor: one bare {r['image']} container running `true`: median {fl['median']:.3f}s, "
        f"p90 {fl['p90']:.3f}s (n={fl['n']})",
        markup=False,
    )
    t = Table(title="per grading (honest tasks, sequential)")
    for col in (
        "tier/kind",
        "task",
        "wall med",
        "wall p90",
        "ctl cpu med",
        "ctl cpu p90",
        "machine cpu med",
        "machine cpu p90",
        "containers",
        "overhead med",
        "floor",
        "overhead/floor",
    ):
        t.add_column(col, justify="right" if col not in ("tier/kind", "task") else "left")
    for name, row in r["latency"].items():
        t.add_row(
            name,
            row["task"],
            _f(row["wall_median_s"], "s"),
            _f(row["wall_p90_s"], "s"),
            _f(row["cpu_controller_median_s"], "s"),
            _f(row["cpu_controller_p90_s"], "s"),
            _f(row["cpu_machine_median_s"], "s"),
            _f(row["cpu_machine_p90_s"], "s"),
            str(row["containers"]),
            _f(row["overhead_median_s"], "s"),
            _f(row["floor_s"], "s"),
            _f(row["overhead_over_floor"], "x", 2),
        )
    console.print(t)
    for tier, why in r["unavailable"].items():
        console.print(f"unavailable: {tier}: {why}", markup=False)
    for name, row in r["latency"].items():
        if row["not_passed"]:
            console.print(f"[red]{name}: {len(row['not_passed'])} honest grading(s) did not pass")
    for mode, levels in r["throughput_per_min"].items():
        console.print(
            f"throughput (t3 function, batch, {mode.replace('_', ' ')}): "
            + ", ".join(f"--jobs {k}: {v:.1f}/min" for k, v in levels.items()),
            markup=False,
        )
    if r["throughput_not_passed"]:
        console.print(f"[red]{r['throughput_not_passed']} throughput gradings did not pass")
    if "t3/function" in r["latency"]:
        ops = r["latency"]["t3/function"]["ops_median_s"]
        phases = r["latency"]["t3/function"]["phases_median_s"]
        console.print(
            "t3 function profile, engine calls (median s per grading): "
            + ", ".join(f"{k} {v:.3f}" for k, v in ops.items()),
            markup=False,
        )
        console.print(
            "t3 function phases (median s, phases may overlap): "
            + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()),
            markup=False,
        )
    tv = Table(title="judge: parse, decode and compare one output (in-process, best of runs)")
    for col in ("output", "bytes", "exact", "equal", "float"):
        tv.add_column(col, justify="left" if col == "output" else "right")
    for name, row in r.get("judge_values_s", {}).items():
        tv.add_row(name, str(int(row["bytes"])), *(_f(row[f"{k}_s"], "s") for k in COMPARATORS))
    console.print(tv)
    tg = Table(title="targets (issue 7)")
    for col in ("target", "measured", "met"):
        tg.add_column(col)
    for name, row in r["targets"].items():
        met = {True: "[green]yes[/]", False: "[red]NO[/]", None: "n/a"}[row["met"]]
        tg.add_row(name, _f(row["value"], "", 2), met)
    console.print(tg)
    console.print(
        f"controller RSS: peak {r['controller_peak_rss_mb']} MB; "
        f"before/after throughput {r['controller_rss_mb_before_after_throughput']} MB; "
        f"bench took {r['bench_wall_s']}s",
        markup=False,
    )


@click.command("bench")
@click.option("--quick", is_flag=True, help="A small run (about a minute): fewer samples.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--samples", type=click.IntRange(1, 1000), help="Gradings per tier and task.")
@engine_options
@click.option(
    "--examples",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Where the honest example tasks live; default: $ASSAY_EXAMPLES, the checkout's or "
    "./examples.",
)
def bench_cmd(
    quick: bool,
    json_out: Path | None,
    samples: int | None,
    base_image: str,
    oci_runtime: str,
    examples: Path | None,
) -> None:
    """Measure per-grading cost of each tier, the container floor, throughput and memory."""
    err = Console(stderr=True, highlight=False)
    settings = Settings.quick() if quick else Settings()
    if samples is not None:
        settings = Settings(
            samples=samples,
            floor_samples=settings.floor_samples,
            per_worker=settings.per_worker,
            minimum_batch=settings.minimum_batch,
        )
    with exit_codes(interrupted="interrupted; no figures"):
        client = engine_client(parallel=8)
        rt = ObservedRuntime(open_runtime(oci_runtime, client=client))
        result = run_bench(
            client,
            rt,
            base_image,
            oci_runtime,
            settings,
            examples=examples or default_dir("examples"),
            say=lambda s: err.print(s, markup=False),
        )
    render(result, Console(highlight=False, width=200))
    if json_out is not None:
        atomic_write(json_out, (json.dumps(result, indent=2) + "\n").encode())
