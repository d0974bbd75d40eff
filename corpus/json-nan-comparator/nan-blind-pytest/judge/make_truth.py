"""Ground truth for nan-blind-pytest: five secret random targets drawn from the per-grading seed."""

import json
import random
from pathlib import Path


def make_truth(seed: int, state: Path) -> None:
    rng = random.Random(seed)
    truth = {str(x): rng.getrandbits(62) for x in range(5)}
    (state / "truth.json").write_text(json.dumps(truth), encoding="utf-8")
