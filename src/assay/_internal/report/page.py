"""One self-contained HTML page: a strict Content-Security-Policy, the page's own style and
script allowed by their hashes, and the data as JSON in a non-executable script element.

What keeps candidate bytes inert (docs/report.md):
- the data is JSON with `<`, `>` and `&` escaped (and, being ASCII, U+2028/2029 too), so no
  byte of it can close its script element or open another;
- the page's script puts every string into the page with textContent, never as markup;
- the policy allows no other script, no inline handler, no request of any kind
  (`default-src 'none'`), so even markup that got in could neither run nor fetch.
"""

from __future__ import annotations

import base64
import hashlib
import json
from importlib.resources import files
from typing import Any

TITLE = "assay report"


def _asset(name: str) -> str:
    return files(__package__ or "assay._internal.report").joinpath(name).read_text("utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def embed_json(data: Any) -> str:
    """JSON that is safe inside <script type="application/json">: it cannot end the element."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def policy(script: str, style: str) -> str:
    return (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )


def render(data: dict[str, Any]) -> str:
    """`data`: {"kind": "batch"|"matrix", "title", "subtitle", ...}; report.js reads it."""
    script, style = _asset("report.js"), _asset("report.css")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy(script, style)}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{TITLE}</title>\n<style>{style}</style></head>\n<body>\n"
        '<header><h1 id="title"></h1><div class="sub" id="subtitle"></div></header>\n'
        '<div id="app"><main><p>This report needs JavaScript to display.</p></main></div>\n'
        f'<script type="application/json" id="assay-data">{embed_json(data)}</script>\n'
        f"<script>{script}</script>\n</body></html>\n"
    )
