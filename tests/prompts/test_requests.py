"""A prompt version's body parsed into a PromptTemplate (prompts/requests.py)."""

from __future__ import annotations

from typing import Any

import pytest

from responses_app.prompts.requests import parse_template
from responses_app.wire.errors import InvalidRequest

pytestmark = pytest.mark.core


def test_a_template_holds_messages_without_ids_and_names_its_variables():
    template = parse_template({
        "instructions": "Greet {{name}} in {{language}}.",
        "input": [{"id": "msg_1", "type": "message", "role": "user", "content": "I am {{name}}."}],
        "metadata": {"team": "docs"}})
    assert [item.get("id") for item in template.input] == [None]  # each response gets its own items
    assert template.columns()["variables"] == ["name", "language"]
    assert template.metadata == {"team": "docs"}


@pytest.mark.parametrize(("body", "param"), [
    ({}, "instructions"),
    ({"instructions": 7}, "instructions"),
    ({"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}, "input[0].type"),
    ({"instructions": "x", "metadata": {"k": 1}}, "metadata.k"),
    ({"instructions": "x", "model": "echo"}, "model"),
])
def test_a_wrong_body_is_a_400_naming_the_field(body: dict[str, Any], param: str):
    with pytest.raises(InvalidRequest) as raised:
        parse_template(body)
    assert raised.value.param == param
