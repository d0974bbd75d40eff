"""Inspect AI's own sandbox conformance suite (`inspect_ai.util._sandbox.self_check`) against the
`assay` sandbox, on a real engine. The checks assay fails on purpose are marked xfail(strict) with
the reason: each is a refusal of the confinement (docs/integrations.md).

About two minutes on a loaded 2-core engine, so it runs when asked, not in every CI run: its
file name keeps pytest from collecting it unless it is named,
`.venv/bin/pytest -p no:xdist tests/docker/selfcheck_inspect_docker.py` (rather than a test skipped in
every run). The integration's own tests (test_inspect_docker.py, test_session_docker.py) always
run. Note: the image has no `ps`, so the two timeout-kill checks that grep `ps aux` pass
without seeing the processes; test_session_docker.py checks the same through /proc."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from inspect_ai.util._sandbox.self_check import *  # noqa: F403

import assay
from assay.integrations.inspect_ai import AssaySandbox

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

ADD = Path(__file__).resolve().parents[2] / "examples" / "add"

BY_DESIGN = {
    "test_read_and_write_file_including_directory_absolute": "/tmp is outside /workspace",
    "test_write_text_file_is_directory": "/tmp is outside /workspace",
    "test_write_binary_file_is_directory": "/tmp is outside /workspace",
    "test_cwd_absolute": "writes a file under /tmp, outside /workspace",
    "test_read_file_is_directory": "reads /etc, outside /workspace",
    "test_exec_input_large": "50 MiB of stdin is over the 8 MiB input cap",
    "test_exec_as_user": "every command runs as the agent's unprivileged user",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def _session(
    tmp_path_factory: pytest.TempPathFactory, base_image: str, docker_runtime: object
) -> Iterator[assay.Session]:
    key = tmp_path_factory.mktemp("key") / "signing.key"
    with assay.Grader(image=base_image, key=key) as g, g.session(ADD) as s:
        yield s


@pytest.fixture
def sandbox_env(request: pytest.FixtureRequest, _session: assay.Session) -> AssaySandbox:
    reason = BY_DESIGN.get(request.node.originalname)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    return AssaySandbox(_session)
