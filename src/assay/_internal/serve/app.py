"""The ASGI application: routes over one `Grader`, one `Admission` queue and the metrics.

Routes (all but /health need the token, as a bearer header or the first path segment):
- native, the secure mode: POST /v1/grade, POST /v1/grade/batch, GET /v1/tasks, GET /v1/key;
- SandboxFusion: POST /run_code, GET /v1/ping; Piston: POST /api/v2/execute,
  GET /api/v2/runtimes. These only run code in a fresh offline container and return its
  bytes: the caller compares (docs/integrations.md). Their answers' `assay` object, which
  the protocols' clients ignore, adds `tamper`: the tamper signals of the run, which has no
  judge, so only the firewall's refusal of the code, its files or its build can be one;
- GET /health, GET /metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ValidationError

import assay
from assay.errors import AssayError, UsageError
from assay.wire import Answer

from ..model.families import tamper_codes
from ..model.languages import LANGUAGES, language_image
from ..model.strict_json import StrictJSONError, loads_strict
from ..sandbox import piston
from ..sandbox import sandboxfusion as sf
from ..sandbox.execute import Execution, RunRequest, execute
from .admission import Admission, Draining, Full, QueueTimeout
from .asgi import AccessLog, BodyCap, TokenAuth
from .metrics import Metrics
from .native import BatchRequest, GradeRequest, NativeGrading

log = logging.getLogger("assay.serve")
M = TypeVar("M", bound=BaseModel)


async def parse_json(raw: bytes, cap: int) -> Any:
    """`loads_strict` on a thread: a body of megabytes takes a while to read, and the event loop
    must keep answering (/health, 429s) meanwhile."""
    if len(raw) < 65536:
        return loads_strict(raw, max_bytes=cap)
    return await asyncio.to_thread(loads_strict, raw, max_bytes=cap)


class Invalid(Exception):
    """A body that is not the route's JSON: 422 with `detail` as FastAPI shapes it."""

    def __init__(self, detail: list[dict[str, Any]]) -> None:
        super().__init__("invalid request body")
        self.detail = detail


@dataclass(frozen=True)
class Settings:
    """What `create_app` and `serve` need besides the grader (the CLI's options, checked).

    `head_timeout`: seconds a connection may take to send a request's whole head, from its
    start or the previous response's end; `body_timeout`: seconds from a head to the end of
    its body; `max_connections`: open connections at most (past it, the oldest one waiting
    for a head is closed); `inline_cache_bytes`: bytes on disk of the tasks made from rows."""

    token: str | None
    workers: int = 2
    queue: int = 256
    queue_timeout: float = 120.0
    max_body_bytes: int = 16 << 20
    limits: sf.ServerLimits = field(default_factory=sf.ServerLimits)
    head_timeout: float = 10.0
    body_timeout: float = 120.0
    max_connections: int = 1024
    inline_cache_bytes: int = 1 << 30


VERSIONS = {
    "python3": "3.11.2", "c": "12.2.0", "cpp": "12.2.0", "java": "17.0.13", "go": "1.19.8",
    "rust": "1.63.0", "javascript": "18.19.0",
}  # fmt: skip
"""What GET /api/v2/runtimes reports: the versions of Debian 12's packages, which the base image
and the language images are built from (docs/stdio.md)."""


def available_languages(grader: assay.Grader) -> dict[str, str]:
    """Language name -> image, for each language whose image is on the engine (python3 runs in
    the base image). Checked once at start: a request for another language is refused."""
    rt = grader.runtime()
    found = {}
    for name in LANGUAGES:
        ref = language_image(name, grader.image)
        try:
            rt.image_digest(ref)
        except AssayError:
            continue
        found[name] = ref
    return found


class Service:
    """The state the routes share."""

    def __init__(
        self, grader: assay.Grader, tasks: Mapping[str, assay.Task], settings: Settings
    ) -> None:
        self.grader = grader
        self.settings = settings
        self.admission = Admission(settings.workers, settings.queue, settings.queue_timeout)
        self.metrics = Metrics(self.admission)
        self.inline = assay.InlineTasks(max_bytes=settings.inline_cache_bytes)
        self.native = NativeGrading(grader, tasks, self.inline)
        self.tasks = tasks
        self.languages = available_languages(grader)
        self.versions = {k: v for k, v in VERSIONS.items() if k in self.languages}

    def close(self) -> None:
        self.admission.drain()
        self.inline.close()
        self.grader.close()

    # -- queueing ------------------------------------------------------------------------

    async def queued(self, route: str, n: int, fn: Callable[[], Any]) -> Any:
        """Admit and run one item; `Full`/`Draining` propagate (nothing was admitted)."""
        try:
            self.admission.admit(n)
        except Full:
            self.metrics.rejected.labels("full").inc(n)
            raise
        except Draining:
            self.metrics.rejected.labels("draining").inc(n)
            raise
        return await self.admission.run(fn)

    # -- running code --------------------------------------------------------------------

    def run(self, req: RunRequest) -> Execution:
        return execute(self.grader.runtime(), req, self.grader.image)

    def check_language(self, req: RunRequest) -> None:
        if req.language not in self.languages:
            raise sf.RequestRefused(
                f"language {req.language} is not built on this server; it has "
                f"{', '.join(sorted(self.languages))} (`assay build --languages {req.language}`)"
            )


def run_tamper(ex: Execution) -> list[str]:
    """The tamper signals of a run: its refusal's code when that is of the tamper family (a
    link, a `..`, a device in the code's files or its build; not a size over a cap)."""
    return tamper_codes([ex.refused]) if ex.refused is not None else []


def with_tamper(out: dict[str, Any], tamper: list[str]) -> dict[str, Any]:
    """`out` (a SandboxFusion or Piston answer) with `tamper` in its `assay` object."""
    return {**out, "assay": {**out.get("assay", {}), "tamper": tamper}}


def busy(exc: Full | Draining) -> JSONResponse:
    if isinstance(exc, Full):
        return JSONResponse({"error": str(exc)}, 429, {"retry-after": str(exc.retry_after)})
    return JSONResponse({"error": "the server is draining"}, 503, {"retry-after": "5"})


def create_app(
    grader: assay.Grader, tasks: Mapping[str, assay.Task], settings: Settings
) -> tuple[Any, Service]:
    """The ASGI app (wrapped in its middleware) and its service. Closing the service (done by
    the app's lifespan) drains the queue and removes every judge and inline task."""
    svc = Service(grader, tasks, settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            svc.close()

    app = FastAPI(
        title="assay serve", version=assay.__version__, lifespan=lifespan,
        docs_url=None, redoc_url=None, openapi_url=None,
    )  # fmt: skip

    async def body_of(request: Request, model: type[M]) -> M:
        """The request's body through the strict JSON reader (no duplicate keys, no NaN,
        bounded depth: Python's own parser would recurse into a deep body) and `model`.
        Raises `Invalid` with FastAPI's 422 shape, which SandboxFusion answers too."""
        try:
            raw = await parse_json(await request.body(), settings.max_body_bytes)
            return model.model_validate(raw)
        except StrictJSONError as exc:
            raise Invalid([{"loc": ["body"], "msg": str(exc), "type": exc.code}]) from None
        except ValidationError as exc:
            # Without the input: it is the client's own bytes, possibly large.
            shown: list[dict[str, Any]] = [
                {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()
            ]
            raise Invalid(shown[:20]) from None

    @app.exception_handler(Invalid)
    async def invalid(_r: Request, exc: Invalid) -> JSONResponse:
        return JSONResponse({"detail": exc.detail}, 422)

    # HEAD too: load balancers and uptime checks probe with it (uvicorn sends no body).
    @app.api_route("/health", methods=["GET", "HEAD"])
    async def health() -> dict[str, Any]:
        a = svc.admission
        return {"status": "draining" if a.draining else "ok"}

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(svc.metrics.text(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/tasks")
    async def list_tasks() -> dict[str, Any]:
        return {"tasks": sorted(svc.tasks)}

    @app.get("/v1/key")
    async def key() -> PlainTextResponse:
        return PlainTextResponse(svc.grader.public_key.read_text())

    @app.post("/v1/grade")
    async def grade(request: Request) -> Response:
        req = await body_of(request, GradeRequest)
        try:
            out = await svc.queued("/v1/grade", 1, lambda: svc.native.grade(req))
        except (Full, Draining) as exc:
            return busy(exc)
        except QueueTimeout as exc:
            out = Answer.no_verdict("infra_error", str(exc)).to_json()
        svc.metrics.outcome("/v1/grade", out["status"], bool(out["tamper"]))
        return JSONResponse(out, 422 if out["status"] == "invalid" else 200)

    @app.post("/v1/grade/batch")
    async def grade_batch(request: Request) -> Response:
        req = await body_of(request, BatchRequest)
        n = len(req.requests)
        try:
            svc.admission.admit(n)
        except (Full, Draining) as exc:
            svc.metrics.rejected.labels("full" if isinstance(exc, Full) else "draining").inc(n)
            return busy(exc)

        async def one(r: GradeRequest) -> dict[str, Any]:
            try:
                out = await svc.admission.run(lambda: svc.native.grade(r))
            except QueueTimeout as exc:
                out = Answer.no_verdict("infra_error", str(exc)).to_json()
            svc.metrics.outcome("/v1/grade/batch", out["status"], bool(out["tamper"]))
            return out

        results = await asyncio.gather(*(one(r) for r in req.requests))
        return JSONResponse({"results": results})

    @app.get("/v1/ping")
    async def ping() -> PlainTextResponse:
        return PlainTextResponse("pong")

    @app.post("/run_code")
    async def run_code(request: Request) -> Response:
        body = await body_of(request, sf.RunCodeRequest)
        try:
            req = sf.to_run_request(body, settings.limits)
            svc.check_language(req)
        except sf.RequestRefused as exc:
            return JSONResponse(sf.refusal(exc.message, exc.field), 422)
        except UsageError as exc:
            return JSONResponse(sf.refusal(str(exc)), 422)
        tamper: list[str] = []
        try:
            ex = await svc.queued("/run_code", 1, lambda: svc.run(req))
            out, tamper = sf.to_response(ex), run_tamper(ex)
        except (Full, Draining) as exc:
            return busy(exc)
        except (QueueTimeout, AssayError) as exc:
            out = sf.sandbox_error(str(exc))
        svc.metrics.outcome(
            "/run_code",
            str(out["status"]).lower().replace("sandboxerror", "sandbox_error"),
            bool(tamper),
        )
        return JSONResponse(with_tamper(out, tamper))

    @app.get("/api/v2/runtimes")
    async def runtimes() -> JSONResponse:
        return JSONResponse(piston.runtimes(svc.versions))

    def piston_failed(exc: Exception) -> JSONResponse:
        svc.metrics.outcome("/api/v2/execute", "sandbox_error")
        return JSONResponse(piston.error_body(f"execution failed: {exc}"), 500)

    @app.post("/api/v2/execute")
    async def piston_execute(request: Request) -> Response:
        try:
            raw = await parse_json(await request.body(), settings.max_body_bytes)
            body = piston.parse_request(raw)
            req, rt = piston.to_run_request(body, settings.limits, svc.versions)
        except StrictJSONError as exc:
            return JSONResponse(piston.error_body(f"the body is not JSON: {exc}"), 400)
        except sf.RequestRefused as exc:
            return JSONResponse(piston.error_body(exc.message), 400)
        except UsageError as exc:
            return JSONResponse(piston.error_body(str(exc)), 400)
        try:
            ex = await svc.queued("/api/v2/execute", 1, lambda: svc.run(req))
        except (Full, Draining) as exc:
            return busy(exc)
        except (QueueTimeout, AssayError, ValueError) as exc:
            return piston_failed(exc)
        try:
            out = piston.to_response(ex, rt)
        except sf.RequestRefused as exc:  # the firewall refused a file
            tamper = run_tamper(ex)
            svc.metrics.outcome("/api/v2/execute", "refused", bool(tamper))
            # Piston's clients read a 400's `message` only; the `assay` object rides beside it.
            facts = {"grading_id": ex.grading_id, "refused": ex.refused, "tamper": tamper}
            return JSONResponse({**piston.error_body(exc.message), "assay": facts}, 400)
        except ValueError as exc:
            return piston_failed(exc)
        svc.metrics.outcome("/api/v2/execute", "ran")
        return JSONResponse(with_tamper(out, []))

    wrapped = AccessLog(TokenAuth(BodyCap(app, settings.max_body_bytes), settings.token),
                        svc.metrics.observe, Metrics.label)  # fmt: skip
    return wrapped, svc
