"""The service's pieces without an engine: the bounded queue, the token check, the body cap,
the access log that never sees a token, the token file and the address rule; then the real app
under uvicorn on 127.0.0.1 (tests/helpers/serve_app.py, no engine): the deadlines of a
request's head and body and the connection cap, HEAD /health, the access log against every
form of the token, and the inline tasks a refused request must not leave. The real server with
real gradings and clients is tests/docker/test_serve_docker.py."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from helpers.serve_app import Served, serving

from assay._internal.serve.admission import Admission, Draining, Full, QueueTimeout
from assay._internal.serve.asgi import AccessLog, BodyCap, TokenAuth
from assay._internal.serve.metrics import Metrics
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
    app = AccessLog(TokenAuth(echo, TOKEN), lambda r, s, _t: observed.append((r, s)), Metrics.label)

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


# -- the real app on 127.0.0.1: connections, the access log, HEAD, inline tasks (issue 36) ----


def _connect(served: Served) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    s.settimeout(10)
    return s


def _read_until_closed(s: socket.socket, limit: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when that was;
    raises TimeoutError if it is still open after `limit` seconds."""
    t0 = time.monotonic()
    s.settimeout(limit)
    got = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            # Closed with bytes of ours unread (a client still dripping its head): the
            # kernel answers RST, not FIN. What arrived before it is still read above.
            break
        if not chunk:
            break
        got += chunk
        s.settimeout(max(0.01, limit - (time.monotonic() - t0)))
    return got, time.monotonic() - t0


def _is_open(s: socket.socket) -> bool:
    """Whether the server still holds the connection (what it sent before closing is read
    and dropped)."""
    s.setblocking(False)
    try:
        while s.recv(65536):
            pass
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


def _dropped(served: Served, reason: str) -> float:
    text = served.service.metrics.text().decode()
    line = f'assay_serve_connections_dropped_total{{reason="{reason}"}} '
    found = [ln for ln in text.splitlines() if ln.startswith(line)]
    return float(found[0].split()[-1]) if found else 0.0


def test_a_half_sent_head_is_closed_at_the_head_timeout(tmp_path: Path) -> None:
    """uvicorn times nothing out while a head arrives (its #157): a client sending half a head,
    or dripping it a byte at a time, held the connection for good."""
    with serving(tmp_path, head_timeout=1.0) as served:
        half = _connect(served)
        half.sendall(b"POST /v1/grade HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
        drip = _connect(served)
        silent = _connect(served)

        def dripping() -> None:
            with contextlib.suppress(OSError):
                for b in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 100:
                    drip.send(bytes([b]))
                    time.sleep(0.1)

        threading.Thread(target=dripping, daemon=True).start()
        said, after = _read_until_closed(half, 5)
        assert said.startswith(b"HTTP/1.1 408 ") and 0.9 < after < 3, (said, after)
        said, after = _read_until_closed(drip, 5)
        assert said.startswith(b"HTTP/1.1 408 ") and after < 3, (said, after)
        said, after = _read_until_closed(silent, 5)
        assert said == b"" and after < 3  # nothing was asked: closed without an answer
        assert _dropped(served, "head-timeout") == 3
        # A whole request on a kept-alive connection, then half of the next one: the same.
        ok = _connect(served)
        ok.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            first += ok.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ")
        ok.sendall(b"GET /health HTTP/1.1\r\n")
        said, after = _read_until_closed(ok, 5)
        assert said.startswith(b"HTTP/1.1 408 ") and after < 3


def test_many_half_sent_heads_do_not_starve_a_normal_request(tmp_path: Path) -> None:
    """Past the connection cap, each new connection closes the oldest one still waiting for
    its head: a flood of half-sent heads (here 200 against a cap of 32, with a head timeout
    long enough not to help) never keeps an honest request out, and never holds more than
    the cap of the server's descriptors."""
    with serving(tmp_path, head_timeout=60, max_connections=32) as served:
        flood = []
        for _ in range(200):
            s = _connect(served)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            flood.append(s)
        time.sleep(0.5)
        t0 = time.monotonic()
        r = requests.get(f"{served.url}/v1/tasks", timeout=10)
        assert r.status_code == 200 and time.monotonic() - t0 < 5
        body = {"input_output": {"inputs": ["1\n"], "outputs": ["1\n"]}, "code": "PASS"}
        assert requests.post(f"{served.url}/v1/grade", json=body, timeout=10).json()["status"] == (
            "passed"
        )
        time.sleep(0.5)
        still = sum(_is_open(s) for s in flood)
        assert still <= 32, still
        assert _dropped(served, "shed") >= 200 - 32
        for s in flood:
            s.close()


def test_past_the_cap_with_every_connection_busy_a_new_one_is_refused(tmp_path: Path) -> None:
    with serving(tmp_path, max_connections=3, workers=3) as served:
        answers: list[int] = []
        body = {"input_output": {"inputs": ["1\n"], "outputs": ["1\n"]}, "code": "BLOCK PASS"}

        def busy() -> None:
            r = requests.post(f"{served.url}/v1/grade", json=body, timeout=30)
            answers.append(r.status_code)

        threads = [threading.Thread(target=busy) for _ in range(3)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while len(served.grader.graded) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(served.grader.graded) == 3
        extra = _connect(served)
        said, _ = _read_until_closed(extra, 5)
        assert said.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in said
        served.grader.release.set()
        for t in threads:
            t.join(30)
        assert answers == [200, 200, 200]
        assert _dropped(served, "refused") == 1


def test_a_body_cannot_hold_a_connection(tmp_path: Path) -> None:
    """A body that stops halfway is cut at the body timeout; and a body answered early (401
    before it is read) must end, with the next head, within the head timeout."""
    with serving(tmp_path, head_timeout=1.0, body_timeout=1.0) as served:
        stuck = _connect(served)
        stuck.sendall(
            f"POST /{served.token}/v1/grade HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
            "\r\n{".encode()
        )
        said, after = _read_until_closed(stuck, 5)
        assert said == b"" and 0.9 < after < 3, (said, after)
        assert _dropped(served, "body-timeout") == 1

        early = _connect(served)
        early.sendall(b"POST /v1/grade HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
        assert early.recv(65536).startswith(b"HTTP/1.1 401 ")

        def dripping() -> None:
            with contextlib.suppress(OSError):
                for _ in range(100):
                    early.send(b"x")
                    time.sleep(0.1)

        threading.Thread(target=dripping, daemon=True).start()
        said, after = _read_until_closed(early, 5)
        assert after < 3, after
        assert _dropped(served, "head-timeout") == 1


def test_head_health_is_200_with_no_body(tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        s = _connect(served)
        s.sendall(b"HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        said, _ = _read_until_closed(s, 5)
        head, _, body = said.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and body == b"", said
        r = requests.head(f"{served.base}/health", timeout=10)
        assert r.status_code == 200 and r.content == b""
        assert requests.get(f"{served.base}/health", timeout=10).json() == {"status": "ok"}
        # Open to HEAD as to GET, and nothing more: another route still needs the token.
        assert requests.head(f"{served.base}/metrics", timeout=10).status_code == 401


def test_no_form_of_the_token_reaches_the_access_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token = "Tk7-" + "q" * 12 + "_z9.Lm~Wv"
    quoted = "".join(f"%{b:02X}" for b in token.encode())
    with caplog.at_level(logging.INFO, logger="assay.serve"), serving(tmp_path, token) as served:
        base = served.base
        paths = [
            f"/{token}/{token}/run_code",  # doubled
            f"/{token}/{quoted}/v1/tasks",  # doubled, the second percent-encoded
            f"/{quoted}/{token}/v1/tasks",  # the first percent-encoded (decoded, it admits)
            f"/{token}/v1/grade/{token}",  # after the route
            f"/{token}/v1/{token}/tasks",  # inside it
            f"/{token}x/v1/tasks",  # a near miss: refused
            f"/x/{token}/v1/tasks",  # in the second place only: refused
            f"/{token}/v1/tasks?t={token}",
        ]
        statuses = [requests.get(base + p, timeout=10).status_code for p in paths]
        s = _connect(served)  # the token as the method
        s.sendall(f"{token} /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        _read_until_closed(s, 5)
        metrics = served.service.metrics.text().decode()
    assert statuses == [404, 404, 404, 404, 404, 401, 401, 200], statuses
    logged = caplog.text
    assert "GET /v1/tasks 200" in logged and "GET other 404" in logged  # the log is written
    for secret in (token, quoted, quoted.lower(), token[:8], token[-8:]):
        assert secret not in logged and secret not in metrics, secret


def _tree(root: Path) -> tuple[int, int]:
    """(directories, bytes allocated) under `root`."""
    dirs = used = 0
    for here, ds, fs in os.walk(root):
        dirs += len(ds)
        for name in ds + fs:
            used += os.lstat(os.path.join(here, name)).st_blocks * 512
    return dirs, used


def test_a_refused_request_leaves_no_task_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each refusal after the task could be made (a language the task does not take: 422; an
    infrastructure error), or before (a body over the cap: 413; a full queue: 429; a row that
    is no test set: 422), leaves nothing under the server's temporary directory; a graded
    request's task stays, within the cache's bound."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    big = {"inputs": [f"{i} " + "x" * 200_000 + "\n" for i in range(5)], "outputs": ["1\n"] * 5}
    with serving(tmp_path, workers=1, queue=0, max_body_bytes=4 << 20) as served:
        [inline_root] = temp.iterdir()

        def grade(body: dict[str, Any]) -> requests.Response:
            return requests.post(f"{served.url}/v1/grade", json=body, timeout=30)

        for i in range(20):
            row = dict(big, outputs=[f"{i}\n"] * 5)
            r = grade({"input_output": row, "code": "PASS", "language": "cobol"})
            assert r.status_code == 422 and r.json()["status"] == "invalid"
        assert _tree(inline_root) == (0, 0)
        r = grade({"input_output": dict(big, outputs=["9\n"] * 5), "code": "INFRA"})
        assert r.json()["status"] == "infra_error" and _tree(inline_root) == (0, 0)
        r = grade({"input_output": {"inputs": ["1\n"], "outputs": []}, "code": "PASS"})
        assert r.status_code == 422 and _tree(inline_root) == (0, 0)
        r = grade({"input_output": {"inputs": ["x" * (5 << 20)], "outputs": ["1\n"]}, "code": "x"})
        assert r.status_code == 413 and _tree(inline_root) == (0, 0)
        # A full queue: one grading holds the only worker, the next request gets 429.
        before = len(served.grader.graded)
        held = threading.Thread(target=grade, args=({"input_output": big, "code": "BLOCK"},))
        held.start()
        deadline = time.monotonic() + 10
        while len(served.grader.graded) == before and time.monotonic() < deadline:
            time.sleep(0.02)
        r = grade({"input_output": dict(big, outputs=["8\n"] * 5), "code": "PASS"})
        assert r.status_code == 429
        served.grader.release.set()
        held.join(30)
        dirs, used = _tree(inline_root)
        assert dirs > 0 and used <= served.service.inline.max_bytes  # the one graded row
        assert len(os.listdir(inline_root)) == 1
    assert list(temp.iterdir()) == []


def test_the_inline_cache_holds_its_bytes_on_the_server(tmp_path: Path) -> None:
    cap = 1 << 20
    with serving(tmp_path, inline_cache_bytes=cap) as served:
        for i in range(12):
            row = {"inputs": [f"{i} " + "x" * 200_000 + "\n"], "outputs": ["1\n"]}
            body = {"input_output": row, "code": "PASS"}
            assert requests.post(f"{served.url}/v1/grade", json=body, timeout=30).ok
            _, used = _tree(served.service.inline._root)
            assert used <= cap, (i, used)
        assert 0 < served.service.inline.bytes <= cap


def test_the_connection_cap_leaves_descriptors_for_the_grader(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from assay._internal.serve import run

    for soft, want in ((1 << 20, 1024), (resource.RLIM_INFINITY, 1024), (1024, 768), (100, 16)):
        monkeypatch.setattr(resource, "getrlimit", lambda _r, s=soft: (s, resource.RLIM_INFINITY))
        assert run.connection_cap(1024) == want, soft
    assert "at most 16 connections (not 1024)" in caplog.text


# -- the run routes' tamper signals -----------------------------------------------------------


def test_the_run_routes_carry_the_firewalls_tamper_signal(tmp_path: Path) -> None:
    """/run_code and Piston's execute have no judge: their only tamper signal is a refusal by
    the firewall of a tamper family (a link), never a limit's (a file over its size). It rides
    in the `assay` object, which SandboxFusion's own client model ignores, and in Piston's 400
    beside its `message`."""
    from sandbox_fusion import RunCodeResponse, RunStatus

    from assay._internal.sandbox.execute import Execution, Stage

    ran = Stage("finished", 0, None, b"1\n", b"", 0.01, None)
    outcomes = {"LINK": "firewall:link", "BIG": "firewall:file-size"}

    def run(req: Any) -> Execution:
        refused = next((v for k, v in outcomes.items() if k in req.code), None)
        return Execution("g-run-1", None, None if refused else ran, refused)

    with serving(tmp_path) as s:
        s.service.languages = {"python3": "base"}
        s.service.versions = {"python3": "3.11.2"}
        s.service.run = run  # type: ignore[method-assign]

        def run_code(code: str) -> dict[str, Any]:
            body = {"code": code, "language": "python"}
            r = requests.post(f"{s.url}/run_code", json=body, timeout=30)
            assert r.status_code == 200
            return r.json()  # type: ignore[no-any-return]

        link, big, honest = run_code("LINK"), run_code("BIG"), run_code("print(1)")
        assert (link["status"], link["assay"]) == (
            "Failed", {"grading_id": "g-run-1", "limit": None, "tamper": ["firewall:link"]}
        )  # fmt: skip
        assert (big["status"], big["assay"]["tamper"]) == ("Failed", [])
        assert (honest["status"], honest["assay"]["tamper"]) == ("Success", [])
        parsed = RunCodeResponse.parse_obj(link)
        assert parsed.status == RunStatus.Failed and parsed.run_result is None

        def execute(code: str) -> requests.Response:
            body = {"language": "python", "version": "*", "files": [{"content": code}]}
            return requests.post(f"{s.url}/api/v2/execute", json=body, timeout=30)

        refused = execute("LINK")
        assert refused.status_code == 400 and "firewall:link" in refused.json()["message"]
        assert refused.json()["assay"] == {
            "grading_id": "g-run-1", "refused": "firewall:link", "tamper": ["firewall:link"]
        }  # fmt: skip
        assert execute("BIG").json()["assay"]["tamper"] == []
        ok = execute("print(1)")
        assert ok.status_code == 200 and ok.json()["run"]["stdout"] == "1\n"
        assert ok.json()["assay"]["tamper"] == []

        metrics = requests.get(f"{s.url}/metrics", timeout=10).text
        for route in ("/run_code", "/api/v2/execute"):
            assert f'assay_serve_tampered_total{{route="{route}"}} 1.0' in metrics, metrics


def test_the_native_routes_count_tampered_verdicts(tmp_path: Path) -> None:
    with serving(tmp_path) as s:
        rows = [{"input_output": {"inputs": ["1\n"], "outputs": ["1\n"]}, "code": c}
                for c in ("TAMPER", "WRONG", "PASS")]  # fmt: skip
        one = requests.post(f"{s.url}/v1/grade", json=rows[0], timeout=30).json()
        assert one["tamper"] == ["junit:skipped"]
        batch = requests.post(f"{s.url}/v1/grade/batch", json={"requests": rows}, timeout=30)
        assert [r["tamper"] for r in batch.json()["results"]] == [["junit:skipped"], [], []]
        metrics = requests.get(f"{s.url}/metrics", timeout=10).text
        assert 'assay_serve_tampered_total{route="/v1/grade"} 1.0' in metrics
        assert 'assay_serve_tampered_total{route="/v1/grade/batch"} 1.0' in metrics
