"""A pickle decoder for data, never for objects: what LiveCodeBench's private tests need.

LiveCodeBench ships each problem's private tests as base64 of zlib of a pickle of a JSON
string (lcb_runner/benchmarks/code_generation.py, `CodeGenerationProblem.__post_init__`, which
calls `pickle.loads`). The standard unpickler runs whatever a pickle names (GLOBAL + REDUCE is
`os.system(...)`), so a dataset row would be code. This decoder is a small stack machine over a
whitelist of opcodes that can only build str, bytes, int, float, bool, None, list, tuple and
dict. Every other opcode (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX,
PERSID, BINPERSID, EXT1/2/4, sets, buffers, ...) is refused with an error naming it.

Bounds: the input size (the caller's), the value's nesting depth, the number of values built,
the stack and memo sizes, the length of integers, and how many keys of one dict share a hash
value. A memo reference (GET) may only name a scalar: containers are never shared, so the result
is a tree (no cycles, no aliasing).

Every malformed input raises PickleRefused (a ValueError), never another exception: a caller
turns it into the refusal of one row.

`inflate` is a bounded zlib decompression (a small input cannot expand past `max_bytes`).
"""

from __future__ import annotations

import pickletools
import re
import struct
import zlib
from typing import Any

MAX_DEPTH = 64
MAX_VALUES = 2_000_000
MAX_STACK = 100_000
MAX_MEMO = 1_000_000
MAX_INT_BYTES = 1024  # LONG1/LONG4 payloads; the text forms get the same bound in digits
MAX_PROTOCOL = 5
# Keys of one dict that may share a hash value (the judge's own bound, values.MAX_SAME_HASH).
# Hashes of ints, floats, bool and None are public arithmetic (every k * (2**61 - 1) hashes to
# 0), and each insert compares against every key of its hash, so without this bound a pickle of
# n such keys costs n**2/2 probes; str and bytes hashes are salted per process, so not counted.
MAX_SAME_HASH = 32
_DECIMAL = re.compile(rb"[+-]?[0-9]{1,%d}" % (MAX_INT_BYTES * 3))

OPCODE_NAMES: dict[int, str] = {ord(op.code): op.name for op in pickletools.opcodes}


class PickleRefused(ValueError):
    """Why a pickle was not decoded; `opcode` names the refused opcode when there is one."""

    def __init__(self, message: str, opcode: str | None = None) -> None:
        super().__init__(message)
        self.opcode = opcode


class _Mark:
    """The MARK sentinel on the stack."""


_MARK = _Mark()
_SCALARS = (str, bytes, int, float, bool, type(None))
_KEY_TYPES = (str, bytes, int, float, bool, type(None))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise PickleRefused(f"truncated pickle: {n} bytes wanted at offset {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def line(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise PickleRefused(f"truncated pickle: no newline after offset {self.pos}")
        out = self.data[self.pos : end]
        self.pos = end + 1
        return out

    def u(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        return int(struct.unpack(fmt, self.take(size))[0])


def _text_int(raw: bytes, name: str) -> int | bool:
    if name == "LONG" and raw.endswith(b"L"):  # Python 2's suffix, one as pickle strips it
        raw = raw[:-1]
    if name == "INT" and raw in (b"00", b"01"):  # protocol 0 spells False/True as I00/I01
        return raw == b"01"
    # The whole grammar matched here, so int() below cannot refuse it ("-+5", "5_0", " 5" and
    # non-ASCII digits are all things int() would read or raise on in its own way).
    if not _DECIMAL.fullmatch(raw):
        raise PickleRefused(f"{name}: not a bounded decimal integer", name)
    return int(raw)


class _Machine:
    def __init__(self, data: bytes) -> None:
        self.r = _Reader(data)
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.values = 0
        # Per dict (kept alive here, so its id names it alone): keys counted by hash value.
        self.hashes: dict[int, tuple[dict[Any, Any], dict[int, int]]] = {}

    def push(self, value: Any) -> None:
        self.values += 1
        if self.values > MAX_VALUES:
            raise PickleRefused(f"more than {MAX_VALUES} values")
        if len(self.stack) >= MAX_STACK:
            raise PickleRefused(f"stack deeper than {MAX_STACK}")
        self.stack.append(value)

    def pop(self, name: str) -> Any:
        if not self.stack or self.stack[-1] is _MARK:
            raise PickleRefused(f"{name}: stack underflow", name)
        return self.stack.pop()

    def pop_mark(self, name: str) -> list[Any]:
        if not self.marks:
            raise PickleRefused(f"{name}: no MARK", name)
        at = self.marks.pop()
        items = self.stack[at + 1 :]
        del self.stack[at:]
        return items

    def top(self, kind: type, name: str) -> Any:
        if not self.stack or not isinstance(self.stack[-1], kind):
            raise PickleRefused(f"{name}: the stack top is not a {kind.__name__}", name)
        return self.stack[-1]

    def memo_put(self, index: int, name: str) -> None:
        if not self.stack or self.stack[-1] is _MARK:
            raise PickleRefused(f"{name}: nothing to memoize", name)
        if index not in self.memo and len(self.memo) >= MAX_MEMO:
            raise PickleRefused(f"more than {MAX_MEMO} memo entries", name)
        self.memo[index] = self.stack[-1]

    def memo_get(self, index: int, name: str) -> None:
        if index not in self.memo:
            raise PickleRefused(f"{name}: memo index {index} was never stored", name)
        value = self.memo[index]
        if not isinstance(value, _SCALARS):
            # A shared list or dict is how a pickle makes a cycle; data never needs one here.
            raise PickleRefused(f"{name}: a memo reference to a {type(value).__name__}", name)
        self.push(value)

    def set_items(self, target: dict[Any, Any], items: list[Any], name: str) -> None:
        if len(items) % 2:
            raise PickleRefused(f"{name}: odd number of items", name)
        for k, v in zip(items[::2], items[1::2], strict=True):
            if not isinstance(k, _KEY_TYPES):
                raise PickleRefused(f"{name}: a dict key of type {type(k).__name__}", name)
            if not isinstance(k, (str, bytes)) and k not in target:
                self._count_hash(target, hash(k), name)
            target[k] = v

    def _count_hash(self, target: dict[Any, Any], h: int, name: str) -> None:
        entry = self.hashes.get(id(target))
        if entry is None:
            entry = self.hashes[id(target)] = (target, {})
        # A hash is an int of at most 61 bits, which hashes to itself: this count cannot flood.
        counts = entry[1]
        counts[h] = n = counts.get(h, 0) + 1
        if n > MAX_SAME_HASH:
            raise PickleRefused(
                f"{name}: more than {MAX_SAME_HASH} keys of one dict share a hash value "
                "(a hash-collision flood)",
                name,
            )

    def run(self) -> Any:
        r = self.r
        while True:
            code = r.take(1)[0]
            name = OPCODE_NAMES.get(code, f"unknown opcode 0x{code:02x}")
            if code == 0x80:  # PROTO
                proto = r.take(1)[0]
                if proto > MAX_PROTOCOL:
                    raise PickleRefused(f"PROTO {proto}: protocol above {MAX_PROTOCOL}", name)
            elif code == 0x95:  # FRAME: a length hint; the bytes follow inline
                size = r.u("<Q")
                if size > len(r.data) - r.pos:
                    raise PickleRefused("FRAME longer than the pickle", name)
            elif code == ord("."):  # STOP
                if len(self.stack) != 1 or self.marks:
                    raise PickleRefused("STOP with a stack of other than one value", name)
                return self.stack.pop()
            elif code == ord("("):  # MARK
                self.marks.append(len(self.stack))
                self.push(_MARK)
            elif code == ord("0"):  # POP
                self.pop(name)
            elif code == ord("1"):  # POP_MARK
                self.pop_mark(name)
            elif code == ord("N"):
                self.push(None)
            elif code == 0x88:
                self.push(True)
            elif code == 0x89:
                self.push(False)
            elif code == ord("J"):  # BININT
                self.push(r.u("<i"))
            elif code == ord("K"):  # BININT1
                self.push(r.u("<B"))
            elif code == ord("M"):  # BININT2
                self.push(r.u("<H"))
            elif code in (0x8A, 0x8B):  # LONG1, LONG4
                n = r.u("<B") if code == 0x8A else r.u("<i")
                if n < 0 or n > MAX_INT_BYTES:
                    raise PickleRefused(f"{name}: integer of {n} bytes", name)
                self.push(int.from_bytes(r.take(n), "little", signed=True))
            elif code in (ord("I"), ord("L")):  # INT, LONG (protocol 0 text)
                self.push(_text_int(r.line(), name))
            elif code == ord("G"):  # BINFLOAT
                self.push(struct.unpack(">d", r.take(8))[0])
            elif code == ord("F"):  # FLOAT (text)
                raw = r.line()
                try:
                    self.push(float(raw.decode("ascii")))
                except ValueError:
                    raise PickleRefused("FLOAT: not a number", name) from None
            elif code in (0x8C, ord("X"), 0x8D):  # SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
                fmt = {0x8C: "<B", ord("X"): "<I", 0x8D: "<Q"}[code]
                raw = r.take(r.u(fmt))
                try:
                    self.push(raw.decode("utf-8", errors="surrogatepass"))
                except UnicodeDecodeError:
                    raise PickleRefused(f"{name}: not UTF-8", name) from None
            elif code == ord("V"):  # UNICODE (protocol 0, raw-unicode-escape)
                try:
                    self.push(r.line().decode("raw-unicode-escape"))
                except UnicodeDecodeError:  # a truncated \uXXXX or \UXXXXXXXX escape
                    raise PickleRefused(f"{name}: a bad \\u escape", name) from None
            elif code in (ord("C"), ord("B"), 0x8E):  # SHORT_BINBYTES, BINBYTES, BINBYTES8
                fmt = {ord("C"): "<B", ord("B"): "<I", 0x8E: "<Q"}[code]
                self.push(bytes(r.take(r.u(fmt))))
            elif code == ord("]"):  # EMPTY_LIST
                self.push([])
            elif code == ord("l"):  # LIST
                self.push(self.pop_mark(name))
            elif code == ord("a"):  # APPEND
                item = self.pop(name)
                self.top(list, name).append(item)
            elif code == ord("e"):  # APPENDS
                items = self.pop_mark(name)
                self.top(list, name).extend(items)
            elif code == ord(")"):  # EMPTY_TUPLE
                self.push(())
            elif code == ord("t"):  # TUPLE
                self.push(tuple(self.pop_mark(name)))
            elif code in (0x85, 0x86, 0x87):  # TUPLE1, TUPLE2, TUPLE3
                n = code - 0x84
                items = [self.pop(name) for _ in range(n)][::-1]
                self.push(tuple(items))
            elif code == ord("}"):  # EMPTY_DICT
                self.push({})
            elif code == ord("d"):  # DICT
                target: dict[Any, Any] = {}
                self.set_items(target, self.pop_mark(name), name)
                self.push(target)
            elif code == ord("s"):  # SETITEM
                v = self.pop(name)
                k = self.pop(name)
                self.set_items(self.top(dict, name), [k, v], name)
            elif code == ord("u"):  # SETITEMS
                items = self.pop_mark(name)
                self.set_items(self.top(dict, name), items, name)
            elif code == 0x94:  # MEMOIZE
                self.memo_put(len(self.memo), name)
            elif code == ord("p"):  # PUT
                self.memo_put(_int_line(r.line(), name), name)
            elif code == ord("q"):  # BINPUT
                self.memo_put(r.u("<B"), name)
            elif code == ord("r"):  # LONG_BINPUT
                self.memo_put(r.u("<I"), name)
            elif code == ord("g"):  # GET
                self.memo_get(_int_line(r.line(), name), name)
            elif code == ord("h"):  # BINGET
                self.memo_get(r.u("<B"), name)
            elif code == ord("j"):  # LONG_BINGET
                self.memo_get(r.u("<I"), name)
            else:
                raise PickleRefused(
                    f"refused pickle opcode {name} at offset {r.pos - 1}: only plain data "
                    "(str, bytes, int, float, bool, None, list, tuple, dict) is decoded",
                    name,
                )


def _int_line(raw: bytes, name: str) -> int:
    text = raw.decode("ascii", errors="replace")
    if not text.isdigit() or len(text) > 12:
        raise PickleRefused(f"{name}: bad memo index", name)
    return int(text)


def _check_depth(value: Any) -> None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise PickleRefused(f"nesting deeper than {MAX_DEPTH}")
        if isinstance(v, (list, tuple)):
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())


def loads(data: bytes, *, max_bytes: int) -> Any:
    """The value a pickle of plain data holds, or PickleRefused saying why not."""
    if len(data) > max_bytes:
        raise PickleRefused(f"pickle of {len(data)} bytes exceeds the cap of {max_bytes}")
    value = _Machine(bytes(data)).run()
    _check_depth(value)
    return value


def inflate(data: bytes, *, max_bytes: int) -> bytes:
    """zlib-decompress `data`, refusing output over `max_bytes` (a bomb) and truncated streams."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise PickleRefused(f"not zlib data: {exc}") from None
    if len(out) > max_bytes or d.unconsumed_tail:
        raise PickleRefused(f"zlib data expands past the cap of {max_bytes} bytes")
    if not d.eof:
        raise PickleRefused("truncated zlib stream")
    if d.unused_data:
        raise PickleRefused("trailing bytes after the zlib stream")
    return out
