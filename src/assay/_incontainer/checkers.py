"""Checkers of the `stdio` task kind: does a program's stdout answer one test? (issue 27)

Standard library only: judge.py loads this file by path inside the judge container (as it loads
values.py); on the host it is `assay._incontainer.checkers`. The output is hostile bytes: every
built-in checker is a pure function over bytes, linear in time and memory (no regex that can
backtrack, no set or dict keyed by output bytes: `unordered-lines` sorts), never decodes text
(non-UTF-8 output is just bytes) and never raises on any output. Texts are handled in pieces of
CHUNK bytes, so only `unordered-lines` ever holds a list of all of one side's lines.

Built-in checkers, `check(name, output, answer, abs_tol=, rel_tol=)`:

- whitespace is ASCII space, \\t, \\n, \\r, \\v, \\f (what `bytes.split()` splits on); NUL and
  every other byte are ordinary token bytes, equal only to themselves.
- exact: the bytes are equal.
- lines: both split on \\n; spaces and tabs at the end of each line are ignored, and so are
  empty lines at the end (a missing or doubled final newline). \\r is an ordinary byte unless
  the answer itself has CRLF line endings (a \\r before a \\n, or at its very end): then a \\r
  at the end of a line is trailing whitespace too, on both sides. So a program printing \\r\\n
  against an LF answer fails (compare:presentation), and an LF program passes a CRLF answer.
- tokens: the whitespace-separated tokens, byte-exact, same order, same count.
- tokens-ci: as tokens, ASCII letters compared case-insensitively (bytes.lower()).
- numbers: as tokens, except where the answer token is a decimal literal (grammar NUMBER
  below). Then the output token must be a decimal literal too, and
  |out - ans| <= abs_tol or |out - ans| <= rel_tol * |ans| (the boundary included: testlib's
  doubleCompare, relative to the answer), decided exactly: out and ans are the tokens' decimal
  values as written, and each tolerance is the decimal the task wrote, i.e. the shortest
  decimal that reads back as the same float (Python's repr: 1e-6 is 0.000001, not the binary
  9.99999999999999954748e-07). So 1.000001 for 1 passes at abs_tol 1e-6 and 1.0000010000001
  fails, whatever the tolerance's binary value; nothing is rounded to a float, and a token of
  any length (ten thousand digits) or exponent (1e999999999) is decided without overflow, in
  time linear in the tokens' lengths. NUMBER is `-?(D+(.D*)?|.D+)([eE][+-]?D+)?`, D = ASCII
  0-9: no leading '+' (no program's plain print writes one), no nan/inf, no hex, no
  underscores, no non-ASCII digits, and no literal whose first digit's power of ten is beyond
  +-10**15 (EXP_LIMIT: 1e1000000000000000 is a NUMBER, 1e1000000000000001 is not). An answer
  token that is not a NUMBER is compared exactly.
- unordered-lines: the multiset of lines after the `lines` normalisation (duplicates count).

Reasons: compare:presentation when an `exact` or `lines` output has the answer's tokens and
only its whitespace differs; compare:wrong-answer for every other failure.

Task checker programs (`run_program_checker`, `ProgramChecker`), run in a subprocess of the
judge with a wall timeout, a CPU limit, an address-space limit and a cap on what they write,
on files in a private temporary directory:

- python: the task's file defines `check(input, output, answer)` over bytes, returning a bool
  or a float in [0, 1] (the fraction of the test's points). Anything else (an int, nan, 1.5,
  None), an exception, an exit, a timeout: checker:failed.
- testlib: `checker <input-file> <output-file> <answer-file>`. Exit 0 OK, 1 wrong answer,
  2 presentation error, 3 FAIL (checker:failed), 7 points: testlib's `quitp(p)` prints
  "points <p>[ <message>]" on stderr (with only three arguments testlib writes its verdict
  there, `InStream::quit`); the first stderr line starting "points " is read, and <p> must be
  a decimal number in [0, 1] (testlib allows up to 1e6: above 1 fails closed,
  checker:failed). Every other exit status, a signal or a timeout: checker:failed. A C++
  source (checker.cpp beside its testlib.h) is compiled once with g++ in a private
  directory; a shipped executable is run as it is (copied to the private directory first
  when it lacks the execute bit).

Points: 1.0 passes; 0 < p < 1 is compare:partial; p == 0 is compare:wrong-answer.
"""

from __future__ import annotations

import atexit
import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from decimal import MAX_EMAX, MIN_EMIN, ROUND_DOWN, Context, Decimal, Inexact, InvalidOperation

CHECKERS = ("exact", "lines", "tokens", "numbers", "tokens-ci", "unordered-lines")
PROGRAM_CHECKERS = ("python", "testlib")

WRONG = "compare:wrong-answer"
PRESENTATION = "compare:presentation"
PARTIAL = "compare:partial"
FAILED = "checker:failed"

_WS_BYTE = re.compile(rb"[ \t\n\r\x0b\x0c]")
# The texts are cut into pieces of about this size, at separators, so that a list of a piece's
# tokens or lines is all that is ever alive: memory stays a small multiple of the input, however
# many one-byte tokens a 16 MiB output holds, and the work is C-speed split/join, not a regex
# match per token.
CHUNK = 1 << 20
NUMBER = re.compile(rb"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# A NUMBER's leading digit sits within 10**+-EXP_LIMIT. Decimal's own exponents reach about
# +-10**18, so no sum, difference or product of two NUMBERs and a tolerance (a float's exponent
# is within +-400; a token's last digit lies at most its length below its first) can overflow,
# underflow or lose digits to subnormal rounding: what _within proves relies on it.
EXP_LIMIT = 10**15


def check(
    name: str, output: bytes, answer: bytes, *, abs_tol: float = 1e-9, rel_tol: float = 1e-9
) -> tuple[bool, str | None]:
    """One test decided by the built-in checker `name`: (True, None) or (False, reason)."""
    for tol in (abs_tol, rel_tol):
        if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
            raise ValueError("tolerances must be finite numbers >= 0")
    if name == "exact":
        if output == answer:
            return True, None
        return False, _wrong_or_presentation(output, answer)
    if name == "lines":
        crlf = _has_crlf(answer)
        if lines_text(output, crlf) == lines_text(answer, crlf):
            return True, None
        return False, _wrong_or_presentation(output, answer)
    if name == "tokens":
        return _verdict(tokens_text(output) == tokens_text(answer))
    if name == "tokens-ci":
        return _verdict(tokens_text(output).lower() == tokens_text(answer).lower())
    if name == "numbers":
        return _verdict(_numbers(output, answer, abs_tol, rel_tol))
    if name == "unordered-lines":
        crlf = _has_crlf(answer)
        out, ans = lines_text(output, crlf), lines_text(answer, crlf)
        if out.count(b"\n") != ans.count(b"\n"):
            return False, WRONG
        return _verdict(_sorted_lines(out) == _sorted_lines(ans))
    raise ValueError(f"unknown checker {name[:40]!r}")


def _verdict(ok: bool) -> tuple[bool, str | None]:
    return (True, None) if ok else (False, WRONG)


def _wrong_or_presentation(output: bytes, answer: bytes) -> str:
    return PRESENTATION if tokens_text(output) == tokens_text(answer) else WRONG


def _pieces(data: bytes, next_sep: Callable[[int], int]) -> Iterator[bytes]:
    """data in consecutive pieces of about CHUNK bytes, each cut just before a separator
    (next_sep(i): the first separator at or after i, or len(data)); no token or line is cut."""
    pos, n = 0, len(data)
    while pos < n:
        end = n if pos + CHUNK >= n else next_sep(pos + CHUNK)
        yield data[pos:end]
        pos = end


def _next_ws(data: bytes) -> Callable[[int], int]:
    def find(i: int) -> int:
        m = _WS_BYTE.search(data, i)
        return len(data) if m is None else m.start()

    return find


def _next_lf(data: bytes) -> Callable[[int], int]:
    def find(i: int) -> int:
        j = data.find(b"\n", i)
        return len(data) if j < 0 else j

    return find


def tokens_text(data: bytes) -> bytes:
    """The tokens joined by one space: equal for two texts exactly when their tokens are."""
    parts = (b" ".join(p.split()) for p in _pieces(data, _next_ws(data)))
    return b" ".join(p for p in parts if p)


def _has_crlf(answer: bytes) -> bool:
    return b"\r\n" in answer or answer.endswith(b"\r")


def lines_text(data: bytes, crlf: bool) -> bytes:
    """The `lines` normal form: each line's trailing spaces and tabs (and \\r when `crlf`)
    removed, then the empty lines at the end. Equal exactly when the line lists are."""
    trail = b" \t\r" if crlf else b" \t"
    if all(bytes([c]) + b"\n" not in data for c in trail):  # the usual output: one C scan each
        return data.rstrip(trail + b"\n")
    # A piece starts at a \n (or the start), so its split pieces are whole lines; joining each
    # piece's lines back with \n and the pieces with nothing rebuilds the text.
    parts = (
        b"\n".join([line.rstrip(trail) for line in p.split(b"\n")])
        for p in _pieces(data, _next_lf(data))
    )
    return b"".join(parts).rstrip(trail + b"\n")


def _sorted_lines(text: bytes) -> bytes:
    # One side at a time, so only one list of lines is alive at once; sorted, not hashed.
    return b"\n".join(sorted(text.split(b"\n")))


def _aligned(out: bytes, ans: bytes) -> Iterator[tuple[list[bytes], list[bytes]]]:
    """Two normal forms (tokens_text) of the same token count as pairs of equal-length token
    lists, one piece at a time."""
    lists_o = (p.split() for p in _pieces(out, _next_ws(out)))
    lists_a = (p.split() for p in _pieces(ans, _next_ws(ans)))
    lo: list[bytes] | None = []
    la: list[bytes] | None = []
    while True:
        while lo == []:
            lo = next(lists_o, None)
        while la == []:
            la = next(lists_a, None)
        if lo is None or la is None:
            return
        k = min(len(lo), len(la))
        yield lo[:k], la[:k]
        lo, la = lo[k:], la[k:]


def _numbers(output: bytes, answer: bytes, abs_tol: float, rel_tol: float) -> bool:
    out, ans = tokens_text(output), tokens_text(answer)
    if out == ans:
        return True
    if out.count(b" ") != ans.count(b" ") or not out or not ans:
        return False
    abs_d, rel_d = tolerance(abs_tol), tolerance(rel_tol)
    tol_digits = max(_digits(abs_d), _digits(rel_d))
    # Making a Context costs more than _within itself. Keyed by a length of the answer's
    # tokens, never by output bytes.
    contexts: dict[int, Context] = {}
    for lo, la in _aligned(out, ans):
        if lo == la:
            continue
        for o, a in zip(lo, la, strict=True):
            if o == a:
                continue
            want = number(a)
            if want is None:
                return False
            got = number(o)
            if got is None:
                return False
            # len(a) bounds the answer's digits without listing them (as_tuple would build a
            # tuple of every digit of a megabyte-long token).
            prec = len(a) + tol_digits + 2
            ctx = contexts.get(prec)
            if ctx is None:
                ctx = contexts[prec] = _context(prec)
            if not _within(got, want, abs_d, rel_d, ctx):
                return False
    return True


def tolerance(tol: float) -> Decimal:
    """A tolerance as the task wrote it. TOML and JSON turn `1e-6` into the nearest float,
    9.99999999999999954748e-07, and `1e-9` into one just above 1e-9; comparing with those
    would put 1 + 1e-6 outside a 1e-6 tolerance and 1 + 1e-9 inside a 1e-9 one. A float's
    shortest round-trip decimal (repr) is the literal the author wrote whenever it had at most
    15 significant digits, and it is what the task's toml shows; an int is exact already."""
    return Decimal(repr(tol)) if isinstance(tol, float) else Decimal(tol)


def _digits(value: Decimal) -> int:
    return len(value.as_tuple().digits)


def _context(prec: int) -> Context:
    return Context(prec=prec, rounding=ROUND_DOWN, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])


def _within(got: Decimal, want: Decimal, abs_tol: Decimal, rel_tol: Decimal, ctx: Context) -> bool:
    """|got - want| <= max(abs_tol, rel_tol * |want|), decided exactly. `ctx` rounds toward
    zero, with a precision above the number of significant digits of want plus those of
    either tolerance.

    The work is bounded by the precision, not by the exponents: 1e999999999 against 1 would
    need a billion digits to subtract exactly. Instead the difference is cut toward zero to
    prec digits (libmpdec takes time linear in the operands' digits whatever their exponents),
    and the cut decides exactly. The bound (the larger tolerance; the product is exact at this
    precision) has fewer than prec significant digits, so it is either a whole number of the
    cut's last-digit units or larger than every prec-digit number of the cut's decade; it is
    never strictly between the cut and the cut plus one unit, which is where the true
    difference lies when the cut lost digits. So cut < bound means true < bound, and
    cut == bound means true > bound unless the cut was exact."""
    if got == want:
        return True
    ctx.clear_flags()
    bound = max(abs_tol, ctx.multiply(rel_tol, want.copy_abs()))
    diff = ctx.subtract(got, want).copy_abs()
    if diff != bound:
        return diff < bound
    return not ctx.flags[Inexact]


def number(token: bytes) -> Decimal | None:
    """The exact value of a NUMBER token, or None when it is not one."""
    if NUMBER.fullmatch(token) is None:
        return None
    try:
        value = Decimal(token.decode("ascii"))
    except InvalidOperation:  # an exponent beyond Decimal's range
        return None
    if abs(value.adjusted()) > EXP_LIMIT:
        return None
    return value


# -- task checker programs ------------------------------------------------------------------

OUTPUT_CAP = 1 << 20  # bytes a checker run may write (stdout and stderr each): RLIMIT_FSIZE
READ_CAP = 64 << 10  # of which the judge reads this much
MEMORY_BYTES = 2 << 30  # address space of a checker run or compile
COMPILE_TIMEOUT = 60.0
COMPILE_FILE_CAP = 256 << 20  # the compiler writes object files and the binary
CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++")
GXX = ("/usr/bin/g++", "/usr/local/bin/g++")
EXEC_FAILED = 126  # the status a run that could not start reports, as a shell's
CHECKER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}

# Runs in the checker's own interpreter: loads the task's checker by path, reads the three
# files, calls check(), and writes one line on the original stdout. The checker's own prints
# go to stderr (fd 1 is pointed there), so they can never pose as the result.
_PY_WRAPPER = r"""
import importlib.util, os, sys
path, fin, fout, fans = sys.argv[1:5]
result = os.dup(1)
os.dup2(2, 1)
spec = importlib.util.spec_from_file_location("assay_task_checker", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
def read(p):
    with open(p, "rb") as fh:
        return fh.read()
r = mod.check(read(fin), read(fout), read(fans))
if type(r) is bool:
    line = "bool %d" % r
elif type(r) is float and 0.0 <= r <= 1.0:
    line = "float " + r.hex()
else:
    line = "bad"
sys.stdout.flush()
os.write(result, (line + "\n").encode())
"""


class Run:
    """What one program run left: exit status (None on timeout) and the start of its output."""

    def __init__(self, returncode: int | None, stdout: bytes, stderr: bytes) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _set_limit(which: int, value: int) -> None:
    import resource

    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value if hard == resource.RLIM_INFINITY else hard))


def _limits(cpu_seconds: int, file_bytes: int, memory_bytes: int | None) -> Callable[[], None]:
    def apply() -> None:  # in the child, before exec
        import resource

        _set_limit(resource.RLIMIT_CPU, cpu_seconds)
        _set_limit(resource.RLIMIT_FSIZE, file_bytes)
        _set_limit(resource.RLIMIT_CORE, 0)
        if memory_bytes is not None:
            _set_limit(resource.RLIMIT_AS, memory_bytes)

    return apply


def run_limited(
    argv: list[str],
    cwd: str,
    timeout: float,
    *,
    file_bytes: int = OUTPUT_CAP,
    memory_bytes: int | None = MEMORY_BYTES,
    env: dict[str, str] | None = None,
) -> Run:
    """Run argv in its own session with stdout and stderr in files under cwd (capped by
    RLIMIT_FSIZE), a CPU limit and a wall timeout; the whole process group is killed when it
    ends or times out, so a checker's stray child cannot outlive it."""
    out_path, err_path = os.path.join(cwd, ".stdout"), os.path.join(cwd, ".stderr")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    out_fd, err_fd = os.open(out_path, flags, 0o600), os.open(err_path, flags, 0o600)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out_fd,
            stderr=err_fd,
            env=env if env is not None else {**CHECKER_ENV, "HOME": cwd, "TMPDIR": cwd},
            start_new_session=True,
            preexec_fn=_limits(math.ceil(timeout) + 1, file_bytes, memory_bytes),
            close_fds=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:  # not executable, no such file
        return Run(EXEC_FAILED, b"", f"cannot run {argv[0]}: {exc}".encode())
    finally:
        os.close(out_fd)
        os.close(err_fd)
    timed_out = not _wait_unreaped(proc.pid, timeout)
    try:  # the leader is unreaped (a zombie at most), so its group id cannot be reused yet
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    code = proc.wait()
    return Run(None if timed_out else code, _head(out_path), _head(err_path))


def _wait_unreaped(pid: int, timeout: float) -> bool:
    """Wait for pid to exit without reaping it; False on timeout."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (old kernel, some sandboxes): poll
        deadline = time.monotonic() + timeout
        while True:
            res = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if res is not None:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
    try:
        ready, _, _ = select.select([fd], [], [], max(timeout, 0.0))
        return bool(ready)
    finally:
        os.close(fd)


def _head(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(READ_CAP)


_work_root: str | None = None


def _default_work_root() -> str:
    global _work_root
    if _work_root is None:
        _work_root = tempfile.mkdtemp(prefix="assay-checkers-")
        atexit.register(shutil.rmtree, _work_root, True)
    return _work_root


class ProgramChecker:
    """A task's checker program (`python` or `testlib`), prepared once (a C++ source is
    compiled on first use) and run once per test. `error` holds the last failure's detail for
    the task owner: it may quote the checker's stderr, so it is for diagnostics only."""

    def __init__(
        self,
        kind: str,
        program_path: str,
        *,
        work_dir: str | None = None,
        compile_timeout: float = COMPILE_TIMEOUT,
        python: str | None = None,
    ) -> None:
        if kind not in PROGRAM_CHECKERS:
            raise ValueError(f"unknown checker program kind {kind[:40]!r}")
        self.kind, self.program = kind, os.path.abspath(program_path)
        self.work_dir = work_dir or _default_work_root()
        self.compile_timeout = compile_timeout
        self.python = python or sys.executable
        self.error: str | None = None
        self._binary: str | None = None
        self._prepared = False

    def _prepare(self) -> str | None:
        """The executable to run (testlib), or None with self.error set."""
        if self._prepared:
            return self._binary
        self._prepared = True
        private = tempfile.mkdtemp(prefix="build-", dir=self.work_dir)
        if self.program.endswith(CPP_SUFFIXES):
            gxx = next((p for p in GXX if os.access(p, os.X_OK)), None) or shutil.which("g++")
            if gxx is None:
                self.error = "no g++ in the judge to compile the testlib checker"
                return None
            binary = os.path.join(private, "checker")
            run = run_limited(
                [gxx, "-O2", "-std=gnu++17", "-o", binary, self.program],
                private,
                self.compile_timeout,
                file_bytes=COMPILE_FILE_CAP,
            )
            if run.returncode != 0 or not os.path.isfile(binary):
                status = "timed out" if run.returncode is None else f"exit {run.returncode}"
                self.error = f"checker compile {status}: " + _text(run.stderr)
                return None
            self._binary = binary
        elif os.access(self.program, os.X_OK):
            self._binary = self.program
        else:  # shipped without the execute bit (an archive, a read-only mount): a copy
            binary = os.path.join(private, "checker")
            try:
                shutil.copyfile(self.program, binary)
                os.chmod(binary, 0o700)
            except OSError as exc:
                self.error = f"checker program unusable: {exc}"
                return None
            self._binary = binary
        return self._binary

    def __call__(
        self, input: bytes, output: bytes, answer: bytes, timeout: float
    ) -> tuple[bool, str | None, float]:
        """(ok, reason, points) for one test; points in [0, 1]."""
        self.error = None
        if self.kind == "testlib" and self._prepare() is None:
            return False, FAILED, 0.0
        with tempfile.TemporaryDirectory(prefix="run-", dir=self.work_dir) as private:
            names = []
            files = (("input.txt", input), ("output.txt", output), ("answer.txt", answer))
            for name, data in files:
                path = os.path.join(private, name)
                with open(path, "xb") as fh:
                    fh.write(data)
                names.append(path)
            if self.kind == "python":
                argv = [self.python, "-I", "-c", _PY_WRAPPER, self.program, *names]
                run = run_limited(argv, private, timeout)
                return self._python_result(run)
            assert self._binary is not None
            run = run_limited([self._binary, *names], private, timeout)
            return self._testlib_result(run)

    def _fail(self, why: str, run: Run) -> tuple[bool, str | None, float]:
        self.error = f"{why}: {_text(run.stderr)}"
        return False, FAILED, 0.0

    def _python_result(self, run: Run) -> tuple[bool, str | None, float]:
        if run.returncode is None:
            return self._fail("checker timed out", run)
        if run.returncode != 0:
            return self._fail(f"checker exited {run.returncode}", run)
        kind, _, value = run.stdout.partition(b" ")
        if kind == b"bool" and value in (b"0\n", b"1\n"):
            return _points(1.0 if value == b"1\n" else 0.0)
        if kind == b"float" and value.endswith(b"\n"):
            try:
                points = float.fromhex(value[:-1].decode("ascii"))
            except (ValueError, UnicodeDecodeError):
                points = math.nan
            if 0.0 <= points <= 1.0:
                return _points(points)
        return self._fail("checker returned neither a bool nor a float in [0, 1]", run)

    def _testlib_result(self, run: Run) -> tuple[bool, str | None, float]:
        code = run.returncode
        if code == 0:
            return True, None, 1.0
        if code == 1:
            return False, WRONG, 0.0
        if code == 2:
            return False, PRESENTATION, 0.0
        if code == 7:
            points = testlib_points(run.stderr)
            if points is None:
                return self._fail("points exit without points in [0, 1] on stderr", run)
            return _points(points)
        why = "timed out" if code is None else f"exited {code}"
        return self._fail(f"checker {why}", run)


def testlib_points(stderr: bytes) -> float | None:
    """<p> of the first stderr line "points <p>[ <message>]" (testlib's quitp), in [0, 1].
    The first: a message quoting the output could carry a later forged line."""
    for line in stderr.split(b"\n"):
        if line.startswith(b"points "):
            token = line[len(b"points ") :].split(b" ", 1)[0].rstrip(b"\r")
            value = number(token)
            if value is None or not (0 <= value <= 1):
                return None
            return float(value)
    return None


def _points(points: float) -> tuple[bool, str | None, float]:
    if points >= 1.0:
        return True, None, 1.0
    return False, (PARTIAL if points > 0 else WRONG), points


def _text(data: bytes, limit: int = 2000) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "..."


_program_checkers: dict[tuple[str, str], ProgramChecker] = {}


def run_program_checker(
    kind: str, program_path: str, input: bytes, output: bytes, answer: bytes, timeout: float
) -> tuple[bool, str | None, float]:
    """One test decided by the task's checker program: (ok, reason, points). The program is
    prepared once per process (a testlib C++ source compiled on first use); the dict is keyed
    by the task's path, never by output bytes."""
    key = (kind, os.path.abspath(program_path))
    checker = _program_checkers.get(key)
    if checker is None:
        checker = _program_checkers[key] = ProgramChecker(kind, program_path)
    return checker(input, output, answer, timeout)
