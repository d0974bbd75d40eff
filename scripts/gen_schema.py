"""Write (or check) docs/schema/verdict.v1.json from the Verdict model.

python scripts/gen_schema.py           # regenerate the committed schema
python scripts/gen_schema.py --check   # exit 1 if the committed schema has drifted
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from assay._internal.model.verdict import Verdict

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "schema" / "verdict.v1.json"
SCHEMA_ID = "https://assay.dev/schema/verdict.v1.json"


def render() -> str:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **Verdict.model_json_schema(mode="validation"),
    }
    return json.dumps(schema, indent=2, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    parser.add_argument("--path", type=Path, default=SCHEMA_PATH)
    args = parser.parse_args(argv)
    wanted = render()
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.exists() else ""
        if current != wanted:
            print(f"{args.path} is out of date; run: python scripts/gen_schema.py", file=sys.stderr)
            return 1
        return 0
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
