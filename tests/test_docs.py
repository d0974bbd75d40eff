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
