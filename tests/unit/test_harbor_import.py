"""`assay import harbor`: the layout it writes, and every refusal naming its field. Each field
Harbor defines, and what real tasks add, has its test in tests/unit/test_harbor_fields.py."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay._internal.importers.harbor import import_harbor
from assay._internal.model.task import load_task
from assay.cli import main
from assay.errors import UsageError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harbor"


def test_greet_layout(tmp_path: Path) -> None:
    out = import_harbor(EXAMPLES / "greet", tmp_path / "greet")
    doc = tomllib.loads((out / "task.toml").read_text())
    assert doc["kind"] == "harbor"
    assert doc["id"] == "greet"
    assert doc["artifacts"] == ["greet.sh", "greet.sh/**"]
    assert doc["environment"] == {"dockerfile": "environment/Dockerfile", "workdir": "/app"}
    assert doc["limits"] == {
        "agent_timeout": 120.0, "total_timeout": 60.0, "cpus": 1.0, "memory_mb": 512,
        "artifact_bytes": 16 << 20,
    }  # fmt: skip
    assert (out / "inputs" / "instruction.md").read_bytes() == (
        EXAMPLES / "greet" / "instruction.md"
    ).read_bytes()
    # The tests are on the judge side only: never in inputs/, never in the build context.
    assert (out / "judge" / "tests" / "test.sh").is_file()
    assert sorted(p.name for p in (out / "environment").rglob("*")) == ["Dockerfile"]
    assert sorted(p.name for p in (out / "inputs").rglob("*")) == ["instruction.md"]
    assert (out / "solutions" / "reference" / "solve.sh").stat().st_mode & 0o111
    task = load_task(out)
    assert task.config.kind == "harbor"


def test_relative_artifact_and_verifier_env(tmp_path: Path) -> None:
    out = import_harbor(EXAMPLES / "csv-total", tmp_path / "t")
    doc = tomllib.loads((out / "task.toml").read_text())
    assert doc["artifacts"] == ["total.py", "total.py/**"]
    assert doc["environment"]["workdir"] == "image"  # none named: the image's own WORKDIR
    assert doc["harbor"] == {"verifier_env": {"TOTAL_CASES": "4"}}
    assert "artifact_bytes" not in doc["limits"]


def harbor_task(tmp_path: Path, toml_extra: str, base: str = "greet") -> Path:
    src = tmp_path / "src"
    shutil.copytree(EXAMPLES / base, src)
    toml = src / "task.toml"
    if toml_extra.startswith("["):
        toml.write_text(toml.read_text() + "\n" + toml_extra)
    else:  # a top-level key goes before the first table
        toml.write_text(toml_extra + toml.read_text())
    return src


REFUSALS = [
    ('[[steps]]\nname = "a"\n[[steps]]\nname = "b"\n', "steps"),
    ('[solution.env]\nX = "1"\n', "solution.env"),
    ('color = "blue"\n', "color"),
]
ENV_REFUSALS = [
    ('network_mode = "allowlist"', "environment.network_mode"),
    ('allowed_hosts = ["pypi.org"]', "environment.allowed_hosts"),
    ("gpus = 1", "environment.gpus"),
    ('gpu_types = ["h100"]', "environment.gpu_types"),
    ('workdir = "/logs"', "environment.workdir"),
    ('workdir = "/"', "environment.workdir"),
    ('workdir = "/app/../etc"', "environment.workdir"),
    ("cpus = 0", "environment.cpus"),
    ("memory_mb = true", "environment.memory_mb"),
    ('frobnicate = "x"', "environment.frobnicate"),
]


def replace_section(src: Path, section: str, body: str) -> None:
    toml = src / "task.toml"
    toml.write_text(toml.read_text().replace(f"[{section}]\n", f"[{section}]\n{body}\n", 1))


@pytest.mark.parametrize(("extra", "field"), REFUSALS)
def test_top_level_refusals_name_the_field(tmp_path: Path, extra: str, field: str) -> None:
    src = harbor_task(tmp_path, extra)
    with pytest.raises(UsageError, match=f"'{field}'"):
        import_harbor(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("line", "field"), ENV_REFUSALS)
def test_environment_refusals_name_the_field(tmp_path: Path, line: str, field: str) -> None:
    src = harbor_task(tmp_path, "")
    text = (src / "task.toml").read_text()
    key = line.split(" = ")[0]
    kept = [ln for ln in text.splitlines() if not ln.startswith(f"{key} = ")]
    (src / "task.toml").write_text("\n".join(kept) + "\n")
    replace_section(src, "environment", line)
    with pytest.raises(UsageError, match=f"'{field}'"):
        import_harbor(src, tmp_path / "out")


@pytest.mark.parametrize(
    ("section", "line", "field"),
    [
        ("verifier", 'user = "root"', "verifier.user"),
        ("agent", 'user = "root"', "agent.user"),
        ("verifier", 'environment_mode = "both"', "verifier.environment_mode"),
        ("verifier", "timeout_sec = -1", "verifier.timeout_sec"),
        ("agent", 'flavour = "x"', "agent.flavour"),
    ],
)
def test_phase_refusals_name_the_field(tmp_path: Path, section: str, line: str, field: str) -> None:
    src = harbor_task(tmp_path, "", base="csv-total")
    if line.startswith("timeout_sec"):
        text = (src / "task.toml").read_text()
        (src / "task.toml").write_text(text.replace("timeout_sec = 60.0\n", "", 1))
    replace_section(src, section, line)
    with pytest.raises(UsageError, match=f"'{field}'"):
        import_harbor(src, tmp_path / "out")


def test_artifact_refusals(tmp_path: Path) -> None:
    src = harbor_task(tmp_path, "")
    toml = src / "task.toml"
    base = toml.read_text()
    for artifact, field in [
        ('"/etc/passwd"', "artifacts[0].source"),
        ('"/app/../logs/verifier/reward.txt"', "artifacts[0].source"),
        ('"/app/*.sh"', "artifacts[0].source"),
    ]:
        toml.write_text(base.replace('"/app/greet.sh"', artifact))
        with pytest.raises(UsageError, match=re.escape(f"'{field}'")):
            import_harbor(src, tmp_path / "out")


@pytest.mark.parametrize("where", ["environment/docker-compose.yaml", "tests/compose.yml"])
def test_compose_refused(tmp_path: Path, where: str) -> None:
    src = harbor_task(tmp_path, "")
    (src / where).write_text("services: {}\n")
    with pytest.raises(UsageError, match=f"'{where}'"):
        import_harbor(src, tmp_path / "out")


def test_symlink_refused(tmp_path: Path) -> None:
    src = harbor_task(tmp_path, "")
    (src / "tests" / "link").symlink_to("/etc/passwd")
    with pytest.raises(UsageError, match="symbolic link"):
        import_harbor(src, tmp_path / "out")


def test_cli_refusal_is_exit_1_naming_the_field(tmp_path: Path) -> None:
    src = harbor_task(tmp_path, "")
    replace_section(src, "environment", 'allowed_hosts = ["example.com"]')
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["import", "harbor", str(src), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "environment.allowed_hosts" in result.output
    report = json.loads((out / "import-report.json").read_text())
    assert report["converted"] == {}
    assert "environment.allowed_hosts" in report["not_converted"][str(src)]
    ok = CliRunner().invoke(
        main, ["import", "harbor", str(EXAMPLES / "greet"), "--out", str(tmp_path / "g")]
    )
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "g" / "greet" / "task.toml").is_file()
    missing = CliRunner().invoke(main, ["import", "harbor", str(tmp_path / "nothing")])
    assert missing.exit_code == 2, missing.output


@pytest.mark.parametrize(("source", "committed_as"), [("greet", "greet-harbor"),
                                                      ("log-canary", "log-canary-harbor")])  # fmt: skip
def test_the_committed_imports_are_what_the_importer_writes(
    tmp_path: Path, source: str, committed_as: str
) -> None:
    """examples/greet-harbor (the proof matrix's solvable Harbor task) and
    examples/log-canary-harbor (its real-format canary) are their sources as imported: every
    file but solutions/ and task.toml's opening comment equals a fresh import."""
    fresh = import_harbor(EXAMPLES / source, tmp_path / source)
    committed = EXAMPLES.parent / committed_as

    def files(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] != "solutions"
        }

    def body(toml: bytes) -> bytes:
        return b"\n".join(ln for ln in toml.splitlines() if not ln.startswith(b"#"))

    got, want = files(committed), files(fresh)
    assert body(got.pop("task.toml")) == body(want.pop("task.toml"))
    assert got == want
