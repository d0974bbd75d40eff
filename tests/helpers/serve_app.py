"""The real `assay serve` app (`create_app`, under uvicorn with the configuration `serve` uses)
on 127.0.0.1 in this process, over a grader that needs no engine: its verdicts are real and
signed, decided by markers in the code (`ScriptedGrader`). What a client reads from it is what
the server writes, byte for byte; tests/docker/test_serve_docker.py runs the same server with
real gradings."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

import assay
from assay._internal.serve.app import Service, Settings, create_app
from assay._internal.serve.run import server_config
from assay._internal.signing.sign import sign_verdict
from assay.errors import EngineError, InfrastructureError
from helpers.verdicts import verdict

PASS, WRONG, ALLCASES, INFRA, BLOCK = "PASS", "WRONG", "ALLCASES", "INFRA", "BLOCK"
TAMPER = "TAMPER"


class _NoImages:
    """A runtime with no language images: the server starts with python3 only."""

    def image_digest(self, ref: str) -> str:
        raise EngineError(f"no image {ref}")


class ScriptedGrader(assay.Grader):
    """A `Grader` whose verdicts (real, signed with its key) follow the code: PASS passes every
    case; ALLCASES passes every case but fails on `limit:pids`, as a correct program that
    hit its pids limit does (score 1.0, failed); WRONG passes half; TAMPER passes half and
    fails on `junit:skipped`, as a submission that skipped the tests it could not pass does
    (a tamper signal; score 0.5, as much as WRONG's); INFRA raises InfrastructureError; BLOCK
    waits for `release` first. Anything else fails every case."""

    def __init__(self, key: Path) -> None:
        super().__init__(key=key)
        self.release = threading.Event()
        self.graded: list[str] = []

    def runtime(self) -> Any:
        return _NoImages()

    def grade(self, task: Any, submission: Any, *, tier: Any = None, **_: Any) -> assay.Graded:
        code = "\n".join(submission.values())
        self.graded.append(code)
        if BLOCK in code:
            self.release.wait(60)
        if INFRA in code:
            raise InfrastructureError("engine:gone (scripted)")
        if PASS in code or ALLCASES in code:
            statuses: tuple[str, ...] = ("pass", "pass")
        elif WRONG in code or TAMPER in code:
            statuses = ("pass", "fail")
        else:
            statuses = ("fail", "fail")
        reasons: tuple[str, ...] = ()
        if ALLCASES in code:
            reasons = ("limit:pids",)
        elif TAMPER in code:
            reasons = ("junit:skipped",)
        gid = f"g-{len(self.graded)}"
        v = verdict(statuses, reason_codes=reasons, grading_id=gid, task_id=task.id)
        return assay.Graded(v, sign_verdict(v, self._private_key))


@dataclass
class Served:
    base: str
    token: str | None
    service: Service
    grader: ScriptedGrader
    server: uvicorn.Server

    @property
    def url(self) -> str:
        """The base with the token as its first path segment (what verl is given)."""
        return f"{self.base}/{self.token}" if self.token else self.base

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])


@contextmanager
def serving(tmp: Path, token: str | None = "tok-" + "x" * 28, **settings: Any) -> Iterator[Served]:
    """The app on 127.0.0.1 and a free port until the block ends (then it drains and closes
    the service, as on SIGTERM)."""
    grader = ScriptedGrader(tmp / "signing.key")
    app, service = create_app(grader, {}, Settings(token=token, **settings))
    config = server_config(app, service, host="127.0.0.1", port=0, drain_timeout=10)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="serve-app", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not (server.started and getattr(server, "servers", None)):
            if not thread.is_alive() or time.monotonic() > deadline:
                raise AssertionError("the app did not start")
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield Served(f"http://127.0.0.1:{port}", token, service, grader, server)
    finally:
        grader.release.set()
        server.should_exit = True
        thread.join(60)
        assert not thread.is_alive(), "the app did not stop"
