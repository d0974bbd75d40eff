"""JUnit XML for CI systems: one testcase per grading (a failure for a failed verdict, an error
for a grading without one). Text from verdicts and diagnostics is capped, escaped by the XML
writer, and stripped of the characters XML 1.0 cannot hold at all."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from .collect import Record
from .reasons import explain

MAX_MESSAGE = 1000
MAX_BODY = 16384
# XML 1.0 has no way to write these (not even as references); a writer that passed them on
# would make the whole file unreadable.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean(text: str, cap: int) -> str:
    text = _NOT_XML.sub("\ufffd", text)
    return text if len(text) <= cap else text[:cap] + f"... [{len(text)} chars]"


def _body(rec: Record) -> str:
    lines = [f"signature: {rec.signature}"]
    v = rec.verdict
    if v is not None:
        lines += [f"tier: {v.tier}  runtime: {v.runtime}  grading: {v.grading_id}"]
        lines += [f"reason {c}: {explain(c)}" for c in v.reason_codes]
        lines += [f"case {c.id}: {c.status}" for c in v.cases if c.status != "pass"]
    for d in rec.diagnostics:
        lines += [
            f"--- case {d.id}: {d.reason}",
            d.diff or f"expected: {d.expected}\nactual: {d.actual}",
        ]
    return "\n".join(lines)


def junit_xml(records: Sequence[Record], name: str = "assay") -> bytes:
    suite = ET.Element("testsuite", name=name)
    failures = errors = 0
    total_time = 0.0
    for rec in records:
        v = rec.verdict
        seconds = sum(v.timings.values()) if v is not None else 0.0
        total_time += seconds
        case = ET.SubElement(
            suite,
            "testcase",
            classname=clean(v.task_id if v is not None else "assay", 256),
            name=clean(rec.id, 256),
            time=f"{seconds:.3f}",
        )
        if rec.status == "failed":
            failures += 1
            assert v is not None
            message = ", ".join(v.reason_codes) or "failed"
            ET.SubElement(case, "failure", message=clean(message, MAX_MESSAGE),
                          type="assay.failed").text = clean(_body(rec), MAX_BODY)  # fmt: skip
        elif rec.status == "no-verdict":
            errors += 1
            ET.SubElement(case, "error", message=clean(rec.detail or "no verdict", MAX_MESSAGE),
                          type="assay.no-verdict").text = clean(_body(rec), MAX_BODY)  # fmt: skip
    suite.set("tests", str(len(records)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("time", f"{total_time:.3f}")
    root = ET.Element("testsuites")
    root.append(suite)
    xml: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return xml + b"\n"
