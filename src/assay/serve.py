"""The HTTP service (`assay serve`) as a library: build the ASGI app over your own `Grader`, or
run it. docs/integrations.md describes the routes and the clients that call them.

    import assay, assay.serve
    with assay.Grader(reuse_judges=True) as g:
        token = assay.serve.read_token(None)  # or read_token(path): a file of yours
        assay.serve.serve(g, host="127.0.0.1", port=8000, tasks={},
                          settings=assay.serve.Settings(token=token))
"""

from __future__ import annotations

from assay._internal.sandbox.sandboxfusion import ServerLimits
from assay._internal.serve.app import Service, Settings, create_app
from assay._internal.serve.run import check_address, load_tasks, read_token, serve

__all__ = [
    "ServerLimits",
    "Service",
    "Settings",
    "check_address",
    "create_app",
    "load_tasks",
    "read_token",
    "serve",
]
