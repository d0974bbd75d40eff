"""Every Harbor task.toml field (Harbor 1.0 to 1.4, and what real tasks add) taken, ignored with
a note, or refused naming it, on the pure reader (`harbor_config.convert`); the three
real-format fixtures imported; the image's WORKDIR as a task's workdir; the directory import
and its survey table."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from assay._internal.environment.build import _workdir
from assay._internal.importers.harbor import import_harbor, import_tree
from assay._internal.importers.harbor_config import Refusal, convert, size_mb
from assay._internal.model.task import load_task
from assay.cli import main
from assay.errors import TaskEnvironmentError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harbor"


def toml_of(raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    converted = convert(raw, "t")
    return tomllib.loads(converted.toml), converted.notes


def refused(raw: dict[str, Any]) -> str:
    with pytest.raises(Refusal) as info:
        convert(raw, "t")
    return info.value.field


def test_metadata_tables_are_kept_with_extra_keys_and_give_the_description() -> None:
    raw = {
        "schema_version": "1.4", "source": "x", "version": "1.0",
        "task": {"name": "org/t", "version": "1", "description": "from [task]", "authors":
                 [{"name": "a"}], "keywords": ["k"], "format": "tb", "workstream": "w",
                 "language": "en"},
        "metadata": {"description": "from [metadata]", "anything": {"nested": [1]}},
    }  # fmt: skip
    doc, notes = toml_of(raw)
    assert doc["description"] == "from [task]"
    assert notes == ["artifacts: none declared; the agent's whole workdir is the artifact"]
    del raw["task"]
    assert toml_of(raw)[0]["description"] == "from [metadata]"
    assert refused({"task": "x"}) == "task"
    assert refused({"metadata": []}) == "metadata"


def test_empty_tables_are_absent() -> None:
    raw = {"verifier": {"env": {}}, "solution": {"env": {}}, "environment": {"env": {},
           "mcp_servers": [], "gpu_types": [], "docker_flags": [], "allowed_hosts": []},
           "artifacts": [], "steps": []}  # fmt: skip
    doc, _ = toml_of(raw)
    assert doc["harbor"] == {"verifier_env": {}}
    assert doc["artifacts"] == ["**"]


@pytest.mark.parametrize("where", ["environment", "agent", "verifier"])
def test_public_network_imports_offline_with_a_note(where: str) -> None:
    doc, notes = toml_of({where: {"network_mode": "public"}})
    assert f"{where}.network_mode: 'public' runs offline" in notes[0]
    assert doc["kind"] == "harbor"
    for mode in ("allowlist",):
        assert refused({where: {"network_mode": mode}}) == f"{where}.network_mode"
    assert refused({where: {"allowed_hosts": ["pypi.org"]}}) == f"{where}.allowed_hosts"


def test_allow_internet_true_is_like_an_unset_network_key_and_says_so() -> None:
    plain, _ = toml_of({})
    doc, notes = toml_of({"environment": {"allow_internet": True}})
    assert doc == plain
    assert any(n.startswith("environment.allow_internet: true runs offline") for n in notes)
    assert toml_of({"environment": {"allow_internet": False}})[0] == plain
    assert refused({"environment": {"allow_internet": "yes"}}) == "environment.allow_internet"


def test_docker_image_builds_the_dockerfile_and_is_refused_without_one() -> None:
    raw = {"environment": {"docker_image": "python:3.12-slim"}}
    converted = convert(raw, "t", has_dockerfile=True)
    assert "environment/Dockerfile is built instead" in " ".join(converted.notes)
    assert tomllib.loads(converted.toml)["environment"]["dockerfile"] == "environment/Dockerfile"
    with pytest.raises(Refusal, match="never pulls"):
        convert(raw, "t", has_dockerfile=False)


def test_harness_settings_are_ignored_with_a_note() -> None:
    _, notes = toml_of({"agent": {"kwargs": {"max_turns": 3}},
                          "environment": {"docker_flags": []}})  # fmt: skip
    assert any(n.startswith("agent.kwargs: ignored") for n in notes)
    assert any(n.startswith("environment.docker_flags: ignored") for n in notes)
    assert refused({"environment": {"docker_flags": ["--privileged"]}}) == (
        "environment.docker_flags"
    )


@pytest.mark.parametrize(
    ("text", "mb"), [("4G", 4096), ("512M", 512), ("1.5g", 1536), (" 2048K ", 2), ("0.5G", 512)]
)
def test_sizes_convert_as_harbor_converts_them(text: str, mb: int) -> None:
    assert size_mb(text, "environment.memory") == mb


def test_memory_string_and_its_conflicts() -> None:
    doc, _ = toml_of({"environment": {"memory": "4G"}})
    assert doc["limits"]["memory_mb"] == 4096
    assert toml_of({"environment": {"memory": "4G", "memory_mb": 4096}})[0]["limits"] == {
        "memory_mb": 4096
    }
    assert refused({"environment": {"memory": "4G", "memory_mb": 2048}}) == "environment.memory"
    assert refused({"environment": {"memory": "4 gigs"}}) == "environment.memory"
    assert refused({"environment": {"memory": 4}}) == "environment.memory"
    doc, _ = toml_of({"environment": {"storage": "64M"}})
    assert doc["limits"]["artifact_bytes"] == 64 << 20


def test_limits_past_the_caps_are_clamped_with_a_note_and_below_the_floor_refused() -> None:
    doc, notes = toml_of({"verifier": {"timeout_sec": 12000}, "agent": {"timeout_sec": 10**6},
                          "environment": {"cpus": 128, "memory_mb": 10**6,
                                          "storage_mb": 10240}})  # fmt: skip
    assert doc["limits"] == {"total_timeout": 7200.0, "agent_timeout": 86400.0, "cpus": 64.0,
                             "memory_mb": 65536, "artifact_bytes": 1 << 30}  # fmt: skip
    text = "\n".join(notes)
    for cap in ("12000 clamped to assay's cap 7200", "cpus: 128 clamped", "10240 clamped to 1024"):
        assert cap in text
    assert refused({"environment": {"memory_mb": 8}}) == "environment.memory_mb"
    assert refused({"agent": {"timeout_sec": 0}}) == "agent.timeout_sec"
    assert refused({"environment": {"cpus": True}}) == "environment.cpus"


def test_workdir_is_the_images_own_when_the_task_names_none() -> None:
    doc, _ = toml_of({})
    assert doc["environment"]["workdir"] == "image"
    assert toml_of({"environment": {"workdir": "/srv/x/"}})[0]["environment"]["workdir"] == "/srv/x"
    # An absolute artifact needs a known workdir; a relative one does not.
    assert refused({"artifacts": ["/app/out.txt"]}) == "artifacts[0].source"
    assert toml_of({"artifacts": ["out.txt"]})[0]["artifacts"] == ["out.txt", "out.txt/**"]


def test_a_multi_step_task_needs_a_step_named_before_any_file_check(tmp_path: Path) -> None:
    src = tmp_path / "multi"
    src.mkdir()  # no instruction.md, no environment/, no tests/: only task.toml
    (src / "task.toml").write_text('[[steps]]\nname = "a"\n[[steps]]\nname = "b"\n[agent]\nx = 1\n')
    with pytest.raises(Refusal) as info:
        import_harbor(src, tmp_path / "out")
    assert info.value.field == "steps"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"verifier": {"continuous": {"enabled": True}}}, "verifier.continuous"),
        ({"verifier": {"collect": [{"command": "x"}]}}, "verifier.collect"),
        ({"verifier": {"environment": {"cpus": 1}}}, "verifier.environment"),
        ({"environment": {"tpu": {"type": "v6e", "topology": "2x2"}}}, "environment.tpu"),
        ({"environment": {"mcp_servers": [{"name": "m"}]}}, "environment.mcp_servers"),
        ({"environment": {"env": {"KEY": "${KEY}"}}}, "environment.env"),
        ({"environment": {"healthcheck": {"command": "true"}}}, "environment.healthcheck"),
        ({"environment": {"skills_dir": "/skills"}}, "environment.skills_dir"),
        ({"environment": {"os": "windows"}}, "environment.os"),
        ({"artifacts": [{"source": "a", "service": "db"}]}, "artifacts[0].service"),
        ({"artifacts": [{"source": "a", "exclude": ["*.o"]}]}, "artifacts[0].exclude"),
        ({"artifacts": [{"source": "a", "mode": 1}]}, "artifacts[0].mode"),
        ({"artifacts": "a"}, "artifacts"),
        ({"environment": {"workdir": "/tests/x"}}, "environment.workdir"),
        ({"environment": {"workdir": "/proc"}}, "environment.workdir"),
        ({"color": 1}, "color"),
    ],
)
def test_refusals_name_the_field(raw: dict[str, Any], field: str) -> None:
    assert refused(raw) == field


def test_accepted_quietly_or_with_a_note() -> None:
    doc, notes = toml_of({
        "environment": {"build_timeout_sec": 10, "os": "Linux", "gpus": 0},
        "verifier": {"environment_mode": "shared", "continuous": {"enabled": False}},
        "multi_step_reward_strategy": "mean",
        "artifacts": [{"source": "out", "destination": "x"}, "out2"],
    })  # fmt: skip
    assert doc["artifacts"] == ["out", "out/**", "out2", "out2/**"]
    text = "\n".join(notes)
    assert "'shared' graded the separate-verifier way" in text
    assert "multi_step_reward_strategy: ignored" in text
    assert "artifacts[0].destination: ignored" in text


def test_the_three_real_format_fixtures_import(tmp_path: Path) -> None:
    log = load_task(import_harbor(EXAMPLES / "log-summary", tmp_path / "log"))
    assert log.config.artifacts == ["**"] and log.config.environment is not None
    assert log.config.environment.workdir == "image"
    assert log.config.description == "Summarise a web server access log as a JSON report"
    assert log.config.limits.memory_mb == 1024
    assert (log.root / "harbor-task.toml").read_bytes() == (
        EXAMPLES / "log-summary" / "task.toml"
    ).read_bytes()
    fizz = load_task(import_harbor(EXAMPLES / "fizzbuzz-v2", tmp_path / "fizz"))
    assert fizz.workdir == "/app" and fizz.config.limits.memory_mb == 512
    wc = load_task(import_harbor(EXAMPLES / "word-count", tmp_path / "wc"))
    assert wc.config.artifacts == ["wc.py", "wc.py/**"]
    assert wc.config.limits.total_timeout == 7200.0


def test_the_image_workdir_is_read_from_the_image_and_checked(tmp_path: Path) -> None:
    task = load_task(import_harbor(EXAMPLES / "log-summary", tmp_path / "log"))
    with pytest.raises(TaskEnvironmentError, match="not yet read from the image"):
        _ = task.workdir
    for bad in ("", "/", "/logs/verifier", "/tests", "/proc/x", "relative"):
        image = SimpleNamespace(attrs={"Config": {"WorkingDir": bad}})
        with pytest.raises(TaskEnvironmentError, match="WORKDIR"):
            _workdir(task, image)
    assert _workdir(task, SimpleNamespace(attrs={"Config": {"WorkingDir": "/srv/logsum/"}})) == (
        "/srv/logsum"
    )
    assert task.workdir == "/srv/logsum"


def test_a_test_script_reading_outside_the_workdir_is_noted(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(EXAMPLES / "fizzbuzz-v2", src)
    (src / "tests" / "test.sh").write_text(
        "#!/bin/bash\ncat /opt/state/out.txt /app/ok /tests/x > /dev/null\n"
        "curl -s https://example.com/a/b | /usr/bin/env python3 ~/.x $HOME/y\n"
        "echo 1 > /logs/verifier/reward.txt\n"
    )
    notes = import_tree(src, None)[0].notes
    text = "\n".join(notes)
    assert "outside-workdir: reads paths outside the workdir /app: /opt/state/out.txt;" in text
    assert "network: fetches from the network (curl)" in text
    assert "python-cwd" not in text
    script = src / "tests" / "test.sh"
    for line, noted in [("python3 -m pytest /tests", True), ("python3 -B -c 'x'", True),
                        ("python3 -I -m pytest /tests", False), ("python3 -P -m x", False),
                        ("# python3 -m pytest", False), ("pytest /tests", False)]:  # fmt: skip
        script.write_text(f"#!/bin/bash\ncd /app\n{line}\n")
        notes = [n.split(":")[0] for n in import_tree(src, None)[0].notes]
        assert ("tests/test.sh python-cwd" in notes) == noted, line


def test_a_directory_of_tasks_and_its_survey(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES, tree / "ok")
    bad = tree / "bad" / "multi"
    bad.mkdir(parents=True)
    (bad / "task.toml").write_text('[[steps]]\nname = "a"\n')
    sidecar = tree / "bad" / "sidecar"
    shutil.copytree(EXAMPLES / "greet", sidecar)
    (sidecar / "environment" / "docker-compose.yaml").write_text("services: {}\n")
    untouched = tmp_path / "untouched"
    result = CliRunner().invoke(
        main, ["import", "harbor", str(tree), "--report", "--out", str(untouched)]
    )
    assert result.exit_code == 1, result.output
    assert not untouched.exists()  # --report writes nothing
    assert "tasks     8" in result.output and "accepted  6" in result.output
    # A multi-step task is one task per step: this one's only step lacks its instruction.
    assert "refused by steps/a/instruction.md: 1" in result.output
    assert "refused by environment/docker-compose.yaml: 1" in result.output
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["import", "harbor", str(tree), "--out", str(out)])
    assert result.exit_code == 1, result.output
    report = json.loads((out / "import-report.json").read_text())
    assert sorted(report["converted"]) == ["csv-total", "fizzbuzz-v2", "greet", "log-canary",
                                           "log-summary", "word-count"]  # fmt: skip
    assert len(report["not_converted"]) == 2
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*report["converted"], "import-report.json"]
    )


def test_an_import_into_its_own_tree_does_not_import_what_it_writes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES / "greet", tree / "greet")
    (tree / "greet" / "instruction.md").unlink()
    (tree / "greet" / "instruction.md").symlink_to("/etc/hostname")
    shutil.copytree(EXAMPLES / "word-count", tree / "word-count")
    results = import_tree(tree, tree / "out")
    assert [(r.task_id, r.reason) for r in results] == [
        ("greet", "instruction.md"), ("word-count", "")
    ]  # fmt: skip
    assert sorted(p.name for p in (tree / "out").iterdir()) == ["word-count"]
    # Another import finds out/word-count, an assay task: refused as a Harbor task, and it
    # does not take the id from the real one.
    again = import_tree(tree, tree / "out2")
    assert [(r.task_id, r.reason) for r in again] == [
        ("greet", "instruction.md"), ("word-count", "id"), ("word-count", "")
    ]  # fmt: skip
