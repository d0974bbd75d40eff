"""`execute` (the sandbox's one run, no judge) on the default backend (runc): the bytes, exit code,
signal and limit of a program, compiled or not; its files through the firewall; and nothing left
behind by any run (its grading's containers and temp dirs)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from assay._internal.runtime.scope import grading_tempdirs
from assay._internal.sandbox.execute import Execution, RunRequest, Stage, execute
from assay.runtime import DEFAULT_BACKEND, Runtime, open_runtime

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def rt() -> Runtime:
    return open_runtime(DEFAULT_BACKEND)


@pytest.fixture(scope="module")
def run(rt: Runtime, base_image: str) -> Any:
    def go(language: str, code: str, **kw: Any) -> Execution:
        ex = execute(rt, RunRequest(language, code, **kw), base_image)
        assert rt.leftovers(ex.grading_id) == [], "a container of the run is left"
        assert grading_tempdirs(ex.grading_id) == [], "a temp dir of the run is left"
        return ex

    return go


def _ran(ex: Execution) -> Stage:
    assert ex.refused is None, ex
    assert ex.run is not None, ex
    return ex.run


def test_python_prints_and_its_exit_code_comes_back(run: Any) -> None:
    ex = run("python3", "print('hello')\nraise SystemExit(3)\n")
    r = _ran(ex)
    assert ex.compile is None
    assert (r.status, r.exit_code, r.signal, r.limit) == ("finished", 3, None, None)
    assert (r.stdout, r.stderr) == (b"hello\n", b"")
    assert 0 < r.seconds < 5


def test_stdin_reaches_the_program_and_stderr_comes_back_apart_from_stdout(run: Any) -> None:
    stdin = "1 2\nzwölf 🙂\n\n".encode()
    code = (
        "import sys\n"
        "data = sys.stdin.buffer.read()\n"
        "sys.stdout.buffer.write(data[::-1])\n"
        "sys.stderr.write('to stderr\\n')\n"
    )
    r = _ran(run("python3", code, stdin=stdin))
    assert (r.status, r.exit_code, r.limit) == ("finished", 0, None)
    assert r.stdout == stdin[::-1]
    assert r.stderr == b"to stderr\n"


def test_a_signal_is_a_signal_and_not_an_exit_code(run: Any) -> None:
    code = "import os, signal\nprint('x', flush=True)\nos.kill(os.getpid(), signal.SIGABRT)\n"
    r = _ran(run("python3", code))
    assert (r.status, r.exit_code, r.signal, r.limit) == ("finished", None, 6, None)
    assert r.stdout == b"x\n"


def test_a_sleep_past_the_run_timeout_times_out(run: Any) -> None:
    r = _ran(run("python3", "import time\nprint('a', flush=True)\ntime.sleep(30)\n", run_timeout=1))
    assert (r.status, r.exit_code, r.limit) == ("timeout", None, "time")
    assert r.stdout == b"a\n"  # what it printed before its deadline
    assert 1.0 <= r.seconds < 5


def test_a_cpu_spin_times_out(run: Any) -> None:
    r = _ran(run("python3", "while True:\n    pass\n", run_timeout=1))
    assert (r.status, r.exit_code) == ("timeout", None)
    assert r.limit in ("time", "cpu")


def test_a_memory_hog_hits_the_memory_limit(run: Any) -> None:
    r = _ran(run("python3", "x = bytearray(512 << 20)\nprint(len(x))\n", memory_mb=128))
    assert (r.status, r.exit_code, r.limit) == ("finished", None, "memory")
    assert r.stdout == b""


def test_a_stdout_flood_is_cut_at_the_cap(run: Any) -> None:
    code = "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n"
    r = _ran(run("python3", code, output_cap=100_000))
    assert (r.status, r.exit_code, r.limit) == ("finished", None, "output")
    assert r.stdout == b"y" * 100_000


def test_a_fork_bomb_is_contained_and_the_next_run_is_unharmed(run: Any) -> None:
    bomb = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    r = _ran(run("python3", bomb, run_timeout=2))
    assert r.limit in ("pids", "time"), r
    assert r.exit_code is None
    after = _ran(run("python3", "print('fine')\n"))
    assert (after.exit_code, after.stdout) == (0, b"fine\n")


CPP_SUM = (
    "#include <iostream>\n"
    "int main() { long a, b; std::cin >> a >> b; std::cout << a + b << std::endl;"
    ' std::cerr << "note" << std::endl; return 0; }\n'
)


def test_cpp_compiles_then_runs(run: Any) -> None:
    ex = run("cpp", CPP_SUM, stdin=b"40 2\n")
    assert ex.compile is not None
    assert (ex.compile.status, ex.compile.exit_code, ex.compile.limit) == ("finished", 0, None)
    r = _ran(ex)
    assert (r.exit_code, r.stdout, r.stderr) == (0, b"42\n", b"note\n")


def test_a_cpp_compile_error_is_the_compile_stage_and_nothing_runs(run: Any) -> None:
    ex = run("cpp", "int main( { return 0 }\n")
    assert ex.refused is None and ex.run is None
    c = ex.compile
    assert c is not None and c.status == "finished" and c.limit is None
    assert c.exit_code not in (0, None)
    assert b"main.cpp:1" in c.stderr and b"error" in c.stderr


def test_java_compiles_and_reads_stdin(run: Any) -> None:
    code = (
        "import java.util.Scanner;\npublic class Main {\n"
        "    public static void main(String[] a) {\n"
        '        System.out.println("hello, " + new Scanner(System.in).next());\n'
        "        System.exit(4);\n    }\n}\n"
    )
    ex = run("java", code, stdin=b"world\n")
    assert ex.compile is not None and ex.compile.exit_code == 0
    r = _ran(ex)
    assert (r.exit_code, r.stdout) == (4, b"hello, world\n")


def test_extra_files_sit_beside_the_source(run: Any) -> None:
    code = "print(open('data/x.txt').read(), open('top.bin', 'rb').read())\n"
    files = {"data/x.txt": b"hello", "top.bin": b"\x00\xff"}
    r = _ran(run("python3", code, files=files))
    assert (r.exit_code, r.stdout) == (0, b"hello b'\\x00\\xff'\n")


@pytest.mark.parametrize(
    ("name", "reason"),
    [("../x", "firewall:dot-dot"), ("/etc/x", "firewall:absolute-path"),
     ("main.py", "firewall:duplicate")],
)  # fmt: skip
def test_a_file_name_that_escapes_or_collides_is_refused(run: Any, name: str, reason: str) -> None:
    ex = run("python3", "print(1)\n", files={name: b"x"})
    assert (ex.refused, ex.compile, ex.run) == (reason, None, None)


def test_runs_at_once_in_threads_each_get_their_own_bytes(run: Any) -> None:
    def one(i: int) -> Stage:
        return _ran(run("python3", "import sys\nprint(sys.stdin.read() * 2)\n", stdin=b"%d" % i))

    with ThreadPoolExecutor(4) as pool:
        stages = list(pool.map(one, range(4)))
    assert [s.stdout for s in stages] == [b"%d%d\n" % (i, i) for i in range(4)]
