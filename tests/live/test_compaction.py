"""client.responses.compact: user messages kept verbatim, the rest summarized by the model,
and the compacted context continued."""

from __future__ import annotations

from datetime import UTC, datetime

import openai
import pytest

from responses_app.context.compaction import SUMMARY_PREFIX, summary_of
from responses_app.harmony.prompt import PromptRequest, render_prompt
from tests.conftest import sdk_client
from tests.helpers import new_key

pytestmark = pytest.mark.core


def chain(client: openai.OpenAI, texts: list[str]) -> list[openai.types.responses.Response]:
    responses: list = []
    for text in texts:
        previous = {"previous_response_id": responses[-1].id} if responses else {}
        responses.append(client.responses.create(model="echo", input=text, **previous))
    return responses


def test_compact_keeps_the_user_messages_and_the_model_summarizes_the_rest_which_a_continuation_reads(alice):
    turns = chain(alice, ["My name is Ada.", "I live in Paris.", "I like trains."])
    compacted = alice.responses.compact(model="echo", previous_response_id=turns[-1].id)
    assert compacted.object == "response.compaction" and compacted.usage.output_tokens > 0
    *kept, item = [entry.to_dict() for entry in compacted.output]
    assert [(m["role"], m["content"][0]["text"]) for m in kept] == [
        ("user", "My name is Ada."), ("user", "I live in Paris."), ("user", "I like trains.")]
    assert item["type"] == "compaction" and item["id"].startswith("cmp_")
    # The echo engine's summary is a digest of everything before the summary request: the
    # assistant's answers are in it, not only the user's messages.
    summary = summary_of(item)
    assert summary.startswith("Summary of the earlier conversation.")
    assert "assistant: You said: I live in Paris." in summary and "user: I like trains." in summary

    # Passed back as input, the compacted context is the prompt: the user messages, the
    # summary as a developer message where the item stands, then the new input.
    continued = alice.responses.create(model="echo", input=[*compacted.output, {"role": "user", "content": "And?"}])
    assert continued.status == "completed" and continued.output_text == "You said: And?"
    date = datetime.fromtimestamp(continued.created_at, UTC).date().isoformat()
    summary_message = {"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": SUMMARY_PREFIX + summary}]}
    expected = render_prompt(PromptRequest(history=[*kept, summary_message, {"role": "user", "content": "And?"}],
                                           conversation_date=date))
    assert continued.usage.input_tokens == len(expected)
    listed = [entry.to_dict() for entry in alice.responses.input_items.list(continued.id, order="asc")]
    assert listed[3] == item  # stored and listed as the compaction item it was given

    # Compacting again folds the earlier summary into the new one.
    again = alice.responses.compact(model="echo", input=[*compacted.output, {"role": "user", "content": "More."}])
    assert "developer: # Instructions\n\n" + SUMMARY_PREFIX[:50] in summary_of(again.output[-1].to_dict())
    assert [m.content[0].text for m in again.output[:-1]] == ["My name is Ada.", "I live in Paris.",
                                                               "I like trains.", "More."]


def test_a_compaction_item_this_server_did_not_sign_is_refused(alice):
    compacted = alice.responses.compact(model="echo", input="Remember this.")
    item = compacted.output[-1].to_dict()
    forged = {**item, "encrypted_content": item["encrypted_content"][:-4] + "AAAA"}
    with pytest.raises(openai.BadRequestError) as refused:
        alice.responses.create(model="echo", input=[forged, {"role": "user", "content": "hi"}])
    assert refused.value.code == "invalid_encrypted_content" and refused.value.param == "input[0].encrypted_content"


def test_bad_compactions_are_4xx(alice, bob, stack, db_access):
    mine = alice.responses.create(model="echo", input="mine")
    for body in ({"model": "echo"}, {"input": "x"}, {"model": "nope", "input": "x"}, {"model": "echo", "input": 3},
                 {"model": "echo", "input": "x", "tools": []}, {"model": "echo", "input": "x", "image": {}}):
        with pytest.raises(openai.BadRequestError):
            alice.post("/responses/compact", body=body, cast_to=dict)
    with pytest.raises(openai.NotFoundError):
        bob.responses.compact(model="echo", previous_response_id=mine.id)
    reader = sdk_client(stack, new_key("alice", scope="read_only"))
    with pytest.raises(openai.PermissionDeniedError):
        reader.responses.compact(model="echo", input="x")


# --- compaction_trigger: Codex's inline compaction ------------------------------------------

CONTEXT = [{"role": "user", "content": "My name is Ada."},
           {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello, Ada."}]},
           {"role": "user", "content": "I live in Paris."}]
TOOLS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}}]


def continued_prompt_tokens(kept: list[dict], summary: str, created_at: int) -> int:
    date = datetime.fromtimestamp(created_at, UTC).date().isoformat()
    summary_message = {"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": SUMMARY_PREFIX + summary}]}
    return len(render_prompt(PromptRequest(history=[*kept, summary_message, {"role": "user", "content": "And?"}],
                                           conversation_date=date)))


def test_an_input_ending_with_a_compaction_trigger_streams_exactly_one_compaction_item(alice):
    # As Codex sends it: its usual turn (tools, store=false, a stream) with the trigger last.
    events = [event.to_dict() for event in alice.responses.create(
        model="echo", input=[*CONTEXT, {"type": "compaction_trigger"}], tools=TOOLS, store=False, stream=True)]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    [item] = done  # Codex: "expected exactly one compaction output item"
    assert item["type"] == "compaction" and item["id"].startswith("cmp_")
    [added] = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert added["id"] == item["id"] and added["type"] == "compaction"
    compacting = [e for e in events if e["type"] == "response.compaction.compacting"]
    assert compacting and all((e["item_id"], e["output_index"]) == (item["id"], 0) for e in compacting)
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed" and final["output"] == [item]
    assert final["usage"]["output_tokens"] > 0  # the summary's tokens
    summary = summary_of(item)
    assert "assistant: Hello, Ada." in summary and "user: I live in Paris." in summary

    # Codex's next request: the user messages it keeps, the compaction item, then the new input.
    kept = [CONTEXT[0], CONTEXT[2]]
    continued = alice.responses.create(model="echo", input=[*kept, item, {"role": "user", "content": "And?"}],
                                       store=False)
    assert continued.output_text == "You said: And?"
    assert continued.usage.input_tokens == continued_prompt_tokens(kept, summary, continued.created_at)


def test_a_compaction_trigger_after_previous_response_id_compacts_the_chain(alice):
    turns = chain(alice, ["My name is Ada.", "I live in Paris."])
    compacted = alice.responses.create(model="echo", previous_response_id=turns[-1].id,
                                       input=[{"type": "compaction_trigger"}])
    [item] = compacted.output
    assert compacted.status == "completed" and item.type == "compaction"
    summary = summary_of(item.to_dict())
    assert "assistant: You said: My name is Ada." in summary
    # Later turns read the user messages and the summary, not the rest of the chain.
    continued = alice.responses.create(model="echo", previous_response_id=compacted.id, input="And?")
    kept = [{"role": "user", "content": "My name is Ada."}, {"role": "user", "content": "I live in Paris."}]
    assert continued.usage.input_tokens == continued_prompt_tokens(kept, summary, continued.created_at)
