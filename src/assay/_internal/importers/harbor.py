"""`assay import harbor DIR [OUT]`: one Harbor (Terminal-Bench) task as an assay task.

    instruction.md          -> inputs/instruction.md (all the agent sees, at /task)
    tests/                  -> judge/tests/ (never in the agent's container, never in the build
                               context; mounted read-only at /tests in the verifier only)
    environment/            -> environment/ (`[environment] dockerfile`, workdir from Harbor's)
    solution/               -> solutions/reference/ (the oracle: `--agent-dir` it, run solve.sh)
    [[artifacts]] source    -> artifacts, relative to the workdir

Anything assay cannot honour is refused with UsageError (exit 2) naming the field: network
access, compose sidecars, GPUs, several steps, images to pull, users, and every key this
importer does not know (a silently dropped setting would grade a different task).
docs/tasks.md, "Harbor tasks", lists each rule and why.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from assay.errors import UsageError

from ..runtime.base import AGENT_UID

DEFAULT_WORKDIR = "/app"
"""Harbor's default `[environment] workdir`."""
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
RESERVED_ROOTS = ("/logs", "/tests", "/task", "/agent", "/proc", "/sys", "/dev")
MAX_FILE_BYTES = 64 << 20
_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_WORKDIR = re.compile(r"/[A-Za-z0-9._/-]{0,254}")

# Keys taken as they are, or ignored because they change nothing about grading.
_TOP = {"version", "schema_version", "source", "metadata", "agent", "verifier", "environment",
        "artifacts", "steps", "solution"}  # fmt: skip
_AGENT = {"timeout_sec", "user"}
_VERIFIER = {"timeout_sec", "env", "user", "environment_mode", "environment", "collect"}
_ENVIRONMENT = {
    "build_timeout_sec", "cpus", "memory_mb", "storage_mb", "gpus", "gpu_types", "network_mode",
    "allowed_hosts", "workdir", "docker_image", "env", "healthcheck", "mcp_servers", "os",
    "skills_dir", "memory", "storage", "allow_internet",
}  # fmt: skip


def refuse(field: str, why: str) -> UsageError:
    return UsageError(f"harbor task field {field!r}: {why}")


def import_harbor(src: Path, out: Path) -> Path:
    """Write the assay task for the Harbor task at `src` into `out` (which must not exist or be
    empty). Returns `out`. Raises UsageError naming the field it cannot honour."""
    src = src.resolve()
    if not src.is_dir():
        raise UsageError(f"{src}: not a directory")
    for needed in ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh"):
        if not (src / needed).is_file():
            raise refuse(needed, "missing; a Harbor task needs it")
    for name in COMPOSE_FILES:
        for where in ("environment", "tests"):
            if (src / where / name).exists():
                raise refuse(f"{where}/{name}", "compose sidecars are not supported")
    try:
        raw = tomllib.loads((src / "task.toml").read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise refuse("task.toml", f"not valid TOML: {exc}") from None
    toml = convert(raw, task_id(src.name))
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out}: exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    _copy_tree(src / "environment", out / "environment")
    _copy_tree(src / "tests", out / "judge" / "tests")
    (out / "inputs").mkdir()
    _copy_file(src / "instruction.md", out / "inputs" / "instruction.md")
    if (src / "solution").is_dir():
        _copy_tree(src / "solution", out / "solutions" / "reference")
    (out / "task.toml").write_text(toml, encoding="utf-8")
    return out


def task_id(name: str) -> str:
    tid = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")[:64]
    if not _ID.fullmatch(tid):
        raise UsageError(f"cannot make a task id from the directory name {name!r}")
    return tid


def _table(raw: dict[str, Any], key: str, known: set[str]) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise refuse(key, "must be a table")
    for k in value:
        if k not in known:
            raise refuse(f"{key}.{k}", "unknown or unsupported key")
    return value


def _absent(table: dict[str, Any], key: str, field: str, why: str) -> None:
    if table.get(key) not in (None, [], {}, ""):
        raise refuse(field, why)


def _number(table: dict[str, Any], key: str, field: str, lo: float, hi: float) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise refuse(field, f"must be a number from {lo:g} to {hi:g}")
    return float(value)


def convert(raw: dict[str, Any], tid: str) -> str:
    """The assay task.toml for Harbor's parsed task.toml `raw` (pure; raises UsageError)."""
    for k in raw:
        if k not in _TOP:
            raise refuse(k, "unknown or unsupported key")
    agent = _table(raw, "agent", _AGENT)
    verifier = _table(raw, "verifier", _VERIFIER)
    env = _table(raw, "environment", _ENVIRONMENT)
    if not isinstance(raw.get("metadata", {}), dict):
        raise refuse("metadata", "must be a table")
    steps = raw.get("steps", [])
    if not isinstance(steps, list) or steps:
        raise refuse("steps", "multi-step tasks are not supported: assay grades one agent run")
    _absent(raw, "solution", "solution", "solution settings are not supported")

    why_user = f"assay runs every phase as an unprivileged user (uid {AGENT_UID}), never as another"
    _absent(agent, "user", "agent.user", why_user)
    _absent(verifier, "user", "verifier.user", why_user)
    mode = verifier.get("environment_mode", "separate")
    if mode not in ("separate", "shared"):
        raise refuse("verifier.environment_mode", "must be 'separate' or 'shared'")
    _absent(verifier, "environment", "verifier.environment",
            "a separate verifier image is not supported; the verifier uses the task's")  # fmt: skip
    _absent(verifier, "collect", "verifier.collect", "collect hooks are not supported")

    no_net = "grading containers are offline; tasks that need the network are refused"
    network = env.get("network_mode")
    if network not in (None, "no-network", "none"):
        raise refuse("environment.network_mode", no_net)
    _absent(env, "allowed_hosts", "environment.allowed_hosts", no_net)
    if env.get("allow_internet") not in (None, False):
        raise refuse("environment.allow_internet", no_net)
    if env.get("gpus") not in (None, 0):
        raise refuse("environment.gpus", "GPUs are not supported")
    _absent(env, "gpu_types", "environment.gpu_types", "GPUs are not supported")
    _absent(env, "docker_image", "environment.docker_image",
            "assay never pulls; the image is built from environment/Dockerfile")  # fmt: skip
    for key in ("env", "healthcheck", "mcp_servers", "skills_dir", "memory", "storage"):
        _absent(env, key, f"environment.{key}", "not supported")
    if env.get("os") not in (None, "linux"):
        raise refuse("environment.os", "only linux")

    workdir = env.get("workdir", DEFAULT_WORKDIR)
    if not isinstance(workdir, str) or not _WORKDIR.fullmatch(workdir) or _reserved(workdir):
        raise refuse("environment.workdir", "an absolute path outside " + ", ".join(RESERVED_ROOTS))
    workdir = workdir.rstrip("/")
    if workdir == "" or ".." in workdir.split("/") or "." in workdir.split("/"):
        raise refuse("environment.workdir", "an absolute path below /, no . or ..")

    limits = {
        "agent_timeout": _number(agent, "timeout_sec", "agent.timeout_sec", 1, 86400),
        "total_timeout": _number(verifier, "timeout_sec", "verifier.timeout_sec", 1, 7200),
        "cpus": _number(env, "cpus", "environment.cpus", 0.01, 64),
        "memory_mb": _number(env, "memory_mb", "environment.memory_mb", 16, 65536),
    }
    storage = _number(env, "storage_mb", "environment.storage_mb", 1, 1 << 20)
    verifier_env = verifier.get("env", {})
    if not isinstance(verifier_env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in verifier_env.items()
    ):
        raise refuse("verifier.env", "must be a table of strings")

    lines = [
        '# Imported from a Harbor task by `assay import harbor` (docs/tasks.md, "Harbor tasks").',
        f"id = {_q(tid)}",
        'kind = "harbor"',
        f"artifacts = [{', '.join(_q(a) for a in _artifacts(raw.get('artifacts'), workdir))}]",
        f"description = {_q(_description(raw.get('metadata', {})))}",
        "",
        "[limits]",
    ]
    for key, value in limits.items():
        if value is not None:
            lines.append(f"{key} = {int(value) if key == 'memory_mb' else value}")
    if storage is not None:
        # The agent's workspace is a capped scratch: Harbor's disk size, at most 1 GiB of it.
        lines.append(f"artifact_bytes = {min(int(storage), 1024) << 20}")
    lines += [
        "",
        "[environment]",
        'dockerfile = "environment/Dockerfile"',
        f"workdir = {_q(workdir)}",
    ]
    pairs = ", ".join(f"{_q(k)} = {_q(v)}" for k, v in sorted(verifier_env.items()))
    lines += ["", "[harbor]", f"verifier_env = {{{pairs}}}"]
    return "\n".join(lines) + "\n"


def _reserved(path: str) -> bool:
    return path in ("/", "") or any(
        path == r or path.startswith(r + "/") or r.startswith(path.rstrip("/") + "/")
        for r in RESERVED_ROOTS
    )


def _artifacts(raw: object, workdir: str) -> list[str]:
    """Harbor's `[[artifacts]] source` paths as globs relative to the workdir: a file, or
    everything under a directory (one glob each, since which one it is shows only at run time)."""
    if not isinstance(raw, list) or not raw:
        why = "none declared; the separate verifier restores only declared artifacts"
        raise refuse("artifacts", why + ", so a task must name what the agent produces")
    globs: list[str] = []
    for i, entry in enumerate(raw):
        field = f"artifacts[{i}]"
        if isinstance(entry, dict):
            for k in entry:
                if k != "source":
                    raise refuse(f"{field}.{k}", "unknown or unsupported key")
            entry = entry.get("source")
        if not isinstance(entry, str) or not entry:
            raise refuse(f"{field}.source", "must be a path")
        path = PurePosixPath(entry if entry.startswith("/") else f"{workdir}/{entry}")
        if ".." in path.parts or "*" in entry or "?" in entry or "[" in entry:
            raise refuse(f"{field}.source", "a plain path, no .. or wildcards")
        try:
            rel = path.relative_to(workdir)
        except ValueError:
            raise refuse(f"{field}.source", f"must lie under the workdir {workdir}") from None
        if rel.as_posix() == ".":
            globs.append("**")
        else:
            globs += [rel.as_posix(), f"{rel.as_posix()}/**"]
    return list(dict.fromkeys(globs))


def _description(metadata: object) -> str:
    if isinstance(metadata, dict):
        for key in ("description", "category"):
            if isinstance(metadata.get(key), str):
                return str(metadata[key])[:500]
    return "Imported Harbor task"


def _q(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, for the characters json emits)."""
    return json.dumps(text, ensure_ascii=True)


def _copy_tree(src: Path, dst: Path) -> None:
    for path in [src, *sorted(src.rglob("*"))]:
        rel = path.relative_to(src)
        if path.is_symlink():
            raise refuse(str(src.name / rel), "symbolic links are not imported")
        if path.is_dir():
            (dst / rel).mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            _copy_file(path, dst / rel)
        else:
            raise refuse(str(src.name / rel), "not a regular file or directory")


def _copy_file(src: Path, dst: Path) -> None:
    if src.is_symlink():
        raise refuse(src.name, "symbolic links are not imported")
    if src.stat().st_size > MAX_FILE_BYTES:
        raise refuse(src.name, f"larger than {MAX_FILE_BYTES >> 20} MiB")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    dst.chmod(0o755 if src.stat().st_mode & 0o111 else 0o644)
