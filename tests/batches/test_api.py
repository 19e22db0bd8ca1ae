"""The Batch API through the openai SDK (client.batches), against the API in this process
with the worker's tasks inline: validation, the run into output and error files, cancel,
expiry, the queue limit, the in-flight cap, bad creates and isolation between tenants."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from responses_app.models import (
    BatchRequest,
    BatchRequestState,
    OutputItem,
    Response,
    ResponseStatus,
    StoredFile,
    Tenant,
)
from responses_app.services.ended import end_response
from tests.helpers import wait_until
from tests.live.stack import STACK_ENV

pytestmark = pytest.mark.core

ENDED = {"completed", "failed", "expired", "cancelled"}


def batch_file(client: openai.OpenAI, lines: list[Any]) -> str:
    content = b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines)
    return client.files.create(file=("requests.jsonl", content), purpose="batch").id


def request_line(custom_id: str, text: str, **body: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/responses",
            "body": {"model": "echo", "input": text, **body}}


def slow(ms: int) -> dict[str, Any]:
    return {"metadata": {"echo_token_delay_ms": str(ms)}}


def chat_line(custom_id: str, text: str, **body: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "echo", "messages": [{"role": "user", "content": text}], **body}}


def run_batch(client: openai.OpenAI, lines: list[Any], endpoint: str = "/v1/responses", **options: Any) -> Any:
    batch = client.batches.create(input_file_id=batch_file(client, lines), endpoint=endpoint,
                                  completion_window="24h", **options)
    return wait_until(lambda: (ended := client.batches.retrieve(batch.id)).status in ENDED and ended, timeout=90)


def jsonl(client: openai.OpenAI, file_id: str) -> list[dict[str, Any]]:
    try:
        content = client.files.content(file_id).read()
    except openai.APIError as error:  # say what the server said and what the database holds
        row = StoredFile.objects.filter(pk=file_id).values("tenant__name", "purpose", "bytes", "expires_at").first()
        raise AssertionError(f"the content of {file_id}: {error!r}; its row: {row}") from error
    return [json.loads(line) for line in content.splitlines()]


def test_a_batch_runs_each_request_into_the_output_file_in_input_order(carol: openai.OpenAI):
    lines = [request_line(f"q{n}", f"Question number {n}") for n in range(6)]
    lines.insert(3, request_line("orphan", "Go on.", previous_response_id="resp_missing"))
    batch = run_batch(carol, lines, metadata={"job": "nightly"})

    assert (batch.status, batch.endpoint, batch.model, batch.completion_window) == (
        "completed", "/v1/responses", "echo", "24h")
    assert (batch.request_counts.total, batch.request_counts.completed, batch.request_counts.failed) == (7, 6, 1)
    assert batch.metadata == {"job": "nightly"} and batch.errors is None
    assert batch.created_at <= batch.in_progress_at <= batch.finalizing_at <= batch.completed_at < batch.expires_at
    assert batch.expires_at - batch.created_at == 86400

    output = jsonl(carol, batch.output_file_id)
    assert [line["custom_id"] for line in output] == [f"q{n}" for n in range(6)]
    for n, line in enumerate(output):
        assert line["id"].startswith("batch_req_") and line["error"] is None
        assert line["response"]["status_code"] == 200
        body = line["response"]["body"]
        assert body["object"] == "response" and body["status"] == "completed"
        assert body["output"][-1]["content"][0]["text"] == f"You said: Question number {n}"
        # The response is the tenant's, like any other.
        assert carol.responses.retrieve(line["response"]["request_id"]).id == body["id"]
    [error] = jsonl(carol, batch.error_file_id)
    assert error["custom_id"] == "orphan" and error["response"]["status_code"] == 404
    assert error["response"]["body"]["error"]["param"] == "previous_response_id"

    usage = batch.usage
    assert usage.input_tokens == sum(line["response"]["body"]["usage"]["input_tokens"] for line in output)
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens > 0
    files = {f.id: f for f in carol.files.list(purpose="batch_output")}
    assert files[batch.output_file_id].filename == f"batch_{batch.id}_output.jsonl"
    assert files[batch.error_file_id].filename == f"batch_{batch.id}_error.jsonl"


def test_a_chat_completions_batch_answers_each_line_with_its_chat_completion(carol: openai.OpenAI):
    lines = [chat_line(f"q{n}", f"Question number {n}", max_completion_tokens=200, logprobs=n == 0)
             for n in range(3)]
    lines.append(chat_line("orphan", "Go on.", messages=[{"role": "tool", "tool_call_id": "call_x",
                                                          "content": "42"}]))
    batch = run_batch(carol, lines, endpoint="/v1/chat/completions")

    assert (batch.status, batch.endpoint, batch.model) == ("completed", "/v1/chat/completions", "echo")
    assert (batch.request_counts.completed, batch.request_counts.failed) == (3, 1)
    output = jsonl(carol, batch.output_file_id)
    for n, line in enumerate(output):
        assert line["custom_id"] == f"q{n}" and line["response"]["status_code"] == 200
        completion = line["response"]["body"]
        assert completion["object"] == "chat.completion" and completion["id"].startswith("chatcmpl-")
        [choice] = completion["choices"]
        assert (choice["finish_reason"], choice["message"]["content"]) == ("stop", f"You said: Question number {n}")
        assert choice["message"]["reasoning"]
        # A line that asked for the answer's logprobs gets them, as the endpoint gives them.
        tokens = (choice["logprobs"] or {}).get("content")
        assert (bytes(b for entry in tokens for b in entry["bytes"]).decode() == choice["message"]["content"]) \
            if n == 0 else choice["logprobs"] is None
    assert batch.usage.output_tokens == sum(line["response"]["body"]["usage"]["completion_tokens"]
                                            for line in output)
    # The request's own 400, naming the completion's parameter.
    [error] = jsonl(carol, batch.error_file_id)
    assert error["custom_id"] == "orphan" and error["response"]["status_code"] == 400
    assert error["response"]["body"]["error"]["param"] == "messages[0]"


def test_a_chat_completions_line_that_cannot_run_as_one_response_fails_the_batch(carol: openai.OpenAI):
    lines = [chat_line("a", "fine"), chat_line("b", "x", n=2), chat_line("c", "x", stream=True),
             chat_line("d", "x", tools=[{"type": "function", "function": {"name": "a b"}}]),
             request_line("e", "a Responses line"), chat_line("f", "x", store=True)]
    batch = run_batch(carol, lines, endpoint="/v1/chat/completions")
    assert batch.status == "failed"
    assert [(e.line, e.param) for e in batch.errors.data] == [
        (2, "body.n"), (3, "body.stream"), (4, "body.tools[0].function.name"), (5, "url"), (6, "body.store")]


def test_a_bad_input_file_fails_the_batch_with_the_error_of_each_line(carol: openai.OpenAI):
    lines = [
        request_line("a", "fine"),
        b"{not json",
        request_line("a", "the same custom_id"),
        {**request_line("b", "x"), "url": "/v1/chat/completions"},
        {**request_line("c", "x"), "method": "GET"},
        {"custom_id": "d", "method": "POST", "url": "/v1/responses", "body": {"input": "no model"}},
        request_line("e", "x", temperature=9),
        request_line("f", "x", stream=True),
        {**request_line("g", "x"), "body": {"model": "echo-short", "input": "another model"}},
    ]
    batch = run_batch(carol, lines)
    assert batch.status == "failed" and batch.failed_at and batch.output_file_id is None
    assert [(e.line, e.code, e.param) for e in batch.errors.data] == [
        (2, "invalid_json_line", None), (3, "duplicate_custom_id", "custom_id"), (4, "invalid_url", "url"),
        (5, "invalid_method", "method"), (6, "missing_required_parameter", "body.model"),
        (7, "decimal_out_of_range", "body.temperature"),
        (8, "invalid_request", "body.stream"), (9, "mismatched_model", "body.model")]
    assert not BatchRequest.objects.filter(batch_id=batch.id).exists()


def test_a_cancelled_batch_keeps_what_ended_and_reports_the_rest(carol: openai.OpenAI, settings):
    settings.BATCH_MAX_IN_FLIGHT = 1
    lines = [request_line(f"q{n}", f"Question {n}", **slow(30 if n else 0)) for n in range(6)]
    batch = carol.batches.create(input_file_id=batch_file(carol, lines), endpoint="/v1/responses",
                                 completion_window="24h")
    wait_until(lambda: carol.batches.retrieve(batch.id).request_counts.completed >= 1, timeout=30)
    cancelling = carol.batches.cancel(batch.id)
    assert cancelling.status in ("cancelling", "cancelled") and cancelling.cancelling_at
    ended = wait_until(lambda: (b := carol.batches.retrieve(batch.id)).status in ENDED and b, timeout=30)
    assert ended.status == "cancelled" and ended.cancelled_at >= ended.cancelling_at
    assert carol.batches.cancel(batch.id).status == "cancelled"  # cancelling an ended batch changes nothing

    output = jsonl(carol, ended.output_file_id)
    assert output[0]["custom_id"] == "q0" and len(output) == ended.request_counts.completed
    errors = jsonl(carol, ended.error_file_id)
    assert len(output) + len(errors) == 6
    assert {line["error"]["code"] for line in errors} == {"batch_cancelled"}
    assert [line["custom_id"] for line in output + errors] == [f"q{n}" for n in range(6)]


def test_a_batch_that_outlives_its_window_expires(carol: openai.OpenAI, settings):
    settings.BATCH_COMPLETION_WINDOW_S = 2
    settings.BATCH_MAX_IN_FLIGHT = 1
    lines = [request_line(f"q{n}", f"Question {n}", **slow(40)) for n in range(4)]
    batch = carol.batches.create(input_file_id=batch_file(carol, lines), endpoint="/v1/responses",
                                 completion_window="24h")
    wait_until(lambda: carol.batches.retrieve(batch.id).status == "in_progress", timeout=30)
    # The first request to end after the window's end (about 1.5 s each here) expires the batch.
    wait_until(lambda: carol.batches.retrieve(batch.id).status in ENDED, timeout=30, interval=0.5)
    ended = carol.batches.retrieve(batch.id)
    assert ended.status == "expired" and ended.expired_at >= ended.expires_at
    errors = jsonl(carol, ended.error_file_id)
    assert errors and {line["error"]["code"] for line in errors} == {"batch_expired"}
    assert ended.request_counts.completed + len(errors) == 4


def test_batch_requests_beyond_the_tenants_queue_limit_fail_the_batch(carol: openai.OpenAI, carol_tenant: str):
    Tenant.objects.filter(name=carol_tenant).update(max_queued_batch_requests=2)
    batch = run_batch(carol, [request_line(f"q{n}", "x") for n in range(3)])
    assert batch.status == "failed"
    assert [error.code for error in batch.errors.data] == ["batch_queue_limit_exceeded"]


def test_a_batch_never_has_more_responses_in_flight_than_its_cap(carol: openai.OpenAI):
    # The cap of both this process and this pytest worker's live stack (STACK_ENV), whichever
    # advances the batch.
    cap = int(STACK_ENV["BATCH_MAX_IN_FLIGHT"])
    lines = [request_line(f"q{n}", f"Question {n}", **slow(5)) for n in range(3 * cap)]
    batch = carol.batches.create(input_file_id=batch_file(carol, lines), endpoint="/v1/responses",
                                 completion_window="24h")
    peak = 0

    def ended() -> bool:
        nonlocal peak
        peak = max(peak, BatchRequest.objects.filter(batch_id=batch.id, state=BatchRequestState.RUNNING).count())
        return carol.batches.retrieve(batch.id).status in ENDED

    wait_until(ended, timeout=60, interval=0.05)
    assert carol.batches.retrieve(batch.id).request_counts.completed == 3 * cap
    assert 1 < peak <= cap


def lose_first_answer(batch_id: str) -> str:
    """What the reaper does to a response whose worker was killed mid-answer: fail it with a
    server_error once it has streamed output. Returns its id."""
    def answering() -> str | None:
        request = BatchRequest.objects.filter(batch_id=batch_id, line=0, state=BatchRequestState.RUNNING).first()
        return request and OutputItem.objects.filter(response_id=request.response_id).exists() and request.response_id

    lost = wait_until(answering, timeout=30, interval=0.02)
    assert end_response(lost, ResponseStatus.FAILED, error={"code": "server_error", "message": "worker lost"})
    return lost


@pytest.mark.parametrize("attempts", [3, 1])
def test_a_request_whose_response_was_lost_runs_again_within_its_attempts(
        carol: openai.OpenAI, settings, attempts: int):
    settings.BATCH_MAX_IN_FLIGHT, settings.BATCH_REQUEST_MAX_ATTEMPTS = 1, attempts
    lines = [request_line(f"q{n}", f"Question {n}", **slow(20)) for n in range(3)]
    batch = carol.batches.create(input_file_id=batch_file(carol, lines), endpoint="/v1/responses",
                                 completion_window="24h")
    lost = lose_first_answer(batch.id)
    ended = wait_until(lambda: (b := carol.batches.retrieve(batch.id)).status in ENDED and b, timeout=60)
    request = BatchRequest.objects.get(batch_id=batch.id, line=0)
    assert Response.objects.filter(batch_id=batch.id).count() == 3 + (attempts > 1)
    if attempts > 1:  # run again, into the output file: one line per request, the second answer's
        assert (ended.request_counts.completed, ended.request_counts.failed) == (3, 0)
        assert request.attempts == 2 and request.response_id != lost
        output = jsonl(carol, ended.output_file_id)
        assert [line["custom_id"] for line in output] == ["q0", "q1", "q2"]
        assert output[0]["response"]["body"]["id"] == request.response_id
        assert output[0]["response"]["body"]["output"][-1]["content"][0]["text"] == "You said: Question 0"
        assert ended.error_file_id is None
    else:  # its attempts used up: the failure goes to the error file
        assert (ended.request_counts.completed, ended.request_counts.failed) == (2, 1)
        assert (request.attempts, request.response_id) == (1, lost)
        [error] = jsonl(carol, ended.error_file_id)
        assert error["custom_id"] == "q0" and error["response"]["status_code"] == 500
        assert error["response"]["request_id"] == lost and error["response"]["body"]["error"]["code"] == "server_error"


@pytest.mark.parametrize(("body", "status", "param"), [
    ({"endpoint": "/v1/embeddings"}, 400, "endpoint"),
    ({"completion_window": "1h"}, 400, "completion_window"),
    ({"input_file_id": "file-missing"}, 404, "input_file_id"),
    ({"metadata": {"k": 3}}, 400, "metadata.k"),
    ({"output_expires_after": {"anchor": "created_at", "seconds": 60}}, 400, "output_expires_after.seconds"),
    ({"priority": "high"}, 400, "priority"),
])
def test_a_bad_create_is_a_4xx_naming_the_parameter(carol: openai.OpenAI, body: dict, status: int, param: str):
    good = {"input_file_id": batch_file(carol, [request_line("a", "x")]), "endpoint": "/v1/responses",
            "completion_window": "24h"}
    with pytest.raises(openai.APIStatusError) as refused:
        carol.post("/batches", body={**good, **body}, cast_to=dict)
    assert refused.value.status_code == status and refused.value.body["param"] == param
    if param == "endpoint":
        assert "/v1/responses" in refused.value.message


def test_a_file_of_another_purpose_is_not_a_batch_input(carol: openai.OpenAI):
    other = carol.files.create(file=("requests.jsonl", json.dumps(request_line("a", "x")).encode()),
                               purpose="user_data")
    with pytest.raises(openai.BadRequestError) as refused:
        carol.batches.create(input_file_id=other.id, endpoint="/v1/responses", completion_window="24h")
    assert refused.value.code == "invalid_file_purpose"


def test_a_tenant_sees_only_its_own_batches(alice: openai.OpenAI, bob: openai.OpenAI):
    batch = run_batch(alice, [request_line("a", "x")])
    for call in (lambda: bob.batches.retrieve(batch.id), lambda: bob.batches.cancel(batch.id),
                 lambda: bob.files.content(batch.output_file_id)):
        with pytest.raises(openai.NotFoundError):
            call()
    with pytest.raises(openai.NotFoundError):
        bob.batches.create(input_file_id=batch.input_file_id, endpoint="/v1/responses", completion_window="24h")
    assert batch.id in [b.id for b in alice.batches.list(limit=100)]
    assert batch.id not in [b.id for b in bob.batches.list(limit=100)]
