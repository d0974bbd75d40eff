"""A tar archive from a mapping of relative path -> contents (a Python caller's submission).

The names go into the archive exactly as given, each in a PAX `path` record (any length, any
character), so the firewall judges the caller's names and not a tidied copy: `../x.py`,
`/etc/x` or a NUL is refused there by the rule that names it (dot-dot, absolute-path,
control-char).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import BinaryIO

from assay.errors import UsageError

from .tarwrite import BLOCK, END_OF_ARCHIVE
from .tarwrite import _record as pax_record
from .tarwrite import _ustar as ustar_block

# The ustar name PAX-unaware readers would see: harmless, and the PAX path overrides it.
_PLACEHOLDER = b"assay-member"


def write_mapping_tar(files: Mapping[str, str | bytes], sink: BinaryIO) -> None:
    """Write `files` as a tar stream to `sink`; str contents are encoded as UTF-8."""
    for name, content in files.items():
        if not isinstance(name, str):
            raise UsageError(f"submission names must be str, not {type(name).__name__}")
        if isinstance(content, str):
            data = content.encode("utf-8")
        elif isinstance(content, bytes | bytearray | memoryview):
            data = bytes(content)
        else:
            raise UsageError(
                f"submission {name!r}: contents must be str or bytes, not {type(content).__name__}"
            )
        # surrogatepass: a lone surrogate reaches the firewall as invalid UTF-8 and is refused.
        payload = pax_record(b"path", name.encode("utf-8", "surrogatepass"))
        sink.write(ustar_block(b"././@PaxHeader", b"", 0o644, len(payload), b"x"))
        sink.write(payload + bytes(-len(payload) % BLOCK))
        sink.write(ustar_block(_PLACEHOLDER, b"", 0o644, len(data), b"0"))
        sink.write(data + bytes(-len(data) % BLOCK))
    sink.write(END_OF_ARCHIVE)
