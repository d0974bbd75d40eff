"""Which images a Dockerfile needs from the engine, read before any build.

The engine's builder pulls a base it does not have; assay never pulls (a pull grades on
whatever a tag means today, and no registry is reachable here), so every image a build would
fetch is named here and checked first: `FROM` lines (after global `ARG` substitution, minus
earlier stage names and `scratch`) and `COPY --from=` sources that are not stages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECTIVE = re.compile(r"^#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class DockerfileError(ValueError):
    """The Dockerfile cannot be read for its base images; the message names the line."""


@dataclass(frozen=True)
class BaseImage:
    """An image the build needs from the engine, and the line (1-based) that names it."""

    ref: str
    line: int


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Instructions with continuations joined and comments dropped, each with its first line."""
    lines = text.splitlines()
    escape = "\\"
    for raw in lines:  # parser directives: only at the very top, before anything else
        m = _DIRECTIVE.match(raw.strip())
        if m is None:
            break
        if m.group(1).lower() == "escape":
            escape = m.group(2)
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and buf):
            continue  # comments and blank lines inside a continuation are dropped too
        if not buf:
            start = number
        if stripped.endswith(escape):
            buf.append(stripped[: -len(escape)])
            continue
        buf.append(stripped)
        joined = " ".join(p for p in buf if p).strip()
        buf = []
        if joined:
            out.append((start, joined))
    if buf:
        out.append((start, " ".join(buf).strip()))
    return out


def _substitute(word: str, args: dict[str, str], line: int) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(4)
        value = args.get(name, "")
        if m.group(2) == "-":
            return value or m.group(3)
        if m.group(2) == "+":
            return m.group(3) if value else ""
        return value

    try:
        return _VAR.sub(one, word)
    except re.error as exc:  # pragma: no cover - the pattern is fixed
        raise DockerfileError(f"line {line}: {exc}") from exc


def _arg_defaults(rest: str, args: dict[str, str], line: int) -> None:
    for item in rest.split():
        name, eq, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise DockerfileError(f"line {line}: ARG {item!r} is not a name[=value]")
        value = value.strip("\"'")
        if eq:
            args[name] = _substitute(value, args, line)
        else:
            args.setdefault(name, "")


def base_images(text: str) -> list[BaseImage]:
    """Every image outside the Dockerfile that building it needs, in order, without repeats.

    Raises `DockerfileError` for a Dockerfile with no FROM, an instruction before the first
    FROM other than ARG, or a FROM that names no image after substitution.
    """
    global_args: dict[str, str] = {}
    stages: list[str] = []
    found: list[BaseImage] = []
    seen: set[str] = set()

    def need(ref: str, line: int) -> None:
        if ref.lower() != "scratch" and ref.lower() not in stages and ref not in seen:
            seen.add(ref)
            found.append(BaseImage(ref, line))

    for line, instr in _logical_lines(text):
        keyword, _, rest = instr.partition(" ")
        keyword = keyword.upper()
        if keyword == "ARG" and not stages and not found:
            _arg_defaults(rest, global_args, line)
        elif keyword == "FROM":
            words = [w for w in rest.split() if not w.startswith("--")]
            if not words:
                raise DockerfileError(f"line {line}: FROM names no image")
            ref = _substitute(words[0], global_args, line)
            if not ref:
                raise DockerfileError(f"line {line}: FROM {words[0]!r} names no image")
            need(ref, line)
            if len(words) == 3 and words[1].lower() == "as":
                stages.append(words[2].lower())
            elif len(words) != 1:
                raise DockerfileError(f"line {line}: FROM takes an image and `AS name` only")
            else:
                stages.append(f"#{len(stages)}")
        elif not stages and not found:
            raise DockerfileError(f"line {line}: {keyword} before the first FROM")
        elif keyword in ("COPY", "ADD"):
            for flag in rest.split():
                if not flag.startswith("--"):
                    break
                if flag.lower().startswith("--from="):
                    src = flag.split("=", 1)[1]
                    if not (src.isdigit() and int(src) < len(stages)):
                        need(src, line)
    if not stages:
        raise DockerfileError("no FROM instruction")
    return found
