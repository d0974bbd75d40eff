from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from helpers.verdicts import SUBMISSION, verdict
from pydantic import ValidationError

from assay._internal.model.verdict import Verdict
from assay._internal.signing.sign import (
    PAYLOAD_TYPE,
    KeyFileError,
    VerificationError,
    default_key_dir,
    ensure_signing_key,
    generate_keypair,
    keyid,
    load_private_key,
    load_public_key,
    sign_payload,
    sign_verdict,
    statement_for,
    verify_envelope,
)

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUB = KEY.public_key()
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


@pytest.fixture(scope="module")
def envelope() -> bytes:
    return sign_verdict(verdict(("pass", "fail", "pass")), KEY)


def _doc(env: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(env)
    return doc


def _payload(env: bytes) -> bytes:
    return base64.b64decode(_doc(env)["payload"])


def _with_payload(env: bytes, payload: bytes) -> bytes:
    doc = _doc(env)
    doc["payload"] = base64.b64encode(payload).decode()
    return json.dumps(doc).encode()


def _with_sig(env: bytes, sig: bytes) -> bytes:
    doc = _doc(env)
    doc["signatures"][0]["sig"] = base64.b64encode(sig).decode()
    return json.dumps(doc).encode()


def _resigned(mutate: Callable[[dict[str, Any]], None], v: Verdict | None = None) -> bytes:
    """A statement altered by `mutate`, then signed with the right key: only content checks
    stand between it and acceptance."""
    statement = copy.deepcopy(statement_for(v or verdict()))
    mutate(statement)
    return sign_payload(json.dumps(statement).encode(), PAYLOAD_TYPE, KEY)


def _reason(env: bytes, **kwargs: Any) -> str:
    with pytest.raises(VerificationError) as info:
        verify_envelope(env, PUB, **kwargs)
    assert info.value.exit_code == 1
    assert str(info.value)
    return info.value.reason


# --- accepting --------------------------------------------------------------------------


def test_round_trip(envelope: bytes) -> None:
    assert verify_envelope(envelope, PUB) == verdict(("pass", "fail", "pass"))


def test_expected_subject_accepts_prefixed_and_bare_hex(envelope: bytes) -> None:
    assert verify_envelope(envelope, PUB, expected_subject=SUBMISSION).submission_digest
    assert verify_envelope(envelope, PUB, expected_subject=SUBMISSION[7:]).submission_digest


def test_envelope_is_an_in_toto_statement_in_dsse(envelope: bytes) -> None:
    doc = _doc(envelope)
    assert set(doc) == {"payloadType", "payload", "signatures"}
    assert doc["payloadType"] == "application/vnd.in-toto+json"
    raw_pub = PUB.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert doc["signatures"] == [
        {"keyid": hashlib.sha256(raw_pub).hexdigest(), "sig": doc["signatures"][0]["sig"]}
    ]
    statement = json.loads(_payload(envelope))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"] == [{"name": "submission", "digest": {"sha256": "5d" * 32}}]
    assert statement["predicateType"] == "https://assay.dev/verdict/v1"
    assert statement["predicate"]["submission_digest"] == SUBMISSION


def test_signature_covers_the_pae_exactly_as_the_dsse_spec_defines_it(envelope: bytes) -> None:
    payload = _payload(envelope)
    sig = base64.b64decode(_doc(envelope)["signatures"][0]["sig"])
    pae = b"DSSEv1 28 application/vnd.in-toto+json " + str(len(payload)).encode() + b" " + payload
    PUB.verify(sig, pae)  # raises InvalidSignature if our PAE differs from the spec's


def test_verifies_the_signed_bytes_without_reserialising() -> None:
    statement = statement_for(verdict())
    pretty = json.dumps(statement, indent=3, sort_keys=True).encode()
    env = sign_payload(pretty, PAYLOAD_TYPE, KEY)
    assert _payload(env) == pretty
    assert verify_envelope(env, PUB) == verdict()


def test_a_verdict_without_a_submission_is_signed_for_its_grading() -> None:
    v = verdict(submission_digest=None)
    env = sign_verdict(v, KEY)
    assert verify_envelope(env, PUB) == v
    subject = json.loads(_payload(env))["subject"][0]
    assert subject["name"] == "no-submission"
    assert (
        subject["digest"]["sha256"]
        == hashlib.sha256(f"assay-grading:{v.grading_id}".encode()).hexdigest()
    )
    assert _reason(env, expected_subject=SUBMISSION) == "subject:unexpected"


def test_sign_verdict_revalidates_a_constructed_verdict() -> None:
    forged = Verdict.model_construct(**{**verdict(("fail",)).__dict__, "passed": True})
    with pytest.raises(ValidationError, match="contradicts"):
        sign_verdict(forged, KEY)


# --- rejecting: each bad input has its own reason -----------------------------------------


def test_every_truncation_is_rejected_as_not_json(envelope: bytes) -> None:
    reasons = {_reason(envelope[:cut]) for cut in range(len(envelope))}
    assert reasons == {"envelope:not-json"}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "envelope:not-json"),
        (b"not an envelope", "envelope:not-json"),
        (b"-----BEGIN PUBLIC KEY-----\n", "envelope:not-json"),
        (b"\xff\xfe{\x00}", "envelope:not-utf8"),
        (b"[]", "envelope:bad-field"),
        (b"null", "envelope:bad-field"),
        (b"[" * 10 + b"]" * 10, "envelope:too-deep"),
        (b'{"payload": NaN}', "envelope:non-finite-number"),
    ],
)
def test_non_envelopes_are_rejected(raw: bytes, reason: str) -> None:
    assert _reason(raw) == reason


def test_oversize_envelope_is_rejected_before_parsing() -> None:
    assert _reason(b" " * ((8 << 20) + 1)) == "envelope:oversize"


def test_duplicate_key_in_the_envelope(envelope: bytes) -> None:
    dup = envelope.replace(b"{", b'{"payloadType":"text/plain",', 1)
    assert _reason(dup) == "envelope:duplicate-key"


def test_duplicate_key_in_the_signed_payload(envelope: bytes) -> None:
    payload = _payload(envelope).replace(b'"passed":false', b'"passed":false,"passed":true')
    assert payload != _payload(envelope)
    assert _reason(sign_payload(payload, PAYLOAD_TYPE, KEY)) == "payload:duplicate-key"


def test_payload_that_is_not_json(envelope: bytes) -> None:
    assert _reason(sign_payload(b"\x00garbage", PAYLOAD_TYPE, KEY)) == "payload:not-json"


def test_wrong_key(envelope: bytes) -> None:
    with pytest.raises(VerificationError, match="not signed by this key") as info:
        verify_envelope(envelope, OTHER.public_key())
    assert info.value.reason == "signature:wrong-key"


def test_other_key_claiming_our_keyid(envelope: bytes) -> None:
    forged = _doc(sign_verdict(verdict(("pass", "fail", "pass")), OTHER))
    forged["signatures"][0]["keyid"] = keyid(PUB)
    assert _reason(json.dumps(forged).encode()) == "signature:invalid"


def test_every_flipped_bit_in_the_payload_is_rejected(envelope: bytes) -> None:
    payload = _payload(envelope)
    for bit in range(len(payload) * 8):
        flipped = bytearray(payload)
        flipped[bit // 8] ^= 1 << (bit % 8)
        assert _reason(_with_payload(envelope, bytes(flipped))) == "signature:invalid", bit


def test_every_flipped_bit_in_the_signature_is_rejected(envelope: bytes) -> None:
    sig = base64.b64decode(_doc(envelope)["signatures"][0]["sig"])
    assert len(sig) == 64
    for bit in range(512):
        flipped = bytearray(sig)
        flipped[bit // 8] ^= 1 << (bit % 8)
        assert _reason(_with_sig(envelope, bytes(flipped))) == "signature:invalid", bit


def test_every_flipped_bit_anywhere_in_the_envelope_is_rejected(envelope: bytes) -> None:
    # Includes the base64 text itself: non-canonical base64 must not decode to the same bytes.
    for bit in range(len(envelope) * 8):
        flipped = bytearray(envelope)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(VerificationError):
            verify_envelope(bytes(flipped), PUB)


def test_non_canonical_base64_is_rejected(envelope: bytes) -> None:
    doc = _doc(envelope)
    urlsafe = doc["signatures"][0]["sig"].replace("+", "-").replace("/", "_")
    for sig in (doc["signatures"][0]["sig"].rstrip("="), " " + doc["signatures"][0]["sig"]):
        bad = copy.deepcopy(doc)
        bad["signatures"][0]["sig"] = sig
        assert _reason(json.dumps(bad).encode()) == "envelope:bad-base64"
    if urlsafe != doc["signatures"][0]["sig"]:
        doc["signatures"][0]["sig"] = urlsafe
        assert _reason(json.dumps(doc).encode()) == "envelope:bad-base64"


def test_wrong_payload_type(envelope: bytes) -> None:
    signed_as_json = sign_payload(_payload(envelope), "application/json", KEY)
    with pytest.raises(VerificationError, match="payloadType") as info:
        verify_envelope(signed_as_json, PUB)
    assert info.value.reason == "payload:wrong-type"


def test_payload_type_swapped_after_signing(envelope: bytes) -> None:
    doc = _doc(envelope)
    doc["payloadType"] = "application/json"
    assert _reason(json.dumps(doc).encode()) == "signature:invalid"


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(statement: dict[str, Any]) -> None:
        target = statement
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def mutate(statement: dict[str, Any]) -> None:
        target = statement
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


STATEMENT_TAMPERS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "statement-v01",
        _set(("_type",), "https://in-toto.io/Statement/v0.1"),
        "statement:wrong-type",
    ),
    (
        "predicate-type",
        _set(("predicateType",), "https://slsa.dev/provenance/v1"),
        "statement:wrong-predicate-type",
    ),
    ("statement-extra", _set(("comment",), "hi"), "statement:extra-field"),
    ("statement-missing", _drop(("subject",)), "statement:missing-field"),
    ("subject-extra", _set(("subject", 0, "uri"), "x"), "statement:extra-field"),
    ("two-subjects", lambda s: s["subject"].append(s["subject"][0]), "statement:malformed"),
    ("subject-sha512", _set(("subject", 0, "digest", "sha512"), "0" * 128), "statement:malformed"),
    ("predicate-extra", _set(("predicate", "bonus"), 1), "verdict:extra-field"),
    ("predicate-missing", _drop(("predicate", "tier")), "verdict:missing-field"),
    ("case-extra", _set(("predicate", "cases", 0, "expected"), 4), "verdict:extra-field"),
    ("passed-flipped", _set(("predicate", "passed"), True), "verdict:schema"),
    ("score-lifted", _set(("predicate", "score"), 1.0), "verdict:schema"),
    ("score-string", _set(("predicate", "score"), "0.5"), "verdict:schema"),
    ("tier", _set(("predicate", "tier"), "t4"), "verdict:schema"),
    ("predicate-list", _set(("predicate",), []), "verdict:schema"),
    ("other-subject", _set(("subject", 0, "digest", "sha256"), "ee" * 32), "subject:mismatch"),
    ("subject-name", _set(("subject", 0, "name"), "solution"), "subject:mismatch"),
    (
        "predicate-submission",
        _set(("predicate", "submission_digest"), "sha256:" + "ee" * 32),
        "subject:mismatch",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "reason"), [t[1:] for t in STATEMENT_TAMPERS], ids=[t[0] for t in STATEMENT_TAMPERS]
)
def test_statement_tampering_signed_by_the_right_key_is_still_rejected(
    mutate: Callable[[dict[str, Any]], None], reason: str
) -> None:
    assert _reason(_resigned(mutate, verdict(("pass", "fail")))) == reason


def test_verdict_for_another_subject(envelope: bytes) -> None:
    with pytest.raises(VerificationError, match="not sha256:e") as info:
        verify_envelope(envelope, PUB, expected_subject="sha256:" + "ee" * 32)
    assert info.value.reason == "subject:unexpected"


def test_malformed_expected_subject(envelope: bytes) -> None:
    assert _reason(envelope, expected_subject="5d5d") == "subject:bad-expected"


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d.update(extra=1), "envelope:extra-field"),
        (lambda d: d.pop("signatures"), "envelope:missing-field"),
        (lambda d: d["signatures"][0].update(cert="x"), "envelope:extra-field"),
        (lambda d: d["signatures"][0].pop("keyid"), "envelope:missing-field"),
        (lambda d: d.update(signatures=[]), "envelope:bad-field"),
        (lambda d: d.update(signatures=[d["signatures"][0]] * 17), "envelope:bad-field"),
        (lambda d: d.update(payloadType=7), "envelope:bad-field"),
        (lambda d: d.update(payload=None), "envelope:bad-field"),
        (lambda d: d["signatures"][0].update(keyid=None), "envelope:bad-field"),
    ],
)
def test_envelope_shape(
    envelope: bytes, mutate: Callable[[dict[str, Any]], Any], reason: str
) -> None:
    doc = _doc(envelope)
    mutate(doc)
    assert _reason(json.dumps(doc).encode()) == reason


def test_a_second_signature_by_another_key_does_not_hide_ours(envelope: bytes) -> None:
    doc = _doc(envelope)
    foreign = _doc(sign_verdict(verdict(("pass", "fail", "pass")), OTHER))["signatures"][0]
    doc["signatures"].insert(0, foreign)
    assert verify_envelope(json.dumps(doc).encode(), PUB).passed is False


def test_hostile_keyid_is_not_echoed_raw(envelope: bytes) -> None:
    doc = _doc(envelope)
    doc["signatures"][0]["keyid"] = "\x1b]0;owned\x07abc"
    with pytest.raises(VerificationError) as info:
        verify_envelope(json.dumps(doc).encode(), PUB)
    assert "\x1b" not in str(info.value) and "\x07" not in str(info.value)


# --- keys -------------------------------------------------------------------------------


def test_generate_keypair_writes_a_0600_private_key(tmp_path: Path) -> None:
    key_path, pub_path = generate_keypair(tmp_path / "cfg")
    assert (key_path.name, pub_path.name) == ("signing.key", "signing.pub")
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert not stat.S_IMODE(pub_path.stat().st_mode) & 0o022
    assert keyid(load_private_key(key_path).public_key()) == keyid(load_public_key(pub_path))
    assert [p.name for p in (tmp_path / "cfg").iterdir() if p.name.startswith(".")] == []


def test_private_key_is_0600_even_under_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        key_path, _ = generate_keypair(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600


@pytest.mark.parametrize("existing", ["signing.key", "signing.pub"])
def test_generate_keypair_refuses_to_overwrite(tmp_path: Path, existing: str) -> None:
    (tmp_path / existing).write_bytes(b"precious")
    with pytest.raises(KeyFileError, match="refusing to overwrite") as info:
        generate_keypair(tmp_path)
    assert info.value.exit_code == 2
    assert (tmp_path / existing).read_bytes() == b"precious"


def test_keyid_is_sha256_of_the_raw_public_key(tmp_path: Path) -> None:
    _, pub_path = generate_keypair(tmp_path)
    der = serialization.load_pem_public_key(pub_path.read_bytes()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert len(der) == 44  # 12-byte Ed25519 SPKI header + 32 raw key bytes
    assert keyid(load_public_key(pub_path)) == hashlib.sha256(der[12:]).hexdigest()


def test_load_private_key_refuses_a_group_readable_file(tmp_path: Path) -> None:
    key_path, _ = generate_keypair(tmp_path)
    key_path.chmod(0o640)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_private_key(key_path)


def test_keys_of_the_wrong_kind_are_refused(tmp_path: Path) -> None:
    key_path, pub_path = generate_keypair(tmp_path)
    with pytest.raises(KeyFileError, match="is a private key"):
        load_public_key(key_path)
    with pytest.raises(KeyFileError, match="not an unencrypted PEM private key"):
        bogus = tmp_path / "bogus.key"
        bogus.write_bytes(pub_path.read_bytes())
        bogus.chmod(0o600)
        load_private_key(bogus)
    ec_pub = tmp_path / "ec.pub"
    ec_pub.write_bytes(
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(KeyFileError, match="not an Ed25519 public key"):
        load_public_key(ec_pub)
    with pytest.raises(KeyFileError, match="cannot open"):
        load_public_key(tmp_path / "missing.pub")
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_public_key(tmp_path)
    big = tmp_path / "big.pub"
    big.write_bytes(b"A" * 100_000)
    with pytest.raises(KeyFileError, match="too large"):
        load_public_key(big)


def test_key_errors_never_contain_key_material(tmp_path: Path) -> None:
    key_path, _ = generate_keypair(tmp_path)
    pem = key_path.read_bytes()
    key_path.chmod(0o644)
    with pytest.raises(KeyFileError) as info:
        load_private_key(key_path)
    body = b"".join(pem.splitlines()[1:-1]).decode()
    assert body[:20] not in info.value.diagnostics()


def test_default_key_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_key_dir() == tmp_path / "xdg" / "assay"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_key_dir() == tmp_path / "home" / ".config" / "assay"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert default_key_dir() == tmp_path / "home" / ".config" / "assay"


def test_ensure_signing_key_creates_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    first, pub_path, created = ensure_signing_key(None)
    assert created is True
    assert pub_path == tmp_path / "assay" / "signing.pub"
    assert stat.S_IMODE((tmp_path / "assay" / "signing.key").stat().st_mode) == 0o600
    second, _, created_again = ensure_signing_key(None)
    assert created_again is False
    assert keyid(first.public_key()) == keyid(second.public_key())


def test_ensure_signing_key_restores_a_missing_public_key(tmp_path: Path) -> None:
    key, pub_path, _ = ensure_signing_key(tmp_path / "grader.key")
    assert pub_path == tmp_path / "grader.pub"
    pub_path.unlink()
    _, restored, created = ensure_signing_key(tmp_path / "grader.key")
    assert created is False
    assert keyid(load_public_key(restored)) == keyid(key.public_key())


def test_ensure_signing_key_refuses_a_mismatched_public_key(tmp_path: Path) -> None:
    ensure_signing_key(tmp_path / "signing.key")
    (tmp_path / "other").mkdir()
    _, other_pub = generate_keypair(tmp_path / "other")
    os.replace(other_pub, tmp_path / "signing.pub")
    with pytest.raises(KeyFileError, match="does not belong"):
        ensure_signing_key(tmp_path / "signing.key")


def test_concurrent_first_use_agrees_on_one_key(tmp_path: Path) -> None:
    results: list[str] = []
    errors: list[BaseException] = []

    def grab() -> None:
        try:
            results.append(keyid(ensure_signing_key(tmp_path / "signing.key")[0].public_key()))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 8 and len(set(results)) == 1
    assert keyid(load_public_key(tmp_path / "signing.pub")) == results[0]


# --- an independent DSSE implementation agrees --------------------------------------------


def test_securesystemslib_verifies_an_assay_envelope(envelope: bytes) -> None:
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]

    theirs = Envelope.from_dict(json.loads(envelope))
    key = SSlibKey.from_crypto(PUB, keyid=keyid(PUB))
    assert set(theirs.verify([key], 1)) == {keyid(PUB)}
    assert theirs.payload_type == PAYLOAD_TYPE
    assert theirs.payload == _payload(envelope)


def test_securesystemslib_rejects_what_assay_rejects(envelope: bytes) -> None:
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError as TheirError
    from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]

    flipped = bytearray(_payload(envelope))
    flipped[len(flipped) // 2] ^= 0x01
    theirs = Envelope.from_dict(json.loads(_with_payload(envelope, bytes(flipped))))
    with pytest.raises(TheirError):
        theirs.verify([SSlibKey.from_crypto(PUB, keyid=keyid(PUB))], 1)
    wrong = Envelope.from_dict(json.loads(envelope))
    with pytest.raises(TheirError):
        other_pub = OTHER.public_key()
        wrong.verify([SSlibKey.from_crypto(other_pub, keyid=keyid(PUB))], 1)


def test_assay_verifies_a_securesystemslib_signed_envelope() -> None:
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner, SSlibKey  # type: ignore[attr-defined]

    payload = json.dumps(statement_for(verdict())).encode()
    theirs = Envelope(payload, PAYLOAD_TYPE, {})
    theirs.sign(CryptoSigner(KEY, SSlibKey.from_crypto(PUB, keyid=keyid(PUB))))
    assert verify_envelope(json.dumps(theirs.to_dict()).encode(), PUB) == verdict()


# --- the documented example is real and its recipes work ---------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _fenced(text: str) -> list[str]:
    parts = text.split("```")
    return [part.split("\n", 1)[1] for part in parts[1::2]]


def test_documented_envelope_verifies_with_the_documented_key() -> None:
    envelope = (DOCS / "examples" / "verdict.dsse.json").read_bytes()
    pub = DOCS / "examples" / "signing.pub"
    v = verify_envelope(envelope, load_public_key(pub))
    assert v.schema_version == "assay.verdict/v1"
    blocks = _fenced((DOCS / "verdicts.md").read_text(encoding="utf-8"))
    assert envelope.decode() in blocks
    assert pub.read_text() in blocks


@pytest.mark.parametrize("marker", ["# verify-with-securesystemslib", "# verify-with-cryptography"])
def test_documented_independent_verification_recipes_run(
    marker: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = _fenced((DOCS / "verdicts.md").read_text(encoding="utf-8"))
    (code,) = [b for b in blocks if b.startswith(marker)]
    monkeypatch.chdir(DOCS.parent)
    exec(compile(code, marker, "exec"), {})
    assert capsys.readouterr().out.strip()
