"""The driver's side of a batch on Ray: connect (token authentication or an explicit opt-out),
ship each task directory once through the object store, run each grading as a task of
`ray_node.grade_on_node` on a node advertising `assay_docker`, and check what comes back.

The driver keeps the journal, the key and the signature: a node's reply is data (a verdict
as JSON text) that is validated against the verdict schema and matched against this
grading's id, task digest, tier and submission digest before `run` signs it. A reply
without a verdict is an infrastructure error; a node or worker that died is `NodeLostError`,
which `run` answers with a fresh grading. No Ray option retries a task by itself: a retry
under the same grading id could run twice and count twice.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import socket
import tarfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from assay._version import __version__
from assay.errors import ClusterError, InfrastructureError, NodeLostError, UsageError

from ..firewall.check import Accepted, check
from ..firewall.mapping import write_mapping_tar
from ..model import diagnostics as diag
from ..model.task import Task
from ..model.verdict import Tier
from ..signing.sign import VerificationError, verdict_from_json
from ..tiers.core.intake import firewall_limits
from . import ray_node
from .journal import _Discard

RESOURCE = os.environ.get("ASSAY_RAY_RESOURCE") or "assay_docker"
"""The custom resource a grading node advertises: one unit per grading it runs at once."""
INSECURE_FLAG = "--ray-insecure-no-auth"
_AUTH_HOWTO = (
    "start every node and this driver with RAY_AUTH_MODE=token and the same RAY_AUTH_TOKEN "
    "(or RAY_AUTH_TOKEN_PATH; `ray get-auth-token --generate` makes one), Ray >= 2.52"
)
_POLL_S = 2.0


def token_configured(env: Mapping[str, str] = os.environ) -> str | None:
    """Where the driver's Ray token comes from, or None if token authentication is off."""
    if env.get("RAY_AUTH_MODE", "").strip().lower() != "token":
        return None
    if env.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    path = Path(env.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    with contextlib.suppress(OSError):
        if path.read_text().strip():
            return str(path)
    return None


def _host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(
            f"--ray {address!r}: give the head node's GCS address as HOST:PORT",
            fix="the address `ray start --head --port PORT` printed, e.g. 10.0.0.5:6379",
        )
    return host.strip("[]"), int(port)


def connect(address: str, *, insecure_no_auth: bool = False) -> None:
    """Join the cluster at `address` as its driver, or raise ClusterError saying why not."""
    # Ray retries a refused connection 20 times a second apart, and a wrong token will not
    # become right (read when ray's constants load: the first import in this process).
    os.environ.setdefault("RAY_NUM_REDIS_GET_RETRIES", "3")
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs the ray package", fix="pip install 'assay[ray]'") from None
    host, port = _host_port(address)
    if token_configured() is None and not insecure_no_auth:
        raise ClusterError(
            "refusing to use a Ray cluster without token authentication: anyone who reaches "
            "an unauthenticated cluster runs code on every node, beside the graders",
            fix=f"{_AUTH_HOWTO}; or pass {INSECURE_FLAG} on a network you fully control",
        )
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise ClusterError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc})",
            fix="start one with `ray start --head --port PORT --resources "
            "'{\"assay_docker\": N}'`, or give the right address",
        ) from None
    if ray.is_initialized():
        ray.shutdown()
    # ray.init replaces SIGTERM's handler with sys.exit: the batch would stop without its
    # summary or its running gradings' results. Keep the caller's (grade-many: Ctrl-C).
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(
            address=address,
            namespace="assay",
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
        )
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)
    except Exception as exc:
        cause = _root_cause(exc)
        # Ray 2.60 re-raises the GCS client's AuthenticationError as text inside a RuntimeError.
        if isinstance(cause, ray.exceptions.AuthenticationError) or "InvalidAuthToken" in str(
            cause
        ):
            raise ClusterError(
                f"the Ray cluster at {address} refused this driver's token", fix=_AUTH_HOWTO
            ) from None
        raise ClusterError(
            f"could not join the Ray cluster at {address}: {type(cause).__name__}: "
            f"{str(cause)[:300]}",
            fix="check the address and that the cluster is healthy (`ray status`)",
        ) from None
    if not nodes_with_resource():
        ray.shutdown()
        raise ClusterError(
            f"no live node of the cluster at {address} advertises the resource {RESOURCE!r}",
            fix="start each grading node with `ray start ... --resources "
            "'{\"assay_docker\": N}'` (N gradings at once), on a host with Docker and the "
            "base image",
        )


def _root_cause(exc: BaseException) -> BaseException:
    for _ in range(10):
        if exc.__cause__ is None:
            break
        exc = exc.__cause__
    return exc


def nodes_with_resource() -> list[str]:
    import ray

    return [
        str(n["NodeID"])
        for n in ray.nodes()  # type: ignore[no-untyped-call]
        if n.get("Alive") and float((n.get("Resources") or {}).get(RESOURCE, 0)) >= 1
    ]


def pack_tree(root: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for child in sorted(root.iterdir()):
            tf.add(child, arcname=child.name, recursive=True)
    return buf.getvalue()


def pack_submission(task: Task, submission: object) -> bytes:
    """The submission as the tar bytes a node grades; a directory is packed the way intake
    packs it (links as links), everything else is copied as it is, within the task's cap."""
    cap = task.config.limits.artifact_bytes * 2 + (1 << 20)
    if isinstance(submission, str | os.PathLike):
        path = Path(submission)
        if path.is_symlink():
            raise UsageError(f"submission {path} is a symbolic link")
        if path.is_dir():
            return pack_tree(path)
        with path.open("rb") as fh:
            return _capped(cast(BinaryIO, fh), cap)
    if isinstance(submission, Mapping):
        buf = io.BytesIO()
        write_mapping_tar(submission, buf)
        return buf.getvalue()
    if hasattr(submission, "read"):
        return _capped(cast(BinaryIO, submission), cap)
    raise UsageError(
        "on Ray a submission is a directory or tar path, a binary file object or a mapping of "
        f"relative path to contents; not a {type(submission).__name__} (agent runs are local)"
    )


def _capped(fh: BinaryIO, cap: int) -> bytes:
    data = fh.read(cap + 1)
    if not isinstance(data, bytes):
        raise UsageError("a file-object submission must be opened in binary mode")
    if len(data) > cap:
        raise UsageError(f"the submission is larger than {cap} bytes, over the task's cap")
    return data


def expected_digest(task: Task, blob: bytes) -> str | None:
    """The submission digest an honest node records for `blob` (None: the firewall refuses
    it, so no honest verdict can pass)."""
    result = check(io.BytesIO(blob), cast(BinaryIO, _Discard()), firewall_limits(task),
                   task.config.artifacts)  # fmt: skip
    return result.digest if isinstance(result, Accepted) else None


@dataclass
class RayBackend:
    """GradeFn, SweepFn and CancelFn for `run.iter_batch`, on a connected cluster."""

    tiers: dict[str, Tier]
    image: str
    oci_runtime: str = "runc"
    _task_refs: dict[str, Any] = field(default_factory=dict)
    _running: dict[str, Any] = field(default_factory=dict)
    _nodes: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _remote(self, fn: Any, **options: Any) -> Any:
        import ray

        return ray.remote(fn).options(max_retries=0, retry_exceptions=False, **options)

    def _task_ref(self, task: Task) -> Any:
        import ray

        with self._lock:
            if task.digest not in self._task_refs:
                # One object per task digest: Ray copies it to a node once, when a grading
                # there first needs it, and `ray_node` unpacks it once per node.
                self._task_refs[task.digest] = ray.put(pack_tree(task.root))
            return self._task_refs[task.digest]

    def grade(self, task: Task, submission: object, gid: str) -> diag.Judged:
        blob = pack_submission(task, submission)
        request = {
            "grading_id": gid,
            "task_digest": task.digest,
            "tier": self.tiers[task.id],
            "image": self.image,
            "oci_runtime": self.oci_runtime,
        }
        fn = self._remote(ray_node.grade_on_node, resources={RESOURCE: 1}, num_cpus=0)
        ref = fn.remote(request, self._task_ref(task), blob)
        with self._lock:
            self._running[gid] = ref
        try:
            reply = self._wait(ref, gid)
        finally:
            with self._lock:
                self._running.pop(gid, None)
        with self._lock:
            self._nodes[gid] = str(reply.get("node", "?"))[:200]
        return self._judged(reply, task, gid, expected_digest(task, blob))

    def facts(self, gid: str) -> dict[str, Any]:
        """What the journal records about a grading beside its verdict: the node it ran on."""
        with self._lock:
            return {"node": self._nodes.pop(gid, "?")}

    def _wait(self, ref: Any, gid: str) -> dict[str, Any]:
        import ray

        while True:
            ready, _ = ray.wait([ref], timeout=_POLL_S)
            if ready:
                break
            if not nodes_with_resource():
                ray.cancel(ref)
                raise NodeLostError(
                    f"grading {gid}: no live node advertises {RESOURCE!r} any more",
                    fix="start grading nodes again and rerun the same command to resume",
                )
        try:
            reply = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            raise InfrastructureError(f"grading {gid} was cancelled") from None
        except (
            ray.exceptions.NodeDiedError,
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.ObjectLostError,
            ray.exceptions.LocalRayletDiedError,
            ray.exceptions.OutOfMemoryError,
            ray.exceptions.RaySystemError,
        ) as exc:
            raise NodeLostError(
                f"grading {gid}: the node running it was lost ({type(exc).__name__})"
            ) from None
        if not isinstance(reply, dict):
            raise InfrastructureError(f"grading {gid}: a node replied with no result")
        return reply

    def _judged(
        self, reply: dict[str, Any], task: Task, gid: str, digest: str | None
    ) -> diag.Judged:
        node = str(reply.get("node", "?"))[:200]
        version = reply.get("assay_version")
        if version != __version__:
            raise InfrastructureError(
                f"node {node} runs assay {str(version)[:40]}, this driver {__version__}",
                fix=f"install assay {__version__} on every grading node",
            )
        if "verdict" not in reply:
            # The fix goes into the message too: a batch records only the message per job.
            fix = str(reply.get("fix") or "")[:200]
            said = str(reply.get("infra", "no verdict"))[:250]
            raise InfrastructureError(
                f"on node {node}: {said}" + (f" (fix, on that node: {fix})" if fix else ""),
                fix=f"on node {node}: {fix}" if fix else None,
            )
        try:
            verdict = verdict_from_json(str(reply["verdict"]))
        except VerificationError as exc:
            raise InfrastructureError(f"node {node} returned no valid verdict: {exc}") from None
        # A node must not answer for another grading, task, tier or submission.
        wrong = [
            name
            for name, ok in (
                ("grading id", verdict.grading_id == gid),
                ("task digest", verdict.task_digest == task.digest),
                ("tier", verdict.tier == self.tiers[task.id]),
                (
                    "submission digest",
                    verdict.submission_digest == digest if digest else not verdict.passed,
                ),
            )
            if not ok
        ]
        if wrong:
            raise InfrastructureError(
                f"node {node} returned a verdict whose {', '.join(wrong)} is not this grading's"
            )
        # Diagnostics are unsigned owner information: kept only if they parse within the
        # limits and name this grading; bad ones are dropped, never a reason for no verdict.
        raw = reply.get("diagnostics")
        explained = diag.load(raw.encode()) if isinstance(raw, str) else None
        if explained is None or explained.grading_id != gid or not explained.cases:
            return diag.Judged(verdict)
        return diag.Judged(verdict, explained)

    def sweep(self, gid: str) -> int:
        removed, failed = self.sweep_many([gid])
        if failed:
            raise InfrastructureError(
                f"grading {gid} could not be swept on every node",
                fix="run `assay gc` on each grading node",
            )
        return removed

    def sweep_many(self, gids: list[str]) -> tuple[int, list[str]]:
        """Sweep `gids` on every live grading node; returns the count removed and the ids
        some node could not sweep."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        refs = [
            self._remote(
                ray_node.sweep_on_node,
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(gids, self.oci_runtime)
            for node in nodes_with_resource()
        ]
        removed, failed = 0, set()
        for ref in refs:
            try:
                reply = ray.get(ref, timeout=120)
            except Exception:
                failed.update(gids)
                continue
            removed += int(reply.get("removed", 0))
            failed.update(str(g) for g in reply.get("failed", []))
        return removed, sorted(failed)

    def cancel(self, gid: str) -> None:
        import ray

        with self._lock:
            ref = self._running.get(gid)
        if ref is not None:
            # Not force: the task unwinds its grading scope, which removes its containers.
            ray.cancel(ref, force=False)

    def close(self) -> None:
        import ray

        with contextlib.suppress(Exception):
            ray.shutdown()
