"""Runs in the candidate's own process: import the entry, call it on one case, write JSON.

Everything here is under the candidate's control once its module is imported; the
runner treats what comes out as untrusted bytes and the judge parses them as data.
"""

import importlib
import json
import os
import sys


def main() -> None:
    module_name, func_name = sys.argv[1].split(":")
    result_fd = int(sys.argv[2])
    args = json.loads(sys.stdin.buffer.read())
    sys.path.insert(0, "/candidate")
    func = getattr(importlib.import_module(module_name), func_name)
    data = json.dumps(func(*args), allow_nan=False).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(result_fd, view) :]
    os.close(result_fd)


if __name__ == "__main__":
    main()
