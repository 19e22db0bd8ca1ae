"""The site's Endpoints page is written from the OpenAPI document the server serves
(scripts/api_reference.py): every operation of it is on the page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from responses_app.api.openapi import openapi_document
from tests.docs.examples import ROOT


def test_the_endpoints_page_names_every_operation_of_the_openapi_document(tmp_path: Path):
    page = tmp_path / "api-reference.md"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "api_reference.py"), "--output", str(page)], check=True,
                   cwd=ROOT, capture_output=True)
    text = page.read_text()
    operations = [(method, path) for path, item in openapi_document()["paths"].items()
                  for method in ("get", "post", "delete") if method in item]
    assert len(operations) > 40
    missing = [f"{method.upper()} {path}" for method, path in operations if f"`{method.upper()} {path}`" not in text]
    assert not missing
    assert "| `background` | boolean or null |" in text  # a create's body fields, from the SDK's types
