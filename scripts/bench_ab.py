"""Strict grading before and after the speed work, side by side under the same load.

    .venv/bin/python scripts/bench_ab.py [ROUNDS] [BEFORE_COMMIT]

Loads src/assay/_internal/strict.py as it was at BEFORE_COMMIT (default c24a3e0, the last
sequential version) next to the current one, and interleaves: two bare containers (the floor),
one grading by the old code, one by the current code with a fresh judge, one with a reused judge.
Prints medians as JSON. Needs Docker and the base image (ASSAY_BASE_IMAGE, default
assay-base:latest).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import types
from pathlib import Path

import docker

from assay._internal.model.task import load_task
from assay._internal.proof.bench import measure_floor, p90
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.runtime.observed import ObservedRuntime
from assay._internal.tiers.core.controller import Source
from assay._internal.tiers.strict.grade import INCONTAINER, grade_strict
from assay._internal.tiers.strict.judgepool import JudgePool

ROOT = Path(__file__).resolve().parent.parent
_FLAT = "assay._internal._flat_layout"
_FLAT_LAYOUT = {
    "runtime": "assay._internal.runtime",
    "runtime.scope": "assay._internal.runtime.scope",
} | {
    name: f"assay._internal.{package}.{module}"
    for name, (package, module) in {
        "controller": ("tiers", "controller"),
        "firewall": ("firewall", "check"),
        "intake": ("tiers", "intake"),
        "judge_report": ("tiers", "judge_report"),
        "judgepool": ("tiers", "judgepool"),
        "overlap": ("tiers", "overlap"),
        "strict_json": ("model", "strict_json"),
        "task": ("model", "task"),
        "verdict": ("model", "verdict"),
    }.items()
}


def _single_file_tar(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def load_before(commit: str) -> object:
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:src/assay/_internal/strict.py"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    # The old module finds its in-container files next to itself; point it at the real ones.
    text = "\n".join(
        f"INCONTAINER = Path({str(INCONTAINER)!r})" if line.startswith("INCONTAINER =") else line
        for line in text.splitlines()
    )
    # The old module imports its siblings from the flat layout before the package split: load
    # it inside a stand-in package whose submodules are today's modules.
    flat = types.ModuleType(_FLAT)
    flat.__path__ = []
    sys.modules[_FLAT] = flat
    for old, new in _FLAT_LAYOUT.items():
        sys.modules[f"{_FLAT}.{old}"] = importlib.import_module(new)
    intake = types.ModuleType(f"{_FLAT}.intake")
    real = vars(importlib.import_module(_FLAT_LAYOUT["intake"]))
    intake.__dict__.update({k: v for k, v in real.items() if not k.startswith("__")})
    intake.__dict__["single_file_tar"] = _single_file_tar  # removed since; the old code used it
    sys.modules[intake.__name__] = intake
    with tempfile.TemporaryDirectory(prefix="assay-ab-") as tmp:
        path = Path(tmp) / "strict_before.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"{_FLAT}.strict_before", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    before = load_before(sys.argv[2] if len(sys.argv) > 2 else "c24a3e0")
    image = os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")
    client = docker.from_env(version="auto", max_pool_size=32)
    rt = ObservedRuntime(DockerRuntime(client=client))
    task = load_task(ROOT / "examples" / "add")
    sub = Source(path=ROOT / "examples" / "add" / "solutions" / "correct")
    pool = JudgePool(rt)

    def reused(gid: str) -> object:
        try:
            return grade_strict(rt, task, sub, image, gid, judges=pool)
        finally:
            pool.finish(gid)

    modes = {
        "before": lambda gid: before.grade_strict(rt, task, sub, image, gid),  # type: ignore[attr-defined]
        "fresh_judge": lambda gid: grade_strict(rt, task, sub, image, gid),
        "reused_judge": reused,
    }
    walls: dict[str, list[float]] = {m: [] for m in modes}
    floor: list[float] = []
    load = os.getloadavg()
    try:
        for r in range(rounds + 1):  # round 0 warms caches and is not counted
            f = measure_floor(rt.inner, image, 2)
            for mode, fn in modes.items():
                gid = "g-" + os.urandom(8).hex()
                t0 = time.monotonic()
                v = fn(gid)
                wall = time.monotonic() - t0
                rt.take(gid)
                assert getattr(v, "passed", False), (mode, getattr(v, "reason_codes", None))
                if r:
                    walls[mode].append(wall)
            if r:
                floor += f
    finally:
        pool.close()
    out = {
        "rounds": rounds,
        "load_avg_start": [round(x, 2) for x in load],
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "floor_median_s": round(statistics.median(floor), 4),
        **{
            m: {"wall_median_s": round(statistics.median(w), 4), "wall_p90_s": round(p90(w), 4)}
            for m, w in walls.items()
        },
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
