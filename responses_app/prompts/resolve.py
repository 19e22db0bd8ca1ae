"""A create's ``prompt: {id, version, variables}``: the stored prompt's instructions and
input, with each ``{{name}}`` replaced by its variable's value. A value is a string, an
``input_text`` part or an ``input_file`` part (the file's text, read as the Files API
reads it); gpt-oss reads no images."""

from __future__ import annotations

from typing import Any

from responses_app.files.inputs import read_input_files
from responses_app.lib.ids import new_id
from responses_app.models import Tenant
from responses_app.models.response_params import PromptReference
from responses_app.prompts.store import get_version
from responses_app.prompts.templates import render, render_item
from responses_app.wire.errors import InvalidRequest


def prompt_input(tenant: Tenant, reference: PromptReference,
                 instructions: str | None) -> tuple[str | None, list[dict[str, Any]]]:
    """The instructions (the prompt's, then the request's own) and the input items (the
    prompt's, before the request's) of a create that names ``reference``."""
    version = get_version(tenant, reference.id, reference.version, id_param="prompt.id",
                          version_param="prompt.version")
    values = _values(tenant, reference.variables, version.variables)
    combined = "\n\n".join(filter(None, [render(version.instructions, values), instructions]))
    items = [{**render_item(item, values), "id": new_id("msg")} for item in version.input]
    return combined or None, items


def _values(tenant: Tenant, given: dict[str, Any], declared: list[str]) -> dict[str, str]:
    for name in declared:
        if name not in given:
            raise InvalidRequest(f"Missing value for the prompt's variable '{name}'.", param="prompt.variables",
                                 code="missing_required_parameter")
    for name in given:
        if name not in declared:
            raise InvalidRequest(f"The prompt has no variable '{name}'.", param=f"prompt.variables.{name}",
                                 code="unknown_parameter")
    return {name: _text(tenant, value, f"prompt.variables.{name}") for name, value in given.items()}


def _text(tenant: Tenant, value: Any, param: str) -> str:
    if isinstance(value, str):
        return value
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "input_text":
        return value["text"]
    if kind == "input_file":
        part = {key: value[key] for key in ("type", "file_id", "file_data", "filename") if value.get(key) is not None}
        [message] = read_input_files(tenant, [{"type": "message", "role": "user", "content": [part]}], param)
        return message["content"][0]["text"]
    raise InvalidRequest(f"A prompt variable is a string, an input_text or an input_file, not {kind!r} "
                         "(gpt-oss reads text).", param=param)
