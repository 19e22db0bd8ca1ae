"""The body of a prompt's create or new version (POST /v1/prompts[/{id}]), parsed once into
a PromptTemplate, with OpenAI's 400s for what is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.prompts.templates import variables_of
from responses_app.validation.input_items import parse_input
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.metadata import parse_metadata
from responses_app.wire.request_body import body_fields

FIELDS = frozenset({"instructions", "input", "metadata"})


@dataclass(frozen=True)
class PromptTemplate:
    """A version's template: instructions and input messages with ``{{name}}`` variables."""

    instructions: str
    input: list[dict[str, Any]]  # messages without ids: each response that uses it gets its own items
    metadata: dict[str, str]

    def columns(self) -> dict[str, Any]:
        """The PromptVersion columns, its variables included."""
        return {"instructions": self.instructions, "input": self.input, "metadata": self.metadata,
                "variables": variables_of(self.instructions, self.input)}


def parse_template(body: Any) -> PromptTemplate:
    sent = body_fields(body, FIELDS)
    instructions = sent.get("instructions") or ""
    if not isinstance(instructions, str):
        raise invalid_type("instructions", "a string", instructions)
    items = parse_input(sent.get("input"))
    for index, item in enumerate(items):
        if item.get("type") != "message":
            raise InvalidRequest(f"A prompt's input holds messages, not '{item.get('type')}' items.",
                                 param=f"input[{index}].type")
        item.pop("id", None)
    if not instructions and not items:
        raise InvalidRequest("A prompt needs 'instructions' or 'input'.", param="instructions",
                             code="missing_required_parameter")
    return PromptTemplate(instructions=instructions, input=items, metadata=parse_metadata(sent.get("metadata")))
