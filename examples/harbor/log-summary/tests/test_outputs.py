"""The report must match the log the tests hold themselves (/tests/access.log): an agent that
edits the log in its workdir does not change what is expected."""

import json
from collections import Counter
from pathlib import Path

LOG = Path("/tests/access.log").read_text().splitlines()


def report() -> dict:
    return json.loads(Path("report.json").read_text())


def test_requests() -> None:
    assert report()["requests"] == len(LOG)


def test_bytes() -> None:
    sizes = [line.rsplit(" ", 1)[1] for line in LOG]
    assert report()["bytes"] == sum(int(s) for s in sizes if s != "-")


def test_status() -> None:
    assert report()["status"] == dict(Counter(line.split('" ')[1].split()[0] for line in LOG))
