"""The service's pieces without an engine: the bounded queue, the token check, the body cap,
the access log that never sees a token, the token file and the address rule. The real server
with real clients is tests/docker/test_serve_docker.py."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay._internal.serve.admission import Admission, Draining, Full, QueueTimeout
from assay._internal.serve.asgi import AccessLog, BodyCap, TokenAuth
from assay._internal.serve.run import check_address, is_loopback, read_token
from assay.errors import UsageError

TOKEN = "t0ken-for-the-unit-tests-xyz"


# -- the queue --------------------------------------------------------------------------------


def test_admission_refuses_past_workers_plus_queue_and_frees_on_completion() -> None:
    adm = Admission(workers=1, queue=2, queue_timeout=60)
    gate = threading.Event()

    async def main() -> list[Any]:
        adm.admit(3)  # one runs, two wait: exactly full
        with pytest.raises(Full) as full:
            adm.admit(1)
        assert full.value.retry_after >= 1
        jobs = [asyncio.ensure_future(adm.run(gate.wait)) for _ in range(3)]
        await asyncio.sleep(0.1)
        assert (adm.running, adm.waiting) == (1, 2)
        gate.set()
        out = await asyncio.gather(*jobs)
        assert (adm.running, adm.waiting) == (0, 0)
        adm.admit(3)  # room again
        adm.release(3)
        return out

    assert asyncio.run(main()) == [True, True, True]
    adm.drain()
    with pytest.raises(Draining):
        adm.admit(1)


def test_an_item_that_waited_past_the_queue_timeout_never_starts() -> None:
    adm = Admission(workers=1, queue=1, queue_timeout=0.2)
    started: list[str] = []

    def slow() -> str:
        time.sleep(0.5)
        started.append("slow")
        return "slow"

    def late() -> str:
        started.append("late")
        return "late"

    async def main() -> None:
        adm.admit(2)
        first = asyncio.ensure_future(adm.run(slow))
        await asyncio.sleep(0.05)
        with pytest.raises(QueueTimeout):
            await adm.run(late)
        assert await first == "slow"

    asyncio.run(main())
    assert started == ["slow"] and (adm.running, adm.waiting) == (0, 0)
    adm.drain()


def test_drain_waits_for_running_work() -> None:
    adm = Admission(workers=1, queue=0, queue_timeout=60)
    done: list[int] = []

    async def main() -> None:
        adm.admit(1)
        job = asyncio.ensure_future(adm.run(lambda: (time.sleep(0.3), done.append(1))))
        await asyncio.sleep(0.05)
        adm.drain()  # blocks until the running item finished
        assert done == [1]
        await job

    asyncio.run(main())


# -- middleware -------------------------------------------------------------------------------


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """An app that reads the whole body and answers the path it was routed and the length."""
    if scope["type"] != "http":
        return
    size = 0
    while True:
        msg = await receive()
        size += len(msg.get("body", b""))
        if not msg.get("more_body"):
            break
    body = f"{scope['path']} {size}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_token_as_bearer_or_first_path_segment_and_nothing_else() -> None:
    app = TokenAuth(echo, TOKEN)

    async def main() -> list[tuple[int, str]]:
        async with _client(app) as c:
            rs = [
                await c.post(f"/{TOKEN}/run_code", content=b"x"),
                await c.post("/run_code", headers={"Authorization": f"Bearer {TOKEN}"}),
                await c.post("/run_code"),
                await c.post(f"/{TOKEN[:-1]}/run_code"),
                await c.post(f"/{TOKEN}x/run_code"),
                await c.post("/run_code", headers={"Authorization": f"Basic {TOKEN}"}),
                await c.post("/run_code", headers={"Authorization": f"Bearer {TOKEN}x"}),
                await c.post(f"/run_code/{TOKEN}"),
                await c.get("/health"),
                await c.get(f"/{TOKEN}"),  # the token alone is no route and no way in
            ]
        return [(r.status_code, r.text) for r in rs]

    got = _run(main())
    assert got[0] == (200, "/run_code 1")
    assert got[1] == (200, "/run_code 0")
    assert [s for s, _ in got[2:8]] == [401] * 6
    assert all(TOKEN not in t for _, t in got[2:8])
    assert got[8] == (200, "/health 0")
    assert got[9][0] == 401


def test_body_cap_refuses_a_declared_or_a_streamed_body_over_the_cap() -> None:
    seen: list[int] = []

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        while True:
            msg = await receive()
            seen.append(len(msg.get("body", b"")))
            if not msg.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read"})

    app = BodyCap(counting, 1000)

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"y" * 100

    async def main() -> list[int]:
        async with _client(app) as c:
            declared = await c.post("/", content=b"x" * 1001)
            streamed = await c.post("/", content=chunks())
            ok = await c.post("/", content=b"x" * 1000)
            bogus = await c.post("/", headers={"content-length": "12abc"}, content=b"")
        return [declared.status_code, streamed.status_code, ok.status_code, bogus.status_code]

    statuses = _run(main())
    assert statuses[:3] == [413, 413, 200]
    assert statuses[3] in (400, 413)
    # The streamed body was cut off as it passed the cap, not read to its 10,000 bytes.
    assert sum(seen) < 3000


def test_a_streamed_body_over_the_cap_is_413_even_when_the_app_answers_its_error() -> None:
    """Starlette's error middleware answers 500 to the exception the cap raises inside the app,
    then re-raises it: the client must still see the 413, and only it."""

    async def framework(scope: Any, receive: Any, send: Any) -> None:
        try:
            while (await receive()).get("more_body"):
                pass
        except Exception:
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b"Internal Server Error"})
            raise

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"z" * 100

    async def main() -> httpx.Response:
        async with _client(BodyCap(framework, 1000)) as c:
            return await c.post("/", content=chunks())

    r = _run(main())
    assert r.status_code == 413 and "cap" in r.json()["error"]


def test_the_access_log_never_holds_the_token(caplog: pytest.LogCaptureFixture) -> None:
    observed: list[tuple[str, int]] = []
    app = AccessLog(TokenAuth(echo, TOKEN), lambda r, s, _t: observed.append((r, s)))

    async def main() -> None:
        async with _client(app) as c:
            await c.post(f"/{TOKEN}/run_code")
            await c.post(f"/{TOKEN[:-2]}zz/run_code")
            await c.get("/health")

    with caplog.at_level(logging.INFO, logger="assay.serve"):
        _run(main())
    assert observed == [("/run_code", 200), ("(refused)", 401), ("/health", 200)]
    assert TOKEN[:-2] not in caplog.text and "/run_code 200" in caplog.text


# -- start-up checks --------------------------------------------------------------------------


def test_no_token_is_refused_off_loopback() -> None:
    for host in ("127.0.0.1", "::1", "localhost", "127.5.6.7"):
        assert is_loopback(host)
        check_address(host, None)
    for host in ("0.0.0.0", "::", "10.0.0.1", "example.org"):
        assert not is_loopback(host)
        with pytest.raises(UsageError, match="without a token"):
            check_address(host, None)
        check_address(host, TOKEN)


def test_token_file_is_created_private_then_reused_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "token"
    made = read_token(path)
    assert len(made) >= 16 and path.stat().st_mode & 0o777 == 0o600
    assert read_token(path) == made
    assert read_token(None) != read_token(None)
    for bad in ("short", "has/slash-in-it-xxxxxxxx", "has space in it xxxxxxxx", ""):
        path.write_text(bad + "\n")
        with pytest.raises(UsageError, match="token"):
            read_token(path)
