"""Documents that must stay true: the README's matrix summary, its two commands, CI's entry."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _table(text: str, header: str) -> str:
    start = text.index(header)
    end = text.index("\n\n", start)
    return text[start:end]


def test_readme_matrix_tables_match_docs_matrix() -> None:
    readme = (ROOT / "README.md").read_text()
    matrix = (ROOT / "docs/matrix.md").read_text()
    for header in ("| tier | exploit | blocked |", "| class | attacks |"):
        assert _table(readme, header) == _table(matrix, header), header


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    first_block = readme[readme.index("```sh") : readme.index("```", readme.index("```sh") + 5)]
    assert "bash scripts/grade-examples.sh" in first_block
    assert "bash scripts/test.sh" in first_block
    ci = (ROOT / ".ci/run").read_text()
    assert "exec bash scripts/test.sh" in ci


def test_every_container_is_created_through_the_runtime() -> None:
    """docs/security.md: containers are created in one place (issue 10 finding 10c: the bench
    created its floor containers with docker-py directly)."""
    import re

    creation = re.compile(r"\.containers\.(run|create)\(|create_container\(")
    docker_backend = ROOT / "src/assay/_internal/runtime/docker.py"
    elsewhere = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]
        if path != docker_backend
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if creation.search(line)
    ]
    assert elsewhere == []
    assert creation.search(docker_backend.read_text())  # the pattern does find a creation
