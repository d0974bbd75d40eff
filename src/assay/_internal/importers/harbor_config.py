"""Harbor's `task.toml` read as a pure function: every key Harbor defines (1.0 to 1.4) and the
keys real tasks add is taken, ignored with a note, or refused naming it; nothing is dropped by
accident. docs/tasks.md, "Harbor tasks", has the table of fields and the reasons.

Harbor's own model ignores unknown keys; this reader refuses them (a setting it does not know
could change what is graded), except inside the metadata tables `[task]` and `[metadata]`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from assay.errors import UsageError

from ..model.task import IMAGE_WORKDIR, TaskLimits, workdir_problem
from ..runtime.base import AGENT_UID

MAX_STORAGE_MB = 1024
"""The agent's workdir is a tmpfs scratch (memory): Harbor's disk size is capped here."""
NO_NET = "grading containers are offline"


class Refusal(UsageError):
    """A Harbor task assay cannot grade as written; `field` names what, `why` says why."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"harbor task field {field!r}: {why}")
        self.field = field
        self.why = why


@dataclass
class Converted:
    """The assay task.toml for a Harbor task, and what the import changed or ignored."""

    toml: str
    notes: list[str] = field(default_factory=list)
    workdir: str | None = None
    """The workdir when the task names one; None: the image's WORKDIR, known once built."""


def _cap(name: str) -> tuple[float, float]:
    """(lowest, highest) value assay's task format allows for limits.<name>."""
    bounds: dict[str, float] = {}
    for meta in TaskLimits.model_fields[name].metadata:
        for attr in ("ge", "gt", "le"):
            if isinstance(getattr(meta, attr, None), int | float):
                bounds[attr] = float(getattr(meta, attr))
    return bounds.get("ge", bounds.get("gt", 0.0)), bounds["le"]


class _Reader:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.notes: list[str] = []

    def table(
        self, parent: dict[str, Any], key: str, where: str, known: set[str]
    ) -> dict[str, Any]:
        value = parent.get(key, {})
        if not isinstance(value, dict):
            raise Refusal(where, "must be a table")
        for k in value:
            if k not in known:
                raise Refusal(f"{where}.{k}", "unknown or unsupported key")
        return value

    def absent(self, table: dict[str, Any], key: str, where: str, why: str) -> None:
        """Refuse a setting assay cannot honour; an empty table, list or string is absent."""
        if table.get(key) not in (None, [], {}, ""):
            raise Refusal(where, why)

    def ignored(self, table: dict[str, Any], key: str, where: str, why: str) -> None:
        if key in table:
            self.notes.append(f"{where}: ignored ({why})")

    def number(self, table: dict[str, Any], key: str, where: str, limit: str) -> float | None:
        """A Harbor number as assay's limits.<limit>: refused below assay's floor, clamped
        with a note above its cap (a tighter limit can fail a task, never pass one)."""
        value = table.get(key)
        if value is None:
            return None
        lo, hi = _cap(limit)
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise Refusal(where, "must be a number")
        if value < lo or value <= 0:
            raise Refusal(where, f"{value:g} is below assay's floor for limits.{limit} ({lo:g})")
        if value > hi:
            self.notes.append(f"{where}: {value:g} clamped to assay's cap {hi:g} (limits.{limit})")
            return hi
        return float(value)


def size_mb(text: object, where: str) -> int:
    """Harbor's deprecated size strings ("4G", "512M", "2048K") in MiB, as Harbor converts
    them (`EnvironmentConfig._parse_size_to_mb`: G is 1024 M, K is 1/1024 M, truncated)."""
    if not isinstance(text, str):
        raise Refusal(where, "must be a size such as '4G' or '512M'")
    s = text.strip().upper()
    scale = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}.get(s[-1:])
    try:
        if scale is None:
            raise ValueError
        mb = float(s[:-1]) * scale
    except ValueError:
        raise Refusal(where, f"{text!r} is not a size such as '4G' or '512M'") from None
    if not 0 <= mb < 1 << 40:
        raise Refusal(where, f"{text!r} is not a size such as '4G' or '512M'")
    return int(mb)


_TOP = {"version", "schema_version", "source", "task", "metadata", "agent", "verifier",
        "environment", "solution", "artifacts", "steps", "multi_step_reward_strategy"}  # fmt: skip
_NETWORK = {"network_mode", "allowed_hosts"}
_AGENT = {"timeout_sec", "user", "kwargs"} | _NETWORK
_VERIFIER = {"timeout_sec", "env", "user", "environment_mode", "environment", "collect",
             "continuous"} | _NETWORK  # fmt: skip
_ENVIRONMENT = {
    "build_timeout_sec", "docker_image", "os", "cpus", "memory_mb", "storage_mb", "gpus",
    "gpu_types", "tpu", "mcp_servers", "env", "skills_dir", "healthcheck", "workdir",
    "allow_internet", "memory", "storage", "docker_flags",
} | _NETWORK  # fmt: skip
_ARTIFACT = {"source", "destination", "exclude", "service"}


def convert(raw: dict[str, Any], tid: str, has_dockerfile: bool = True) -> Converted:
    """The assay task.toml for Harbor's parsed task.toml `raw`; raises Refusal naming the
    first field assay cannot honour. `[[steps]]` is checked first: a multi-step task is
    refused as one whatever else it holds."""
    steps = raw.get("steps")
    if steps not in (None, []):
        raise Refusal("steps", "a multi-step task is converted one step at a time (harbor_steps)")
    r = _Reader(raw)
    for k in raw:
        if k not in _TOP:
            raise Refusal(k, "unknown or unsupported key")
    for meta in ("task", "metadata"):
        if not isinstance(raw.get(meta, {}), dict):
            raise Refusal(meta, "must be a table")
    agent = r.table(raw, "agent", "agent", _AGENT)
    verifier = r.table(raw, "verifier", "verifier", _VERIFIER)
    env = r.table(raw, "environment", "environment", _ENVIRONMENT)
    solution = r.table(raw, "solution", "solution", {"env"})

    r.ignored(raw, "multi_step_reward_strategy", "multi_step_reward_strategy", "one step")
    r.absent(solution, "env", "solution.env", "the reference run's environment (often host "
             "secrets) is not supported")  # fmt: skip
    _phases(r, agent, verifier)
    _network(r, env, agent, verifier)
    _environment(r, env, has_dockerfile)

    workdir = env.get("workdir")
    if workdir is not None:
        if not isinstance(workdir, str):
            raise Refusal("environment.workdir", "must be an absolute path")
        if problem := workdir_problem(workdir, "harbor"):
            raise Refusal("environment.workdir", problem)
        workdir = workdir.rstrip("/")
    artifacts = _artifacts(r, raw.get("artifacts"), workdir)

    memory = r.number(env, "memory_mb", "environment.memory_mb", "memory_mb")
    if "memory" in env:
        from_text = size_mb(env["memory"], "environment.memory")
        if memory is not None and env.get("memory_mb") != from_text:
            raise Refusal("environment.memory", f"{env['memory']!r} ({from_text} MB) "
                          f"conflicts with memory_mb = {env.get('memory_mb')!r}")  # fmt: skip
        memory = r.number({"m": from_text}, "m", "environment.memory", "memory_mb")
    storage = env.get("storage_mb")
    if "storage" in env:
        storage = size_mb(env["storage"], "environment.storage")
        if env.get("storage_mb") not in (None, storage):
            raise Refusal(
                "environment.storage", f"conflicts with storage_mb = {env['storage_mb']!r}"
            )
    if storage is not None:
        if isinstance(storage, bool) or not isinstance(storage, int | float) or storage < 1:
            raise Refusal("environment.storage_mb", "must be a number of MiB, at least 1")
        if storage > MAX_STORAGE_MB:
            r.notes.append(f"environment.storage_mb: {storage:g} clamped to {MAX_STORAGE_MB} "
                           "(the workdir is a capped scratch in memory)")  # fmt: skip
            storage = MAX_STORAGE_MB
    limits = {
        "agent_timeout": r.number(agent, "timeout_sec", "agent.timeout_sec", "agent_timeout"),
        "total_timeout": r.number(verifier, "timeout_sec", "verifier.timeout_sec", "total_timeout"),
        "cpus": r.number(env, "cpus", "environment.cpus", "cpus"),
        "memory_mb": memory,
    }
    verifier_env = verifier.get("env", {})
    if not isinstance(verifier_env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in verifier_env.items()
    ):
        raise Refusal("verifier.env", "must be a table of strings")

    lines = [
        '# Imported from a Harbor task by `assay import harbor` (docs/tasks.md, "Harbor tasks").',
        f"id = {_q(tid)}",
        'kind = "harbor"',
        f"artifacts = [{', '.join(_q(a) for a in artifacts)}]",
        f"description = {_q(description(raw))}",
        "",
        "[limits]",
    ]
    for key, value in limits.items():
        if value is not None:
            lines.append(f"{key} = {int(value) if key == 'memory_mb' else value}")
    if storage is not None:
        lines.append(f"artifact_bytes = {int(storage) << 20}")
    lines += [
        "",
        "[environment]",
        'dockerfile = "environment/Dockerfile"',
        f"workdir = {_q(workdir or IMAGE_WORKDIR)}",
    ]
    pairs = ", ".join(f"{_q(k)} = {_q(v)}" for k, v in sorted(verifier_env.items()))
    lines += ["", "[harbor]", f"verifier_env = {{{pairs}}}"]
    return Converted("\n".join(lines) + "\n", r.notes, workdir)


def _phases(r: _Reader, agent: dict[str, Any], verifier: dict[str, Any]) -> None:
    why_user = f"assay runs every phase as an unprivileged user (uid {AGENT_UID}), never as another"
    r.absent(agent, "user", "agent.user", why_user)
    r.absent(verifier, "user", "verifier.user", why_user)
    r.ignored(agent, "kwargs", "agent.kwargs", "settings for Harbor's agent harness, not the task")
    mode = verifier.get("environment_mode")
    if mode not in (None, "separate", "shared"):
        raise Refusal("verifier.environment_mode", "must be 'separate' or 'shared'")
    if mode == "shared":
        r.notes.append("verifier.environment_mode: 'shared' graded the separate-verifier way")
    r.absent(verifier, "environment", "verifier.environment",
             "a separate verifier image is not supported; it runs the task's")  # fmt: skip
    r.absent(verifier, "collect", "verifier.collect", "collect hooks run in sidecars")
    continuous = verifier.get("continuous", {})
    if not isinstance(continuous, dict) or continuous.get("enabled") not in (None, False):
        raise Refusal("verifier.continuous", "verification during the agent phase is not supported")


def _network(r: _Reader, env: dict[str, Any], *phases: dict[str, Any]) -> None:
    """Public access (Harbor's default, also when written out) imports and runs offline, with a
    note; a task that names the hosts it needs is refused."""
    for where, table in (("environment", env), ("agent", phases[0]), ("verifier", phases[1])):
        mode = table.get("network_mode")
        if mode not in (None, "no-network", "public", "allowlist"):
            raise Refusal(f"{where}.network_mode", "must be 'public', 'no-network' or 'allowlist'")
        r.absent(table, "allowed_hosts", f"{where}.allowed_hosts",
                 f"{NO_NET}; a task that names the hosts it needs is refused")  # fmt: skip
        if mode == "allowlist":
            raise Refusal(f"{where}.network_mode", f"{NO_NET}; 'allowlist' needs hosts")
        if mode == "public":
            r.notes.append(f"{where}.network_mode: 'public' runs offline ({NO_NET})")
    allow = env.get("allow_internet")
    if not isinstance(allow, bool | None):
        raise Refusal("environment.allow_internet", "must be true or false")
    if allow:
        r.notes.append(f"environment.allow_internet: true runs offline ({NO_NET}; a task that "
                       "needs the network fails, never passes)")  # fmt: skip


def _environment(r: _Reader, env: dict[str, Any], has_dockerfile: bool) -> None:
    if env.get("gpus") not in (None, 0):
        raise Refusal("environment.gpus", "GPUs are not supported")
    for key in ("gpu_types", "tpu"):
        r.absent(env, key, f"environment.{key}", "accelerators are not supported")
    r.absent(
        env, "mcp_servers", "environment.mcp_servers", "MCP servers are sidecars; not supported"
    )
    r.absent(env, "env", "environment.env", "variables resolved from the host (secrets) are "
             "not supported")  # fmt: skip
    r.absent(env, "skills_dir", "environment.skills_dir", "agent skills are not supported")
    r.absent(env, "healthcheck", "environment.healthcheck",
             "assay starts no service of the image, so none can become healthy")  # fmt: skip
    r.absent(env, "docker_flags", "environment.docker_flags",
             "extra engine flags would change the container's hardening")  # fmt: skip
    r.ignored(env, "docker_flags", "environment.docker_flags", "empty")
    if str(env.get("os", "linux")).lower() != "linux":
        raise Refusal("environment.os", "only linux")
    image = env.get("docker_image")
    if image not in (None, ""):
        if not has_dockerfile:
            raise Refusal("environment.docker_image", "assay never pulls, and there is no "
                          "environment/Dockerfile to build instead")  # fmt: skip
        r.notes.append(f"environment.docker_image: {str(image)[:80]!r} not pulled; "
                       "environment/Dockerfile is built instead")  # fmt: skip


def _artifacts(r: _Reader, raw: object, workdir: str | None) -> list[str]:
    """Harbor's artifacts as globs relative to the workdir: a file, or everything under a
    directory (one glob each, since which one it is shows only at run time). None declared:
    the whole workdir, which the verifier then gets as it is (docs/tasks.md)."""
    if raw is None or raw == []:
        r.notes.append("artifacts: none declared; the agent's whole workdir is the artifact")
        return ["**"]
    if not isinstance(raw, list):
        raise Refusal("artifacts", "must be a list")
    base = workdir or "/app"
    globs: list[str] = []
    for i, entry in enumerate(raw):
        where = f"artifacts[{i}]"
        if isinstance(entry, dict):
            for k in entry:
                if k not in _ARTIFACT:
                    raise Refusal(f"{where}.{k}", "unknown or unsupported key")
            if entry.get("service") not in (None, "main"):
                raise Refusal(f"{where}.service", "compose sidecars are not supported")
            r.absent(entry, "exclude", f"{where}.exclude", "excluded paths are not supported")
            r.ignored(entry, "destination", f"{where}.destination", "a host path for Harbor's "
                      "trial archive")  # fmt: skip
            entry = entry.get("source")
        if not isinstance(entry, str) or not entry:
            raise Refusal(f"{where}.source", "must be a path")
        if entry.startswith("/") and workdir is None:
            raise Refusal(f"{where}.source", "an absolute path needs environment.workdir, since "
                          "the image's WORKDIR is known only once it is built")  # fmt: skip
        path = PurePosixPath(entry if entry.startswith("/") else f"{base}/{entry}")
        if ".." in path.parts or "*" in entry or "?" in entry or "[" in entry:
            raise Refusal(f"{where}.source", "a plain path, no .. or wildcards")
        try:
            rel = path.relative_to(base)
        except ValueError:
            raise Refusal(f"{where}.source", f"must lie under the workdir {base}") from None
        if rel.as_posix() == ".":
            globs.append("**")
        else:
            globs += [rel.as_posix(), f"{rel.as_posix()}/**"]
    return list(dict.fromkeys(globs))


def description(raw: dict[str, Any]) -> str:
    """`[task].description`, else `[metadata].description`, else a stock line."""
    for table in (raw.get("task"), raw.get("metadata")):
        if isinstance(table, dict):
            text = table.get("description")
            if isinstance(text, str) and text.strip():
                return text.strip()[:500]
    return "Imported Harbor task"


def _q(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, for the characters json emits)."""
    return json.dumps(text, ensure_ascii=True)
