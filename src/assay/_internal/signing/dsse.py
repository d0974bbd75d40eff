"""DSSE v1 envelopes (github.com/secure-systems-lab/dsse): the wire format and the PAE.

Reading is strict beyond the spec on purpose: standard base64 only, canonical only (no stray
padding bits), exact field sets. Then no bit of an envelope can change while it still verifies.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from assay._internal.model.strict_json import StrictJSONError, exact_fields, loads_strict

MAX_ENVELOPE_BYTES = 8 << 20
MAX_SIGNATURES = 16
_ENVELOPE_FIELDS = frozenset({"payload", "payloadType", "signatures"})
_SIGNATURE_FIELDS = frozenset({"keyid", "sig"})


class EnvelopeFormatError(ValueError):
    """Bytes that are not a well-formed DSSE envelope; `code` names the rule broken."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]  # (keyid, signature)


def pae(payload_type: str, payload: bytes) -> bytes:
    """Pre-Authentication Encoding: the bytes that are actually signed."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode(envelope: Envelope) -> bytes:
    document = {
        "payloadType": envelope.payload_type,
        "payload": _b64(envelope.payload),
        "signatures": [{"keyid": kid, "sig": _b64(sig)} for kid, sig in envelope.signatures],
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _unb64(value: object, field: str) -> bytes:
    if not isinstance(value, str):
        raise EnvelopeFormatError("bad-field", f"{field} must be a string")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise EnvelopeFormatError("bad-base64", f"{field} is not valid base64") from None
    if _b64(data) != value:
        raise EnvelopeFormatError("bad-base64", f"{field} is not canonical base64")
    return data


def _check_fields(obj: object, expected: frozenset[str], where: str) -> dict[str, Any]:
    try:
        return exact_fields(obj, expected, where)
    except StrictJSONError as exc:
        code = "bad-field" if exc.code == "not-object" else exc.code
        raise EnvelopeFormatError(code, str(exc)) from None


def decode(raw: bytes) -> Envelope:
    try:
        document = loads_strict(raw, max_bytes=MAX_ENVELOPE_BYTES, max_depth=4)
    except StrictJSONError as exc:
        raise EnvelopeFormatError(exc.code, f"envelope: {exc}") from None
    document = _check_fields(document, _ENVELOPE_FIELDS, "envelope")
    payload_type = document["payloadType"]
    if not isinstance(payload_type, str):
        raise EnvelopeFormatError("bad-field", "payloadType must be a string")
    payload = _unb64(document["payload"], "payload")
    signatures = document["signatures"]
    if not isinstance(signatures, list) or not 1 <= len(signatures) <= MAX_SIGNATURES:
        raise EnvelopeFormatError(
            "bad-field", f"signatures must be a list of 1 to {MAX_SIGNATURES} entries"
        )
    parsed: list[tuple[str, bytes]] = []
    for index, entry in enumerate(signatures):
        entry = _check_fields(entry, _SIGNATURE_FIELDS, f"signatures[{index}]")
        if not isinstance(entry["keyid"], str):
            raise EnvelopeFormatError("bad-field", f"signatures[{index}].keyid must be a string")
        parsed.append((entry["keyid"], _unb64(entry["sig"], f"signatures[{index}].sig")))
    return Envelope(payload_type, payload, tuple(parsed))
