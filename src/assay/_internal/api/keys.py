"""`assay.keygen` and `assay.verify`."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..model.verdict import Verdict
from ..signing.keys import generate_keypair, load_public_key
from ..signing.sign import verify_envelope


def keygen(directory: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Create an Ed25519 key pair, `directory`/signing.key (mode 0600) and signing.pub; never
    overwrites. Returns (private key path, public key path). Raises
    `assay.errors.KeyFileError` if either file exists or cannot be written."""
    return generate_keypair(Path(directory))


def verify(
    envelope: bytes,
    public_key: str | os.PathLike[str] | Ed25519PublicKey,
    *,
    subject: str | None = None,
) -> Verdict:
    """The verdict inside a signed envelope, if and only if it verifies with `public_key` (a
    signing.pub path or a loaded key); `subject` ("sha256:<hex>") also pins the submission.

    Raises `assay.errors.VerificationError` (its `reason` says which check failed) or
    `assay.errors.KeyFileError` for an unusable key file."""
    if not isinstance(public_key, Ed25519PublicKey):
        public_key = load_public_key(Path(public_key))
    return verify_envelope(envelope, public_key, expected_subject=subject)
