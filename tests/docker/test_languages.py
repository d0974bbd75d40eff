"""Each language's toolchain works inside assay's hardened containers on the default backend: a
program that reads stdin is compiled as the strict tier's candidate would be (uid 1000, read-only
root, no network, the table's compile env, a 512 MiB ceiling), its output read back through
`get_archive`, and run on an input. The images come from `ensure_language_image` (the first
build takes minutes: `assay build --languages all`, which scripts/setup.sh runs)."""

from __future__ import annotations

import io
import tarfile
import time
import uuid
from collections.abc import Iterator

import pytest

from assay._internal.environment.languages import LanguageImage, ensure_language_image
from assay._internal.model.languages import ALL_LANGUAGES, LANGUAGES
from assay._internal.runtime.engine import engine_client
from assay.runtime import DEFAULT_BACKEND, ContainerSpec, Limits, Runtime, Scratch, open_runtime

pytestmark = pytest.mark.docker

HELLO = {
    "python3": "import sys\nprint('hello, ' + sys.stdin.read().strip())\n",
    "c": '#include <stdio.h>\nint main(void) {\n    char s[64];\n    if (scanf("%63s", s) != 1)'
    ' return 1;\n    printf("hello, %s\\n", s);\n    return 0;\n}\n',
    "cpp": "#include <iostream>\n#include <string>\nint main() {\n    std::string s;\n"
    '    std::cin >> s;\n    std::cout << "hello, " << s << "\\n";\n}\n',
    "java": "import java.util.Scanner;\npublic class Main {\n    public static void main(String[] a)"
    ' {\n        System.out.println("hello, " + new Scanner(System.in).next());\n    }\n}\n',
    "go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar s string\n\tfmt.Scan(&s)\n'
    '\tfmt.Printf("hello, %s\\n", s)\n}\n',
    "rust": "use std::io::Read;\nfn main() {\n    let mut s = String::new();\n"
    "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
    '    println!("hello, {}", s.trim());\n}\n',
    "javascript": 'const s = require("fs").readFileSync(0, "utf8").trim();\n'
    'console.log("hello, " + s);\n',
}
COMPILE_LIMITS = Limits(memory_bytes=512 * 2**20, pids=128, cpus=1.0, tmp_bytes=256 * 2**20)
BUILD = "/build"
ARCHIVE_CAP = 64 * 2**20


@pytest.fixture(scope="session")
def language_images() -> dict[str, LanguageImage]:
    client = engine_client()
    return {name: ensure_language_image(client, name) for name in ALL_LANGUAGES}


@pytest.fixture(scope="module")
def rt() -> Runtime:
    return open_runtime(DEFAULT_BACKEND)


def _tar(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid = len(data), 0o644, 1000, 1000
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def box(rt: Runtime, request: pytest.FixtureRequest) -> Iterator[tuple[Runtime, str, str]]:
    """A hardened container of the language's image, with a scratch /build to compile in."""
    name = request.node.callspec.params["name"]
    image = request.getfixturevalue("language_images")[name].ref
    gid = "test-lang-" + uuid.uuid4().hex[:12]
    spec = ContainerSpec(
        image=image,
        grading_id=gid,
        role="compile",
        scratch=(Scratch(BUILD, 64 * 2**20),),
        limits=COMPILE_LIMITS,
        workdir=BUILD,
    )
    cid = rt.create(spec)
    try:
        rt.start(cid)
        yield rt, cid, name
    finally:
        rt.remove(cid)
        assert rt.leftovers(gid) == []


PEAK = (
    "cat /sys/fs/cgroup/memory.peak 2>/dev/null"  # cgroup v2
    " || cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes 2>/dev/null"  # v1
)


def _peak(rt: Runtime, cid: str) -> str:
    """The container's peak memory so far, as its cgroup counts it (page cache included)."""
    r = rt.exec(cid, ("sh", "-c", PEAK), deadline_s=10, output_cap=4096)
    value = r.stdout.decode().strip()
    return f"peak {int(value) / 2**20:.0f} MiB" if value.isdigit() else "peak unavailable"


@pytest.mark.parametrize("name", ALL_LANGUAGES)
def test_hello_compiles_and_runs_as_the_candidate(box: tuple[Runtime, str, str], name: str) -> None:
    rt, cid, _ = box
    lang = LANGUAGES[name]
    rt.put_archive(cid, BUILD, _tar({lang.source: HELLO[name], "input.txt": "world\n"}))
    t0 = time.monotonic()
    if lang.compile is not None:
        made = rt.exec(
            cid, lang.compile, deadline_s=120, output_cap=65536, env=dict(lang.env), workdir=BUILD
        )
        log = (made.stdout + made.stderr).decode(errors="replace")
        assert made.exit_code == 0, (made, log)
        # What the compile wrote is read back the way the grader would take the artifact.
        sink = io.BytesIO()
        rt.get_archive(cid, BUILD, sink, ARCHIVE_CAP)
        sink.seek(0)
        with tarfile.open(fileobj=sink) as tar:
            names = {m.name for m in tar.getmembers()}
        assert "build/main" in names or "build/Main.class" in names, sorted(names)
    t1 = time.monotonic()
    ran = rt.exec(
        cid,
        ("sh", "-c", 'exec "$@" < input.txt', "sh", *lang.run),
        deadline_s=30,
        output_cap=65536,
        workdir=BUILD,
    )
    t2 = time.monotonic()
    assert (ran.exit_code, ran.stdout) == (0, b"hello, world\n"), ran
    print(f"\n{name}: compile {t1 - t0:.2f} s, run {t2 - t1:.2f} s, {_peak(rt, cid)}")
