"""`assay bench --quick` runs on a real engine and writes the figures issue 7 names."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker

KEYS = (
    "ratio_t3_t0_wall",
    "ratio_t3_overhead_floor",
    "strict_gradings_per_min",
    "controller_peak_rss_mb",
)


def test_quick_bench_writes_the_figures(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    # The default backend: this checks the figures the benchmark writes, not the engine.
    env["ASSAY_RUNTIME"] = "runc"
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "assay", "bench", "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    for key in KEYS:
        assert key in r
    assert r["ratio_t3_overhead_floor"] > 0
    assert r["strict_gradings_per_min"] > 0
    assert 10 < r["controller_peak_rss_mb"] < 1000
    for mode in ("reused_judge", "fresh_judge"):
        assert set(r["throughput_per_min"][mode]) == {"1", "2", "4", "8"}
    assert r["floor_s"]["median"] > 0
    t3 = r["latency"]["t3/function"]
    assert t3["containers"] == 2 and t3["not_passed"] == []
    reused = r["latency"]["t3-reused-judge/function"]
    assert reused["containers"] == 1 and reused["not_passed"] == []
    assert r["throughput_not_passed"] == 0
    assert set(r["judge_values_s"]) == {"ordinary_ints", "colliding_ints", "colliding_dict_keys",
                                        "colliding_tuples"}  # fmt: skip
    assert "judge: parse, decode and compare" in proc.stdout
    # Either T0 was measured (and the ratio is a number) or the output says why not.
    assert (r["ratio_t3_t0_wall"] is not None and math.isfinite(r["ratio_t3_t0_wall"])) or (
        "t0" in r["unavailable"]
    )
    assert "targets" in proc.stdout


class _Recording:
    """The Docker runtime, noting each container's labels right after it is created."""

    def __init__(self, inner: Any, client: Any) -> None:
        self.inner, self.client, self.labels = inner, client, {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create(self, spec: Any) -> str:
        cid = str(self.inner.create(spec))
        self.labels[cid] = self.client.api.inspect_container(cid)["Config"]["Labels"]
        return cid


def test_floor_containers_go_through_the_runtime_labelled_and_removed(
    docker_runtime: Any, base_image: str
) -> None:
    """Issue 10 finding 10c: the floor was `client.containers.run`, outside the Runtime."""
    import docker

    from assay._internal.proof.bench import measure_floor
    from assay._internal.runtime.fake import FakeRuntime

    fake = FakeRuntime()
    assert len(measure_floor(fake, "img", 3)) == 3 and fake.leftovers() == []

    client = docker.from_env()
    rt = _Recording(docker_runtime, client)
    walls = measure_floor(rt, base_image, 2)  # type: ignore[arg-type]
    assert len(walls) == 2 and all(w > 0 for w in walls)
    assert len(rt.labels) == 2
    gids = {labels["assay.grading"] for labels in rt.labels.values()}
    assert len(gids) == 1
    for labels in rt.labels.values():
        assert labels["assay.role"] == "floor" and labels["assay.owner"]
    for cid in rt.labels:
        with pytest.raises(docker.errors.NotFound):
            client.api.inspect_container(cid)
    assert docker_runtime.leftovers(gids.pop()) == []
