"""Issue 36, item 2: what an agent can leave in its workspace, read out by each backend's archive
(the runc backend's own reader, Docker's engine) and judged by the firewall: every property
ends as the same verdict on both, a named failure or a pass, and never as no verdict. The audit
that lists these is in docs/security.md, "Errors"."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e import EXAMPLES

import assay

pytestmark = pytest.mark.docker

SOLUTION = "printf 'def add(a, b):\\n    return a + b\\n' > solution.py; "
PY = 'python3 -c "{}"'
SOCKET = "import socket; socket.socket(socket.AF_UNIX).bind('{}')"

CASES: dict[str, tuple[str, list[str]]] = {
    "non-utf8-name": (SOLUTION + PY.format("open(b'caf\\xe9.txt', 'w')"), ["firewall:encoding"]),
    "control-char": (SOLUTION + "touch \"$(printf 'a\\nb')\"", ["firewall:control-char"]),
    "long-path": (
        SOLUTION
        + PY.format("import os\nfor _ in range(6):\n    os.mkdir('n' * 255); os.chdir('n' * 255)"),
        ["firewall:path-length"],
    ),
    "20000-entries": (
        SOLUTION + PY.format("for i in range(20000): open('e%d' % i, 'w').close()"),
        ["firewall:entry-count"],
    ),
    "hard-link": (SOLUTION + "ln solution.py other.py", ["firewall:link"]),
    "fifo-artifact": ("mkfifo solution.py", ["firewall:fifo"]),
    "socket-artifact": (PY.format(SOCKET.format("solution.py")), ["candidate:crash"]),
    "sparse-10g": (SOLUTION + "truncate -s 10G big", ["limit:artifact-bytes"]),
    # Left beside the artifact, none of these changes the verdict: read (as root), skipped,
    # dropped or stripped.
    "harmless": (
        SOLUTION
        + "chmod 000 solution.py; mkdir d; echo x > d/f; chmod 000 d; mkfifo f; "
        + PY.format(SOCKET.format("sock"))
        + "; touch -d @-100000 d; touch -d @99999999999 f; "
        + PY.format("import os; os.setxattr('sock', 'user.x', b'y' * 1000)")
        + " 2>/dev/null; true",
        [],
    ),
}


@pytest.fixture(scope="module", params=["runc", "docker"])
def grader(request: pytest.FixtureRequest) -> Iterator[assay.Grader]:
    with assay.Grader(oci_runtime=request.param) as g:
        yield g


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_workspace_property_is_one_verdict_on_both_backends(
    grader: assay.Grader, case: str
) -> None:
    command, reasons = CASES[case]
    verdict = grader.grade(EXAMPLES / "add", assay.Agent(command)).verdict
    assert list(verdict.reason_codes) == reasons
    assert verdict.passed is (reasons == [])
