"""Prompt templates (POST/GET/DELETE /v1/prompts) and a create's ``prompt: {id, version,
variables}`` through the openai SDK, against the API in this process: versions are kept,
variables are filled in (strings, input_text, input_file), and unknown prompts, versions
or variables are the 404s and 400s OpenAI gives."""

from __future__ import annotations

import io

import openai
import pytest
from openai.types.responses import ResponsePrompt

from responses_app.models import Response
from tests.conftest import sdk_client
from tests.helpers import ExtensionApi, new_key

pytestmark = pytest.mark.core

GREETING = {"instructions": "Answer in {{language}}, as {{persona}}.",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "I am {{name}}."}]}],
            "metadata": {"team": "support"}}


def test_a_prompt_keeps_its_versions_and_a_create_fills_in_its_variables(carol: openai.OpenAI):
    api = ExtensionApi(carol)
    first = api.post("/prompts", GREETING)
    assert first["object"] == "prompt" and first["id"].startswith("pmpt_") and first["version"] == "1"
    assert first["variables"] == ["language", "persona", "name"] and first["metadata"] == {"team": "support"}
    second = api.post(f"/prompts/{first['id']}",
                      {**GREETING, "instructions": "Be brief, {{persona}}, in {{language}}."})
    assert (second["id"], second["version"]) == (first["id"], "2")
    assert api.get(f"/prompts/{first['id']}")["version"] == "2"  # the latest
    assert api.get(f"/prompts/{first['id']}", version="1")["instructions"] == GREETING["instructions"]
    assert [v["version"] for v in api.get(f"/prompts/{first['id']}/versions")["data"]] == ["1", "2"]
    assert [p["id"] for p in api.get("/prompts")["data"]] == [first["id"]]

    response = carol.responses.create(model="echo", prompt={"id": first["id"], "version": "1", "variables": {
        "language": "French", "persona": {"type": "input_text", "text": "a pirate"}, "name": "Ada"}})
    assert response.status == "completed" and response.output_text == "You said: I am Ada."
    assert response.instructions == "Answer in French, as a pirate."
    assert isinstance(response.prompt, ResponsePrompt) and (response.prompt.id, response.prompt.version) == (
        first["id"], "1")
    [stored] = carol.responses.input_items.list(response.id).data
    assert stored.content[0].text == "I am Ada."

    # The latest version, the request's own instructions after the prompt's, its input after the prompt's.
    latest = carol.responses.create(model="echo", instructions="Sign as Bot.", input="And you?", prompt={
        "id": first["id"], "variables": {"language": "German", "persona": "a poet", "name": "Bo"}})
    assert latest.instructions == "Be brief, a poet, in German.\n\nSign as Bot."
    assert latest.output_text == "You said: And you?"
    assert [item.content[0].text for item in carol.responses.input_items.list(latest.id, order="asc").data] == [
        "I am Bo.", "And you?"]

    assert api.delete(f"/prompts/{first['id']}") == {"id": first["id"], "object": "prompt.deleted", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        api.get(f"/prompts/{first['id']}")


def test_an_input_file_variable_is_the_files_text(carol: openai.OpenAI):
    api = ExtensionApi(carol)
    prompt = api.post("/prompts", {"instructions": "Use this document:\n{{document}}", "input": [
        {"role": "user", "content": "What does it say?"}]})
    uploaded = carol.files.create(file=("notes.txt", io.BytesIO(b"The launch is on Tuesday.")), purpose="user_data")
    response = carol.responses.create(model="echo", prompt={"id": prompt["id"], "variables": {
        "document": {"type": "input_file", "file_id": uploaded.id}}})
    assert "The launch is on Tuesday." in response.instructions and "notes.txt" in response.instructions


@pytest.mark.parametrize(("reference", "error", "param"), [
    ({"id": "pmpt_missing"}, openai.NotFoundError, "prompt.id"),
    ({"version": "9"}, openai.NotFoundError, "prompt.version"),
    ({"variables": {"language": "en", "persona": "x"}}, openai.BadRequestError, "prompt.variables"),
    ({"variables": {"language": "en", "persona": "x", "name": "y", "extra": "z"}}, openai.BadRequestError,
     "prompt.variables.extra"),
    ({"variables": {"language": {"type": "input_image", "image_url": "https://example.com/a.png",
                                 "detail": "auto"},
                    "persona": "x", "name": "y"}}, openai.BadRequestError, "prompt.variables.language"),
])
def test_unknown_prompts_versions_and_variables_are_refused_and_nothing_is_written(carol: openai.OpenAI, carol_tenant,
                                                                                   reference, error, param):
    prompt = ExtensionApi(carol).post("/prompts", GREETING)
    reference = {"id": prompt["id"], **reference}
    with pytest.raises(error) as raised:
        carol.responses.create(model="echo", prompt=reference)
    assert raised.value.body["param"] == param
    assert not Response.objects.filter(tenant__name=carol_tenant).exists()


@pytest.mark.parametrize(("body", "param"), [
    ({}, "instructions"),
    ({"instructions": 5}, "instructions"),
    ({"instructions": "x", "input": [{"type": "function_call_output", "call_id": "c", "output": "o"}]},
     "input[0].type"),
    ({"instructions": "x", "unknown": 1}, "unknown"),
    ({"instructions": "x", "metadata": {"a": 1}}, "metadata.a"),
    ({"instructions": "x", "metadata": {str(n): "v" for n in range(17)}}, "metadata"),
])
def test_a_bad_prompt_is_a_400_naming_the_parameter(carol: openai.OpenAI, body, param):
    with pytest.raises(openai.BadRequestError) as raised:
        ExtensionApi(carol).post("/prompts", body)
    assert raised.value.body["param"] == param


def test_another_tenants_prompt_is_a_404(carol: openai.OpenAI, stack):
    prompt = ExtensionApi(carol).post("/prompts", GREETING)
    stranger = sdk_client(stack, new_key("prompt-stranger"))
    with pytest.raises(openai.NotFoundError):
        ExtensionApi(stranger).get(f"/prompts/{prompt['id']}")
    with pytest.raises(openai.NotFoundError) as raised:
        stranger.responses.create(model="echo", prompt={"id": prompt["id"], "variables": {
            "language": "en", "persona": "x", "name": "y"}})
    assert raised.value.body["param"] == "prompt.id"
