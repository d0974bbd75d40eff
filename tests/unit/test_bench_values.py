"""`assay bench`'s judge figures (proof/bench_values.py): every shape measured, under the cap,
and the judge passes each honest comparison it times (a figure for a wrong answer is none)."""

from __future__ import annotations

import math

import pytest

from assay._internal.proof import bench_values as B


def test_every_shape_and_comparator_is_measured_at_full_size() -> None:
    got = B.judge_value_costs(repeats=1)
    assert set(got) == set(B.SHAPES)
    for name, row in got.items():
        assert 0 < row["bytes"] <= B.OUTPUT_CAP, name
        for kind in B.COMPARATORS:
            assert math.isfinite(row[f"{kind}_s"]) and row[f"{kind}_s"] > 0, (name, kind)
    assert got["colliding_ints"]["bytes"] > 0.9 * B.OUTPUT_CAP  # the flood the issue measured


def test_a_shape_past_the_output_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="over the output cap"):
        B.judge_value_costs(n=60_000, repeats=1)
