"""The SWE-bench 5 fixtures under tests/swebench/ (README.md there): their paths, their
instance images (built locally from each task's Dockerfile, since SWE-bench's own cannot be
pulled here), and SWE-bench's reading of a pytest log (parse_log_pytest and the grading's
pass/fail tests), for checking what an eval.sh run printed."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "swebench"
TASKREPO = ROOT / "taskrepo"
ROWS = ROOT / "rows.jsonl"
PREDICTIONS = ROOT / "predictions"
HISTORY = ROOT / "history.json"

CALC = "acme__calc-101"
STRKIT = "acme__strkit-7"
INSTANCE_IDS = (CALC, STRKIT)

BASE_IMAGE = os.environ.get("ASSAY_BASE_IMAGE", "assay-base:latest")
LABEL = "assay.test-fixture"
LABEL_VALUE = "swebench"
DIGEST_LABEL = "assay.test-fixture.digest"
# what the task Dockerfiles' .dockerignore leaves out of the build context
_IGNORED_DIRS = frozenset({"__pycache__", ".pytest_cache"})
_BUILD_TIMEOUT_S = 900


def image_name(instance_id: str) -> str:
    """The image's local name, as SWE-bench names an instance image it built itself."""
    return f"sweb.eval.x86_64.{instance_id}:latest"


def task_dir(instance_id: str) -> Path:
    return TASKREPO / "tasks" / instance_id


def history() -> dict[str, dict[str, str]]:
    """instance id -> initial_commit, base_commit, fix_commit (the leaked one), branch, tag,
    image (make_fixtures.py writes it)."""
    data: dict[str, dict[str, str]] = json.loads(HISTORY.read_text())
    return data


def context_digest(directory: Path, base_id: str) -> str:
    """A digest of everything the build reads: the base image and every file of the context
    (path, executable bit, content), the Dockerfile included."""
    h = hashlib.sha256(f"swebench-fixture-1\0{base_id}\0".encode())
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if not path.is_file() or _IGNORED_DIRS.intersection(rel.parts) or path.suffix == ".pyc":
            continue
        h.update(f"{rel.as_posix()}\0{os.access(path, os.X_OK):d}\0".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def build_instance_images(client: Any = None) -> dict[str, str]:
    """Build `sweb.eval.x86_64.<id>:latest` for both tasks and return instance id -> image name.
    An image whose digest label matches the task directory (and the base image) is reused, so a
    second call only inspects. `client` is a docker-py client, or None for the `docker` CLI."""
    engine: _Engine = _PyEngine(client) if client is not None else _CliEngine()
    base_id = engine.image_id(BASE_IMAGE)
    if base_id is None:
        raise RuntimeError(f"no {BASE_IMAGE} image (scripts/setup.sh builds it)")
    built = {}
    # one builder at a time (xdist workers): the others then find the image and reuse it
    lock = Path(tempfile.gettempdir()) / "swebench-fixture-images.lock"
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        for instance_id in INSTANCE_IDS:
            name = image_name(instance_id)
            directory = task_dir(instance_id)
            digest = context_digest(directory, base_id)
            labels = engine.labels(name)
            if (labels or {}).get(DIGEST_LABEL) != digest:
                stale = engine.image_id(name) if (labels or {}).get(LABEL) == LABEL_VALUE else None
                engine.build(directory, name, {LABEL: LABEL_VALUE, DIGEST_LABEL: digest})
                if stale is not None and stale != engine.image_id(name):
                    engine.remove(stale)  # the fixture image this one replaces, now untagged
            built[instance_id] = name
    return built


class _Engine:
    def image_id(self, name: str) -> str | None:
        raise NotImplementedError

    def labels(self, name: str) -> dict[str, str] | None:
        raise NotImplementedError

    def build(self, directory: Path, name: str, labels: dict[str, str]) -> None:
        raise NotImplementedError

    def remove(self, image_id: str) -> None:
        """Best effort: an image a container still uses stays."""
        raise NotImplementedError


class _CliEngine(_Engine):
    def _inspect(self, name: str, fmt: str) -> str | None:
        run = subprocess.run(
            ["docker", "image", "inspect", "--format", fmt, name],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return run.stdout.strip() if run.returncode == 0 else None

    def image_id(self, name: str) -> str | None:
        return self._inspect(name, "{{.Id}}")

    def labels(self, name: str) -> dict[str, str] | None:
        out = self._inspect(name, "{{json .Config.Labels}}")
        return json.loads(out) or {} if out else None

    def build(self, directory: Path, name: str, labels: dict[str, str]) -> None:
        argv = ["docker", "build", "--quiet", "--tag", name]
        for key, value in labels.items():
            argv += ["--label", f"{key}={value}"]
        # The engine's classic builder: no BuildKit frontend to pull, and no buildx needed.
        env = {**os.environ, "DOCKER_BUILDKIT": "0"}
        run = subprocess.run(
            [*argv, str(directory)], capture_output=True, text=True, env=env,
            timeout=_BUILD_TIMEOUT_S,
        )  # fmt: skip
        if run.returncode != 0:
            raise RuntimeError(f"docker build of {name} failed:\n{run.stdout}\n{run.stderr}")

    def remove(self, image_id: str) -> None:
        subprocess.run(["docker", "image", "rm", image_id], capture_output=True, timeout=120)


class _PyEngine(_Engine):
    def __init__(self, client: Any) -> None:
        self.client = client

    def _get(self, name: str) -> Any:
        import docker.errors

        try:
            return self.client.images.get(name)
        except docker.errors.ImageNotFound:
            return None

    def image_id(self, name: str) -> str | None:
        image = self._get(name)
        return None if image is None else str(image.id)

    def labels(self, name: str) -> dict[str, str] | None:
        image = self._get(name)
        return None if image is None else dict(image.labels or {})

    def build(self, directory: Path, name: str, labels: dict[str, str]) -> None:
        self.client.images.build(
            path=str(directory), tag=name, labels=labels, rm=True, forcerm=True, pull=False,
            timeout=_BUILD_TIMEOUT_S,
        )  # fmt: skip

    def remove(self, image_id: str) -> None:
        import docker.errors

        try:
            self.client.images.remove(image_id)
        except docker.errors.APIError:
            pass


# --- SWE-bench's reading of the log (swebench/harness/log_parsers/python.py, grading.py) -----

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
_STATUSES = ("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")


def marked_output(log: str) -> str:
    """The part of an eval.sh log between SWE-bench's markers (get_logs_eval's slice)."""
    if START not in log or END not in log:
        raise ValueError("the log has no test output markers")
    return log.split(START)[1].split(END)[0]


def parse_log_pytest(log: str) -> dict[str, str]:
    """swebench's parse_log_pytest: `<STATUS> <id>` lines, the id cut at the first
    whitespace (so a parametrized id with a space in it is truncated there)."""
    status_map = {}
    for line in log.split("\n"):
        if line.startswith(_STATUSES):
            if line.startswith("FAILED"):
                line = line.replace(" - ", " ")
            words = line.split()
            if len(words) <= 1:
                continue
            if words[0] == "SKIPPED" and words[1].startswith("[") and words[1].endswith("]"):
                continue
            status_map[words[1]] = words[0]
    return status_map


def status_of(case: str, status_map: dict[str, str]) -> str | None:
    """The status grading finds for a listed id (grading._resolve_case): its own, or, for an
    id SWE-bench's data holds truncated mid-parameter (#290), that of the ids it prefixes when
    they agree on pass or fail; None when absent."""
    if case in status_map:
        return status_map[case]
    if case.count("[") > case.count("]"):
        matches = [k for k in status_map if k.startswith(case)]
        if matches and len({status_map[k] in ("PASSED", "XFAIL") for k in matches}) == 1:
            return status_map[matches[0]]
    return None


def passed(case: str, status_map: dict[str, str]) -> bool:
    """grading.test_passed."""
    return status_of(case, status_map) in ("PASSED", "XFAIL")


def failed(case: str, status_map: dict[str, str]) -> bool:
    """grading.test_failed: failed, errored, skipped, or absent."""
    return status_of(case, status_map) in (None, "FAILED", "ERROR", "SKIPPED")
