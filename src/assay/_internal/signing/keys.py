"""Ed25519 key files for signing verdicts.

The private key lives only on the host, in the user's config directory, mode 0600. Nothing here
prints, logs or formats key material into messages; errors name the file, never its content.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from assay._internal.model.atomic import atomic_write
from assay.errors import KeyFileError

KEY_FILE = "signing.key"
PUB_FILE = "signing.pub"
_MAX_KEY_FILE_BYTES = 16 * 1024


def default_key_dir() -> Path:
    # The XDG spec says relative values are invalid and must be ignored.
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"
    return base / "assay"


def keyid(public_key: Ed25519PublicKey) -> str:
    """sha256 of the raw 32-byte public key, hex: what the DSSE envelope names as `keyid`."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def _public_pem(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create `path` with `data` and `mode`, atomically, failing if it exists.

    Written to a private temporary name and hard-linked into place, so a concurrent reader sees
    either no file or the whole file, and two concurrent writers cannot both win.
    """
    atomic_write(path, data, mode, replace=False)


def _write_keypair(key_path: Path, pub_path: Path) -> Ed25519PrivateKey:
    for existing in (key_path, pub_path):
        if existing.exists() or existing.is_symlink():
            raise KeyFileError(f"{existing} already exists; refusing to overwrite a key")
    key_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    private_key = Ed25519PrivateKey.generate()
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        _write_new(key_path, pem, 0o600)
        _write_new(pub_path, _public_pem(private_key.public_key()), 0o644)
    except FileExistsError as exc:
        raise KeyFileError(f"{exc.filename} already exists; refusing to overwrite a key") from None
    return private_key


def generate_keypair(directory: Path | str) -> tuple[Path, Path]:
    """Write DIR/signing.key (0600) and DIR/signing.pub; never overwrites either."""
    directory = Path(directory)
    key_path, pub_path = directory / KEY_FILE, directory / PUB_FILE
    _write_keypair(key_path, pub_path)
    return key_path, pub_path


def _read_capped(path: Path, what: str) -> tuple[bytes, os.stat_result]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise KeyFileError(f"cannot open {what} {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"{what} {path} is not a regular file")
        data = os.read(fd, _MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > _MAX_KEY_FILE_BYTES:
        raise KeyFileError(f"{what} {path} is too large to be a key")
    return data, info


def load_private_key(path: Path | str) -> Ed25519PrivateKey:
    path = Path(path)
    data, info = _read_capped(path, "private key")
    if info.st_mode & 0o077:
        raise KeyFileError(
            f"private key {path} is readable by others (mode {stat.S_IMODE(info.st_mode):04o});"
            f" run: chmod 600 {path}"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise KeyFileError(f"{path} is not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} is not an Ed25519 key")
    return key


def load_public_key(path: Path | str) -> Ed25519PublicKey:
    path = Path(path)
    data, _ = _read_capped(path, "public key")
    if b"PRIVATE KEY" in data:
        raise KeyFileError(f"{path} is a private key; pass the public key ({PUB_FILE})")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise KeyFileError(f"{path} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{path} is not an Ed25519 public key")
    return key


def pub_path_for(key_path: Path) -> Path:
    if key_path.name == KEY_FILE:
        return key_path.with_name(PUB_FILE)
    return key_path.with_suffix(".pub")


def ensure_signing_key(path: Path | str | None = None) -> tuple[Ed25519PrivateKey, Path, bool]:
    """Load the signing key at `path` (default: DIR/signing.key in the config dir), creating a
    key pair on first use. Returns (private key, public key path, whether it was created)."""
    key_path = Path(path) if path is not None else default_key_dir() / KEY_FILE
    pub_path = pub_path_for(key_path)
    if pub_path == key_path:
        raise KeyFileError(f"{key_path}: a private key file must not end in .pub")
    created = False
    if not key_path.exists():
        try:
            _write_keypair(key_path, pub_path)
            created = True
        except KeyFileError:
            if not key_path.exists():  # lost a race on the .pub only, or a dangling link
                raise
    private_key = load_private_key(key_path)
    if not pub_path.exists():
        # The public half is derivable and not secret; restore it so the user can share it.
        try:
            _write_new(pub_path, _public_pem(private_key.public_key()), 0o644)
        except FileExistsError:
            pass
    elif keyid(load_public_key(pub_path)) != keyid(private_key.public_key()):
        raise KeyFileError(f"{pub_path} does not belong to {key_path}")
    return private_key, pub_path, created
