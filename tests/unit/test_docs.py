"""Documents that must stay true: the README's matrix summary, its two commands, CI's entry."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


# -- counts quoted in the documents ----------------------------------------------------------
# docs/matrix.md, written by `assay matrix`, is the one source of every count of attacks,
# exploits and blocks the documents quote. Each quote is a claim below, checked against the
# committed matrix; a number next to "attacks", "exploits", "classes", after "all" or "blocks"
# that no claim covers fails too, so a new quote cannot drift unchecked.

COUNTED_DOCS = (
    "README.md", "TAXONOMY.md", "corpus/README.md", "docs/compat.md", "docs/security.md",
    "docs/matrix.md", "docs/tasks.md",
)  # fmt: skip
_QUOTE = re.compile(
    r"\b\d+\b(?=(?:\s+[\w'/-]+){0,3}?\s+(?:attacks?|exploits?|classes)\b)"
    r"|(?<=\ball\s)\d+\b|(?<=\bblocks\s)\d+\b"
)


STDIO = "stdio-"


class Counts:
    """Per tier column of docs/matrix.md's "Every attack" table: how many cells say what."""

    def __init__(self, matrix: str) -> None:
        section = matrix[matrix.index("## Every attack") : matrix.index("## Honest controls")]
        rows = [
            [c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines()
            if line.startswith("|")
        ]
        self.header, body = rows[0], [r for r in rows[2:] if r[0].startswith("`")]
        self.attacks = len(body)
        self.classes = len({r[1] for r in body})
        self._body = body

    def n(self, tier: str, outcome: str, prefix: str = "") -> int:
        """Cells of `tier` that say `outcome`, of the attacks whose id starts with `prefix`."""
        col = self.header.index(tier)
        return sum(
            1
            for r in self._body
            if r[col].removesuffix(" (!)") == outcome and r[0].strip("`").startswith(prefix)
        )

    def flagged(self, reason_column: str) -> int:
        """Cells of a reason column marked `(tamper)`: blocked attacks flagged as tampering."""
        col = self.header.index(reason_column)
        return sum(1 for r in self._body if r[col].endswith(" (tamper)"))

    def named(self, prefix: str) -> int:
        return sum(1 for r in self._body if r[0].strip("`").startswith(prefix))


def _claims(c: Counts) -> list[tuple[str, tuple[int, ...]]]:
    t3_all = c.n("T3 strict", "blocked") if c.n("T3 strict", "exploit") == 0 else -1
    hb, he = c.n("Harbor", "blocked"), c.n("Harbor", "exploit")
    # The stdin/stdout attacks win on T2 through their task's own lenient tests, not ADR 0002's
    # shared process: the documents count them apart.
    t2, t2_stdio = c.n("T2 compat", "exploit"), c.n("T2 compat", "exploit", STDIO)
    return [
        (r"(\d+) attacks in (\d+) classes", (c.attacks, c.classes)),
        (
            r"T2's (\d+) exploits are the five in-process attacks ADR 0002 names, (\d+) variants"
            r" of the same cause \(`docs/compat.md`\), and (\d+) of the (\d+) stdin/stdout attacks",
            (t2, t2 - 5 - t2_stdio, t2_stdio, c.named(STDIO)),
        ),
        (
            r"T2's (\d+) exploits in the proof matrix are (\d+) more attacks",
            (t2, t2 - 5 - t2_stdio),
        ),
        (r"the (\d+) stdin/stdout attacks that win", (t2_stdio,)),
        (r"T3 blocks all (\d+) it grades", (t3_all,)),
        (
            r"(\d+) attacks in the corpus win there by design \(ADR 0002\), and (\d+) more",
            (t2 - t2_stdio, t2_stdio),
        ),
        (r"The harbor tier blocks (\d+) of the (\d+) attacks on Harbor tasks", (hb, hb + he)),
        (r"(\d+) exploits? on the harbor tier", (he,)),
    ]


def test_every_count_the_documents_quote_is_the_committed_matrixs() -> None:
    counts = Counts((ROOT / "docs/matrix.md").read_text())
    claims = [(re.compile(p.replace(" ", r"\s+")), want) for p, want in _claims(counts)]
    wrong, unchecked = [], []
    for name in COUNTED_DOCS:
        text = (ROOT / name).read_text()
        covered: list[tuple[int, int]] = []
        for pattern, want in claims:
            for m in pattern.finditer(text):
                covered.append(m.span())
                got = tuple(int(g) for g in m.groups())
                if got != want:
                    wrong.append(f"{name}: {m.group(0)!r} (the matrix says {want})")
        for m in _QUOTE.finditer(text):
            if not any(a <= m.start() < b for a, b in covered):
                line = text.count("\n", 0, m.start()) + 1
                unchecked.append(f"{name}:{line}: {text[m.start() : m.start() + 40]!r}")
    assert wrong == [], "a count that is not the committed matrix's"
    assert unchecked == [], "a count no claim in tests/unit/test_docs.py checks"


def test_the_matrix_summary_agrees_with_its_own_table() -> None:
    matrix = (ROOT / "docs/matrix.md").read_text()
    counts = Counts(matrix)
    summary = _table(matrix, "| tier | exploit | blocked |").splitlines()[2:]
    for line in summary:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        tier, exploit, blocked, flagged, na = cells
        got = (counts.n(tier, "exploit"), counts.n(tier, "blocked"), counts.n(tier, "n/a"))
        assert got == (int(exploit), int(blocked), int(na)), tier
        reason = f"{tier.split()[0]} reason"
        if reason in counts.header:  # the tiers whose blocking verdicts are checked for a flag
            assert counts.flagged(reason) == int(flagged), tier
        else:
            assert flagged == "n/a", tier
