"""One image per language: assay's base image plus that toolchain's Debian packages, built by
the local engine from Debian's mirror (the base is never pulled, nor is anything else).

`assay-lang-<name>:<hash>`, the hash covering the generated Dockerfile and the base image's
id: a changed package list or a rebuilt base names a new image, and an image under the current
name is reused as it is. Built and tagged like a task's `[environment]` (environment/build.py:
the same labels, build log tail and errors), and tagged only once python3 (for assay's runner)
and the toolchain's programs are found in it.
"""

from __future__ import annotations

import hashlib
import io
import shlex
import tarfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from assay.errors import EnvironmentBuildError, TaskEnvironmentError, UsageError

from ..environment.build import (
    BASES_LABEL,
    CONTEXT_LABEL,
    base_image_id,
    build_image,
    check_image,
    get_image,
    tag_checked,
)
from ..model.languages import ALL_LANGUAGES, LANGUAGES, Language, language_image
from ..runtime.images import DEFAULT_BASE_IMAGE

LANGUAGE_LABEL = "assay.lang"
REPOSITORY_PREFIX = "assay-lang-"
HASH_CHARS = 12
BUILD_COMMAND = "assay build --languages"
"""What builds them (also run by scripts/setup.sh); an error names it with the language."""


@dataclass(frozen=True)
class LanguageImage:
    """A language's image, as the engine has it."""

    language: str
    ref: str
    image_id: str
    built: bool
    """True when this call built it; False when the image under its current name was reused."""
    build_s: float
    size_bytes: int
    ready_s: float | None = None
    """Seconds `build_languages(runtime=...)` took to make it ready for that runtime (a
    backend with an image store of its own, runc or runsc, unpacks an image on first use);
    None when no runtime was named."""


def language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise UsageError(f"unknown language {name!r} (one of {', '.join(ALL_LANGUAGES)})") from None


def dockerfile(name: str) -> str:
    """The Dockerfile of the language's image (its text is part of the image's name)."""
    packages = language(name).packages
    lines = [f"FROM {DEFAULT_BASE_IMAGE}"]
    if packages:
        lines += [
            "RUN apt-get update \\",
            " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            + " ".join(shlex.quote(p) for p in packages)
            + " \\",
            " && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin",
        ]
    return "\n".join(lines) + "\n"


def _recipe_hash(name: str, base_id: str) -> str:
    return hashlib.sha256(f"{dockerfile(name)}\0{base_id}".encode()).hexdigest()


def _ref(name: str, digest: str) -> str:
    return f"{REPOSITORY_PREFIX}{name}:{digest[:HASH_CHARS]}"


def _where(name: str) -> str:
    return f"language {name!r}"


def _base_id(client: Any, name: str) -> str:
    return base_image_id(client, DEFAULT_BASE_IMAGE, _where(name))


def language_ref(client: Any, name: str) -> str:
    """`assay-lang-<name>:<hash>`: the image the language's programs compile and run in, as
    named for the base image the engine has now (which must be there: `TaskEnvironmentError`)."""
    return _ref(name, _recipe_hash(name, _base_id(client, name)))


def _context(text: str) -> io.BytesIO:
    buf = io.BytesIO()
    data = text.encode()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def _tools_check(lang: Language) -> str:
    """python3 >= 3.11 (assay's runner) and every program the language's argvs start with."""
    tools = sorted({argv[0] for argv in (lang.compile, lang.run) if argv and "/" not in argv[0]})
    return (
        "import shutil, sys; sys.exit(0 if sys.version_info >= (3, 11) and "
        f"all(shutil.which(t) for t in {tools!r}) else 3)"
    )


def _image(lang: Language, ref: str, image: Any, built: bool, build_s: float) -> LanguageImage:
    size = image.attrs.get("Size")
    return LanguageImage(
        lang.name, ref, image.id, built, build_s, size if isinstance(size, int) else 0
    )


def ensure_language_image(
    client: Any,
    name: str,
    *,
    build: bool = True,
    progress: Callable[[str], None] | None = None,
) -> LanguageImage:
    """The language's image on `client`'s engine, built when missing (with `build` False, a
    missing image is an error naming the command that builds it). `progress` gets each line
    of the build log.

    Raises `UsageError` for an unknown language, `TaskEnvironmentError` (exit 2) when the base
    image is not on the engine, the image is not built and `build` is False, or the built
    image lacks python3 or the toolchain's programs; `EnvironmentBuildError` (exit 2, with the
    build log's tail) when the build fails, e.g. Debian's mirror is out of reach."""
    lang = language(name)
    base_id = _base_id(client, name)
    digest = _recipe_hash(name, base_id)
    ref = _ref(name, digest)
    image = get_image(client, ref)
    if image is not None:
        _tag_latest(image, name)
        return _image(lang, ref, image, built=False, build_s=0.0)
    if not build:
        raise TaskEnvironmentError(
            _where(name),
            f"the image {ref} of language {name!r} is not built",
            fix=f"`{BUILD_COMMAND} {name}` (or `bash scripts/setup.sh`, which builds them all)",
        )
    t0 = time.monotonic()
    image_id = build_image(
        client,
        ref,
        _context(dockerfile(name)),
        "Dockerfile",
        {
            CONTEXT_LABEL: f"sha256:{digest}",
            BASES_LABEL: f"{DEFAULT_BASE_IMAGE}={base_id}",
            LANGUAGE_LABEL: name,
        },
        progress,
        failed=lambda tail: _build_failed(name, ref, tail),
    )
    tag_checked(
        client,
        image_id,
        ref,
        lambda: check_image(
            client,
            image_id,
            _tools_check(lang),
            path=_where(name),
            what=f"python3 >= 3.11 or the {name} toolchain (Debian: {' '.join(lang.packages)})",
            fix="check the packages of the language table (languages/table.py)",
            kind="language",
        ),
    )
    image = client.images.get(image_id)
    _tag_latest(image, name)
    return _image(lang, ref, image, True, time.monotonic() - t0)


def _tag_latest(image: Any, name: str) -> None:
    """`assay-lang-<name>:latest`, the name a grading runs (`table.language_image`): it moves to
    the image of the current recipe and base whenever this runs (setup.sh runs it)."""
    repo, _, tag = language_image(name, "").partition(":")
    if repo:
        image.tag(repo, tag)


def _build_failed(name: str, ref: str, tail: str) -> EnvironmentBuildError:
    err = EnvironmentBuildError(_where(name), f"the image {ref} failed to build", tail)
    err.fix = (
        "the build installs Debian packages: check that this host reaches Debian's mirror "
        f"(or its proxy, HTTP_PROXY), then `{BUILD_COMMAND} {name}`"
    )
    return err


def ensure_all(
    client: Any,
    names: Iterable[str] = ALL_LANGUAGES,
    progress: Callable[[str], None] | None = None,
    *,
    done: Callable[[LanguageImage], None] | None = None,
) -> list[LanguageImage]:
    """Every named language's image, built when missing, one after another (all names are
    checked first: nothing is built for a list with an unknown one). `progress` gets the
    build logs' lines prefixed with the language, `done` each image as soon as it is there."""
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        language(name)
    found: list[LanguageImage] = []
    for name in wanted:
        log = None if progress is None else _prefixed(progress, name)
        image = ensure_language_image(client, name, progress=log)
        found.append(image)
        if done is not None:
            done(image)
    return found


def _prefixed(progress: Callable[[str], None], name: str) -> Callable[[str], None]:
    return lambda line: progress(f"[{name}] {line}")
