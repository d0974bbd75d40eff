"""Sign verdicts as in-toto Statements in DSSE envelopes, and verify them.

The payload bytes are produced once, signed, and stored base64 in the envelope; verification
checks the signature over those exact bytes before parsing them, and never re-serialises.
Each way a check can fail has its own `reason`, so `assay verify` can say what was wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from assay._internal.model.strict_json import StrictJSONError, exact_fields, loads_strict, shown
from assay._internal.model.verdict import Verdict
from assay._internal.signing import dsse
from assay._internal.signing.keys import (
    KEY_FILE,
    PUB_FILE,
    default_key_dir,
    ensure_signing_key,
    generate_keypair,
    keyid,
    load_private_key,
    load_public_key,
)
from assay.errors import KeyFileError, VerificationError

__all__ = [
    "KEY_FILE",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "PUB_FILE",
    "STATEMENT_TYPE",
    "KeyFileError",
    "VerificationError",
    "default_key_dir",
    "ensure_signing_key",
    "generate_keypair",
    "keyid",
    "load_private_key",
    "load_public_key",
    "sign_payload",
    "sign_verdict",
    "statement_for",
    "verify_envelope",
]

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://assay.dev/verdict/v1"
_STATEMENT_FIELDS = frozenset({"_type", "subject", "predicateType", "predicate"})
_SUBJECT_FIELDS = frozenset({"name", "digest"})
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_UNSAFE = re.compile(r"[^0-9A-Za-z_.-]")


def subject_for(verdict: Verdict) -> dict[str, Any]:
    """The in-toto subject: the submission, or, when none could be taken, the grading itself
    (in-toto requires a digest, and this one cannot collide with a submission's)."""
    if verdict.submission_digest is not None:
        return {"name": "submission", "digest": {"sha256": verdict.submission_digest[7:]}}
    marker = hashlib.sha256(f"assay-grading:{verdict.grading_id}".encode()).hexdigest()
    return {"name": "no-submission", "digest": {"sha256": marker}}


def statement_for(verdict: Verdict) -> dict[str, Any]:
    return _statement(verdict, verdict.model_dump(mode="json"))


def _statement(verdict: Verdict, predicate: dict[str, Any]) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": [subject_for(verdict)],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def sign_payload(payload: bytes, payload_type: str, private_key: Ed25519PrivateKey) -> bytes:
    """Sign arbitrary bytes into an envelope. Verdicts go through `sign_verdict`."""
    signature = private_key.sign(dsse.pae(payload_type, payload))
    kid = keyid(private_key.public_key())
    return dsse.encode(dsse.Envelope(payload_type, payload, ((kid, signature),)))


def sign_verdict(verdict: Verdict, private_key: Ed25519PrivateKey) -> bytes:
    # Re-validate: model_construct() or a subclass could hand us an object that never was.
    # The dict validated is the very dict signed: every field of a verdict that validates is
    # a JSON value already (no datetime, no tuple), so a second dump of `checked` for the
    # payload would only repeat this one.
    predicate = verdict.model_dump()
    checked = Verdict.model_validate(predicate)
    payload = json.dumps(
        _statement(checked, predicate), separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")
    return sign_payload(payload, PAYLOAD_TYPE, private_key)


def _check_signature(envelope: dsse.Envelope, public_key: Ed25519PublicKey) -> None:
    expected = keyid(public_key)
    candidates = [sig for kid, sig in envelope.signatures if kid == expected]
    if not candidates:
        # keyids are unauthenticated text headed for a terminal: show only safe characters.
        found = ", ".join(_UNSAFE.sub("?", kid[:16]) or "<empty>" for kid, _ in envelope.signatures)
        raise VerificationError(
            "signature:wrong-key",
            f"not signed by this key: envelope names key(s) {found}, expected {expected[:16]}",
        )
    signed = dsse.pae(envelope.payload_type, envelope.payload)
    for signature in candidates:
        try:
            public_key.verify(signature, signed)
            return
        except InvalidSignature:
            continue
    raise VerificationError(
        "signature:invalid",
        "signature does not match: the payload, its type or the signature was altered",
    )


def _fields(obj: object, expected: frozenset[str], where: str) -> dict[str, Any]:
    try:
        return exact_fields(obj, expected, where)
    except StrictJSONError as exc:
        code = "malformed" if exc.code == "not-object" else exc.code
        raise VerificationError(f"statement:{code}", str(exc)) from None


def _subject_digest(statement: dict[str, Any]) -> tuple[str, str]:
    subjects = statement["subject"]
    if not isinstance(subjects, list) or len(subjects) != 1:
        raise VerificationError("statement:malformed", "subject must list exactly one artifact")
    subject = _fields(subjects[0], _SUBJECT_FIELDS, "subject[0]")
    digest = subject["digest"]
    if not isinstance(digest, dict) or list(digest) != ["sha256"]:
        raise VerificationError("statement:malformed", "subject digest must be exactly sha256")
    name, value = subject["name"], digest["sha256"]
    if not isinstance(name, str) or not isinstance(value, str) or not _HEX64.match(value):
        raise VerificationError("statement:malformed", "subject name or digest is malformed")
    return name, value


def _verdict_from(predicate: object) -> Verdict:
    try:
        return Verdict.model_validate(predicate)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        kind = {"extra_forbidden": "extra-field", "missing": "missing-field"}.get(
            first["type"], "schema"
        )
        where = ".".join(shown(str(part)) for part in first["loc"]) or "<root>"
        raise VerificationError(
            f"verdict:{kind}",
            f"verdict violates schema at {where}: {first['msg']} ({exc.error_count()} problem(s))",
        ) from None


def verdict_from_json(text: str) -> Verdict:
    """A verdict from JSON text someone else produced (a grading node's reply): the same
    strict reader and schema as a verdict inside an envelope; VerificationError otherwise."""
    try:
        obj = loads_strict(text.encode(), max_bytes=dsse.MAX_ENVELOPE_BYTES, max_depth=16)
    except StrictJSONError as exc:
        raise VerificationError(f"payload:{exc.code}", f"payload: {exc}") from None
    return _verdict_from(obj)


def _normalise_subject(expected: str) -> str:
    if _HEX64.match(expected):
        return f"sha256:{expected}"
    if expected.startswith("sha256:") and _HEX64.match(expected[7:]):
        return expected
    raise VerificationError("subject:bad-expected", "expected subject must be sha256:<64 hex>")


def verify_envelope(
    envelope: bytes, public_key: Ed25519PublicKey, expected_subject: str | None = None
) -> Verdict:
    """Return the verdict inside `envelope` if and only if every check passes."""
    try:
        parsed = dsse.decode(envelope)
    except dsse.EnvelopeFormatError as exc:
        raise VerificationError(f"envelope:{exc.code}", str(exc)) from None
    _check_signature(parsed, public_key)
    return _verdict_of(parsed, expected_subject)


def unverified_verdict(envelope: bytes) -> Verdict:
    """The verdict inside `envelope`, every check made but the signature's: for showing a
    verdict when no key was given, marked as unchecked (the HTML report). Never a substitute
    for `verify_envelope`."""
    try:
        parsed = dsse.decode(envelope)
    except dsse.EnvelopeFormatError as exc:
        raise VerificationError(f"envelope:{exc.code}", str(exc)) from None
    return _verdict_of(parsed, None)


def _verdict_of(parsed: dsse.Envelope, expected_subject: str | None) -> Verdict:
    if parsed.payload_type != PAYLOAD_TYPE:
        raise VerificationError(
            "payload:wrong-type",
            f"payloadType is '{shown(parsed.payload_type)}', expected {PAYLOAD_TYPE!r}",
        )
    try:
        statement = loads_strict(parsed.payload, max_bytes=dsse.MAX_ENVELOPE_BYTES, max_depth=16)
    except StrictJSONError as exc:
        raise VerificationError(f"payload:{exc.code}", f"payload: {exc}") from None
    statement = _fields(statement, _STATEMENT_FIELDS, "statement")
    if statement["_type"] != STATEMENT_TYPE:
        raise VerificationError("statement:wrong-type", f"_type must be {STATEMENT_TYPE!r}")
    if statement["predicateType"] != PREDICATE_TYPE:
        raise VerificationError(
            "statement:wrong-predicate-type", f"predicateType must be {PREDICATE_TYPE!r}"
        )
    name, digest = _subject_digest(statement)
    verdict = _verdict_from(statement["predicate"])
    if subject_for(verdict) != {"name": name, "digest": {"sha256": digest}}:
        raise VerificationError(
            "subject:mismatch", "the statement's subject is not the verdict's submission"
        )
    if expected_subject is not None:
        wanted = _normalise_subject(expected_subject)
        if verdict.submission_digest != wanted:
            raise VerificationError(
                "subject:unexpected",
                f"verdict is for {verdict.submission_digest or 'no submission'}, not {wanted}",
            )
    return verdict
