"""`assay.keygen`, `assay.keyid` and `assay.verify`."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..model.verdict import Verdict
from ..signing.keys import default_key_dir, generate_keypair
from ..signing.keys import keyid as _keyid
from ..signing.keys import load_public_key as _load_public_key
from ..signing.sign import verify_envelope


def keygen(directory: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """Create an Ed25519 key pair, `directory`/signing.key (mode 0600) and signing.pub; never
    overwrites. `directory` defaults to the per-user one (~/.config/assay, or under
    $XDG_CONFIG_HOME), whose key `assay.Grader()` signs with. Returns (private key path,
    public key path). Raises `assay.errors.KeyFileError` if either file exists or cannot be
    written."""
    return generate_keypair(default_key_dir() if directory is None else Path(directory))


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """The public key in a signing.pub file, for `verify` and `keyid`. Raises
    `assay.errors.KeyFileError` if it is missing, unreadable, too large, a private key, or
    not an Ed25519 public key."""
    return _load_public_key(Path(path))


def keyid(public_key: str | os.PathLike[str] | Ed25519PublicKey) -> str:
    """The key id (hex sha256 of the raw public key) that envelopes signed with its private
    half name; `public_key` is a signing.pub path or a loaded key. Raises
    `assay.errors.KeyFileError` for an unusable key file."""
    if not isinstance(public_key, Ed25519PublicKey):
        public_key = _load_public_key(Path(public_key))
    return _keyid(public_key)


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
        public_key = _load_public_key(Path(public_key))
    return verify_envelope(envelope, public_key, expected_subject=subject)
