"""SWE-bench instances imported and graded for real: `assay import swebench` from a SWE-bench 5
task repository and from dataset rows, predictions graded as patches applied in a container of
the instance image, and the history the agent sees cut to base_commit.

The instances are the fixtures under tests/swebench/ (their images mirror a SWE-bench instance
image's layout; tests/docker/test_swebench_fixtures_docker.py shows that SWE-bench's own eval
script resolves them with the gold patch, that it does not without it, and that the images leak
the fix commit the way SWE-bench's did).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.swebench import (
    CALC,
    INSTANCE_IDS,
    PREDICTIONS,
    ROWS,
    STRKIT,
    TASKREPO,
    build_instance_images,
    history,
)

import assay
from assay._internal.importers.swebench import import_swebench

pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("swebench")]

ROOT = Path(__file__).resolve().parents[2]
ASSAY = [sys.executable, "-m", "assay"]


def cli(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ASSAY, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)  # fmt: skip


def predictions(name: str) -> dict[str, str]:
    rows = [json.loads(line) for line in (PREDICTIONS / f"{name}.jsonl").read_text().splitlines()]
    return {r["instance_id"]: r["model_patch"] for r in rows}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both formats imported through the CLI, with the instance images on the engine."""
    build_instance_images(None)
    out = tmp_path_factory.mktemp("swebench")
    # The classic row of calc carries no eval_script, and swebench knows nothing of acme/calc.
    refused = cli("import", "swebench", ROWS, "--report")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"{CALC}: not converted" in refused.stderr and "--runner pytest" in refused.stderr
    for name, src, extra in (("repo", TASKREPO, ()), ("rows", ROWS, ("--runner", "pytest"))):
        run = cli("import", "swebench", src, "--out", out / name, *extra)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "wrote 2 of 2 task(s)" in run.stdout, run.stdout
        report = json.loads((out / name / "import-report.json").read_text())
        assert sorted(report["converted"]) == sorted(INSTANCE_IDS)
        assert report["not_converted"] == {}
    return {"repo": out / "repo", "rows": out / "rows"}


@pytest.fixture(scope="module")
def grader() -> assay.Grader:
    with assay.Grader(reuse_judges=False) as g:
        yield g  # type: ignore[misc]


def test_the_import_uses_the_instance_image_and_its_environment(imported: dict[str, Path]) -> None:
    for fmt in ("repo", "rows"):
        df = (imported[fmt] / STRKIT / "environment" / "Dockerfile").read_text()
        assert df.startswith(f"FROM sweb.eval.x86_64.{STRKIT}:latest\n")
        assert 'ENV STRKIT_LOCALE="C"' in df  # the export of its eval.sh
        task = assay.load_task(imported[fmt] / STRKIT)
        assert task.config.pytest is not None and task.config.pytest.test_dirs == ["tests/unit"]


def test_predictions_grade_as_swebench_means_them_but_never_from_a_log(
    imported: dict[str, Path], grader: assay.Grader
) -> None:
    """gold passes; a wrong fix, an empty patch, one that does not apply, a conftest.py that
    forces every report to pass (SWE-bench #631) and a rewritten test file all fail, each
    naming why. Both formats' tasks are graded (the repo's for half, the rows' for the rest)."""
    expected = {
        "gold": None,
        "wrong": "junit:failure",
        "empty": "patch:empty",
        "unappliable": "patch:does-not-apply",
        "conftest": "policy:conftest",
        "edits_tests": "policy:test-dir",
    }
    jobs = [
        (name, iid, imported["repo" if n % 2 else "rows"] / iid, patch)
        for n, name in enumerate(expected)
        for iid, patch in predictions(name).items()
    ]

    def grade(job: tuple[str, str, Path, str]) -> tuple[str, str, assay.Verdict]:
        name, iid, task, patch = job
        return name, iid, grader.grade(task, assay.Patch(patch)).verdict

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(grade, jobs))
    assert len(results) == 12
    for name, iid, verdict in results:
        why = expected[name]
        if why is None:
            assert verdict.passed and verdict.score == 1.0, (iid, verdict.reason_codes)
        else:
            assert not verdict.passed, (name, iid)
            assert why in verdict.reason_codes, (name, iid, verdict.reason_codes)


def test_grade_many_takes_a_predictions_file(imported: dict[str, Path], tmp_path: Path) -> None:
    mixed = tmp_path / "preds.jsonl"
    gold, empty = predictions("gold"), predictions("empty")
    mixed.write_text(
        json.dumps({"instance_id": CALC, "model_name_or_path": "m", "model_patch": gold[CALC]})
        + "\n"
        + json.dumps(
            {"instance_id": STRKIT, "model_name_or_path": "m", "model_patch": empty[STRKIT]}
        )
        + "\n"
    )
    run = cli("grade-many", imported["rows"], "--predictions", mixed, "--out", tmp_path / "out")
    assert run.returncode == 0, run.stderr
    assert "passed 1, failed 1, errors 0" in run.stderr, run.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["failures"][0]["reasons"] == ["patch:empty"], summary
    # A rerun keeps the gold verdict (its diff is the one recorded beside it); the empty patch
    # has no tree to name, so it is graded again (no container: it fails before any).
    again = cli("grade-many", imported["rows"], "--predictions", mixed, "--out", tmp_path / "out")
    assert again.returncode == 0, again.stderr
    assert "1 resumed, 1 graded now" in again.stderr, again.stderr
    # Another diff for the same instance is graded again, never kept.
    mixed.write_text(
        json.dumps({"instance_id": CALC, "model_patch": gold[CALC] + "\n"})
        + "\n"
        + json.dumps({"instance_id": STRKIT, "model_patch": ""})
        + "\n"
    )
    third = cli("grade-many", imported["rows"], "--predictions", mixed, "--out", tmp_path / "out")
    assert third.returncode == 0, third.stderr
    assert "0 resumed, 2 graded now" in third.stderr, third.stderr


def test_the_agent_cannot_find_the_fix_commit(
    imported: dict[str, Path], grader: assay.Grader
) -> None:
    """In the instance image the fix commit is on a branch, a tag and the reflog
    (test_swebench_fixtures_docker.py); in the agent's container of the imported task, the
    repository has one commit, base_commit, and nothing reaches the fix."""
    for iid in INSTANCE_IDS:
        facts = history()[iid]
        with grader.session(imported["repo"] / iid) as session:
            probe = session.exec(
                f"git cat-file -e {facts['fix_commit']} 2>/dev/null && echo FOUND; "
                "echo revs: $(git rev-list --all); echo tags: $(git tag -l); "
                "echo refs: $(git for-each-ref --format='%(refname)'); "
                "echo reflog: $(git reflog --all 2>&1); echo head: $(git rev-parse HEAD); "
                "echo changed: $(git status --porcelain | wc -l); "
                "cat .git/packed-refs .git/ORIG_HEAD .git/FETCH_HEAD 2>/dev/null"
            )
        out = probe.stdout.decode()
        lines = dict(line.split(":", 1) for line in out.splitlines() if ":" in line[:8])
        assert "FOUND" not in out, out
        assert facts["fix_commit"] not in out, out
        assert lines["revs"].split() == [facts["base_commit"]], out
        assert lines["head"].split() == [facts["base_commit"]], out
        assert lines["tags"].split() == [] and lines["reflog"].split() == [], out
        assert lines["refs"].split() == ["refs/heads/main"], out
        assert lines["changed"].split() == ["0"], out  # the working tree is the base tree
        assert "upstream" not in out and "origin" not in out, out


def test_without_the_instance_image_the_tasks_dockerfile_is_built(
    tmp_path: Path, grader: assay.Grader
) -> None:
    """The same instance when its image is not on the engine: the task repository's Dockerfile
    (its context the task directory) is built locally, with assay's layer on top."""
    [r] = import_swebench(TASKREPO, tmp_path, lambda ref: False, only=frozenset({CALC}))
    assert r.reason is None and r.out is not None, r.reason
    df = (r.out / "environment" / "Dockerfile").read_text()
    assert df.startswith("# The instance image of acme__calc-101"), df[:200]
    assert "COPY assay-history.sh" in df
    graded = grader.grade(r.out, assay.Patch(predictions("gold")[CALC]))
    assert graded.verdict.passed, graded.verdict.reason_codes


def _variant(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


def test_import_validate_proves_the_instances_and_catches_the_broken_ones(
    imported: dict[str, Path], tmp_path: Path
) -> None:
    """`assay import swebench --validate` shows an instance gradeable; `assay validate`
    names what is wrong with three broken copies: an id cut at whitespace as SWE-bench's data
    holds it (#290), a reference (gold patch) that fails, and inputs that hold the test patch."""
    run = cli(
        "import", "swebench", TASKREPO, "--out", tmp_path / "ok", "--only", CALC, "--validate"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 1 task(s) gradeable" in run.stdout, run.stdout
    bad = tmp_path / "bad"
    bad.mkdir()
    cut = _variant(imported["repo"] / STRKIT, bad / "cut-id")
    toml = cut / "task.toml"
    full = "tests/unit/test_slug.py::test_slug[Hello,World!-hello-world]"
    assert full in toml.read_text()
    toml.write_text(toml.read_text().replace(full, "tests/unit/test_slug.py::test_slug[Hello"))
    failing = _variant(imported["repo"] / CALC, bad / "wrong-reference")
    (failing / "solutions" / "gold.patch").write_text(predictions("wrong")[CALC])
    leaky = _variant(imported["repo"] / CALC, bad / "leaky-inputs")
    with (leaky / "inputs" / "ISSUE.md").open("a") as fh:
        fh.write("\n\nThe maintainers' tests:\n\n" + (leaky / "judge" / "test.patch").read_text())

    run = cli("validate", bad, "--jobs", "2", "--json", tmp_path / "v.json")
    assert run.returncode == 1, run.stdout + run.stderr
    doc = json.loads((tmp_path / "v.json").read_text())
    assert doc["gradeable"] is False
    reports = doc["tasks"]
    failed = {
        Path(r["path"]).name: {c["name"]: c["detail"] for c in r["checks"] if not c["ok"]}
        for r in reports
    }
    assert set(failed) == {"cut-id", "wrong-reference", "leaky-inputs"}, failed
    assert "test_slug[Hello" in " ".join(failed["cut-id"].values()), failed["cut-id"]
    assert "reference" in failed["wrong-reference"], failed["wrong-reference"]
    assert "ISSUE.md" in failed["leaky-inputs"].get("no-leak", ""), failed["leaky-inputs"]
    assert "reference" not in failed["leaky-inputs"], failed["leaky-inputs"]
