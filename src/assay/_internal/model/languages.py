"""Which source file each language reads, how it is compiled and how it runs (pure data).

Compilation runs on the untrusted side, in a container of its own (docs/stdio.md): the
compiler reads a hostile source, so it gets the candidate's limits, no network, and its output
crosses the archive firewall like any artifact. Every path here is relative to the directory
that holds the source (the compile container's /build, the candidate's /candidate).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    name: str
    source: str
    """The one file a submission in this language consists of."""
    compile: tuple[str, ...] | None
    """argv run in the build directory, or None when the source runs as it is."""
    run: tuple[str, ...]
    """argv of one test's process, in the candidate's /candidate."""
    packages: tuple[str, ...]
    """Debian packages added to assay's base image for this language (python3 is there)."""
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment of the compile step (toolchains that want a writable cache)."""


LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language("python3", "main.py", None, ("python3", "main.py"), ()),
        Language(
            "c",
            "main.c",
            ("gcc", "-O2", "-std=gnu17", "-pipe", "-o", "main", "main.c", "-lm"),
            ("./main",),
            ("gcc", "libc6-dev"),
        ),
        Language(
            "cpp",
            "main.cpp",
            ("g++", "-O2", "-std=gnu++17", "-pipe", "-o", "main", "main.cpp"),
            ("./main",),
            ("g++", "libc6-dev"),
        ),
        Language(
            "java",
            "Main.java",
            ("javac", "-J-Xmx256m", "-encoding", "UTF-8", "-d", ".", "Main.java"),
            ("java", "-Xss64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", ".", "Main"),
            ("default-jdk-headless",),
        ),
        Language(
            "go",
            "main.go",
            ("go", "build", "-o", "main", "main.go"),
            ("./main",),
            ("golang-go",),
            (
                ("GOCACHE", "/tmp/go-cache"),
                ("GOPATH", "/tmp/go"),
                ("GO111MODULE", "off"),
                ("GOFLAGS", "-buildvcs=false"),
                ("CGO_ENABLED", "0"),
            ),
        ),
        Language(
            "rust",
            "main.rs",
            ("rustc", "-O", "--edition", "2021", "-o", "main", "main.rs"),
            ("./main",),
            ("rustc",),
        ),
        Language("javascript", "main.js", None, ("node", "main.js"), ("nodejs",)),
    )
}
ALL_LANGUAGES: tuple[str, ...] = tuple(LANGUAGES)
SOURCES: dict[str, str] = {lang.source: lang.name for lang in LANGUAGES.values()}
"""Source file name -> language: how a submission says which language it is in."""
LANGUAGE_REPOSITORY = "assay-lang"


def language_image(name: str, base_image: str) -> str:
    """The image a language's programs compile and run in: the base image for python3 (it
    holds the interpreter the runner needs anyway), else `assay-lang-<name>:latest`, built
    by `assay build --languages` (setup.sh builds every one)."""
    if not LANGUAGES[name].packages:
        return base_image
    return f"{LANGUAGE_REPOSITORY}-{name}:latest"
