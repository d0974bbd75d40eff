"""Member names: what a safe relative path is, when two paths are the same file, which are kept."""

from __future__ import annotations

import fnmatch
import hashlib
import unicodedata
from collections.abc import Sequence
from functools import cache, lru_cache

from assay._internal.firewall.tarbase import FirewallLimits, Violation
from assay.errors import UsageError

# Cc: C0/C1 controls and NUL; Cf: bidi overrides and zero-width characters that make one name look
# like another; Zl/Zp: line breaks that split a name across log lines.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def split_name(name: str, limits: FirewallLimits, *, is_dir: bool) -> tuple[str, ...]:
    """The components of a member name, or a Violation. `()` is the archive root (a dir only).

    Only the cheap rules, linear in the name's bytes: the Unicode compatibility rules, which
    normalise, are check_compat()'s, applied to kept members only."""
    # A directory's trailing '/' is not counted: the normalised archive adds one to every
    # directory, and materialise() re-checks that name.
    bare = name.rstrip("/")
    size = len(bare.encode())
    if len(bare) > limits.max_path_chars or size > limits.max_path_bytes:
        raise Violation(
            "path-length",
            f"the name has {len(bare)} characters ({size} bytes), over the cap of "
            f"{limits.max_path_chars} characters / {limits.max_path_bytes} bytes.",
        )
    # Every forbidden category is non-printable, so only names with a non-printable character
    # (also a no-break space, say, which is allowed) need the lookup, a Python loop per character.
    for ch in "" if name.isprintable() else name:
        if unicodedata.category(ch) in _FORBIDDEN_CATEGORIES:
            raise Violation(
                "control-char",
                f"the name contains the control or format character U+{ord(ch):04X}.",
            )
    if "\\" in name:
        raise Violation("backslash", "the name contains a backslash, a separator on Windows.")
    if name.startswith("/"):
        raise Violation("absolute-path", "the name is an absolute path.")
    raw_parts = name.split("/")
    parts = tuple(p for p in raw_parts if p not in ("", "."))
    for part in parts:
        _check_component(part, limits)
    if not parts and not is_dir:
        raise Violation("empty-name", "a non-directory member has an empty or '.' name.")
    if not is_dir and raw_parts[-1] in ("", "."):
        raise Violation("empty-name", "a non-directory member's name ends in '/' or '/.'.")
    if len(parts) > limits.max_depth:
        raise Violation(
            "depth", f"the name is {len(parts)} levels deep, over the cap of {limits.max_depth}."
        )
    return parts


def _check_component(part: str, limits: FirewallLimits) -> None:
    if part == "..":
        raise Violation("dot-dot", "the name has a '..' component.")
    size = len(part.encode())
    if len(part) > limits.max_component_chars or size > limits.max_component_bytes:
        raise Violation(
            "component-length",
            f"a component is {len(part)} characters ({size} bytes) long, over the cap of "
            f"{limits.max_component_chars} characters / {limits.max_component_bytes} bytes.",
        )


class NameBudget:
    """Per archive: every name's bytes, and the bytes in and out of each NFKC normalisation.

    Normalisation is the firewall's one super-linear cost per input byte (a component of U+FDFA
    grows 18-fold), so thousands of such names would cost seconds of controller CPU."""

    def __init__(self, limits: FirewallLimits) -> None:
        self._cap = limits.max_name_bytes
        self._left = limits.max_name_bytes

    def charge(self, n: int) -> None:
        self._left -= n
        if self._left < 0:
            raise Violation(
                "name-bytes",
                f"the member names (with the Unicode-normalised forms of kept ones) add up to "
                f"more than {self._cap} bytes.",
            )


def check_compat(parts: tuple[str, ...], budget: NameBudget) -> None:
    """The rules that need NFKC, for a member that will be written (dropped ones never are)."""
    for part in parts:
        if part.isascii():
            continue  # ASCII is its own NFKC form
        # The input is charged before the work, the output after: no call outruns the budget by
        # more than one component's worth (under a millisecond).
        budget.charge(len(part.encode()))
        compat = _nfkc(part)
        budget.charge(len(compat.encode()))
        _check_compat_component(part, compat)


def _check_compat_component(part: str, compat: str) -> None:
    # Compatibility forms matter: Windows "best fit" code pages and NFKC-normalising tools turn
    # FULLWIDTH FULL STOP into '.', FULLWIDTH SOLIDUS into '/', and so on.
    if compat == "..":
        raise Violation(
            "dot-dot", "the name has a '..' component after Unicode compatibility normalisation."
        )
    if compat == "." or "/" in compat:
        raise Violation(
            "dot-dot",
            "a component becomes '.' or contains '/' after Unicode compatibility normalisation.",
        )
    if "\\" in compat:
        raise Violation(
            "backslash",
            "a component contains a backslash after Unicode compatibility normalisation.",
        )


@lru_cache(maxsize=4096)
def _nfkc(part: str) -> str:
    return part if part.isascii() else unicodedata.normalize("NFKC", part)


def fold(path: str) -> str:
    """The key under which two names are the same file on a case-insensitive, normalising disk."""
    return "/".join(_fold_component(c) for c in path.split("/"))


@lru_cache(maxsize=4096)
def _fold_component(part: str) -> str:
    return unicodedata.normalize("NFKC", _nfkc(part).casefold())


def _collision_rule(a: str, b: str) -> str:
    nfc = unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)
    nfkc = unicodedata.normalize("NFKC", a) == unicodedata.normalize("NFKC", b)
    return "unicode-collision" if nfc or nfkc else "case-collision"


class Catalogue:
    """Every path seen so far (members and implied parents), to catch two members for one file.

    Exact duplicates and file/directory conflicts are checked for every member. Collisions after
    case folding or normalisation only matter between paths that are written, so a dropped
    member's paths are folded (the costly part) only once a kept member uses them too.
    Memory is bounded by max_entries paths; folded keys are stored as 16-byte digests.
    """

    def __init__(self, limits: FirewallLimits) -> None:
        self._limits = limits
        self._kind: dict[str, str] = {}  # path -> "file" | "dir" | "parent" | other kind
        self._folded: dict[bytes, str] = {}
        self._unfolded: set[str] = set()  # paths only dropped members have used so far
        self._root_seen = False

    def __len__(self) -> int:
        return len(self._kind)

    def add_root(self) -> None:
        if self._root_seen:
            raise Violation("duplicate", "the archive root directory appears twice.")
        self._root_seen = True

    def add(self, parts: tuple[str, ...], kind: str, *, kept: bool = True) -> None:
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            seen = self._kind.get(parent)
            if seen is None:
                self._claim(parent, "parent", kept)
            elif seen not in ("dir", "parent"):
                raise Violation(
                    "path-conflict",
                    f"'{parent}' is a {seen} in this archive but this "
                    "member uses it as a directory.",
                )
            elif kept and parent in self._unfolded:
                self._fold(parent)
        path = "/".join(parts)
        seen = self._kind.get(path)
        if seen is None:
            self._claim(path, kind, kept)
        elif seen == "parent" and kind == "dir":
            self._kind[path] = "dir"
            if kept and path in self._unfolded:
                self._fold(path)
        elif seen == "parent":
            raise Violation(
                "path-conflict", f"earlier members use this {kind}'s path as a directory."
            )
        else:
            raise Violation(
                "duplicate",
                "an earlier member has the same path; extracting both "
                "would let the second overwrite the first.",
            )

    def _claim(self, path: str, kind: str, kept: bool) -> None:
        if len(self._kind) >= self._limits.max_entries:
            raise Violation(
                "entry-count",
                f"the archive names more than "
                f"{self._limits.max_entries} paths (members and their parents).",
            )
        if kept:
            self._fold(path)
        else:
            self._unfolded.add(path)
        self._kind[path] = kind

    def _fold(self, path: str) -> None:
        self._unfolded.discard(path)
        key = hashlib.blake2b(fold(path).encode(), digest_size=16).digest()
        other = self._folded.get(key)
        if other is not None:
            rule = _collision_rule(path, other)
            how = "case folding" if rule == "case-collision" else "Unicode normalisation"
            # ascii() shows the code points: colliding names often look identical on screen.
            raise Violation(
                rule,
                f"{ascii(path)[:120]} and the earlier {ascii(other)[:120]} are one name after "
                f"{how}.",
            )
        self._folded[key] = path


class Globs:
    """Artifact patterns: '*', '?' and '[..]' within one component ('*' matches dotfiles too);
    '**' matches zero or more whole components, one or more when it ends the pattern."""

    def __init__(self, patterns: Sequence[str]) -> None:
        if isinstance(patterns, str):
            raise UsageError("artifact patterns must be a list of strings, not one string")
        self._patterns = tuple(_parse_pattern(p) for p in patterns)

    def match(self, parts: tuple[str, ...]) -> bool:
        return any(_match(pattern, parts) for pattern in self._patterns)


def _parse_pattern(pattern: str) -> tuple[str, ...]:
    parts = tuple(pattern.split("/"))
    bad = (
        not pattern
        or pattern.startswith("/")
        or "\\" in pattern
        or any(p in ("", ".", "..") for p in parts)
    )
    if bad:
        raise UsageError(
            f"artifact pattern {pattern!r} is not a relative POSIX glob "
            "(no leading '/', no empty, '.' or '..' components, no backslash)"
        )
    return parts


def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    @cache
    def at(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(parts)
        if pattern[i] == "**" and i == len(pattern) - 1:
            return j < len(parts)  # a trailing "dir/**" means what is inside dir, as in gitignore
        if pattern[i] == "**":
            return at(i + 1, j) or (j < len(parts) and at(i, j + 1))
        return j < len(parts) and fnmatch.fnmatchcase(parts[j], pattern[i]) and at(i + 1, j + 1)

    return at(0, 0)


def parse_prefix(prefix: str | None) -> tuple[str, ...]:
    """strip_prefix as components; validated like a pattern without wildcards."""
    if prefix is None:
        return ()
    parts = tuple(p for p in prefix.strip("/").split("/") if p not in ("", "."))
    if not parts or any(p == ".." or any(c in p for c in "*?[\\") for p in parts):
        raise UsageError(f"strip_prefix {prefix!r} is not a plain relative directory name")
    return parts
