"""Helpers for end-to-end tests that drive the real `assay` command on a real engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TASKS = ROOT / "tests" / "tasks"
PAYLOADS = ROOT / "tests" / "payloads"


@dataclass
class Graded:
    exit_code: int
    verdict: dict[str, Any] | None
    stderr: str

    @property
    def reasons(self) -> list[str]:
        return list(self.verdict["reason_codes"]) if self.verdict else []


def assay(*args: str, tmp: Path, timeout: float = 300) -> Graded:
    env = dict(os.environ)
    env.setdefault("ASSAY_BASE_IMAGE", "assay-base:latest")
    env["XDG_CONFIG_HOME"] = str(tmp / "config")
    proc = subprocess.run(
        [sys.executable, "-m", "assay", *args, "--json", "--out", str(tmp / "verdict.json")],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp,
    )
    verdict = json.loads(proc.stdout) if proc.stdout.strip() else None
    return Graded(proc.returncode, verdict, proc.stderr)


def write_solution(tmp: Path, name: str, text: str) -> Path:
    d = tmp / "sub"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return d


def our_grading(rt: Any, marker: Path) -> str | None:
    """The grading whose candidate runs for this test: its judge mounts our private task copy
    (other gradings may run beside this test, so labels alone cannot tell them apart)."""
    ours = {
        c["Labels"]["assay.grading"]
        for c in rt._api.containers(filters={"label": "assay.role=judge"})
        if any(m.get("Source", "").startswith(str(marker)) for m in c.get("Mounts", []))
    }
    running = {
        c["Labels"]["assay.grading"]
        for c in rt._api.containers(filters={"label": "assay.role=candidate"})
    }
    both = ours & running
    return both.pop() if both else None
