"""The driver's side of `grade-many --ray` without a cluster: token policy, address parsing,
and the checks on what a node replies (a node may only answer for the grading it was given)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from assay._internal.batch.journal import submission_digest
from assay._internal.batch.ray_cluster import (
    RayBackend,
    connect,
    expected_digest,
    pack_submission,
    token_configured,
)
from assay._internal.model.diagnostics import CaseDiagnostic, Diagnostics
from assay._internal.model.task import Task, load_task
from assay._internal.model.verdict import CaseResult, ControllerFacts, Verdict, build_verdict
from assay._version import __version__
from assay.errors import ClusterError, InfrastructureError

ADD = Path(__file__).resolve().parents[2] / "examples" / "add"
GID = "g-" + "a" * 16


def _verdict(task: Task, gid: str, passed: bool, digest: str | None) -> Verdict:
    now = datetime.now(UTC)
    facts = ControllerFacts(
        grading_id=gid, task_id=task.id, task_digest=task.digest, tier="t3", runtime="runc",
        submission_digest=digest, started_at=now, ended_at=now,
    )  # fmt: skip
    status = "pass" if passed else "fail"
    cases = [CaseResult(id=f"c{i}", status=status, duration_s=0.0) for i in range(2)]
    return build_verdict(facts, cases, 2, [] if passed else ["compare:mismatch"])


def test_token_auth_is_required_from_the_environment(tmp_path: Path) -> None:
    assert token_configured({}) is None
    assert token_configured({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "x"}) == "RAY_AUTH_TOKEN"
    empty, full = tmp_path / "empty", tmp_path / "token"
    empty.write_text("\n")
    full.write_text("abc\n")
    on = {"RAY_AUTH_MODE": "token"}
    assert token_configured({**on, "RAY_AUTH_TOKEN_PATH": str(empty)}) is None
    assert token_configured({**on, "RAY_AUTH_TOKEN_PATH": str(full)}) == str(full)
    assert token_configured({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "x"}) is None


def test_connect_refuses_without_token_auth_before_touching_the_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ClusterError, match="without token authentication") as err:
        connect("192.0.2.1:6379")  # TEST-NET-1: would hang if it were dialled
    assert err.value.exit_code == 2 and "--ray-insecure-no-auth" in err.value.diagnostics()


@pytest.mark.parametrize("address", ["6379", "host:", ":6379", "host:port", "host:70000"])
def test_a_malformed_address_is_a_cluster_error(address: str) -> None:
    with pytest.raises(ClusterError, match="HOST:PORT"):
        connect(address, insecure_no_auth=True)


def test_the_driver_computes_the_digest_a_node_records(tmp_path: Path) -> None:
    task = load_task(ADD)
    sub = ADD / "solutions" / "correct"
    assert expected_digest(task, pack_submission(task, sub)) == submission_digest(task, sub)
    assert expected_digest(task, pack_submission(task, {"solution.py": "x = 1\n"}))
    with pytest.raises(Exception, match="on Ray a submission"):
        pack_submission(task, 42)


def _reply(v: Verdict, **extra: object) -> dict[str, object]:
    return {"node": "host/abc", "assay_version": __version__, "verdict": v.model_dump_json(),
            **extra}  # fmt: skip


def test_a_node_may_only_answer_for_its_own_grading() -> None:
    task = load_task(ADD)
    backend = RayBackend({task.id: "t3"}, "img")
    digest = "sha256:" + "1" * 64
    good = _verdict(task, GID, True, digest)
    assert backend._judged(_reply(good), task, GID, digest).verdict == good
    cases = {
        "grading id": _verdict(task, "g-" + "b" * 16, True, digest),
        "submission digest": _verdict(task, GID, True, "sha256:" + "2" * 64),
    }
    for what, lie in cases.items():
        with pytest.raises(InfrastructureError, match=what):
            backend._judged(_reply(lie), task, GID, digest)
    # The firewall refuses the bytes sent: no verdict of them may pass.
    with pytest.raises(InfrastructureError, match="submission digest"):
        backend._judged(_reply(_verdict(task, GID, True, None)), task, GID, None)
    failed = backend._judged(_reply(_verdict(task, GID, False, None)), task, GID, None)
    assert not failed.verdict.passed


def test_a_nodes_diagnostics_reach_the_driver_only_for_its_own_grading() -> None:
    task = load_task(ADD)
    backend = RayBackend({task.id: "t3"}, "img")
    v = _verdict(task, GID, False, None)

    def explained(gid: str) -> str:
        case = CaseDiagnostic(id="c1", reason="compare:mismatch", expected="5", actual="6")
        return Diagnostics(grading_id=gid, cases=[case]).to_json().decode()

    kept = backend._judged(_reply(v, diagnostics=explained(GID)), task, GID, None).diagnostics
    assert kept is not None and kept.grading_id == GID and kept.cases[0].actual == "6"
    other = _reply(v, diagnostics=explained("g-" + "c" * 16))
    assert backend._judged(other, task, GID, None).diagnostics is None
    bad = _reply(v, diagnostics="{not json")
    assert backend._judged(bad, task, GID, None).diagnostics is None


def test_a_node_reply_that_is_not_a_valid_verdict_is_no_verdict() -> None:
    task = load_task(ADD)
    backend = RayBackend({task.id: "t3"}, "img")
    v = _verdict(task, GID, True, None)
    text = v.model_dump_json()
    bad = {
        "contradiction": text.replace('"score":1.0', '"score":0.5'),
        "duplicate key": text[:-1] + ',"passed":true}',
        "extra field": text[:-1] + ',"signed_by":"node"}',
    }
    for what, payload in bad.items():
        with pytest.raises(InfrastructureError, match="no valid verdict"):
            backend._judged({**_reply(v), "verdict": payload}, task, GID, None)
        assert what
    with pytest.raises(InfrastructureError, match=r"runs assay 0\.0\.0"):
        backend._judged({**_reply(v), "assay_version": "0.0.0"}, task, GID, None)
    with pytest.raises(InfrastructureError, match=r"on node host/abc: .*image") as err:
        backend._judged(
            {"node": "host/abc", "assay_version": __version__,
             "infra": "base image 'x' is not on this Docker engine", "fix": "docker load"},
            task, GID, None,
        )  # fmt: skip
    assert "on node host/abc: docker load" in err.value.diagnostics()
    assert "(fix, on that node: docker load)" in str(err.value)  # what a batch records


def test_an_agent_job_is_refused_on_ray_before_connecting(tmp_path: Path) -> None:
    import assay

    grader = assay.Grader(key=tmp_path / "signing.key")
    job = assay.Job(str(ADD), assay.Agent("true"), id="a")
    with pytest.raises(assay.errors.UsageError, match="runs locally only"):
        grader.batch([job], ray="192.0.2.1:6379")
