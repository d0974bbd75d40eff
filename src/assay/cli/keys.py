"""`assay keygen` and `assay verify`: make a signing key; check a signed verdict.

Exit codes: 0 valid, 1 the envelope failed a check (tampered, wrong key, wrong subject...),
2 usage (bad arguments, unreadable or wrong kind of key, refusing to overwrite).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.text import Text

import assay
from assay.errors import AssayError, UsageError, VerificationError

from .common import fail


def _tier_name(tier: assay.Tier) -> str:
    titles = assay.TIER_TITLES
    return f"{titles[tier]} baseline" if tier in assay.UNSAFE_TIERS else titles[tier]


def _console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _fail(exc: AssayError, as_json: bool) -> NoReturn:
    def render(exc: AssayError) -> None:
        if as_json:
            reason = exc.reason if isinstance(exc, VerificationError) else "usage"
            click.echo(json.dumps({"valid": False, "reason": reason, "message": str(exc)}))
        else:
            _console(stderr=True).print(Text(f"✗ {exc.diagnostics()}", style="bold red"))

    fail(exc, render)


@click.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to write signing.key and signing.pub [default: ~/.config/assay].",
)
def keygen(directory: Path | None) -> None:
    """Create an Ed25519 key pair for signing verdicts (never overwrites)."""
    try:
        key_path, pub_path = assay.keygen(directory)
        kid = assay.keyid(pub_path)
    except AssayError as exc:
        _fail(exc, as_json=False)
    console = _console()
    console.print(Text(f"private key: {key_path} (mode 0600; keep it off every container)"))
    console.print(Text(f"public key:  {pub_path} (share it; verifiers need it)"))
    console.print(Text(f"key id:      {kid}"))


def _read_envelope(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(assay.MAX_ENVELOPE_BYTES + 1)  # assay.verify reports the oversize
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _summary(verdict: assay.Verdict, kid: str, key_path: Path) -> list[Text]:
    passes = sum(case.status == "pass" for case in verdict.cases)
    outcome = (
        Text("PASSED", style="bold green") if verdict.passed else Text("FAILED", style="bold red")
    )
    lines = [
        Text(f"✓ signature valid: key {kid[:16]} ({key_path})", style="green"),
        Text.assemble(
            outcome,
            f"  {verdict.task_id}  tier {verdict.tier} ({_tier_name(verdict.tier)})"
            f"  {verdict.runtime}  score {verdict.score:.3f}"
            f" ({passes}/{verdict.expected_case_count} cases)",
        ),
        Text(f"  submission {verdict.submission_digest or 'none'}  grading {verdict.grading_id}"),
        Text(f"  {verdict.started_at} → {verdict.ended_at}  assay {verdict.assay_version}"),
    ]
    if verdict.reason_codes:
        lines.append(Text(f"  reasons: {', '.join(verdict.reason_codes)}", style="yellow"))
    if verdict.notes:
        lines.append(Text(f"  notes: {', '.join(verdict.notes)}"))
    not_passed = [case for case in verdict.cases if case.status != "pass"]
    for case in not_passed[:10]:
        lines.append(Text(f"  {case.status:<7} {case.id}"))
    if len(not_passed) > 10:
        lines.append(Text(f"  … and {len(not_passed) - 10} more cases not passed"))
    if verdict.tier in assay.UNSAFE_TIERS:
        lines.append(Text("  baseline tier: this grade is not tamper-resistant", style="yellow"))
    return lines


@click.command()
@click.argument("envelope", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--key",
    "key_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The signer's public key (signing.pub).",
)
@click.option("--subject", help="Also require this submission digest (sha256:<hex>).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object for machines.")
def verify(envelope: Path, key_path: Path, subject: str | None, as_json: bool) -> None:
    """Check a signed verdict: signature, payload type, statement, schema, subject."""
    try:
        public_key = assay.load_public_key(key_path)
        raw = _read_envelope(envelope)
        verdict = assay.verify(raw, public_key, subject=subject)
    except AssayError as exc:
        _fail(exc, as_json)
    kid = assay.keyid(public_key)
    if as_json:
        document = {"valid": True, "keyid": kid, "verdict": verdict.model_dump(mode="json")}
        click.echo(json.dumps(document))
        return
    console = _console()
    for line in _summary(verdict, kid, key_path):
        console.print(line)
