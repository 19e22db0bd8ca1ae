"""input_file content parts through the openai SDK: a file's text, by file_id or
file_data, is what the model reads and what input_tokens counts; the wire shows the part as
sent; a later turn reads the text after the file is gone; bad parts are 4xx, writing nothing."""

from __future__ import annotations

import base64

import openai
import pytest

from tests.conftest import http_client
from tests.helpers import assert_openai_error, tenant_row_counts, tiny_pdf

pytestmark = pytest.mark.core

NOTES = "# Launch notes\n\nThe launch moved to Thursday; the venue is the harbour hall.\n" * 20


def _file_message(part: dict, question: str = "Summarize the file.") -> list[dict]:
    return [{"role": "user", "content": [part, {"type": "input_text", "text": question}]}]


def test_a_file_by_id_is_read_as_text_and_counted_in_input_tokens(alice: openai.OpenAI):
    notes = alice.files.create(file=("notes.md", NOTES.encode()), purpose="user_data")
    response = alice.responses.create(model="echo", input=_file_message({"type": "input_file", "file_id": notes.id}))
    assert response.status == "completed"
    assert "The launch moved to Thursday; the venue is the harbour hall." in response.output_text
    assert "File notes.md:" in response.output_text
    without = alice.responses.create(model="echo", input="Summarize the file.")
    assert response.usage.input_tokens - without.usage.input_tokens > 20 * 15

    [message] = alice.responses.input_items.list(response.id).data
    part = message.content[0]
    assert (part.type, part.file_id, part.filename, part.file_data) == ("input_file", notes.id, None, None)
    assert "text" not in (part.model_extra or {})


def test_file_data_is_read_as_a_pdf_or_as_text(alice: openai.OpenAI):
    pdf = base64.b64encode(tiny_pdf("Quarterly revenue rose 12 percent")).decode()
    response = alice.responses.create(model="echo", input=_file_message(
        {"type": "input_file", "filename": "report.pdf", "file_data": f"data:application/pdf;base64,{pdf}"}))
    assert "File report.pdf:\nQuarterly revenue rose 12 percent" in response.output_text

    csv = base64.b64encode(b"city,visits\nOslo,12\nLima,7\n").decode()
    response = alice.responses.create(model="echo", input=_file_message(
        {"type": "input_file", "filename": "visits.csv", "file_data": csv}))
    assert "Oslo,12\nLima,7" in response.output_text
    [message] = alice.responses.input_items.list(response.id).data
    assert message.content[0].file_data == csv  # the part as it was sent


def test_a_later_turn_reads_the_text_after_the_file_is_deleted(alice: openai.OpenAI):
    notes = alice.files.create(file=("notes.md", NOTES.encode()), purpose="user_data")
    first = alice.responses.create(model="echo", input=_file_message({"type": "input_file", "file_id": notes.id}))
    alice.files.delete(notes.id)
    second = alice.responses.create(model="echo", input="And the venue?", previous_response_id=first.id)
    assert second.status == "completed"
    # Beside the same two turns without the file, the second prompt is longer by the file's
    # text twice: in the first turn's input, and quoted by its (echoed) answer.
    plain_first = alice.responses.create(model="echo", input="Summarize the file.")
    plain_second = alice.responses.create(model="echo", input="And the venue?", previous_response_id=plain_first.id)
    file_tokens = first.usage.input_tokens - plain_first.usage.input_tokens
    assert file_tokens > 20 * 15
    assert second.usage.input_tokens - plain_second.usage.input_tokens > 2 * file_tokens - 10


def test_a_conversation_item_with_a_file_is_read_in_when_added(alice: openai.OpenAI):
    notes = alice.files.create(file=("notes.md", NOTES.encode()), purpose="user_data")
    conversation = alice.conversations.create()
    [item] = alice.conversations.items.create(
        conversation.id, items=_file_message({"type": "input_file", "file_id": notes.id})).data
    assert item.content[0].file_id == notes.id and "text" not in (item.content[0].model_extra or {})
    alice.files.delete(notes.id)
    response = alice.responses.create(model="echo", input="Go on.", conversation=conversation.id)
    plain = alice.responses.create(model="echo", input="Go on.")
    assert response.usage.input_tokens - plain.usage.input_tokens > 20 * 15


@pytest.mark.parametrize(("part", "status", "param", "code"), [
    ({"type": "input_file", "file_id": "file-nope"}, 404, "input[0].content[0].file_id", None),
    ({"type": "input_file", "file_url": "https://example.com/a.pdf"}, 400, "input[0].content[0].file_url",
     "unsupported_parameter"),
    ({"type": "input_file", "file_id": "file-a", "file_data": "aGk="}, 400, "input[0].content[0]", None),
    ({"type": "input_file"}, 400, "input[0].content[0]", None),
    ({"type": "input_file", "file_data": "not base64!"}, 400, "input[0].content[0].file_data", None),
    ({"type": "input_file", "filename": "a.bin", "file_data": base64.b64encode(b"\xff\xfe\x00\x01").decode()},
     400, "input[0].content[0]", "invalid_file"),
    ({"type": "input_file", "filename": "a.pdf", "file_data": base64.b64encode(b"%PDF-1.4 broken").decode()},
     400, "input[0].content[0]", "invalid_file"),
    ({"type": "input_file", "file_data": "aGk=", "detail": "ultra"}, 400, "input[0].content[0].detail",
     "invalid_value"),
])
def test_a_bad_file_part_is_an_error_that_writes_nothing(stack, carol_tenant: str, carol: openai.OpenAI,
                                                        part: dict, status: int, param: str, code: str | None):
    before = tenant_row_counts(carol_tenant)
    with http_client(stack, carol.api_key) as client:
        error = assert_openai_error(client.post("/responses", json={"model": "echo", "input": _file_message(part)}),
                                    status, param)
    assert error["code"] == code or status == 404
    assert tenant_row_counts(carol_tenant) == before


def test_another_tenants_file_is_not_found_and_an_assistant_may_not_send_one(alice: openai.OpenAI,
                                                                           bob: openai.OpenAI):
    notes = alice.files.create(file=("notes.md", NOTES.encode()), purpose="user_data")
    with pytest.raises(openai.NotFoundError) as other:
        bob.responses.create(model="echo", input=_file_message({"type": "input_file", "file_id": notes.id}))
    assert other.value.body["param"] == "input[0].content[0].file_id"
    with pytest.raises(openai.BadRequestError) as assistant:
        alice.responses.create(model="echo", input=[
            {"role": "assistant", "content": [{"type": "input_file", "file_id": notes.id}]}])
    assert "assistant" in assistant.value.message
