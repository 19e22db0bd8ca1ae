"""Write docs/api-reference.md, the site's page of every endpoint, from the OpenAPI document
that ``GET /v1/openapi.json`` serves (responses_app/api/openapi.py), so that the page
cannot drift from the API. ``make docs`` and ``make test`` run it before MkDocs; the page
is not kept in git.

    .venv/bin/python scripts/api_reference.py [--output docs/api-reference.md]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()

from responses_app.api.openapi import openapi_document  # noqa: E402

METHODS = ("get", "post", "delete")
INTRO = """# Endpoints

Every operation of `/v1`, generated from the OpenAPI document that the server serves at
`GET /v1/openapi.json` (`scripts/api_reference.py`, run by `make docs`): what each takes
and answers. What each request field does here, and how it maps onto gpt-oss, is in
[The Responses API](api.md#request-fields); the document itself is the full schema, with
the openai SDK's own types.
"""


def schema_name(schema: dict[str, Any]) -> str:
    """A schema as a short type: its component's name, its type, or the choices."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(schema_name(choice) for choice in schema[key]))
    if "allOf" in schema:
        return " and ".join(schema_name(part) for part in schema["allOf"])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        return " or ".join(schema_name({**schema, "type": one}) for one in kind)
    if kind == "array":
        return f"array of {schema_name(schema.get('items') or {})}"
    if "enum" in schema:
        return " / ".join(f"`{value}`" for value in schema["enum"])
    return kind


def properties(schema: dict[str, Any], components: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The top-level fields of a request body, through its references and allOf parts."""
    if "$ref" in schema:
        return properties(components[schema["$ref"].rsplit("/", 1)[-1]], components)
    fields, required = dict(schema.get("properties") or {}), set(schema.get("required") or [])
    for part in schema.get("allOf") or []:
        more, also = properties(part, components)
        fields.update(more)
        required |= also
    return fields, required


def first_line(text: str | None) -> str:
    return " ".join((text or "").strip().split("\n\n")[0].split()).replace("|", "\\|")


def operation(path: str, method: str, spec: dict[str, Any], components: dict[str, Any]) -> list[str]:
    lines = [f"### {spec.get('summary') or spec['operationId']}", "", f"`{method.upper()} {path}`", ""]
    if spec.get("description") and spec["description"] not in (spec.get("summary"), f"{method.upper()} {path}"):
        lines += [first_line(spec["description"]), ""]
    parameters = spec.get("parameters") or []
    if parameters:
        lines += ["| parameter | in | type | required | description |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{p['name']}` | {p['in']} | {schema_name(p.get('schema') or {})} | "
                  f"{'yes' if p.get('required') else ''} | {first_line(p.get('description'))} |" for p in parameters]
        lines.append("")
    content = (spec.get("requestBody") or {}).get("content") or {}
    for media_type, body in content.items():
        fields, required = properties(body.get("schema") or {}, components)
        if not fields:
            continue
        lines += [f"Body ({media_type}):", "", "| field | type | required | description |", "| --- | --- | --- | --- |"]
        lines += [f"| `{name}` | {schema_name(field)} | {'yes' if name in required else ''} | "
                  f"{first_line(field.get('description'))} |" for name, field in fields.items()]
        lines.append("")
    lines += ["Answers: " + "; ".join(answer(status, spec) for status, spec in (spec.get("responses") or {}).items()),
              ""]
    return lines


def answer(status: str, spec: dict[str, Any]) -> str:
    """``200`` with what it carries (its schema per media type) and its description."""
    carried = [f"{schema_name(body.get('schema') or {})} ({media_type})"
               for media_type, body in (spec.get("content") or {}).items() if media_type != "text/event-stream"]
    if "text/event-stream" in (spec.get("content") or {}):
        carried.append("the events (text/event-stream)")
    parts = [", ".join(carried), first_line(spec.get("description"))]
    return f"{status}: " + " — ".join(part for part in parts if part)


def reference(document: dict[str, Any]) -> str:
    components = document["components"]["schemas"]
    by_tag: dict[str, list[str]] = {}
    for path, item in document["paths"].items():
        for method in METHODS:
            spec = item.get(method)
            if spec is not None:
                tag = (spec.get("tags") or ["other"])[0]
                by_tag.setdefault(tag, []).extend(operation(path, method, spec, components))
    lines = [INTRO]
    for tag in sorted(by_tag):
        lines += [f"## {tag.replace('_', ' ').capitalize()}", "", *by_tag[tag]]
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "api-reference.md")
    args = parser.parse_args()
    args.output.write_text(reference(openapi_document()))
    print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
