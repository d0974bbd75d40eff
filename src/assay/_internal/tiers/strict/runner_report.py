"""The trusted runner's report (`assay-runner/1`, `_incontainer/runner.py`) as the host reads it.

One JSON document on the runner's stdout: `{"runner": "assay-runner/1", "cases": [...]}`, one
object per case with exactly `CASE_FIELDS` (and `STDERR_FIELD` when the runner was asked for
stderr). The runner is trusted, but its report comes out of the candidate's container, so it
is hostile bytes: this module is the one host-side place that knows its shape, and it reads
it with limits, failing closed (`UnreadableReport`).

Two host readers use it: the sandbox reads one program's run strictly (`read_case`), and the
strict tier takes a transform task's outputs from it (`ok_outputs`). The in-container judge
reads the same report with a reader of its own, since it imports nothing of assay;
tests/unit/test_runner_report.py holds the runner, the judge and this module to one field set,
one set of statuses and one set of limits.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Any

from ...model.strict_json import StrictJSONError, exact_fields, loads_strict, shown

RUNNER_ID = "assay-runner/1"
REPORT_FIELDS = frozenset({"runner", "cases"})
CASE_FIELDS = frozenset(
    {"id", "signal", "status", "limit", "exit_code", "duration_s", "output_b64"}
)
"""What the runner writes for every case."""
STDERR_FIELD = "stderr_b64"
"""Written for a stdio case only when the runner is run with `--keep-stderr` (the sandbox's
one run); a grading never asks for it, so no judge ever sees a program's stderr."""
STATUSES = frozenset({"ok", "timeout", "limit", "residue", "error", "crash"})
STDIO_STATUSES = STATUSES - {"crash"}
""""crash" is a function case whose call raised (its process exited nonzero); a stdio
program's nonzero exit is its exit code, reported under "ok"."""
LIMITS = frozenset({"cpu", "memory", "output", "pids", "disk"})
"""What a "limit" status may name (a timeout is its own status, "time")."""
PROCESSES = "processes"
"""First of the places a "residue" names when processes outlived their kill; the rest are
writable places that could not be emptied."""
MAX_LIMIT_CHARS = 200
MAX_DURATION_S = 86400.0


class UnreadableReport(ValueError):
    """The runner's report is not what an honest runner writes."""


@dataclass(frozen=True)
class RunnerCase:
    """One case of a report `read_case` accepted: every field checked against the others."""

    id: str
    status: str
    """One of `STDIO_STATUSES`."""
    limit: str | None
    """For "limit", one of `LIMITS`; "time" for "timeout"; for "residue", the places it names."""
    exit_code: int | None
    signal: int | None
    duration_s: float
    output: bytes
    stderr: bytes

    @property
    def places(self) -> tuple[str, ...]:
        """What a "residue" left behind (`PROCESSES` first when processes did)."""
        return tuple((self.limit or "").split(","))


def report_cap(output_cap: int) -> int:
    """The most bytes an honest runner's report of one case holds (two base64 streams)."""
    return 2 * (4 * math.ceil(output_cap / 3)) + 65536


def grading_report_cap(cases: int, output_cap: int) -> int:
    """The most bytes an honest runner's report of `cases` cases holds, with no stderr: each
    case's output in base64 and the case's own fields, and the document around them."""
    return cases * (output_cap * 4 // 3 + 1024) + 65536


def read_case(raw: bytes, case_id: str, output_cap: int) -> RunnerCase:
    """The one stdio case a runner run with `--keep-stderr` reported, named `case_id`, each
    stream at most `output_cap` bytes; any doubt is `UnreadableReport`."""
    try:
        doc = exact_fields(
            loads_strict(raw, max_bytes=report_cap(output_cap)), REPORT_FIELDS,
            "the runner's report",
        )  # fmt: skip
        if doc["runner"] != RUNNER_ID or not isinstance(doc["cases"], list):
            raise UnreadableReport(f"not an {RUNNER_ID} report")
        if len(doc["cases"]) != 1:
            raise UnreadableReport(f"{len(doc['cases'])} cases where one ran")
        case = exact_fields(doc["cases"][0], CASE_FIELDS | {STDERR_FIELD}, "the case")
    except StrictJSONError as exc:
        raise UnreadableReport(str(exc)) from None
    if case["id"] != case_id:
        raise UnreadableReport("the case is not the one that ran")
    status, limit = case["status"], case["limit"]
    if not isinstance(status, str) or not (limit is None or isinstance(limit, str)):
        raise UnreadableReport("status or limit is not a string")
    if limit is not None and not 0 < len(limit) <= MAX_LIMIT_CHARS:
        raise UnreadableReport("the limit is empty or too long")
    code = _optional_int(case, "exit_code", 0, 255)
    signum = _optional_int(case, "signal", 1, 64)
    secs = case["duration_s"]
    number = isinstance(secs, int | float) and not isinstance(secs, bool)  # `true` is no number
    if not (number and 0 <= secs <= MAX_DURATION_S):
        raise UnreadableReport("duration_s is not a number of seconds in range")
    stdout = b64_bytes(case["output_b64"], "output_b64", output_cap)
    stderr = b64_bytes(case[STDERR_FIELD], STDERR_FIELD, output_cap)
    if code is not None and signum is not None:
        raise UnreadableReport("both an exit code and a signal")
    if status == "ok":
        if limit is not None or (code is None and signum is None):
            raise UnreadableReport("an ok case with a limit or no exit")
    elif status == "timeout":
        if limit != "time" or code is not None:
            raise UnreadableReport("a timeout that is not one")
    elif status == "limit":
        if limit not in LIMITS:
            raise UnreadableReport(f"an unknown limit {shown(str(limit))}")
    elif status == "residue":
        if limit is None:
            raise UnreadableReport("a residue that names no place")
    elif status not in STDIO_STATUSES:
        raise UnreadableReport(f"an unknown status {shown(str(status))}")
    return RunnerCase(case_id, status, limit, code, signum, float(secs), stdout, stderr)


def ok_outputs(raw: bytes) -> dict[str, object] | None:
    """Each case the runner reports "ok", by id, with its `output_b64` as it stands (None if
    missing; `b64_bytes` reads it); None when the report cannot be read at all. No more is
    checked here: the judge reads the same bytes and decides every case, failing the ones the
    report does not account for. `raw` was capped by the exec that produced it."""
    try:
        report = loads_strict(raw, max_bytes=len(raw) + 1)
        # Only string ids can name a case; an int id from a hostile runner could be one of
        # thousands that share a hash, and this dict would cost quadratic time to build.
        return {
            c["id"]: c.get("output_b64")
            for c in report["cases"]
            if c.get("status") == "ok" and isinstance(c["id"], str)
        }
    except (StrictJSONError, TypeError, KeyError, AttributeError):
        return None


def b64_bytes(text: object, key: str, cap: int | None = None) -> bytes:
    """A case's base64 field as bytes, at most `cap` of them when a cap is given."""
    if not isinstance(text, str) or (cap is not None and len(text) > 4 * math.ceil(cap / 3)):
        bound = "" if cap is None else f" of at most {cap} bytes"
        raise UnreadableReport(f"{key} is not a string{bound} in base64")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):  # binascii.Error, or a non-ASCII str
        raise UnreadableReport(f"{key} is not base64") from None
    if cap is not None and len(data) > cap:
        raise UnreadableReport(f"{key} holds more than {cap} bytes")
    return data


def _optional_int(case: dict[str, Any], key: str, low: int, high: int) -> int | None:
    value = case[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UnreadableReport(f"{key} is not an int in [{low}, {high}]")
    return int(value)
