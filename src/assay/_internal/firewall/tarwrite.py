"""The normalised tar format: one canonical header per (path, kind, size, mode), nothing else.

Owner 0:0, empty user and group names, mtime 0, mode 0644 or 0755, POSIX ustar magic. A PAX header
(with only `path`, `size` and `linkpath` records) is added when the path is not ASCII or does not
fit the ustar name/prefix fields, when the size does not fit 11 octal digits, or when a task
tree's link target (mode 0777) does not fit the linkname field. The same bytes for the same
input, always: materialise() regenerates every header and compares.
"""

from __future__ import annotations

BLOCK = 512
END_OF_ARCHIVE = bytes(2 * BLOCK)
_MAX_OCTAL_SIZE = 8**11 - 1
_PAX_NAME = b"././@PaxHeader"


_TYPEFLAGS = {"file": b"0", "dir": b"5", "symlink": b"2"}


def header(path: str, kind: str, size: int, mode: int, target: str = "") -> bytes:
    """Header bytes for one member of the normalised archive (`kind` is "file" or "dir", or
    "symlink" with its `target` in a task tree's archive: `check(..., tree=True)`)."""
    name = path + "/" if kind == "dir" else path
    encoded = name.encode("utf-8")
    records: list[tuple[bytes, bytes]] = []
    split = _split_ustar(encoded)
    if split is None:
        records.append((b"path", encoded))
        split = (_fallback(name), b"")
    if size > _MAX_OCTAL_SIZE:
        records.append((b"size", str(size).encode()))
    link = target.encode("utf-8")
    if len(link) > 100 or not link.isascii():
        records.append((b"linkpath", link))
        link = b""
    small = size if size <= _MAX_OCTAL_SIZE else 0
    member = _ustar(split[0], split[1], mode, small, _TYPEFLAGS[kind], link)
    if not records:
        return member
    payload = b"".join(_record(key, value) for key, value in records)
    pad = bytes(-len(payload) % BLOCK)
    return _ustar(_PAX_NAME, b"", 0o644, len(payload), b"x") + payload + pad + member


def _ustar(
    name: bytes, prefix: bytes, mode: int, size: int, typeflag: bytes, link: bytes = b""
) -> bytes:
    block = bytearray(BLOCK)
    block[0 : len(name)] = name
    block[100:108] = b"%07o\x00" % mode
    block[108:116] = b"0000000\x00"  # uid
    block[116:124] = b"0000000\x00"  # gid
    block[124:136] = b"%011o\x00" % size
    block[136:148] = b"00000000000\x00"  # mtime
    block[148:156] = b" " * 8
    block[156:157] = typeflag
    block[157 : 157 + len(link)] = link
    block[257:265] = b"ustar\x0000"
    block[329:337] = b"0000000\x00"  # devmajor
    block[337:345] = b"0000000\x00"  # devminor
    block[345 : 345 + len(prefix)] = prefix
    block[148:156] = b"%06o\x00 " % sum(block)
    return bytes(block)


def _split_ustar(name: bytes) -> tuple[bytes, bytes] | None:
    if not name.isascii():
        return None
    if len(name) <= 100:
        return name, b""
    # The longest prefix that fits, so that the split is deterministic.
    cut = name.rfind(b"/", 0, 156)
    while cut > 0:
        if 0 < len(name) - cut - 1 <= 100:
            return name[cut + 1 :], name[:cut]
        cut = name.rfind(b"/", 0, cut)
    return None


def _fallback(name: str) -> bytes:
    """The ustar name PAX-unaware readers see: ASCII, cut at a component boundary, never '..'."""
    ascii_name = "".join(c if " " <= c <= "~" else "_" for c in name).encode()
    if len(ascii_name) <= 100:
        return ascii_name
    kept = b""
    for part in ascii_name.split(b"/"):
        candidate = kept + b"/" + part if kept else part
        if len(candidate) > 100:
            break
        kept = candidate
    return kept or ascii_name[:100]


def _record(key: bytes, value: bytes) -> bytes:
    body = b" " + key + b"=" + value + b"\n"
    digits = len(str(len(body)))
    while len(str(len(body) + digits)) != digits:
        digits += 1
    return str(len(body) + digits).encode() + body
