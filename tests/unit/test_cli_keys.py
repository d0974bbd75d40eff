from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.verdicts import SUBMISSION, verdict

from assay._internal.signing.sign import (
    PAYLOAD_TYPE,
    generate_keypair,
    load_private_key,
    sign_payload,
    sign_verdict,
    statement_for,
)
from assay.cli.keys import keygen, verify


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    return generate_keypair(tmp_path / "keys")


@pytest.fixture
def signed(tmp_path: Path, keys: tuple[Path, Path]) -> Path:
    path = tmp_path / "verdict.dsse"
    path.write_bytes(sign_verdict(verdict(("pass", "fail", "pass")), load_private_key(keys[0])))
    return path


def _verify(*args: str) -> Result:
    return CliRunner().invoke(verify, list(args))


def test_keygen_writes_a_key_pair(tmp_path: Path) -> None:
    result = CliRunner().invoke(keygen, ["--dir", str(tmp_path / "k")])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE((tmp_path / "k" / "signing.key").stat().st_mode) == 0o600
    assert (tmp_path / "k" / "signing.pub").read_bytes().startswith(b"-----BEGIN PUBLIC KEY")
    assert "signing.pub" in result.stdout
    assert "PRIVATE" not in result.output


def test_keygen_defaults_to_the_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert CliRunner().invoke(keygen, []).exit_code == 0
    assert (tmp_path / "assay" / "signing.key").is_file()


def test_keygen_refuses_to_overwrite(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    before = keys[0].read_bytes()
    result = CliRunner().invoke(keygen, ["--dir", str(keys[0].parent)])
    assert result.exit_code == 2
    assert "refusing to overwrite" in result.stderr
    assert keys[0].read_bytes() == before


def test_verify_accepts_and_summarises(signed: Path, keys: tuple[Path, Path]) -> None:
    result = _verify(str(signed), "--key", str(keys[1]))
    assert result.exit_code == 0, result.output
    assert "signature valid" in result.stdout
    assert "FAILED" in result.stdout
    assert "canary-secret" in result.stdout
    assert "2/3" in result.stdout
    assert "fail    c2" in result.stdout


def test_verify_json(signed: Path, keys: tuple[Path, Path]) -> None:
    result = _verify(str(signed), "--key", str(keys[1]), "--json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["valid"] is True
    assert document["verdict"] == verdict(("pass", "fail", "pass")).model_dump(mode="json")


def test_verify_with_expected_subject(signed: Path, keys: tuple[Path, Path]) -> None:
    assert _verify(str(signed), "--key", str(keys[1]), "--subject", SUBMISSION).exit_code == 0
    other = "sha256:" + "ee" * 32
    result = _verify(str(signed), "--key", str(keys[1]), "--subject", other)
    assert result.exit_code == 1
    assert "subject:unexpected" in result.stderr


def _tampered(signed: Path, keys: tuple[Path, Path], tmp_path: Path) -> dict[str, bytes]:
    envelope = signed.read_bytes()
    doc = json.loads(envelope)
    payload = bytearray(base64.b64decode(doc["payload"]))
    payload[40] ^= 0x04
    flipped_payload = {**doc, "payload": base64.b64encode(bytes(payload)).decode()}
    sig = bytearray(base64.b64decode(doc["signatures"][0]["sig"]))
    sig[5] ^= 0x80
    new_sig = {**doc["signatures"][0], "sig": base64.b64encode(bytes(sig)).decode()}
    flipped_sig = {**doc, "signatures": [new_sig]}
    key = load_private_key(keys[0])
    statement = statement_for(verdict(("pass", "fail", "pass")))
    extra = {**statement, "predicate": {**statement["predicate"], "bonus": 1}}
    missing = {k: v for k, v in statement.items() if k != "predicateType"}
    other_subject = {
        **statement,
        "subject": [{"name": "submission", "digest": {"sha256": "ee" * 32}}],
    }
    other_dir = tmp_path / "other"
    other_key = load_private_key(generate_keypair(other_dir)[0])
    return {
        "envelope:not-json": envelope[: len(envelope) // 2],
        "envelope:duplicate-key": envelope.replace(b"{", b'{"payload":"",', 1),
        "signature:wrong-key": sign_verdict(verdict(), other_key),
        "signature:invalid": json.dumps(flipped_payload).encode(),
        "signature:invalid ": json.dumps(flipped_sig).encode(),
        "payload:wrong-type": sign_payload(json.dumps(statement).encode(), "text/plain", key),
        "verdict:extra-field": sign_payload(json.dumps(extra).encode(), PAYLOAD_TYPE, key),
        "statement:missing-field": sign_payload(json.dumps(missing).encode(), PAYLOAD_TYPE, key),
        "subject:mismatch": sign_payload(json.dumps(other_subject).encode(), PAYLOAD_TYPE, key),
    }


def test_every_tamper_exits_1_with_its_reason(
    signed: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    for reason, raw in _tampered(signed, keys, tmp_path).items():
        bad = tmp_path / "bad.dsse"
        bad.write_bytes(raw)
        result = _verify(str(bad), "--key", str(keys[1]))
        assert result.exit_code == 1, (reason, result.output)
        assert f"[{reason.strip()}]" in result.stderr, (reason, result.stderr)
        assert result.stdout == ""
        as_json = _verify(str(bad), "--key", str(keys[1]), "--json")
        assert as_json.exit_code == 1
        assert json.loads(as_json.stdout)["reason"] == reason.strip()
        assert json.loads(as_json.stdout)["valid"] is False


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["ENVELOPE"],  # no --key
        ["ENVELOPE", "--key", "MISSING"],
        ["MISSING", "--key", "PUB"],
        ["ENVELOPE", "--key", "PRIVATE"],
        ["ENVELOPE", "--key", "ENVELOPE"],
        ["ENVELOPE", "--key", "PUB", "--frobnicate"],
    ],
)
def test_usage_errors_exit_2(
    args: list[str], signed: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    names = {
        "ENVELOPE": str(signed),
        "PUB": str(keys[1]),
        "PRIVATE": str(keys[0]),
        "MISSING": str(tmp_path / "missing"),
    }
    result = _verify(*[names.get(a, a) for a in args])
    assert result.exit_code == 2, result.output


def test_commands_are_registered_on_main() -> None:
    from assay.cli import main

    assert main.commands["keygen"] is keygen
    assert main.commands["verify"] is verify
