"""`assay serve` for real: the CLI's process on 127.0.0.1, the runc backend, and the clients
RL trainers use unchanged: the `sandbox-fusion` package, verl's own SandboxFusion reward code,
TRL's and verl's reward-function calls through `assay.integrations`, and plain HTTP.

One server serves the module (starting one costs seconds); it is stopped with SIGTERM at the
end, and `running_server` then asserts it exited 0 and left no container and no temp file.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
import sandbox_fusion as sf
from e2e import EXAMPLES
from helpers.serve import Server, running_server
from helpers.verl_reward import verl_sandbox_fusion

import assay

# One server for the module: under xdist (--dist loadgroup) its tests share one worker.
pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("serve")]

SORT = EXAMPLES / "stdio-sort"
ADD_PYTEST = EXAMPLES / "add-pytest"
APPS_IO = {"inputs": ["1 2\n", "5 7\n"], "outputs": ["3\n", "12\n"]}
ADD_OK = "a, b = map(int, input().split())\nprint(a + b)\n"
ADD_WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve")
    tasks = tmp / "tasks"
    for example in (SORT, ADD_PYTEST):
        shutil.copytree(example, tasks / example.name)
    args = ("--tasks", str(tasks), "--workers", "2", "--max-body-mb", "1", "--head-timeout", "2")
    with running_server(tmp, *args) as s:
        yield s


def _post(server: Server, route: str, body: Any, **kw: Any) -> requests.Response:
    return requests.post(f"{server.url}{route}", json=body, timeout=120, **kw)


def _solution(which: str) -> str:
    return (SORT / "solutions" / which / "main.py").read_text()


# -- authentication and caps ------------------------------------------------------------------


def test_a_request_without_the_token_is_refused_and_health_is_open(server: Server) -> None:
    body = {"code": "print(1)", "language": "python"}
    assert requests.post(f"{server.base}/run_code", json=body, timeout=10).status_code == 401
    wrong = requests.post(f"{server.base}/{'x' * 32}/run_code", json=body, timeout=10)
    assert wrong.status_code == 401
    bad_bearer = {"Authorization": "Bearer " + "y" * 32}
    r = requests.post(f"{server.base}/run_code", json=body, headers=bad_bearer, timeout=10)
    assert r.status_code == 401
    assert requests.get(f"{server.base}/metrics", timeout=10).status_code == 401
    assert requests.get(f"{server.base}/health", timeout=10).json()["status"] == "ok"
    # The bearer header works as well as the path segment.
    ok = requests.post(f"{server.base}/run_code", json=body, headers=server.auth, timeout=60)
    assert ok.status_code == 200 and ok.json()["run_result"]["stdout"] == "1\n"
    assert server.token not in server.log_text()


def test_a_body_over_the_cap_is_refused_before_it_is_read(server: Server) -> None:
    import socket

    host, port = server.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            f"POST /{server.token}/run_code HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            f"\r\nContent-Length: {1 << 30}\r\n\r\n".encode()
        )
        # Not one byte of the promised gigabyte is sent: the answer comes anyway.
        head = s.recv(4096).decode()
    assert head.startswith("HTTP/1.1 413"), head
    big = {"code": "print(1)#" + "x" * (2 << 20), "language": "python"}
    assert _post(server, "/run_code", big).status_code == 413


def test_hostile_bodies_are_refused_as_requests_not_crashes(server: Server) -> None:
    h = {"Content-Type": "application/json", **server.auth}
    deep = (
        b'{"code": "print(1)", "language": "python", "stdin": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}"
    )
    bodies = [
        deep,
        b'{"code": "print(1)", "code": "print(2)", "language": "python"}',  # a duplicate key
        b'{"code": "print(1)", "language": "python", "run_timeout": NaN}',
        b'{"code": "print(1)", "language": "python", "run_timeout": 1e999}',
        b"\xff\xfe not utf-8",
        b"[]",
    ]
    for route in ("/run_code", "/v1/grade", "/v1/grade/batch"):
        for body in bodies:
            r = requests.post(f"{server.base}{route}", data=body, headers=h, timeout=30)
            assert r.status_code == 422, (route, body[:60], r.status_code, r.text[:200])
            assert "detail" in r.json()
    piston = requests.post(f"{server.url}/api/v2/execute", data=deep, headers=h, timeout=30)
    assert piston.status_code == 400 and "message" in piston.json()
    assert requests.get(f"{server.base}/health", timeout=10).json()["status"] == "ok"


# -- native routes ----------------------------------------------------------------------------


def test_native_grade_of_a_loaded_task_is_signed_and_verifies(
    server: Server, tmp_path: Path
) -> None:
    assert requests.get(f"{server.url}/v1/tasks", timeout=10).json() == {
        "tasks": ["add-pytest", "stdio-sort"]
    }
    good = _post(server, "/v1/grade", {"task": "stdio-sort", "code": _solution("correct")}).json()
    assert good["status"] == "passed" and good["score"] == 1.0 == good["reward"]
    bad = _post(
        server, "/v1/grade", {"task": "stdio-sort", "files": {"main.py": _solution("wrong")}}
    )
    assert bad.json()["status"] == "failed" and bad.json()["score"] < 1.0
    key = tmp_path / "key.pub"
    key.write_text(requests.get(f"{server.url}/v1/key", timeout=10).text)
    verdict = assay.verify(good["envelope"].encode(), key)
    assert verdict.passed and verdict.grading_id == good["grading_id"]


def test_native_inline_tasks_from_apps_and_verl_rows(server: Server) -> None:
    ok = _post(server, "/v1/grade", {"input_output": APPS_IO, "code": ADD_OK}).json()
    assert ok["status"] == "passed", ok
    wrong = _post(server, "/v1/grade", {"input_output": json.dumps(APPS_IO), "code": ADD_WRONG})
    assert wrong.json()["status"] == "failed" and wrong.json()["score"] == 0.0
    verl_gt = {"inputs": ["1\n2", "3\n4"], "outputs": ["3", "7"], "fn_name": "add"}
    fn = _post(
        server, "/v1/grade", {"ground_truth": verl_gt, "code": "def add(a, b):\n    return a + b\n"}
    )
    assert fn.json()["status"] == "passed", fn.json()
    # The expected outputs never reach the candidate: a program printing its whole view of the
    # filesystem's test data finds nothing to copy.
    peek = "import os\nprint(sorted(os.listdir('/')))\nprint(os.listdir('.'))\n"
    assert (
        _post(server, "/v1/grade", {"input_output": APPS_IO, "code": peek}).json()["status"]
        == "failed"
    )


def test_native_batch_answers_every_item_and_tells_invalid_apart(server: Server) -> None:
    items = [
        {"input_output": APPS_IO, "code": ADD_OK},
        {"input_output": APPS_IO, "code": ADD_WRONG},
        {"task": "no-such-task", "code": "print(1)"},
        {"input_output": {"inputs": [], "outputs": []}, "code": "print(1)"},
        {"input_output": APPS_IO, "code": "print(1)", "language": "cobol"},
    ]
    r = _post(server, "/v1/grade/batch", {"requests": items})
    assert r.status_code == 200
    got = [(x["status"], x["score"]) for x in r.json()["results"]]
    assert got == [("passed", 1.0), ("failed", 0.0), ("invalid", None), ("invalid", None),
                   ("invalid", None)]  # fmt: skip
    assert all(x["error"] for x in r.json()["results"][2:])
    assert _post(server, "/v1/grade", {"code": "x"}).status_code == 422
    assert _post(server, "/v1/grade", items[2]).status_code == 422


def test_no_request_reaches_a_host_path(server: Server) -> None:
    for name in ("../../etc/passwd", "/etc/passwd", str(SORT), "stdio-sort/../stdio-sort"):
        r = _post(server, "/v1/grade", {"task": name, "code": "print(1)"})
        assert r.status_code == 422 and r.json()["status"] == "invalid", name
    for name in ("../main.py", "/main.py", "a/../../main.py"):
        got = _post(server, "/v1/grade", {"task": "stdio-sort", "files": {name: "print(1)"}}).json()
        assert got["status"] == "failed", (name, got)
        assert any(c.startswith("firewall:") for c in got["reason_codes"]), (name, got)
    # The program sees its container, not the host: this checkout is not there.
    probe = f"import os\nprint(os.path.exists({str(SORT)!r}))"
    out = _post(server, "/run_code", {"code": probe, "language": "python"}).json()
    assert out["run_result"]["stdout"] == "False\n"


# -- SandboxFusion: the real client and verl's reward code -----------------------------------


def test_the_sandbox_fusion_client_runs_code(server: Server) -> None:
    def run(**kw: Any) -> Any:
        return sf.run_code(sf.RunCodeRequest(**kw), endpoint=server.url, max_attempts=1)

    hello = run(code="import sys\nprint(input()[::-1])\nprint('e', file=sys.stderr)",
                language="python", stdin="abc\n")  # fmt: skip
    assert hello.status == sf.RunStatus.Success
    assert (hello.run_result.stdout, hello.run_result.stderr) == ("cba\n", "e\n")
    assert hello.run_result.return_code == 0 and hello.compile_result is None
    failing = run(code="raise SystemExit(3)", language="python")
    assert failing.status == sf.RunStatus.Failed and failing.run_result.return_code == 3
    slow = run(code="import time\ntime.sleep(30)", language="python", run_timeout=1)
    assert slow.run_result.status == sf.CommandRunStatus.TimeLimitExceeded
    cpp = run(code="#include <cstdio>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",a*b);}",
              language="cpp", stdin="6 7")  # fmt: skip
    assert cpp.status == sf.RunStatus.Success and cpp.run_result.stdout == "42\n"
    assert cpp.compile_result is not None and cpp.compile_result.return_code == 0
    broken = run(code="int main( {", language="cpp")
    assert broken.status == sf.RunStatus.Failed and broken.run_result is None
    assert broken.compile_result.return_code != 0 and "error" in broken.compile_result.stderr
    data = base64.b64encode(b"from a file\n").decode()
    files = run(code="print(open('data.txt').read(), end='')", language="python",
                files={"data.txt": data})  # fmt: skip
    assert files.run_result.stdout == "from a file\n"


def test_path_traversal_in_files_is_refused_by_the_firewall(server: Server) -> None:
    data = base64.b64encode(b"x").decode()
    rules = {"../escape.txt": "dot-dot", "/etc/cron.d/x": "absolute-path", "a/../../b": "dot-dot"}
    for name, rule in rules.items():
        r = _post(server, "/run_code", {"code": "print(1)", "language": "python",
                                        "files": {name: data}})  # fmt: skip
        body = r.json()
        assert body.get("status") != "Success", (name, body)
        assert body.get("run_result") is None, (name, body)
        # The refusal is a tamper signal, in the `assay` object SandboxFusion's clients ignore.
        assert body["assay"]["tamper"] == [f"firewall:{rule}"], (name, body)
        assert sf.RunCodeResponse.parse_obj(body).status == sf.RunStatus.Failed
    ok = _post(server, "/run_code", {"code": "print(1)", "language": "python"}).json()
    assert ok["assay"]["tamper"] == []


def test_verl_reward_code_scores_through_run_code(server: Server) -> None:
    verl = verl_sandbox_fusion()
    url = f"{server.url}/run_code"
    tests = json.dumps(APPS_IO)
    good = verl.compute_score(url, None, 1024, f"```python\n{ADD_OK}```", tests, continuous=True)
    bad = verl.compute_score(url, None, 1024, f"```python\n{ADD_WRONG}```", tests, continuous=True)
    assert (good[0], bad[0]) == (1.0, 0.0), (good, bad)
    check = verl.utils.check_correctness
    io = {"inputs": ["1 2\n"], "outputs": ["3\n"]}
    assert check(url, io, ADD_OK)[0] == [True]
    assert check(url, io, ADD_WRONG)[0] == [False]
    assert check(url, io, "raise ValueError()")[0] == [-2]
    assert check(url, io, "import time\ntime.sleep(20)", timeout=1)[0] == [-3]
    assert check(url, io, "int main( {", language="cpp")[0] == [-4]


# -- Piston -----------------------------------------------------------------------------------


def test_piston_routes(server: Server) -> None:
    rts = requests.get(f"{server.url}/api/v2/runtimes", timeout=10).json()
    assert {r["language"] for r in rts} >= {"python", "c++"} or {r["language"] for r in rts} >= {
        "python3"
    }
    body = {"language": "python", "version": "*", "files": [{"content": "print(input()*2)"}],
            "stdin": "ab"}  # fmt: skip
    out = _post(server, "/api/v2/execute", body).json()
    assert out["run"]["stdout"] == "abab\n" and out["run"]["code"] == 0
    assert out["assay"]["tamper"] == []
    escaping = dict(body, files=[{"content": "print(1)"}, {"name": "../x", "content": "y"}])
    refused = _post(server, "/api/v2/execute", escaping)
    assert refused.status_code == 400 and "firewall:dot-dot" in refused.json()["message"]
    assert refused.json()["assay"]["tamper"] == ["firewall:dot-dot"]


# -- hostile programs -------------------------------------------------------------------------

HOSTILE = {
    "flood": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
    "fork": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
    "disk": "f = open('/tmp/fill', 'wb')\nwhile True:\n    f.write(b'0' * (1 << 20))\n",
    "sleep": "import time\ntime.sleep(60)\n",
    "memory": "x = []\nwhile True:\n    x.append(bytearray(1 << 24))\n",
}


def test_hostile_programs_get_their_own_failures_and_others_are_served(server: Server) -> None:
    answers: dict[str, Any] = {}

    def go(name: str, code: str) -> None:
        answers[name] = _post(server, "/v1/grade", {"input_output": APPS_IO, "code": code}).json()

    threads = [threading.Thread(target=go, args=kv) for kv in HOSTILE.items()]
    for t in threads:
        t.start()
    time.sleep(0.5)
    # Meanwhile an honest request is answered correctly.
    assert (
        _post(server, "/v1/grade", {"input_output": APPS_IO, "code": ADD_OK}).json()["status"]
        == "passed"
    )
    for t in threads:
        t.join(180)
    assert {k: v["status"] for k, v in answers.items()} == dict.fromkeys(HOSTILE, "failed")
    metrics = requests.get(f"{server.url}/metrics", timeout=10).text
    assert 'assay_serve_outcomes_total{outcome="failed",route="/v1/grade"}' in metrics


def test_sigterm_lets_the_running_request_finish(tmp_path: Path) -> None:
    with running_server(tmp_path, "--workers", "1") as s:
        got: dict[str, Any] = {}

        def slow() -> None:
            code = "import time\ntime.sleep(2)\nprint('done')"
            got["r"] = _post(s, "/run_code", {"code": code, "language": "python"}).json()

        t = threading.Thread(target=slow)
        t.start()
        time.sleep(1.0)
        s.proc.send_signal(15)
        t.join(60)
        assert got["r"]["status"] == "Success" and got["r"]["run_result"]["stdout"] == "done\n"
        s.proc.wait(60)


# -- the reward functions for verl and TRL, through the server and in-process -----------------


def _trl_call(fn: Any, completions: list[Any], tests: str) -> list[float | None]:
    """The call GRPOTrainer._calculate_rewards makes (trl 1.10, grpo_trainer.py l.1659)."""
    n = len(completions)
    logged: list[Any] = []
    return fn(  # type: ignore[no-any-return]
        prompts=[[{"role": "user", "content": "add two numbers"}]] * n,
        completions=completions,
        completion_ids=[[1, 2, 3]] * n,
        trainer_state=None,
        log_extra=lambda *a: logged.append(a),
        log_metric=lambda *a: logged.append(a),
        input_output=[tests] * n,
    )


def test_verl_and_trl_rewards_through_the_server(server: Server) -> None:
    from helpers.serve import free_port

    from assay.errors import InfrastructureError
    from assay.integrations import rewards, trl, verl

    backend = rewards.ServerRewards(server.url)
    score = verl.make_compute_score(backend)
    tests = json.dumps(APPS_IO)

    def call(solution: str) -> dict[str, float]:
        # verl's naive reward manager passes these keywords (naive.py l.85-90).
        return score(data_source="apps", solution_str=solution, ground_truth=tests,
                     extra_info={"index": 0}, reward_router_address=None)  # fmt: skip

    keys = {"score": 1.0, "passed": 1.0, "infra_error": 0.0, "no_code": 0.0, "tamper": 0.0}
    assert call(f"Here:\n```python\n{ADD_OK}```") == keys
    assert call(f"```python\n{ADD_WRONG}```") == dict(keys, score=0.0, passed=0.0)
    assert call("no code at all") == dict(keys, score=0.0, passed=0.0, no_code=1.0)

    reward = trl.reward_function(backend)
    chat = [
        [{"role": "assistant", "content": f"```python\n{code}```"}] for code in (ADD_OK, ADD_WRONG)
    ]
    assert _trl_call(reward, [*chat, [{"role": "assistant", "content": "none"}]], tests) == [
        1.0,
        0.0,
        0.0,
    ]
    assert _trl_call(reward, [f"```python\n{ADD_OK}```"], tests) == [1.0]

    # A server nobody answers at: TRL gets None (the row is masked), verl an exception.
    dead = rewards.ServerRewards(f"http://127.0.0.1:{free_port()}/{server.token}", retry_attempts=1)
    assert _trl_call(trl.reward_function(dead), [f"```python\n{ADD_OK}```"], tests) == [None]
    with pytest.raises(InfrastructureError):
        verl.make_compute_score(dead)(data_source="apps", solution_str=f"```python\n{ADD_OK}```",
                                      ground_truth=tests, extra_info={})  # fmt: skip
    report = verl.make_compute_score(dead, on_infra_error="report")
    out = report(data_source="apps", solution_str=f"```python\n{ADD_OK}```", ground_truth=tests)
    assert out == dict(keys, score=0.0, passed=0.0, infra_error=1.0)


def test_rewards_in_process_on_the_engine() -> None:
    from assay.integrations import rewards, verl

    with assay.Grader(oci_runtime="runc", reuse_judges=True) as g:
        local = rewards.LocalRewards(g)
        score = verl.make_compute_score(local)
        tests = {"inputs": ["1\n2"], "outputs": ["3"], "fn_name": "add"}
        good = score(data_source="apps", solution_str="```python\ndef add(a, b):\n    return a + b\n```",
                     ground_truth=tests, extra_info={})  # fmt: skip
        bad = score(data_source="apps", solution_str="```python\ndef add(a, b):\n    return a * b\n```",
                    ground_truth=tests, extra_info={})  # fmt: skip
        assert (good["score"], good["passed"], bad["score"], bad["passed"]) == (1.0, 1.0, 0.0, 0.0)


# A correct solution that also hits its pids limit while pytest imports it: on T2 every test
# passes and the run fails on `limit:pids` (on T3 the runner charges the limit to the case it
# happened in). The server answers score 1.0, reward 0.0; the reward clients used to refuse
# that answer ("reward differs from score") as an infrastructure error, and verl raised.
PIDS_THEN_ADD = """import threading
import time

try:
    for _ in range(4096):
        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
except RuntimeError:
    pass


def add(a, b):
    return a + b
"""


@contextmanager
def replaying(answer: bytes) -> Iterator[str]:
    """A listener on 127.0.0.1 that answers every POST with `answer`, as the server sent it:
    a trainer's row names no loaded task, so the clients get the real server's bytes this way."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    listener = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=listener.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.server_address[1]}"
    finally:
        listener.shutdown()
        listener.server_close()


def test_a_correct_program_failed_by_a_limit_is_a_failed_reward_not_an_infra_error(
    server: Server, tmp_path: Path
) -> None:
    from assay import wire
    from assay.integrations import rewards, trl, verl

    body = {"requests": [{"task": "add-pytest", "files": {"solution.py": PIDS_THEN_ADD}}]}
    real = _post(server, "/v1/grade/batch", body)
    [answer] = wire.read_results(real.content, 1)
    assert isinstance(answer, wire.Answer), answer
    assert (answer.status, answer.score, answer.reward) == ("failed", 1.0, 0.0), real.json()
    assert "limit:pids" in answer.reason_codes and answer.verdict is not None
    assert [c["status"] for c in answer.verdict["cases"]] == ["pass"] * 6

    key = tmp_path / "key.pub"
    key.write_text(requests.get(f"{server.url}/v1/key", timeout=10).text)
    tests = json.dumps(APPS_IO)
    with replaying(real.content) as url:
        backend = rewards.ServerRewards(url, public_key=key)  # the envelope verifies too
        [got] = backend.grade_many([rewards.Item(APPS_IO, "apps", "any code")])
        assert (got.score, got.status, got.reason_codes) == (0.0, "failed", answer.reason_codes)
        # verl in its default mode, which raises on an infrastructure error: no exception.
        out = verl.make_compute_score(backend)(
            data_source="apps", solution_str="```python\nx = 1\n```", ground_truth=tests,
            extra_info={},
        )  # fmt: skip
        assert out == {
            "score": 0.0, "passed": 0.0, "infra_error": 0.0, "no_code": 0.0, "tamper": 0.0
        }  # fmt: skip
        assert _trl_call(trl.reward_function(backend), ["```python\nx = 1\n```"], tests) == [0.0]


# Tampering on the real grader. A function task's candidate is imported by the runner's call.py,
# which hands it the result pipe's descriptor in argv: this module writes bytes no return
# could make ("NaN", past the value encoding) there and exits, the json-nan-comparator attack
# (corpus/) on a task made from a verl row. The strict tier reads it as
# candidate:invalid-output, a tamper signal; the honest wrong answer (a * b) has none.
FORGE_RESULT = """import os
import sys

if len(sys.argv) >= 3 and sys.argv[0].endswith("call.py") and sys.argv[2].isdigit():
    os.write(int(sys.argv[2]), b"NaN")
    os._exit(0)


def add(a, b):
    return a * b
"""
ADD_FN = {"inputs": ["1\n2", "3\n4"], "outputs": ["3", "7"], "fn_name": "add"}
ADD_FN_WRONG = "def add(a, b):\n    return a * b\n"
SKIP_EVERY_TEST = "import unittest\n\n\ndef add(a, b):\n    raise unittest.SkipTest('later')\n"


def test_tamper_signals_and_the_tamper_reward_through_the_real_server(
    server: Server, tmp_path: Path
) -> None:
    from assay import reason_family, wire
    from assay.integrations import rewards, trl, verl

    # The native answer: `tamper` beside `reward`, for a pytest task and a row's function task.
    bodies = [
        {"task": "add-pytest", "files": {"solution.py": SKIP_EVERY_TEST}},
        {"task": "add-pytest", "files": {"solution.py": _pytest_solution("wrong")}},
        {"ground_truth": ADD_FN, "code": FORGE_RESULT},
        {"ground_truth": ADD_FN, "code": ADD_FN_WRONG},
    ]
    raw = _post(server, "/v1/grade/batch", {"requests": bodies})
    answers = wire.read_results(raw.content, len(bodies))
    assert all(isinstance(a, wire.Answer) for a in answers), answers
    got = [(a.status, a.tamper) for a in answers if isinstance(a, wire.Answer)]
    # pytest exits 0 when every test is skipped, which the report (no test passed) contradicts.
    assert got == [
        ("failed", ("junit:skipped", "pytest:exit-code")), ("failed", ()),
        ("failed", ("candidate:invalid-output",)), ("failed", ()),
    ], raw.json()  # fmt: skip
    assert [x["tamper"] for x in raw.json()["results"]] == [list(t) for _, t in got]
    assert all(reason_family(c) == "tamper" for _, t in got for c in t)

    # The clients, through the server, grading the code of completions as trainers hand it.
    key = tmp_path / "key.pub"
    key.write_text(requests.get(f"{server.url}/v1/key", timeout=10).text)
    plain = rewards.ServerRewards(server.url, public_key=key)
    harsh = rewards.ServerRewards(server.url, public_key=key, tamper_reward=-1.0)
    items = [rewards.Item(ADD_FN, "verl", code) for code in (FORGE_RESULT, ADD_FN_WRONG)]
    assert [(r.score, r.tamper) for r in plain.grade_many(items)] == [
        (0.0, ("candidate:invalid-output",)), (0.0, ())
    ]  # fmt: skip
    assert [(r.score, r.status) for r in harsh.grade_many(items)] == [
        (-1.0, "failed"), (0.0, "failed")
    ]  # fmt: skip

    truth = json.dumps(ADD_FN)
    responses = [f"```python\n{FORGE_RESULT}```", f"```python\n{ADD_FN_WRONG}```"]
    score = verl.make_compute_score(plain)
    # verl's naive manager, with `reward_kwargs: {tamper_reward: -1.0}` merged into the call.
    kw = {"data_source": "apps", "ground_truth": truth, "extra_info": {}, "tamper_reward": -1.0}
    out = [score(solution_str=r, **kw) for r in responses]
    assert [(o["score"], o["tamper"]) for o in out] == [(-1.0, 1.0), (0.0, 0.0)]

    reward = trl.reward_function(plain, tests_column="gt", form="verl", tamper_reward=-1.0)
    n = len(responses)
    assert reward(prompts=["add"] * n, completions=responses, completion_ids=[[1]] * n,
                  gt=[truth] * n) == [-1.0, 0.0]  # fmt: skip
    assert trl.reward_function(plain, tests_column="gt", form="verl")(
        completions=responses, gt=[truth] * n
    ) == [0.0, 0.0]


def _pytest_solution(which: str) -> str:
    return (ADD_PYTEST / "solutions" / which / "solution.py").read_text()


def test_the_service_closes_half_sent_heads_answers_head_and_logs_no_token(
    server: Server,
) -> None:
    import socket

    host, port = server.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /v1/grade HTTP/1.1\r\nHost: x\r\nContent-")
        t0 = time.monotonic()
        said = s.recv(4096)
        assert said.startswith(b"HTTP/1.1 408 ") and time.monotonic() - t0 < 8, said
    r = requests.head(f"{server.base}/health", timeout=10)
    assert r.status_code == 200 and r.content == b""
    doubled = requests.get(f"{server.url}/{server.token}/v1/tasks", timeout=10)
    assert doubled.status_code == 404
    # The access log's line is written once the answer has gone: the client can read its 404
    # before the server has logged it (a loaded CI run read the log in between).
    deadline = time.monotonic() + 10
    while "GET other 404" not in (text := server.log_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "GET other 404" in text, text[-2000:]
    assert server.token not in text, [ln for ln in text.splitlines() if server.token in ln]


def test_a_request_refused_with_422_leaves_no_task_files(server: Server) -> None:
    inline = [p for p in (server.log.parent / "server-tmp").iterdir()
              if p.name.startswith("assay-inline-")]  # fmt: skip
    assert len(inline) == 1
    before = sorted(p.name for p in inline[0].iterdir())
    for i in range(5):
        row = {"inputs": [f"{i} " + "x" * 100_000 + "\n"] * 3, "outputs": [f"{i}\n"] * 3}
        r = _post(server, "/v1/grade", {"input_output": row, "code": "print(1)",
                                        "language": "cobol"})  # fmt: skip
        assert r.status_code == 422 and r.json()["status"] == "invalid"
    assert sorted(p.name for p in inline[0].iterdir()) == before


# -- docs/integrations.md's RL examples, run as written ---------------------------------------


def _doc_examples() -> list[str]:
    text = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text()
    section = text[text.index("## RL trainers") :]
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```$", section, re.S | re.M)
    return [textwrap.dedent(code) for _indent, code in blocks]


def test_the_rl_examples_in_the_docs_run_against_the_server(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ASSAY_URL", server.url)
    examples = _doc_examples()
    assert len(examples) == 3
    printed = []
    for i, code in enumerate(examples):
        exec(compile(code, f"docs/integrations.md RL example {i + 1}", "exec"), {"__name__": "doc"})
        printed.append(capsys.readouterr().out.strip())
    assert printed == [
        "[('passed', 1.0), ('failed', 0.5)]",
        "{'score': 1.0, 'passed': 1.0, 'infra_error': 0.0, 'no_code': 0.0, 'tamper': 0.0}",
        "[1.0, 0.0]",
    ]
