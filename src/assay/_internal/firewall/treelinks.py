"""Symbolic links in a trusted task tree (`check(..., tree=True)`): accepted only when every one
resolves inside the tree.

A task's repository may hold links (`README.rst -> README.md`); a candidate's archive never may
(the `link` rule). A link is judged against every other link of the same archive, the way the
kernel resolves it: a `..` after a component that is itself a link climbs from where that link
leads, not from where it sits, so a lexically harmless `a -> d/l/../..` escapes when `d/l -> ..`.
An absolute target is refused outright: on the host it would name the host's files.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

from assay._internal.firewall.tarbase import FirewallLimits, Violation

MAX_HOPS = 40
"""Linux's own limit on links followed in one path resolution (ELOOP past it)."""
_FORBIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def link_target(raw: bytes, limits: FirewallLimits) -> str:
    """A link's target as text, or a Violation: UTF-8, relative, no control character or
    backslash, within the path caps. Containment is `check_contained`'s, over all links."""
    try:
        target = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Violation("encoding", "the link target is not valid UTF-8.") from None
    if not target or len(raw) > limits.max_path_bytes:
        raise Violation("path-length", "the link target is empty or longer than the path cap.")
    if any(unicodedata.category(ch) in _FORBIDDEN for ch in target):
        raise Violation("control-char", "the link target contains a control character.")
    if "\\" in target:
        raise Violation("backslash", "the link target contains a backslash.")
    if target.startswith("/"):
        raise Violation(
            "link-escape",
            "the link target is absolute; on the host it would name the host's files "
            "(make it relative to the link's directory).",
        )
    return target


def check_contained(links: Mapping[str, str]) -> None:
    """Every link (path -> target, paths relative to the tree root) resolves inside the tree,
    following the other links as the kernel would; a Violation naming the first that does not."""
    for path in sorted(links):
        try:
            _resolve(path, links)
        except Violation as violation:
            violation.member = violation.member or path
            raise


def resolve(path: str, links: Mapping[str, str]) -> str:
    """Where the link at `path` leads, as a path from the tree root ("" for the root itself);
    a Violation when it leaves the tree or loops."""
    return "/".join(_resolve(path, links))


def _resolve(path: str, links: Mapping[str, str]) -> list[str]:
    where = path.split("/")[:-1]  # the link's own directory, from the tree root
    pending = list(reversed(links[path].split("/")))
    hops = 1
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not where:
                raise Violation("link-escape", "the link resolves outside the tree.")
            where.pop()
            continue
        where.append(part)
        target = links.get("/".join(where))
        if target is None:
            continue  # a directory, a file or nothing: resolution goes on (or stops) inside
        hops += 1
        if hops > MAX_HOPS:
            raise Violation("link-loop", f"resolving the link follows more than {MAX_HOPS} links.")
        where.pop()
        pending.extend(reversed(target.split("/")))
    return where
