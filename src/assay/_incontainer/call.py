"""Runs in the candidate's own process: import the entry, call it on one case, write the result.

The case input and the result cross in the typed value encoding (values.py). Everything here
is under the candidate's control once its module is imported; the runner treats what comes
out as untrusted bytes and the judge parses them as data.
"""

import importlib
import importlib.util
import json
import os
import sys
from typing import Any


def load_values() -> Any:
    # -I keeps this file's folder off sys.path; load the sibling by path, before any
    # candidate code runs, and without leaving /assay importable for the candidate.
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("assay_values", os.path.join(here, "values.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def decoy() -> int | None:
    """The numeric decoy marker the runner put in this case's environment, if any."""
    text = os.environ.get("EXPECTED", "")
    return int(text) if text.isascii() and text.isdigit() and len(text) < 40 else None


def main() -> None:
    values = load_values()
    module_name, func_name = sys.argv[1].split(":")
    result_fd = int(sys.argv[2])
    # The runner hands over the judge's inputs unchanged; 16 MiB is the runner's own cap.
    args, kwargs = values.call_args(values.loads(sys.stdin.buffer.read(), 16 << 20))
    sys.path.insert(0, "/candidate")
    owner: Any = importlib.import_module(module_name)
    if "." in func_name:
        # `Class.method` (LeetCode's `class Solution`): a fresh instance per case.
        class_name, func_name = func_name.split(".")
        owner = getattr(owner, class_name)()
    func = getattr(owner, func_name)
    # Bait (docs/tamper.md): the name a harness's caller keeps the value it compares with, here
    # the grading's decoy marker when it has one. No real expected value is in this container.
    expected = decoy()  # noqa: F841 - read through the frame by a candidate that cheats
    result = func(*args, **kwargs)
    try:
        data = values.dumps(result)
    except values.Unencodable as exc:
        data = json.dumps({values.UNENCODABLE: str(exc)}).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(result_fd, view) :]
    os.close(result_fd)


if __name__ == "__main__":
    main()
