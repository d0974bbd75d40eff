"""The signing key never enters a container: every container of real gradings (agent, judge,
candidate; T3 and T2) is scanned for the key's bytes and path just before it is removed."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner
from e2e import EXAMPLES
from helpers.keyscan import key_needles, scan_container_for_secret

from assay._internal.runtime import engine
from assay._internal.runtime.docker import DockerRuntime
from assay.cli import main

pytestmark = pytest.mark.docker


class ScanningRuntime(DockerRuntime):
    """A real Docker runtime that scans each container for the needles before removing it."""

    needles: ClassVar[list[bytes]] = []
    findings: ClassVar[list[str]] = []
    scanned: ClassVar[list[str]] = []
    roles: ClassVar[list[str]] = []

    def remove(self, cid: str) -> None:
        if cid not in self.scanned:
            container = self._client.containers.get(cid)
            role = container.labels.get("assay.role", "?")
            self.scanned.append(cid)
            ScanningRuntime.roles.append(role)
            self.findings.extend(
                f"{role}: {f}" for f in scan_container_for_secret(container, self.needles)
            )
        super().remove(cid)


ADD = "printf 'def add(a, b):\\n    return a + b\\n' > solution.py"


@pytest.mark.parametrize(
    ("task", "agent", "roles"),
    [
        ("add", ADD, {"agent", "judge", "candidate"}),
        # T2 with declared tests and no truth generator needs no prep container.
        ("add-pytest", ADD, {"agent", "candidate"}),
        (
            "canary-pytest",
            "echo 'def solve(x): return 0' > solution.py",
            {"agent", "judge", "candidate"},
        ),
        ("csv-sum", "cp /task/README.md notes.md", {"agent", "judge", "candidate"}),
    ],
)
def test_key_never_enters_any_container(
    task: str,
    agent: str,
    roles: set[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    base_image: str,
) -> None:
    key = tmp_path / "keys" / "signing.key"
    ScanningRuntime.findings, ScanningRuntime.scanned, ScanningRuntime.roles = [], [], []
    # The key exists before the grading starts, so anything that leaked it could be found.
    from assay._internal.signing.keys import ensure_signing_key

    ensure_signing_key(key)
    ScanningRuntime.needles = key_needles(key)
    monkeypatch.setattr(engine, "DockerRuntime", ScanningRuntime)
    result = CliRunner().invoke(
        main,
        [
            "grade",
            str(EXAMPLES / task),
            "--agent-cmd",
            agent,
            "--key",
            str(key),
            "--base-image",
            base_image,
            "--out",
            str(tmp_path / "v.json"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    assert (tmp_path / "v.json").stat().st_size > 0
    assert set(ScanningRuntime.roles) == roles, ScanningRuntime.roles
    assert ScanningRuntime.findings == []


def test_scanner_would_see_a_leak(tmp_path: Path, base_image: str) -> None:
    # Control: the same scan on a container that was handed the key path does find it.
    from assay._internal.runtime import ContainerSpec, GradingScope
    from assay._internal.signing.keys import ensure_signing_key

    key = tmp_path / "signing.key"
    ensure_signing_key(key)
    rt = ScanningRuntime()
    ScanningRuntime.findings, ScanningRuntime.scanned, ScanningRuntime.roles = [], [], []
    ScanningRuntime.needles = key_needles(key)
    spec = ContainerSpec(
        image=base_image, grading_id="keyscan-control", role="leaky", env={"LEAK": str(key)}
    )
    with GradingScope(rt, "keyscan-control") as scope:
        scope.container(spec)
    assert ScanningRuntime.findings, "the scanner missed a planted leak"
