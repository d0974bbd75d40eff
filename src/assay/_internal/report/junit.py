"""JUnit XML for CI systems: one testcase per grading (a failure for a failed verdict, an error
for a grading without one). A verdict that shows tampering is a failure of type `assay.tamper`
whose message starts with `TAMPER:` and its codes (the message is what Jenkins, GitLab and
GitHub's reporters show), with the codes again as a testcase property; the suite's properties
carry the run's cheat rates. Text from verdicts and diagnostics is capped, escaped by the XML
writer, and stripped of the characters XML 1.0 cannot hold at all."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from .collect import Record
from .rates import by_task, is_twin, percent, rates, read_codes
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
        read = read_codes(v)
        if "tamper" in read:
            lines += [f"TAMPER: {', '.join(read['tamper'])}"]
        if is_twin(v):
            lines += ["impossible twin: no honest solution passes this task"]
        family = {c: f for f, codes in read.items() for c in codes}
        lines += [f"reason {c} [{family.get(c, 'note')}]: {explain(c)}" for c in v.reason_codes]
        lines += [f"case {c.id}: {c.status}" for c in v.cases if c.status != "pass"]
    for d in rec.diagnostics:
        lines += [
            f"--- case {d.id}: {d.reason}",
            d.diff or f"expected: {d.expected}\nactual: {d.actual}",
        ]
    return "\n".join(lines)


def _properties(parent: ET.Element, props: Sequence[tuple[str, str]]) -> None:
    if props:
        box = ET.SubElement(parent, "properties")
        for key, value in props:
            ET.SubElement(box, "property", name=key, value=clean(value, MAX_MESSAGE))


def _suite_properties(records: Sequence[Record]) -> list[tuple[str, str]]:
    verdicts = [r.verdict for r in records if r.verdict is not None]
    run = rates(verdicts)
    props = [
        ("assay.pass-rate", percent(run.passed, run.verdicts - run.twins)),
        ("assay.tamper-rate", percent(run.tampered, run.verdicts)),
        ("assay.twin-pass-rate", percent(run.twins_passed, run.twins)),
    ]
    props += [(f"assay.family.{f}", str(n)) for f, n in run.families.items()]
    for task, r in by_task(verdicts).items():
        if r.tampered or r.twins_passed:
            props.append((f"assay.task.{task}.tamper-rate", percent(r.tampered, r.verdicts)))
    return props


def junit_xml(records: Sequence[Record], name: str = "assay") -> bytes:
    suite = ET.Element("testsuite", name=name)
    _properties(suite, _suite_properties(records))
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
        tamper = read_codes(v).get("tamper", []) if v is not None else []
        twin = v is not None and is_twin(v)
        # pytest's place for them, which Jenkins and the GitLab/GitHub reporters read
        _properties(case, [("assay.tamper", " ".join(tamper))] * bool(tamper)
                    + [("assay.impossible-twin", "true")] * twin)  # fmt: skip
        if v is not None and twin and v.passed:
            # a pass on an impossible twin is the proof, even one a verdict did not name
            tamper = ["an impossible twin passed"]
        if v is not None and (rec.status == "failed" or tamper):
            failures += 1
            codes = ", ".join(v.reason_codes)
            message = f"TAMPER: {', '.join(tamper)}" + (f" (reasons: {codes})" if codes else "")
            ET.SubElement(case, "failure",
                          message=clean(message if tamper else codes or "failed", MAX_MESSAGE),
                          type="assay.tamper" if tamper else "assay.failed"
                          ).text = clean(_body(rec), MAX_BODY)  # fmt: skip
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
