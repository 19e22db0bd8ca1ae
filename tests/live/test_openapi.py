"""GET /v1/openapi.json describes every /v1 operation, and the live stack keeps to it:
schemathesis sends generated requests (valid and invalid) to each operation, with a
read-write key, and checks that none is a 5xx, hangs, or answers outside the document."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from responses_app.api.openapi import LINKS
from tests.helpers import VALID_CREATES
from tests.live.stack import LiveStack
from tests.live.webhook_receiver import Receiver

pytestmark = pytest.mark.core

# Bounded so that `make test` stays within CI's limit: examples per operation and phase.
# Fewer on SQLite, whose run repeats what PostgreSQL's found for what both share.
MAX_EXAMPLES = 25 if connection.vendor == "postgresql" else 10
STATEFUL_EXAMPLES = 60
# Generated requests per mode for each operation a link leads to.
CHAIN_EXAMPLES = 5
ROOT = Path(__file__).resolve().parents[2]
REQUEST_TIMEOUT_S = 30
# What schemathesis checks beyond the defaults, and the one default left out: the SDK's
# create parameters include tools, items and options this server refuses by name with a
# 400, so "schema-valid data is accepted" cannot hold for POST /v1/responses.
EXCLUDED_CHECKS = [schemathesis.checks.positive_data_acceptance]

WEBHOOK_OPERATIONS = {
    ("POST", "/v1/webhook_endpoints"), ("GET", "/v1/webhook_endpoints"),
    ("GET", "/v1/webhook_endpoints/{webhook_endpoint_id}"), ("POST", "/v1/webhook_endpoints/{webhook_endpoint_id}"),
    ("DELETE", "/v1/webhook_endpoints/{webhook_endpoint_id}"),
    ("POST", "/v1/webhook_endpoints/{webhook_endpoint_id}/rotate_secret"),
    ("POST", "/v1/webhook_endpoints/{webhook_endpoint_id}/test"), ("GET", "/v1/webhook_event_types"),
}
SCHEDULE_OPERATIONS = {
    ("POST", "/v1/scheduled_responses"), ("GET", "/v1/scheduled_responses"),
    ("GET", "/v1/scheduled_responses/{scheduled_response_id}"),
    ("POST", "/v1/scheduled_responses/{scheduled_response_id}"),
    ("DELETE", "/v1/scheduled_responses/{scheduled_response_id}"),
    ("GET", "/v1/scheduled_responses/{scheduled_response_id}/runs"),
}
CONVERSATION_OPERATIONS = {
    ("POST", "/v1/conversations"), ("GET", "/v1/conversations/{conversation_id}"),
    ("POST", "/v1/conversations/{conversation_id}"), ("DELETE", "/v1/conversations/{conversation_id}"),
    ("POST", "/v1/conversations/{conversation_id}/items"), ("GET", "/v1/conversations/{conversation_id}/items"),
    ("GET", "/v1/conversations/{conversation_id}/items/{item_id}"),
    ("DELETE", "/v1/conversations/{conversation_id}/items/{item_id}"),
}
FILE_OPERATIONS = {
    ("POST", "/v1/files"), ("GET", "/v1/files"), ("GET", "/v1/files/{file_id}"), ("DELETE", "/v1/files/{file_id}"),
    ("GET", "/v1/files/{file_id}/content"),
}
PROMPT_OPERATIONS = {
    ("POST", "/v1/prompts"), ("GET", "/v1/prompts"), ("GET", "/v1/prompts/{prompt_id}"),
    ("POST", "/v1/prompts/{prompt_id}"), ("DELETE", "/v1/prompts/{prompt_id}"),
    ("GET", "/v1/prompts/{prompt_id}/versions"),
}
BATCH_OPERATIONS = {
    ("POST", "/v1/batches"), ("GET", "/v1/batches"), ("GET", "/v1/batches/{batch_id}"),
    ("POST", "/v1/batches/{batch_id}/cancel"),
}
CONTAINER_OPERATIONS = {
    ("POST", "/v1/containers"), ("GET", "/v1/containers"), ("GET", "/v1/containers/{container_id}"),
    ("DELETE", "/v1/containers/{container_id}"), ("POST", "/v1/containers/{container_id}/files"),
    ("GET", "/v1/containers/{container_id}/files"), ("GET", "/v1/containers/{container_id}/files/{file_id}"),
    ("DELETE", "/v1/containers/{container_id}/files/{file_id}"),
    ("GET", "/v1/containers/{container_id}/files/{file_id}/content"),
}
VECTOR_STORE_OPERATIONS = {
    ("POST", "/v1/vector_stores"), ("GET", "/v1/vector_stores"), ("GET", "/v1/vector_stores/{vector_store_id}"),
    ("POST", "/v1/vector_stores/{vector_store_id}"), ("DELETE", "/v1/vector_stores/{vector_store_id}"),
    ("POST", "/v1/vector_stores/{vector_store_id}/search"), ("POST", "/v1/vector_stores/{vector_store_id}/files"),
    ("GET", "/v1/vector_stores/{vector_store_id}/files"),
    ("GET", "/v1/vector_stores/{vector_store_id}/files/{file_id}"),
    ("POST", "/v1/vector_stores/{vector_store_id}/files/{file_id}"),
    ("DELETE", "/v1/vector_stores/{vector_store_id}/files/{file_id}"),
    ("GET", "/v1/vector_stores/{vector_store_id}/files/{file_id}/content"),
    ("POST", "/v1/vector_stores/{vector_store_id}/file_batches"),
    ("GET", "/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}"),
    ("POST", "/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}/cancel"),
    ("GET", "/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}/files"),
}
EMBEDDING_OPERATIONS = {("POST", "/v1/embeddings")}
CHAT_COMPLETION_OPERATIONS = {
    ("POST", "/v1/chat/completions"), ("GET", "/v1/chat/completions"),
    ("GET", "/v1/chat/completions/{completion_id}"), ("POST", "/v1/chat/completions/{completion_id}"),
    ("DELETE", "/v1/chat/completions/{completion_id}"), ("GET", "/v1/chat/completions/{completion_id}/messages"),
}
# Creates whose generated bodies (from the SDK's whole item and tool unions) this server
# mostly refuses: the document's own examples are sent as well.
WITH_EXAMPLES = {"POST /v1/responses", "POST /v1/responses/compact", "POST /v1/responses/input_tokens",
                 "POST /v1/conversations", "POST /v1/conversations/{conversation_id}/items", "POST /v1/containers",
                 "POST /v1/prompts", "POST /v1/prompts/{prompt_id}", "POST /v1/vector_stores/{vector_store_id}/files",
                 "POST /v1/vector_stores/{vector_store_id}/files/{file_id}",
                 "POST /v1/vector_stores/{vector_store_id}/file_batches", "POST /v1/scheduled_responses",
                 "POST /v1/embeddings", "POST /v1/chat/completions"}


def test_the_document_lists_every_operation_with_its_error_shape(stack: LiveStack):
    document = httpx.get(f"{stack.base_url}/openapi.json", timeout=30).json()
    operations = {(method.upper(), path) for path, methods in document["paths"].items() for method in methods}
    assert operations == {
        ("POST", "/v1/responses"), ("GET", "/v1/responses/{response_id}"), ("DELETE", "/v1/responses/{response_id}"),
        ("POST", "/v1/responses/{response_id}/cancel"), ("GET", "/v1/responses/{response_id}/input_items"),
        ("POST", "/v1/responses/input_tokens"), ("POST", "/v1/responses/compact"),
        ("GET", "/v1/models"), ("GET", "/v1/models/{model_id}"),
        *WEBHOOK_OPERATIONS, *SCHEDULE_OPERATIONS, *CONVERSATION_OPERATIONS, *CONTAINER_OPERATIONS,
        *FILE_OPERATIONS, *BATCH_OPERATIONS, *PROMPT_OPERATIONS, *VECTOR_STORE_OPERATIONS, *EMBEDDING_OPERATIONS,
        *CHAT_COMPLETION_OPERATIONS,
    }
    create = document["paths"]["/v1/responses"]["post"]
    assert set(create["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
    assert all(operation["responses"]["default"]["content"]["application/json"]["schema"]
               == {"$ref": "#/components/schemas/Error"}
               for methods in document["paths"].values() for operation in methods.values())
    assert {"Response", "ResponseStreamEvent", "ResponseItemList", "ResponseCreateParams"} <= set(
        document["components"]["schemas"])


OPERATIONS = [
    "POST /v1/responses", "GET /v1/responses/{response_id}", "DELETE /v1/responses/{response_id}",
    "POST /v1/responses/{response_id}/cancel", "GET /v1/responses/{response_id}/input_items",
    "POST /v1/responses/input_tokens", "POST /v1/responses/compact", "GET /v1/models", "GET /v1/models/{model_id}",
    *sorted(f"{method} {path}" for method, path in
            WEBHOOK_OPERATIONS | SCHEDULE_OPERATIONS | CONVERSATION_OPERATIONS | CONTAINER_OPERATIONS
            | FILE_OPERATIONS | PROMPT_OPERATIONS | VECTOR_STORE_OPERATIONS | EMBEDDING_OPERATIONS
            | CHAT_COMPLETION_OPERATIONS),
]


def remove_jobs_of_alice() -> None:
    """The schedules and webhook endpoints that generated requests made: they would go on
    creating responses and deliveries for the rest of the session. Deleted as the API does,
    which retries when a delivery races the delete."""
    from responses_app.models import PromptVersion, ScheduledResponse, WebhookEndpoint
    from responses_app.schedules.service import delete_schedule
    from responses_app.webhooks.endpoints import delete_endpoint

    for schedule in ScheduledResponse.objects.filter(tenant__name="alice").select_related("tenant"):
        delete_schedule(schedule.tenant, schedule.pk)
    for endpoint in WebhookEndpoint.objects.filter(tenant__name="alice").select_related("tenant"):
        delete_endpoint(endpoint.tenant, endpoint.pk)
    PromptVersion.objects.filter(tenant__name="alice").delete()  # else they would fill alice's quota of versions


def with_a_served_model(case: schemathesis.Case) -> schemathesis.Case:
    """Generated creates name a model that exists, so that some get past validation and run."""
    if isinstance(case.body, dict):
        case.body["model"] = "echo"
    return case


def with_a_served_endpoint(url: str) -> Any:
    """Generated endpoints point at the test's receiver (so that they pass the URL guard)
    and subscribe to an event this server sends (the SDK lists many that it does not)."""
    def change(case: schemathesis.Case) -> schemathesis.Case:
        if isinstance(case.body, dict):
            if "url" in case.body:
                case.body["url"] = url
            if "event_types" in case.body:
                case.body["event_types"] = ["response.completed"]
        return case
    return change


def strategy(operation: schemathesis.APIOperation, label: str, mode: GenerationMode, ids: dict[str, str]) -> Any:
    """Valid requests go to objects that exist (alice's response, the echo model), so that
    their 200s are checked too; invalid ones get whatever is generated."""
    if mode is GenerationMode.NEGATIVE:
        return operation.as_strategy(generation_mode=mode)
    # A file_id is a container file's under /v1/containers, a Files API file's under /v1/files
    # and /v1/vector_stores.
    path = label.split()[1]
    ids = {**ids, "file_id": ids["uploaded_file_id"]} if path.startswith(("/v1/files", "/v1/vector_stores")) else ids
    known = {name: ids[name] for name in re.findall(r"{(\w+)}", label) if name in ids}
    cases = operation.as_strategy(generation_mode=mode, path_parameters=known or None)
    if label.startswith("POST /v1/webhook_endpoints"):
        return cases.map(with_a_served_endpoint(ids["url"]))
    if label not in WITH_EXAMPLES:
        return cases
    # The document's own examples too: a body generated from all of the SDK's parameters is
    # rarely one that this server accepts.
    if label.startswith("POST /v1/responses"):
        cases = cases.map(with_a_served_model)
    examples = [example.map(with_path_parameters(known)) for example in operation.get_strategies_from_examples()]
    if label.startswith("POST /v1/vector_stores/{vector_store_id}/f"):
        return st.one_of(cases, *examples).map(with_a_known_file(ids["uploaded_file_id"]))
    return st.one_of(cases, *examples)


def with_a_known_file(file_id: str) -> Any:
    """A file added to a store is one of alice's (a generated id never is one)."""
    def change(case: schemathesis.Case) -> schemathesis.Case:
        if isinstance(case.body, dict):
            if "file_id" in case.body:
                case.body["file_id"] = file_id
            if isinstance(case.body.get("file_ids"), list):
                case.body["file_ids"] = [file_id]
            if isinstance(case.body.get("files"), list):
                case.body["files"] = [{"file_id": file_id}]
        return case
    return change


def with_path_parameters(known: dict[str, str]) -> Any:
    """An example of the document goes to the objects that exist too (its path parameters
    are generated, and rarely name one)."""
    def apply(case: schemathesis.Case) -> schemathesis.Case:
        case.path_parameters = {**(case.path_parameters or {}), **known}
        return case

    return apply


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("label", OPERATIONS)
def test_every_operation_keeps_to_the_document(stack: LiveStack, alice, alice_key: str, label: str,
                                               mode: GenerationMode, request: pytest.FixtureRequest, db_access):
    operation = schemathesis.openapi.from_url(f"{stack.base_url}/openapi.json").find_operation_by_label(label)
    assert operation is not None
    receiver = Receiver()
    request.addfinalizer(receiver.close)
    request.addfinalizer(remove_jobs_of_alice)
    ids = {"response_id": alice.responses.create(model="echo", input="Hi", background=True).id, "model_id": "echo",
           "url": receiver.url,
           "webhook_endpoint_id": alice.webhooks.create(name="schemathesis", url=receiver.url,
                                                        event_types=["response.completed"]).id,
           "scheduled_response_id": alice.post("/scheduled_responses", cast_to=httpx.Response, body={
               "name": "schemathesis", "schedule": {"every_seconds": 3600},
               "request": {"model": "echo", "input": "Hi"}}).json()["id"]}
    conversation = alice.conversations.create(items=[{"role": "user", "content": "Hi"}])
    ids["conversation_id"] = conversation.id
    ids["item_id"] = alice.conversations.items.list(conversation.id).data[0].id
    ids["container_id"] = alice.containers.create(name="schemathesis").id
    ids["file_id"] = alice.containers.files.create(ids["container_id"], file=("a.txt", b"a")).id
    ids["uploaded_file_id"] = alice.files.create(file=("a.txt", b"a"), purpose="user_data").id
    ids["vector_store_id"] = alice.vector_stores.create(name="schemathesis", file_ids=[ids["uploaded_file_id"]]).id
    ids["batch_id"] = alice.vector_stores.file_batches.create(ids["vector_store_id"],
                                                              file_ids=[ids["uploaded_file_id"]]).id
    ids["completion_id"] = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": "Hi"}],
                                                         store=True).id
    ids["prompt_id"] = alice.post("/prompts", cast_to=httpx.Response,
                                  body={"instructions": "Hi {{name}}."}).json()["id"]
    headers = {"Authorization": f"Bearer {alice_key}"}
    statuses: list[int] = []

    @given(case=strategy(operation, label, mode, ids))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def keeps_to_the_document(case: schemathesis.Case) -> None:
        response = case.call_and_validate(headers=headers, timeout=REQUEST_TIMEOUT_S,
                                          excluded_checks=EXCLUDED_CHECKS)
        statuses.append(response.status_code)

    keeps_to_the_document()
    assert statuses, "no request was sent"
    if mode is GenerationMode.POSITIVE:
        assert 200 in statuses, f"no valid request to {label} succeeded: {sorted(set(statuses))}"




def test_an_empty_page_keeps_to_the_document(stack: LiveStack, alice, alice_key: str):
    schema = schemathesis.openapi.from_url(f"{stack.base_url}/openapi.json")
    conversation = alice.conversations.create().id
    page = schema.find_operation_by_id("listConversationItems").Case(
        path_parameters={"conversation_id": conversation}).call_and_validate(
        headers={"Authorization": f"Bearer {alice_key}"}, timeout=REQUEST_TIMEOUT_S, excluded_checks=EXCLUDED_CHECKS)
    assert page.json()["data"] == [] and page.json()["first_id"] is None


def link_values(parameters: dict[str, str], path: dict[str, str], body: Any) -> dict[str, str]:
    """The values of a link's runtime expressions ($request.path.<name>, $response.body#<pointer>)."""
    values = {}
    for name, expression in parameters.items():
        if expression.startswith("$request.path."):
            values[name] = path[expression.removeprefix("$request.path.")]
        else:
            value = body
            for part in expression.removeprefix("$response.body#/").split("/"):
                value = value[int(part)] if isinstance(value, list) else value[part]
            values[name] = value
    return values


@pytest.mark.parametrize("create", sorted(LINKS))
def test_each_create_s_links_lead_to_operations_that_keep_to_the_document(
        stack: LiveStack, alice, alice_key: str, create: str, request: pytest.FixtureRequest, db_access):
    """Every link of the document, followed: a create (a valid body), each operation it links
    to on the created object (the link's own parameters, then generated requests, valid and
    invalid), the delete, and the reads again (now 404), every answer checked against the
    document (schema, status, content type) and none a 5xx."""
    schema = schemathesis.openapi.from_url(f"{stack.base_url}/openapi.json")
    receiver = Receiver()
    request.addfinalizer(receiver.close)
    request.addfinalizer(remove_jobs_of_alice)
    headers = {"Authorization": f"Bearer {alice_key}"}
    under = {"createConversationItems": {"conversation_id": lambda: alice.conversations.create().id},
             "createContainerFile": {"container_id": lambda: alice.containers.create(name="chain").id}}
    parent = {name: make() for name, make in under.get(create, {}).items()}
    operation = schema.find_operation_by_id(create)
    body = ({"file": b"chained"} if create == "createContainerFile"
            else {"file": b"chained", "purpose": "user_data"} if create == "createFile"
            else {**VALID_CREATES[operation.label], **({"url": receiver.url} if "webhook" in operation.label else {})})
    media_type = "multipart/form-data" if "file" in body else "application/json"
    created = operation.Case(path_parameters=parent, body=body, media_type=media_type).call_and_validate(
        headers=headers, timeout=REQUEST_TIMEOUT_S, excluded_checks=EXCLUDED_CHECKS)
    assert created.status_code == 200, created.text
    parameters, targets = LINKS[create]
    linked = link_values(parameters, parent, created.json())

    def call(target: str, **case: Any) -> Any:
        return schema.find_operation_by_id(target).Case(path_parameters=linked, **case).call_and_validate(
            headers=headers, timeout=REQUEST_TIMEOUT_S, excluded_checks=EXCLUDED_CHECKS)

    reads = [target for target in targets if schema.find_operation_by_id(target).method.upper() == "GET"]
    for target in reads:
        assert call(target).status_code == 200, target
    *others, delete = targets
    for target in others:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            generated(schema.find_operation_by_id(target), linked, mode, headers, receiver.url)
    assert call(delete).status_code == 200
    for target in reads:
        assert call(target).status_code == 404, target


def generated(operation: schemathesis.APIOperation, linked: dict[str, str], mode: GenerationMode,
              headers: dict[str, str], receiver_url: str) -> None:
    cases = operation.as_strategy(generation_mode=mode, path_parameters=linked)
    if mode is GenerationMode.POSITIVE and operation.label.startswith("POST /v1/webhook_endpoints"):
        cases = cases.map(with_a_served_endpoint(receiver_url))

    @given(case=cases)
    @settings(max_examples=CHAIN_EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def keeps_to_the_document(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=headers, timeout=REQUEST_TIMEOUT_S, excluded_checks=EXCLUDED_CHECKS)

    keeps_to_the_document()


def test_the_stateful_run_follows_every_link_with_no_server_error_and_no_violation(
        stack: LiveStack, alice_key: str, request: pytest.FixtureRequest, tmp_path, db_access):
    """Schemathesis' stateful phase (its own engine, from the command line): chains of calls
    that it draws along the document's links, every answer checked against the document,
    with the defaults' checks but positive_data_acceptance (see EXCLUDED_CHECKS)."""
    receiver = Receiver()
    request.addfinalizer(receiver.close)
    request.addfinalizer(remove_jobs_of_alice)
    calls = tmp_path / "calls.ndjson"
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.live.schemathesis_hooks", "PYTHONPATH": str(ROOT),
           "HOOKS_RECEIVER_URL": receiver.url, "HOOKS_CALL_LOG": str(calls)}
    run = subprocess.run(
        [str(Path(sys.executable).parent / "st"), "run", f"{stack.base_url}/openapi.json", "--phases", "stateful",
         "-H", f"Authorization: Bearer {alice_key}", "--exclude-checks", "positive_data_acceptance",
         "--max-examples", str(STATEFUL_EXAMPLES), "--seed", "1", "--request-timeout", str(REQUEST_TIMEOUT_S),
         "--workers", "1", "--no-color"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    answered = [json.loads(line) for line in calls.read_text().splitlines()]
    assert answered and all(call["status"] < 500 for call in answered)
    # Its engine picks its own chains; that each link is followed at least once is the test above.
    assert any(call["status"] < 300 and call["operation_id"] in LINKS for call in answered)
