"""The judge's own work on one case's output, measured in this process (no container): the
bytes parsed, decoded and compared exactly as `judge.py compare` does it, for an honest result
and for hash-collision floods of the same size, so a regression to quadratic shows as a number.

Every shape is a set of N distinct elements; a flood's elements all share one Python hash
(k * (2**61 - 1) hashes to 0 for every int k). Each figure is the best of `repeats` runs.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from assay._incontainer import judge, values

N = 43_000  # about what fits in the 1 MiB output cap as colliding ints
P = 2**61 - 1
OUTPUT_CAP = 1 << 20

SHAPES: dict[str, Callable[[int], Any]] = {
    "ordinary_ints": lambda n: {"$set": list(range(n))},
    "colliding_ints": lambda n: {"$set": [k * P for k in range(1, n + 1)]},
    "colliding_dict_keys": lambda n: {"$dict": [[k * P, 0] for k in range(1, n // 2 + 1)]},
    "colliding_tuples": lambda n: {"$set": [{"$tuple": [k * P]} for k in range(1, n // 3 + 1)]},
}
COMPARATORS = ("exact", "equal", "float")


def _judge_once(raw: bytes, expected: Any, kind: str) -> float:
    """Seconds for the judge's steps on one case: strict parse, decode, compare."""
    compare = judge.Comparator(
        argparse.Namespace(comparator=kind, custom=None, rel_tol=1e-9, abs_tol=1e-9)
    )
    start = time.perf_counter()
    actual = values.decode_data(values.parse_json(raw, OUTPUT_CAP))
    ok, _ = compare({"id": "bench", "input": [], "expected": expected}, actual)
    took = time.perf_counter() - start
    if not ok:
        raise AssertionError(f"the judge failed an output equal to its expected value ({kind})")
    return took


def judge_value_costs(n: int = N, repeats: int = 3) -> dict[str, dict[str, float]]:
    """Per shape: the output's bytes and the best seconds per comparator."""
    out: dict[str, dict[str, float]] = {}
    for name, make in SHAPES.items():
        doc = make(n)
        raw = json.dumps(doc, separators=(",", ":")).encode()
        if len(raw) > OUTPUT_CAP:
            raise ValueError(f"{name}: {len(raw)} bytes is over the output cap")
        row: dict[str, float] = {"bytes": float(len(raw))}
        for kind in COMPARATORS:
            row[f"{kind}_s"] = round(min(_judge_once(raw, doc, kind) for _ in range(repeats)), 4)
        out[name] = row
    return out
