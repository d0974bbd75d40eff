"""A container the engine will not act on (a runtime shim that stopped answering, seen with
Debian's gVisor under load) fails its own grading; it is not mistaken for a lost engine, which
would stop a whole batch."""

from __future__ import annotations

from typing import Any

import pytest
import requests.exceptions

from assay._internal.runtime.base import ContainerStuckError
from assay._internal.runtime.docker import DockerRuntime
from assay.errors import EngineUnavailableError


class _Api:
    """The few engine calls `remove` makes; `kill` never answers in time."""

    def __init__(self, engine_answers: bool) -> None:
        self.engine_answers = engine_answers
        self.calls: list[str] = []

    def ping(self) -> bool:
        self.calls.append("ping")
        if not self.engine_answers:
            raise requests.exceptions.ConnectionError("refused")
        return True

    def kill(self, cid: str) -> None:
        self.calls.append("kill")
        raise requests.exceptions.ReadTimeout("read timed out")

    def inspect_container(self, cid: str) -> dict[str, Any]:
        self.calls.append("inspect")
        raise requests.exceptions.ReadTimeout("read timed out")

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"remove called {name} after the engine timed out")


class _Client:
    def __init__(self, api: _Api) -> None:
        self.api = api


@pytest.mark.parametrize("engine_answers", [True, False])
def test_a_timed_out_call_is_a_stuck_container_only_while_the_engine_answers(
    engine_answers: bool,
) -> None:
    api = _Api(engine_answers)
    rt = DockerRuntime(client=_Client(api))
    with pytest.raises(EngineUnavailableError if not engine_answers else ContainerStuckError):
        rt.remove("c" * 64)
    assert api.calls == ["kill", "ping"]  # no waiting out more timeouts on the same container
    with pytest.raises(ContainerStuckError) as exc:
        DockerRuntime(client=_Client(_Api(True))).oom_killed("c" * 64)
    assert exc.value.fix and "restart" in exc.value.fix
