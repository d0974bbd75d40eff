"""A strict tar reader: one header at a time, and every ambiguity between readers is a rejection.

Different tar implementations disagree on corner cases (a NUL inside a long name, a PAX size that
contradicts the header, data after a symlink header, a GNU header with a "prefix"). Each such
disagreement is a way to show one reader a different archive than the next, so this reader accepts
only the unambiguous subset that Docker, Go, GNU tar, bsdtar and Python write.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from assay._internal.firewall.tarbase import FirewallLimits, Violation, display

BLOCK = 512
ZERO_BLOCK = bytes(BLOCK)
_TRAILING_MAX = 2**20  # GNU tar pads to a 10 KiB record; a blocking factor of 2048 gives 1 MiB

KINDS = {
    b"0": "file",
    b"\x00": "file",
    b"7": "contiguous",
    b"1": "hardlink",
    b"2": "symlink",
    b"3": "char-device",
    b"4": "block-device",
    b"5": "dir",
    b"6": "fifo",
}
_DATA_KINDS = frozenset({"file", "contiguous"})

_PAX_HONOURED = frozenset({"path", "linkpath", "size", "hdrcharset"})
_PAX_IGNORED = frozenset(
    {
        "mtime",
        "atime",
        "ctime",
        "uid",
        "gid",
        "uname",
        "gname",
        "comment",
        "charset",
        "SCHILY.dev",
        "SCHILY.ino",
        "SCHILY.nlink",
        "SCHILY.fflags",
        "LIBARCHIVE.creationtime",
    }
)
# Extended attributes and ACLs (file capabilities included) are dropped, never applied.
_PAX_IGNORED_PREFIXES = ("SCHILY.xattr.", "LIBARCHIVE.xattr.", "SCHILY.acl.")
_UTF8_CHARSET = b"ISO-IEC 10646 2000 UTF-8"
# Real writers emit a handful of records; thousands of tiny xattr records per member only cost time.
_MAX_PAX_RECORDS = 128


class ByteSource(Protocol):
    """A forward-only byte stream; `offset` counts bytes consumed from the (decompressed) tar."""

    offset: int

    def read(self, n: int) -> bytes:
        """Exactly n bytes, or fewer only at the end of the stream."""
        ...

    def skip(self, n: int) -> None:
        """Move n bytes forward (reading past the end shows up as a short read later)."""
        ...


@dataclass(frozen=True)
class Member:
    name: str  # the final name: PAX path, else GNU long name, else ustar prefix/name
    display: str
    kind: str  # a value of KINDS
    size: int
    mode: int
    linkname: bytes  # non-empty when the member names a link target, whatever its type
    offset: int  # stream offset of the first data byte
    raw: bytes  # every header byte read for this member, extended headers included


@dataclass(frozen=True)
class _Header:
    name: bytes
    name_field_full: bool
    mode: int
    size: int
    typeflag: bytes
    linkname: bytes


def padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def read_members(
    src: ByteSource, limits: FirewallLimits, *, exact_end: bool = False
) -> Iterator[Member]:
    """Yield members in stream order; the caller may read a member's data before asking for more.

    exact_end: the stream must end right after the two zero blocks (no record padding).
    """
    pax: dict[str, bytes] | None = None
    long_name: bytes | None = None
    long_link: bytes | None = None
    raw: list[bytes] = []
    while True:
        at = src.offset
        where = f"<header at byte {at}>"
        block = _read_exact(src, BLOCK, "a header", where)
        if block == ZERO_BLOCK:
            if pax is not None or long_name is not None or long_link is not None:
                rule = "pax-header" if pax is not None else "gnu-header"
                raise Violation(rule, "an extended header is not followed by a member.", where)
            _read_end(src, where, 0 if exact_end else _TRAILING_MAX)
            return
        hdr = _parse_header(block, where)
        kind = KINDS.get(hdr.typeflag)
        if hdr.typeflag in (b"x", b"g"):
            payload = _read_payload(src, hdr.size, limits.max_pax_bytes, "pax-header", where)
            records = _parse_pax(payload[: hdr.size], where)
            if hdr.typeflag == b"g":
                # git archive writes one global header carrying the commit id; nothing else is safe
                # because a global path or size would apply to every later member.
                if set(records) - {"comment"}:
                    raise Violation(
                        "pax-header", "a PAX global header sets more than a comment.", where
                    )
                raw += (block, payload)
                continue
            if pax is not None:
                raise Violation("pax-header", "two PAX headers precede one member.", where)
            pax = records
            raw += (block, payload)
            continue
        if hdr.typeflag in (b"L", b"K"):
            rule = "path-length" if hdr.typeflag == b"L" else "gnu-header"
            payload = _read_payload(src, hdr.size, limits.max_path_bytes + 4, rule, where)
            value = payload[: hdr.size].rstrip(b"\x00")
            if b"\x00" in value:
                raise Violation(
                    "control-char", "a GNU long name contains a NUL byte.", display(value)
                )
            if (long_name if hdr.typeflag == b"L" else long_link) is not None:
                raise Violation(
                    "gnu-header", "two GNU long-name headers precede one member.", where
                )
            if hdr.typeflag == b"L":
                long_name = value
            else:
                long_link = value
            raw += (block, payload)
            continue
        raw.append(block)
        member = _member(
            hdr, kind, pax or {}, long_name, long_link, src.offset, b"".join(raw), where
        )
        pax = long_name = long_link = None
        raw = []
        yield member
        src.skip(member.offset + padded(member.size) - src.offset)


def _member(
    hdr: _Header,
    kind: str | None,
    pax: dict[str, bytes],
    long_name: bytes | None,
    long_link: bytes | None,
    offset: int,
    raw: bytes,
    where: str,
) -> Member:
    if hdr.typeflag == b"S" or any(k.startswith("GNU.sparse.") for k in pax):
        raise Violation(
            "sparse",
            "sparse members describe holes that readers fill differently.",
            display(pax.get("path", long_name or hdr.name)),
        )
    if kind is None:
        raise Violation(
            "member-type",
            f"the member type {hdr.typeflag!r} is not a file or directory.",
            display(pax.get("path", long_name or hdr.name)),
        )
    if pax.get("hdrcharset", _UTF8_CHARSET) != _UTF8_CHARSET:
        raise Violation(
            "encoding",
            "the PAX header declares names that are not UTF-8.",
            display(pax.get("path", hdr.name)),
        )
    if "path" in pax and long_name is not None:
        raise Violation(
            "header-conflict",
            "both a PAX path and a GNU long name name this member.",
            display(pax["path"]),
        )
    if "linkpath" in pax and long_link is not None:
        raise Violation(
            "header-conflict",
            "both a PAX linkpath and a GNU long link name this member.",
            display(pax.get("path", long_name or hdr.name)),
        )
    final = pax.get("path", long_name)
    if final is None:
        final = hdr.name
    else:
        _check_fallback(hdr, display(final))
    shown = display(final)
    try:
        name = final.decode("utf-8")
    except UnicodeDecodeError:
        raise Violation("encoding", "the name is not valid UTF-8.", shown) from None
    if hdr.typeflag == b"\x00" and name.endswith("/"):
        kind = "dir"  # the V7 spelling of a directory, as every reader treats it
    size = hdr.size
    if "size" in pax:
        size = _pax_number(pax["size"], shown)
        if hdr.size not in (0, size):
            raise Violation(
                "pax-header", f"the PAX size {size} contradicts the header size {hdr.size}.", shown
            )
    if kind not in _DATA_KINDS and size != 0:
        raise Violation(
            "format",
            f"a {kind} header declares {size} data bytes; readers disagree "
            "on whether to skip them.",
            shown,
        )
    linkname = pax.get("linkpath", long_link if long_link is not None else hdr.linkname)
    return Member(name, shown, kind, size, hdr.mode, linkname, offset, raw)


def _check_fallback(hdr: _Header, shown: str) -> None:
    """A PAX or GNU name overrides the ustar name, but readers without that support use the ustar
    name, so it must be harmless too."""
    if hdr.name.startswith(b"/"):
        raise Violation(
            "absolute-path", "the ustar name under the extended name is absolute.", shown
        )
    parts = hdr.name.split(b"/")
    if hdr.name_field_full:
        parts = parts[:-1]  # writers truncate the fallback to 100 bytes, maybe mid-component
    if b".." in parts:
        raise Violation(
            "dot-dot", "the ustar name under the extended name has a '..' component.", shown
        )


def _parse_header(block: bytes, where: str) -> _Header:
    stored = _octal(block[148:156], where)
    unsigned = sum(block) - sum(block[148:156]) + 8 * 0x20
    if stored != unsigned:
        high = sum(1 for b in block[:148] + block[156:] if b & 0x80)
        if stored != unsigned - 256 * high:  # old writers summed signed chars
            raise Violation(
                "format", "the header checksum is wrong (not a tar stream, or corrupt).", where
            )
    typeflag = block[156:157]
    if block[257:263] == b"ustar\x00":
        prefix = _cstr(block[345:500], where)
    elif block[257:265] == b"ustar  \x00":
        # GNU keeps atime/ctime/sparse data where POSIX keeps the prefix; some readers still
        # prepend it as a prefix, so it must be empty.
        if typeflag != b"S" and block.count(0, 345, 500) != 155:
            raise Violation("format", "a GNU header carries data in the POSIX prefix field.", where)
        prefix = b""
    else:
        raise Violation(
            "format", "the header has no ustar magic (pre-POSIX tar is not accepted).", where
        )
    name = _cstr(block[0:100], where)
    return _Header(
        name=prefix + b"/" + name if prefix else name,
        name_field_full=block[99] != 0 and not prefix,
        mode=_octal(block[100:108], where),
        size=_number(block[124:136], where),
        typeflag=typeflag,
        linkname=_cstr(block[157:257], where),
    )


def _cstr(field: bytes, where: str) -> bytes:
    end = field.find(b"\x00")
    if end < 0:
        return field
    if field.count(0, end) != len(field) - end:
        raise Violation(
            "format",
            "a header name field has bytes after its terminating NUL; readers disagree on them.",
            where,
        )
    return field[:end]


def _octal(field: bytes, where: str) -> int:
    digits = field.rstrip(b"\x00 ").lstrip(b" ")
    if digits.strip(b"01234567"):
        raise Violation("format", "a numeric header field is not octal.", where)
    return int(digits, 8) if digits else 0


def _number(field: bytes, where: str) -> int:
    if field[0] & 0x80:
        # GNU base-256. Readers disagree on the low bits of the first byte, so they must be zero.
        if field[0] != 0x80:
            raise Violation("format", "a base-256 size field is negative or ambiguous.", where)
        return int.from_bytes(field[1:], "big")
    return _octal(field, where)


def _pax_number(value: bytes, shown: str) -> int:
    if not value.isdigit() or len(value) > 20 or not value.isascii():
        raise Violation("pax-header", "a PAX size is not a plain decimal number.", shown)
    return int(value)


def _parse_pax(payload: bytes, where: str) -> dict[str, bytes]:
    records: dict[str, bytes] = {}
    pos = 0
    while pos < len(payload):
        space = payload.find(b" ", pos, pos + 21)
        digits = payload[pos:space] if space > pos else b""
        if not digits.isdigit() or not digits.isascii() or digits.startswith(b"0"):
            raise Violation("pax-header", "a PAX record has no valid length.", where)
        end = pos + int(digits)
        if end > len(payload) or end <= space + 1 or payload[end - 1 : end] != b"\n":
            raise Violation(
                "pax-header", "a PAX record's length does not match its content.", where
            )
        key_bytes, eq, value = payload[space + 1 : end - 1].partition(b"=")
        try:
            key = key_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise Violation("pax-header", "a PAX key is not UTF-8.", where) from None
        if not eq or not key:
            raise Violation("pax-header", "a PAX record has no key=value.", where)
        if key in records:
            raise Violation(
                "pax-header",
                f"the PAX key {display(key)!r} appears twice; readers disagree on which wins.",
                where,
            )
        if not (
            key in _PAX_HONOURED
            or key in _PAX_IGNORED
            or key.startswith("GNU.sparse.")
            or key.startswith(_PAX_IGNORED_PREFIXES)
        ):
            raise Violation("pax-header", f"the PAX key {display(key)!r} is not understood.", where)
        if key in ("path", "linkpath", "size") and not value:
            # An empty value means "fall back to the ustar field" in POSIX but not in every reader.
            raise Violation("pax-header", f"the PAX {key} is empty.", where)
        records[key] = value
        if len(records) > _MAX_PAX_RECORDS:
            raise Violation(
                "pax-header", f"a PAX header has over {_MAX_PAX_RECORDS} records.", where
            )
        pos = end
    return records


def _read_exact(src: ByteSource, n: int, what: str, where: str) -> bytes:
    data = src.read(n)
    if len(data) < n:
        raise Violation("truncated", f"the stream ends inside {what}.", where)
    return data


def _read_payload(src: ByteSource, size: int, cap: int, rule: str, where: str) -> bytes:
    if size > cap:
        raise Violation(
            rule, f"an extended header of {size} bytes exceeds the cap of {cap}.", where
        )
    return _read_exact(src, padded(size), "an extended header", where)


def _read_end(src: ByteSource, where: str, allowed_zeros: int) -> None:
    """Two zero blocks end the archive; anything but zeros after them is a hidden second archive."""
    second = _read_exact(src, BLOCK, "the end-of-archive marker", where)
    if any(second):
        raise Violation(
            "trailing-data",
            "a lone zero block is followed by more headers; readers "
            "that skip zero blocks would see members this one does not.",
            where,
        )
    seen = 0
    while chunk := src.read(64 * 1024):
        seen += len(chunk)
        if chunk.count(0) != len(chunk) or seen > allowed_zeros:
            raise Violation(
                "trailing-data", "there is data after the end-of-archive marker.", where
            )
