"""Session rules that need no engine: which paths are refused, and that a session used outside
its life says so (the engine tests are in test_session_docker.py)."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import pytest

import assay
from assay._internal.api.session import _parts, _resolve
from assay._internal.runtime.fake import FakeRuntime
from assay.errors import UsageError

ADD = Path(__file__).resolve().parents[2] / "examples" / "add"


@pytest.mark.parametrize(
    "path",
    ["", ".", "..", "../x", "a/../../x", "a/..", "/etc/passwd", "/tmp/x", "/workspace",
     "/workspace/../etc/x", "/workspacex/y", "x\0y"],
)  # fmt: skip
def test_paths_outside_the_workspace_are_refused(path: str) -> None:
    with pytest.raises(UsageError):
        _parts(path, "/workspace")


@pytest.mark.parametrize(
    ("path", "parts"),
    [("a", ["a"]), ("./a/b", ["a", "b"]), ("/workspace/a//b/", ["a", "b"]), ("a b", ["a b"])],
)
def test_paths_inside_the_workspace_become_components(path: str, parts: list[str]) -> None:
    assert _parts(path, "/workspace") == parts


def test_paths_are_relative_to_the_tasks_workdir() -> None:
    assert _parts("/app/a/b", "/app") == ["a", "b"]
    with pytest.raises(UsageError):
        _parts("/workspace/a", "/app")


def test_working_directories() -> None:
    assert _resolve(".", "/workspace") == "/workspace"
    assert _resolve("sub/dir", "/workspace") == "/workspace/sub/dir"
    # not a boundary: the command could cd there
    assert _resolve("/usr/bin", "/workspace") == "/usr/bin"
    with pytest.raises(UsageError):
        _resolve("../x", "/workspace")


def test_a_session_outside_its_life_refuses_every_call(tmp_path: Path) -> None:
    rt = FakeRuntime()
    grader = assay.Grader(runtime=rt, image="img", key=tmp_path / "signing.key")
    s = grader.session(ADD)
    with pytest.raises(UsageError, match="was not started"):
        s.exec("true")
    with s:
        assert len(rt.containers) == 1
        with pytest.raises(UsageError, match="already started"):
            s.start()
    assert rt.containers == {} and rt.volumes == set()
    for call in (lambda: s.exec("true"), lambda: s.read_file("a"), lambda: s.write_file("a", "")):
        with pytest.raises(UsageError, match="has ended"):
            call()
    with pytest.raises(UsageError, match="has ended"):
        s.grade()


class _ArchiveFails(FakeRuntime):
    """A file the probe calls readable, whose archive read fails with `error` (after the
    container stopped, with `dies`)."""

    def __init__(self, error: Exception, dies: bool = False) -> None:
        super().__init__(programs={"sh": lambda c, argv, env: (0, b"file\n", b"")})
        self.error = error
        self.dies = dies

    def get_archive(self, cid: str, path: str, sink: BinaryIO, cap: int) -> int:
        if self.dies:
            self.containers[cid].state = "exited"
        raise self.error


def _read_with(error: Exception, tmp_path: Path, dies: bool = False) -> BaseException:
    rt = _ArchiveFails(error, dies)
    grader = assay.Grader(runtime=rt, image="img", key=tmp_path / "k.key")
    with grader.session(ADD) as s, pytest.raises(assay.errors.AssayError) as caught:
        s.read_file("solution.py")
    return caught.value


def test_read_file_over_its_cap_is_too_large(tmp_path: Path) -> None:
    err = _read_with(assay.errors.ArchiveTooLargeError(64), tmp_path)
    assert isinstance(err, UsageError) and "larger than" in str(err)


def test_read_file_names_the_real_cause_of_any_other_failure(tmp_path: Path) -> None:
    """Only the cap is reported as "too large". An engine error in a container that still
    answers is the agent's own commands changing the path between the probe and the read
    (issue 36: a racing `mv` made it an InfrastructureError); in a container that stopped, it
    is no answer at all. Anything unexpected is named as what it was."""
    raced = _read_with(assay.errors.EngineError("no such path"), tmp_path)
    assert isinstance(raced, UsageError) and "changed while it was read" in str(raced)
    gone = _read_with(assay.errors.EngineError("container vanished: c1"), tmp_path, dies=True)
    assert isinstance(gone, assay.errors.InfrastructureError) and "larger" not in str(gone)
    other = _read_with(OSError("engine socket closed"), tmp_path)
    assert isinstance(other, assay.errors.InfrastructureError)
    assert "OSError: engine socket closed" in str(other) and "larger" not in str(other)


class _ExecWontStart(FakeRuntime):
    """runc could not start the probe at all: its error where the probe's answer would be,
    exit 126 (Docker's "OCI runtime exec failed"), with the pids ceiling hit or not."""

    def __init__(self, at_pids_limit: bool) -> None:
        failed = b"OCI runtime exec failed: exec failed: read init-p: connection reset by peer"
        super().__init__(programs={"sh": lambda c, argv, env: (126, failed, b"")})
        self.at_pids_limit = at_pids_limit

    def limit_events(self, cid: str) -> dict[str, int]:
        return {"pids": 3} if self.at_pids_limit else {}


@pytest.mark.parametrize("at_pids_limit", [True, False])
def test_a_probe_that_did_not_run_is_never_read_as_a_kind_of_path(
    at_pids_limit: bool, tmp_path: Path
) -> None:
    """A fork bomb in the session's box made runc's exec fail; its message was read as the
    probe's answer, and `read_file` said "refused (OCI runtime exec failed ... on the path)"."""
    rt = _ExecWontStart(at_pids_limit)
    grader = assay.Grader(runtime=rt, image="img", key=tmp_path / "signing.key")
    said = "at its pids limit" if at_pids_limit else "probe failed \\(exit 126\\)"
    with grader.session(ADD) as s:
        for call in (lambda: s.read_file("solution.py"), lambda: s.write_file("a.py", "")):
            with pytest.raises(UsageError, match=said):
                call()


def test_an_agent_never_collected_leaves_no_decoy_marker_behind(tmp_path: Path) -> None:
    """A strict task's agent container gets a decoy marker, kept until its workspace is
    collected. A session closed without grading, and an agent run the engine failed under,
    never collect: the marker went with the grading all the same (a long-lived `assay serve`
    kept one per such run before)."""
    from assay._internal.tiers.core import intake

    rt = FakeRuntime()
    grader = assay.Grader(runtime=rt, image="img", key=tmp_path / "k.key")
    with grader.session(ADD):
        assert len(intake._AGENT_MARKERS) == 1
    assert intake._AGENT_MARKERS == {}

    class _ExecFails(FakeRuntime):
        def exec(self, *a: object, **k: object) -> object:  # type: ignore[override]
            raise assay.errors.EngineError("the engine went away mid-run")

    rt = _ExecFails()
    grader = assay.Grader(runtime=rt, image="img", key=tmp_path / "k.key")
    with pytest.raises(assay.errors.InfrastructureError):
        grader.grade(ADD, assay.Agent("true"))
    assert intake._AGENT_MARKERS == {}
