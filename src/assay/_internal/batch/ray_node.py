"""What runs on a Ray node: assay's own code only, never a submission's.

A node grades one submission on its own local Docker engine and returns the verdict payload,
unsigned: the signing key never leaves the driver (docs/security.md). Everything here returns
plain data (dicts of str/float) so that nothing the driver unpickles carries behaviour.

The task directory arrives as a tar through Ray's object store (once per node, keyed by the
task's content digest) and is unpacked into a per-user cache on the node; its tree digest is
checked against the one the driver loaded before any grading uses it.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from assay._version import __version__
from assay.errors import AssayError, InfrastructureError

from ..model.task import Task, load_task
from ..runtime import Runtime
from ..runtime.engine import open_runtime
from ..runtime.scope import TEMP_PREFIX, grading_tempdir
from ..tiers.core.controller import Source
from ..tiers.dispatch import run_tier
from .journal import remove_tempdirs

_runtimes: dict[str, Runtime] = {}
_runtimes_lock = threading.Lock()


def node_name() -> str:
    """The host name and Ray node id (short), for messages that must name the node."""
    node = "?"
    with contextlib.suppress(Exception):
        import ray

        node = ray.get_runtime_context().get_node_id()[:12]
    return f"{socket.gethostname()}/{node}"


def _runtime(oci_runtime: str) -> Runtime:
    # One engine connection per worker process: Ray reuses workers across tasks.
    with _runtimes_lock:
        if oci_runtime not in _runtimes:
            _runtimes[oci_runtime] = open_runtime(oci_runtime, parallel=4)
        return _runtimes[oci_runtime]


def _cache_root() -> Path:
    root = Path(tempfile.gettempdir()) / f"{TEMP_PREFIX}ray-tasks-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    st = root.lstat()
    # A shared /tmp: another user could have made this name first and fill it with a task.
    if not root.is_dir() or root.is_symlink() or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise InfrastructureError(
            f"task cache {root} is not a private directory of this user",
            fix=f"remove {root} on this node",
        )
    return root


def task_on_node(digest: str, blob: bytes) -> Task:
    """The task with tree digest `digest`, unpacked from `blob` once per node."""
    root = _cache_root()
    final = root / digest.removeprefix("sha256:")
    lock_fd = os.open(root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        if not final.is_dir():
            staging = Path(tempfile.mkdtemp(dir=root, prefix=".unpack-"))
            try:
                with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as tf:
                    tf.extractall(staging, filter="data")
                os.rename(staging, final)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
    finally:
        os.close(lock_fd)
    task = load_task(final)
    if task.digest != digest:
        raise InfrastructureError(
            f"the task unpacked on node {node_name()} has digest {task.digest}, not {digest}",
            fix=f"remove {final} on that node",
        )
    return task


def grade_on_node(request: dict[str, str], task_blob: bytes, submission: bytes) -> dict[str, Any]:
    """One grading. Returns {"verdict": JSON text, "node", "assay_version"} or, when no
    verdict could be made, {"infra": message, "fix", "node", "assay_version"}."""
    node = node_name()
    gid = request["grading_id"]
    reply: dict[str, Any] = {"node": node, "assay_version": __version__}
    spool = grading_tempdir(gid, "submission")
    try:
        task = task_on_node(request["task_digest"], task_blob)
        path = spool / "submission.tar"
        path.write_bytes(submission)
        rt = _runtime(request["oci_runtime"])
        judged, _ = run_tier(
            rt, task, Source(path=path), request["tier"],  # type: ignore[arg-type]
            request["image"], grading_id=gid,
        )  # fmt: skip
        reply["verdict"] = judged.verdict.model_dump_json()
        if judged.diagnostics is not None:  # for the task owner, beside the driver's verdict
            reply["diagnostics"] = judged.diagnostics.to_json().decode()
    except AssayError as exc:
        fix = getattr(exc, "fix", None)
        reply["infra"] = f"{type(exc).__name__}: {exc}"
        reply["fix"] = fix or ""
    except Exception as exc:  # a bug or a host fault: no verdict, never a failed one
        reply["infra"] = f"internal: {type(exc).__name__}: {exc}"
        reply["fix"] = ""
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    return reply


def sweep_on_node(grading_ids: list[str], oci_runtime: str) -> dict[str, Any]:
    """Remove what the given gradings left on this node: containers and volumes by label,
    host temp dirs by name. Returns how many objects went and the ids it could not sweep."""
    removed, failed = 0, []
    try:
        rt = _runtime(oci_runtime)
    except AssayError as exc:
        return {"node": node_name(), "removed": 0, "failed": list(grading_ids), "error": str(exc)}
    for gid in grading_ids:
        try:
            removed += rt.sweep(gid)
            remove_tempdirs(gid)
        except AssayError:
            failed.append(gid)
    return {"node": node_name(), "removed": removed, "failed": failed}
