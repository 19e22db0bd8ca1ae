"""``{{name}}`` variables in a prompt's instructions and input text."""

from __future__ import annotations

import re
from typing import Any

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def variables_of(instructions: str, items: list[dict[str, Any]]) -> list[str]:
    """The variable names the templates use, each once, in order of appearance."""
    names: dict[str, None] = {}
    for text in [instructions, *(text for item in items for text in _texts(item))]:
        names.update(dict.fromkeys(VARIABLE.findall(text)))
    return list(names)


def render(text: str, values: dict[str, str]) -> str:
    return VARIABLE.sub(lambda match: values[match.group(1)], text)


def render_item(item: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    content = item.get("content")
    if isinstance(content, str):
        return {**item, "content": render(content, values)}
    return {**item, "content": [{**part, "text": render(part["text"], values)} if "text" in part else part
                                for part in content or []]}


def _texts(item: dict[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    return [part["text"] for part in content or [] if isinstance(part.get("text"), str)]
