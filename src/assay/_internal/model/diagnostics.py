"""Per-case diagnostics: what a failed case expected and what the candidate produced.

They come from the judge, which holds candidate bytes, so they are hostile text: parsed with
limits here, escaped wherever they are shown (`printable` for terminals; the HTML report
escapes its own way). They are for the task's owner: written beside the signed verdict
(`<id>.diag.json`), never signed (a verdict's meaning does not depend on them, and the
expected values they hold must not travel with a verdict handed to an agent), never put into
a container.

They travel with the verdict they explain and nowhere else: the strict tier returns both as
one `Judged` value, and so does `run_tier` for every tier; a caller that does not write them
(the matrix, the benchmark) simply drops them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .strict_json import StrictJSONError, loads_strict
from .verdict import Printable, ReasonCode, Token, Verdict

SCHEMA: Final = "assay.diagnostics/v1"
MAX_DIAG_CASES = 20
MAX_TEXT = 4096
MAX_DIFF = 16384
MAX_FILE_BYTES = 1 << 20

Text = Annotated[str, Field(max_length=MAX_TEXT)]


class CaseDiagnostic(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    id: Printable
    reason: ReasonCode
    expected: Text
    actual: Text
    diff: Annotated[str, Field(max_length=MAX_DIFF)] = ""


class Diagnostics(BaseModel):
    """The file beside a verdict: which grading, and its failed cases explained."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    schema_version: Literal["assay.diagnostics/v1"] = SCHEMA
    grading_id: Token
    cases: Annotated[list[CaseDiagnostic], Field(max_length=MAX_DIAG_CASES)]

    def to_json(self) -> bytes:
        return (self.model_dump_json(indent=1) + "\n").encode()


def parse_cases(value: Any) -> list[CaseDiagnostic] | None:
    """The judge's `diagnostics` list, or None when it breaks a rule: bad diagnostics are
    dropped, never allowed to change the verdict they explain."""
    if not isinstance(value, list) or len(value) > MAX_DIAG_CASES:
        return None
    try:
        return [CaseDiagnostic.model_validate(item) for item in value]
    except ValidationError:
        return None


def load(data: bytes) -> Diagnostics | None:
    """A `.diag.json` file's contents, or None if it is not one (too big, malformed)."""
    try:
        return Diagnostics.model_validate(loads_strict(data, max_bytes=MAX_FILE_BYTES, max_depth=6))
    except (StrictJSONError, ValidationError):
        return None


# C0/C1 controls, bidi embeddings/overrides/isolates and marks, line/paragraph separators,
# zero-width characters and the BOM: each could rewrite or hide what a terminal shows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def printable(text: str, keep_newlines: bool = True) -> str:
    """`text` with every character that could steer a terminal shown as an escape instead."""
    out = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return out if keep_newlines else out.replace("\n", "\\n")


@dataclass(frozen=True)
class Judged:
    """A grading's verdict and its failed cases explained (None when there is nothing to
    explain): what a tier returns, so the explanation cannot be matched to another grading."""

    verdict: Verdict
    diagnostics: Diagnostics | None = None
