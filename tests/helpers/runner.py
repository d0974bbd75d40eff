"""Run the real in-container runner on a candidate, in a real container, as the strict tier
does (its container spec and argv: the runner as the container's own process, started once),
and return the runner's per-case results."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay._internal.model.task import load_task
from assay._internal.runtime.base import Runtime
from assay._internal.runtime.docker import DockerRuntime
from assay._internal.runtime.scope import GradingScope
from assay._internal.tiers.strict.candidate import candidate_spec, runner_argv

ROOT = Path(__file__).resolve().parents[2]


def docker_rt(oci: str) -> DockerRuntime:
    return DockerRuntime(oci_runtime=None if oci == "runc" else oci)


def run_function(
    rt: Runtime,
    image: str,
    tmp: Path,
    solution: str,
    inputs: list[Any],
    *,
    cid_out: list[str] | None = None,
    task_dir: Path | None = None,
    after: Callable[[Runtime, str], None] | None = None,
) -> list[dict[str, Any]]:
    """Call `solution:solve` once per input through /assay/runner.py; each result carries
    `value` (the decoded return value, or None) next to the runner's own fields. `after` is
    called with the container once the runner has exited (the container stopped with it),
    before the container is removed."""
    task = load_task(task_dir or ROOT / "tests" / "tasks" / "carry")
    files, ins = tmp / "files", tmp / "inputs"
    for d in (files, ins):
        d.mkdir()
        d.chmod(0o755)
    (files / "solution.py").write_text(solution)
    cases = [{"id": f"c{i}", "input": [x]} for i, x in enumerate(inputs)]
    (ins / "cases.json").write_text(json.dumps(cases))
    for f in (files / "solution.py", ins / "cases.json"):
        f.chmod(0o644)
    gid = "hardening-" + uuid.uuid4().hex[:12]
    with GradingScope(rt, gid) as scope:
        spec = candidate_spec(task, image, gid, files, ins, runner_argv(task))
        cid = scope.container(spec, start=False)
        if cid_out is not None:
            cid_out.append(cid)
        run = rt.run(cid, deadline_s=120, output_cap=1 << 20)
        if after is not None:
            after(rt, cid)
    assert run.exit_code == 0, (run.exit_code, run.stderr[-2000:])
    out = json.loads(run.stdout)["cases"]
    for c in out:
        raw = base64.b64decode(c["output_b64"])
        c["value"] = json.loads(raw) if raw else None
    return list(out)
