"""The ``file_search`` tool in a response, through the openai SDK against the API in this
process: the echo engine writes the model's call (a harmony script), the real worker searches
the store and streams the ``file_search_call`` item, and the answer's marker becomes a
``file_citation``; its results are shown with ``include``, carried to the next turn, and the
tool works in background and batch responses like every other tool."""

from __future__ import annotations

import json
import time

import openai
import pytest

from responses_app.dispatch import task_queue
from tests.conftest import http_client
from tests.helpers import assert_openai_error

pytestmark = pytest.mark.core

HANDBOOK = {
    "leave.md": ("Every employee has 27 days of paid annual leave. Unused leave carries over to March.",
                 {"team": "hr", "year": 2026}),
    "expenses.md": ("Train tickets are reimbursed in second class. Receipts go to the finance team.",
                    {"team": "finance", "year": 2025}),
}
ANSWER = "You have 27 days of paid leave 【0†leave.md】."


def search_call(*queries: str) -> str:
    return (f"<|start|>assistant to=file_search.msearch<|channel|>analysis <|constrain|>json<|message|>"
            f"{json.dumps({'queries': list(queries)})}<|call|>")


def script(*steps: str) -> str:
    return "<|channel|>analysis<|message|>I will look in the handbook.<|end|>" + "".join(steps)


def final(text: str) -> str:
    return f"<|start|>assistant<|channel|>final<|message|>{text}<|return|>"


@pytest.fixture
def handbook(carol: openai.OpenAI, stack) -> tuple[str, dict[str, str]]:
    store = carol.vector_stores.create(name="handbook")
    ids = {}
    for name, (text, attributes) in HANDBOOK.items():
        ids[name] = carol.files.create(file=(name, text.encode()), purpose="assistants").id
        carol.vector_stores.files.create(store.id, file_id=ids[name], attributes=attributes)
    stack.worker.drain()
    return store.id, ids


def test_a_streamed_file_search_shows_its_call_its_results_when_included_and_cites_the_file(
        carol: openai.OpenAI, handbook):
    store_id, ids = handbook
    with carol.responses.stream(model="echo", input=script(search_call("annual leave days"), final(ANSWER)),
                                tools=[{"type": "file_search", "vector_store_ids": [store_id]}],
                                include=["file_search_call.results"]) as stream:
        events = list(stream)
        response = stream.get_final_response()
    search = next(item for item in response.output if item.type == "file_search_call")
    search_events = [event.type for event in events if getattr(event, "item_id", None) == search.id
                     or getattr(getattr(event, "item", None), "id", None) == search.id]
    assert search_events == ["response.output_item.added", "response.file_search_call.in_progress",
                             "response.file_search_call.searching", "response.file_search_call.completed",
                             "response.output_item.done"]
    assert (search.status, search.queries) == ("completed", ["annual leave days"])
    assert search.id.startswith("fs_")
    top = search.results[0]
    assert (top.file_id, top.filename, top.attributes) == (ids["leave.md"], "leave.md", {"team": "hr", "year": 2026})
    assert "27 days of paid annual leave" in top.text and 0 < top.score <= 1

    text = response.output[-1].content[0]
    assert text.text == ANSWER
    citation = text.annotations[0]
    assert (citation.type, citation.file_id, citation.filename, citation.index) == (
        "file_citation", ids["leave.md"], "leave.md", ANSWER.index("【"))
    [added] = [event for event in events if event.type == "response.output_text.annotation.added"]
    assert (added.item_id, added.output_index, added.content_index, added.annotation_index) == (
        response.output[-1].id, len(response.output) - 1, 0, 0)
    assert added.to_dict()["annotation"] == citation.to_dict()

    # Without include, the results stay on the server (the model still read them).
    plain = carol.responses.create(model="echo", input=script(search_call("annual leave days"), final(ANSWER)),
                                   tools=[{"type": "file_search", "vector_store_ids": [store_id]}])
    assert plain.output[1].results is None
    shown = carol.responses.retrieve(plain.id, include=["file_search_call.results"])
    assert shown.output[1].results[0].file_id == ids["leave.md"]


def test_the_tools_filters_and_max_num_results_apply(carol: openai.OpenAI, handbook):
    store_id, ids = handbook
    tool = {"type": "file_search", "vector_store_ids": [store_id], "max_num_results": 1,
            "filters": {"type": "eq", "key": "team", "value": "finance"}}
    response = carol.responses.create(model="echo", input=script(search_call("leave", "tickets"), final("Done.")),
                                      tools=[tool], include=["file_search_call.results"])
    results = response.output[1].results
    assert [result.file_id for result in results] == [ids["expenses.md"]]
    assert response.tools[0].max_num_results == 1


def test_the_tools_ranking_options_weigh_the_rankings_and_drop_weak_results(carol: openai.OpenAI, handbook):
    store_id, ids = handbook

    def found(query: str, ranking_options: dict) -> list[str]:
        tool = {"type": "file_search", "vector_store_ids": [store_id], "ranking_options": ranking_options}
        response = carol.responses.create(model="echo", input=script(search_call(query), final("Done.")),
                                          tools=[tool], include=["file_search_call.results"])
        return [result.file_id for result in response.output[1].results]

    paraphrase = "vacation allowance for staff"  # no word of the leave policy's
    assert found(paraphrase, {"hybrid_search": {"embedding_weight": 0, "text_weight": 1}}) == []
    assert found(paraphrase, {"hybrid_search": {"embedding_weight": 1, "text_weight": 0}})[0] == ids["leave.md"]
    assert found("annual leave days", {"score_threshold": 0.3}) == [ids["leave.md"]]


def test_a_bad_call_or_a_store_deleted_since_the_create_is_a_failed_search_the_model_reads(
        carol: openai.OpenAI, handbook, stack, monkeypatch):
    store_id, _ = handbook
    tools = [{"type": "file_search", "vector_store_ids": [store_id]}]
    bad = ("<|start|>assistant to=file_search.msearch<|channel|>analysis <|constrain|>json<|message|>not json<|call|>")
    response = carol.responses.create(model="echo", input=script(bad, final("{tool_output}")), tools=tools)
    assert response.output[1].status == "failed"
    assert response.output_text.startswith("Error: the call could not be read")

    other = carol.vector_stores.create(name="gone")
    held = []  # the background response's task, held until the store is gone
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=None, **_: held.append(
        (response, task_id, priority)))
    waiting = carol.responses.create(model="echo", input=script(search_call("leave"), final("{tool_output}")),
                                     tools=[{"type": "file_search", "vector_store_ids": [other.id]}],
                                     background=True)
    carol.vector_stores.delete(other.id)  # after the create's checks, before the search
    [(queued, task_id, priority)] = held
    stack.worker.send(queued, task_id, priority)
    done = wait_for(carol, waiting.id)
    assert done.status == "completed"
    search = done.output[1]
    assert (search.type, search.status, search.queries, search.results) == (
        "file_search_call", "failed", ["leave"], None)
    assert done.output_text == f"Error: No vector store found with id '{other.id}'."


def test_background_and_batch_responses_search_too(carol: openai.OpenAI, handbook, stack):
    store_id, ids = handbook
    body = {"model": "echo", "input": script(search_call("annual leave"), final(ANSWER)),
            "tools": [{"type": "file_search", "vector_store_ids": [store_id]}]}
    background = wait_for(carol, carol.responses.create(**body, background=True).id)
    assert background.output[-1].content[0].annotations[0].file_id == ids["leave.md"]

    line = {"custom_id": "one", "method": "POST", "url": "/v1/responses", "body": body}
    batch_file = carol.files.create(file=("in.jsonl", (json.dumps(line) + "\n").encode()), purpose="batch")
    batch = carol.batches.create(input_file_id=batch_file.id, endpoint="/v1/responses", completion_window="24h")
    deadline = time.monotonic() + 60
    while (batch := carol.batches.retrieve(batch.id)).status not in ("completed", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    output = json.loads(carol.files.content(batch.output_file_id).read())
    answer = output["response"]["body"]["output"][-1]["content"][0]
    assert answer["annotations"][0]["filename"] == "leave.md"


def test_a_resumed_stream_gives_the_same_search(carol: openai.OpenAI, handbook):
    store_id, _ = handbook
    events = list(carol.responses.create(model="echo", input=script(search_call("leave"), final(ANSWER)),
                                         tools=[{"type": "file_search", "vector_store_ids": [store_id]}],
                                         stream=True))
    middle = next(event.sequence_number for event in events if event.type == "response.file_search_call.searching")
    resumed = list(carol.responses.retrieve(events[0].response.id, stream=True, starting_after=middle))
    assert [event.to_dict() for event in resumed] == [event.to_dict() for event in events[middle + 1:]]


def test_a_forced_file_search_on_the_echo_model_searches_for_the_users_text(carol: openai.OpenAI, handbook, stack):
    store_id, ids = handbook
    tools = [{"type": "file_search", "vector_store_ids": [store_id]}]
    question = "How many days of annual leave?"
    forced = carol.responses.create(model="echo", input=question, tools=tools, tool_choice={"type": "file_search"},
                                    include=["file_search_call.results"])
    assert (forced.status, forced.error, forced.tool_choice.type) == ("completed", None, "file_search")
    search, *_, answer = forced.output
    # The header was written for the model; the echo engine wrote the call's arguments.
    assert (search.type, search.status, search.queries) == ("file_search_call", "completed", [question])
    assert (search.results[0].file_id, search.results[0].text) == (ids["leave.md"], HANDBOOK["leave.md"][0])
    assert (answer.type, forced.output_text) == ("message", f"You said: {question}")
    with http_client(stack, carol.api_key) as http:
        assert_openai_error(http.post("/responses", json={"model": "echo", "input": "Hi",
                                                          "tool_choice": {"type": "file_search"}}),
                            400, "tool_choice.type")


def test_output_harmony_cannot_parse_fails_the_response_saying_so_and_the_call_it_was_writing(
        carol: openai.OpenAI, handbook):
    store_id, _ = handbook
    broken = ('<|start|>assistant to=file_search.msearch<|channel|>analysis <|constrain|>json<|message|>'
              '{"queries": ["leave"<|channel|>final<|message|>oops<|return|>')
    failed = carol.responses.create(model="echo", input=script(broken), tools=[
        {"type": "file_search", "vector_store_ids": [store_id]}])
    assert failed.status == "failed" and failed.error.code == "server_error"
    search = failed.output[-1]
    assert (search.type, search.status) == ("file_search_call", "failed")
    assert failed.error.message == (f"The model produced output that is not valid harmony in its file_search_call "
                                    f"{search.id}: Unexpected special token '<|channel|>' inside message content.")


def test_tool_choice_names_file_search_only_with_the_tool(carol: openai.OpenAI, handbook, stack):
    store_id, _ = handbook
    tools = [{"type": "file_search", "vector_store_ids": [store_id]}]
    forced = carol.responses.create(model="echo", input="Hi", tools=tools, tool_choice={"type": "file_search"})
    assert forced.tool_choice.type == "file_search"
    assert forced.output[0].type == "file_search_call"  # the header was written for the model
    with http_client(stack, carol.api_key) as http:
        assert_openai_error(http.post("/responses", json={"model": "echo", "input": "Hi",
                                                          "tool_choice": {"type": "file_search"}}),
                            400, "tool_choice.type")


@pytest.mark.parametrize(("tool", "param"), [
    ({"type": "file_search"}, "tools[0].vector_store_ids"),
    ({"type": "file_search", "vector_store_ids": []}, "tools[0].vector_store_ids"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"], "max_num_results": 0}, "tools[0].max_num_results"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"], "filters": {"type": "gt", "key": "a", "value": False}},
     "tools[0].filters.value"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"], "ranking_options": {"score_threshold": -1}},
     "tools[0].ranking_options.score_threshold"),
    ({"type": "file_search", "vector_store_ids": ["vs_1"], "colour": "red"}, "tools[0].colour"),
])
def test_a_bad_file_search_tool_is_a_400(carol: openai.OpenAI, stack, tool: dict, param: str):
    with http_client(stack, carol.api_key) as http:
        assert_openai_error(http.post("/responses", json={"model": "echo", "input": "Hi", "tools": [tool]}),
                            400, param)


def test_another_tenants_store_is_a_404_at_create(carol: openai.OpenAI, bob: openai.OpenAI, handbook, stack):
    store_id, _ = handbook
    with http_client(stack, bob.api_key) as http:
        answer = http.post("/responses", json={"model": "echo", "input": "Hi", "tools": [
            {"type": "file_search", "vector_store_ids": [store_id]}]})
    assert answer.status_code == 404 and answer.json()["error"]["param"] == "tools[0].vector_store_ids"


def wait_for(client: openai.OpenAI, response_id: str) -> openai.types.responses.Response:
    deadline = time.monotonic() + 60
    while (response := client.responses.retrieve(response_id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return response
