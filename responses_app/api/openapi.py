"""The OpenAPI 3.1 document of /v1, served at ``GET /v1/openapi.json``.

drf-spectacular walks the URL conf, so every ApiView is in it with its path parameters;
what each operation takes and answers is declared beside it (views.py) with the pieces
below. The objects' schemas are the openai SDK's own types (``openai.types``), turned into
JSON Schema by pydantic, so the document describes exactly what the SDK parses. Every
operation answers its errors in the one shape of ``Error`` (the ``default`` response).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.http import HttpResponseBase, JsonResponse
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from openai.types import Model
from openai.types.responses import (
    InputTokenCountResponse,
    Response,
    ResponseItem,
    ResponseItemList,
    ResponseStreamEvent,
)
from openai.types.responses.input_token_count_params import InputTokenCountParams
from openai.types.responses.response_compact_params import ResponseCompactParams
from openai.types.responses.response_create_params import ResponseCreateParamsBase
from pydantic import TypeAdapter
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from responses_app.batches import openapi as batch_operations
from responses_app.chat_completions import openapi as chat_completion_operations
from responses_app.containers import openapi as container_operations
from responses_app.conversations import openapi as conversation_operations
from responses_app.embeddings import openapi as embedding_operations
from responses_app.files import openapi as file_operations
from responses_app.http.base import IgnoreAccept
from responses_app.http.openapi import ERROR, INCLUDE, ORDER, REF, Links, SdkTypes, deleted, ref
from responses_app.prompts import openapi as prompt_operations
from responses_app.schedules import openapi as schedule_operations
from responses_app.vector_stores import openapi as vector_store_operations
from responses_app.webhooks import openapi as webhook_operations

# (name in components, SDK type, pydantic mode: what a client sends is "validation").
# The SDK types of the operations declared here; with each capability's own, the
# document's components (SDK_TYPES below).
_SDK_TYPES: SdkTypes = (
    ("Response", Response, "serialization"),
    ("ResponseItemList", ResponseItemList, "serialization"),
    ("ResponseStreamEvent", ResponseStreamEvent, "serialization"),
    ("Model", Model, "serialization"),
    ("ResponseCreateParams", ResponseCreateParamsBase, "validation"),
    ("InputTokenCountParams", InputTokenCountParams, "validation"),
    ("ResponseCompactParams", ResponseCompactParams, "validation"),
    ("ResponseItem", ResponseItem, "serialization"),
    ("InputTokenCountResponse", InputTokenCountResponse, "serialization"),
)
# The request body of a create: the SDK's parameters, plus ``stream`` (the SDK splits them
# into a streaming and a non-streaming type only to type the reply).
CREATE_BODY = {"allOf": [ref("ResponseCreateParams"),
                         {"type": "object", "properties": {"stream": {"type": ["boolean", "null"]}}}]}
# One Server-Sent Event, in OpenAPI 3.2's way of describing a stream's items: its `data`
# is a ResponseStreamEvent as JSON. The stream ends after the terminal event.
SSE_EVENT = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "description": "The event's type."},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "contentSchema": ref("ResponseStreamEvent")},
    },
}
MODEL_LIST = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {"object": {"const": "list"},
                   "data": {"type": "array", "items": ref("Model")}},
}

# Codex CLI's model catalog (wire/codex_catalog.py): Codex's own type, which no SDK has.
CODEX_CATALOG = {
    "type": "object",
    "required": ["models"],
    "properties": {"models": {"type": "array", "items": {
        "type": "object",
        "required": ["slug", "display_name", "supported_reasoning_levels", "shell_type", "visibility",
                     "supported_in_api", "priority", "support_verbosity", "truncation_policy",
                     "experimental_supported_tools", "base_instructions"],
        "properties": {"slug": {"type": "string"}, "context_window": {"type": "integer"},
                       "auto_compact_token_limit": {"type": "integer"}},
    }}},
}


# The SDK's CompactedResponse types ``output`` as output items, yet it holds the user's
# messages too (input_text parts), as OpenAI's API sends them: any item, then.
COMPACTED_RESPONSE = {
    "type": "object", "required": ["id", "object", "created_at", "output", "usage"],
    "properties": {"id": {"type": "string"}, "object": {"const": "response.compaction"},
                   "created_at": {"type": "integer"}, "output": {"type": "array", "items": ref("ResponseItem")},
                   "usage": ref("ResponseUsage")},
}


def json_or_event_stream(description: str) -> dict[tuple[int, str], OpenApiResponse]:
    """200 as a Response object, or as an event stream of ResponseStreamEvent frames."""
    return {
        (200, "application/json"): OpenApiResponse(ref("Response"), description=description),
        (200, "text/event-stream"): OpenApiResponse(SSE_EVENT, description=f"{description}, as events (stream=true)"),
    }


CREATE = extend_schema(
    operation_id="createResponse",
    summary="Create a response", request={"application/json": CREATE_BODY},
    responses=json_or_event_stream("The response (queued if background, finished otherwise)"),
    examples=[
        OpenApiExample("A question", value={"model": "echo", "input": "What is the capital of France?"},
                       request_only=True),
        OpenApiExample("A streamed background response", request_only=True, value={
            "model": "echo", "input": [{"role": "user", "content": "Tell me a story."}], "instructions": "Be brief.",
            "stream": True, "background": True, "max_output_tokens": 200, "metadata": {"ticket": "T-1"}}),
    ])
RETRIEVE = extend_schema(
    operation_id="retrieveResponse",
    summary="Retrieve a response, or stream its events",
    parameters=[
        OpenApiParameter("stream", bool, description="Stream the events instead of the object."),
        OpenApiParameter("starting_after", int, description="With stream=true: the sequence number to resume after."),
        INCLUDE,
    ],
    responses=json_or_event_stream("The response"))
DELETE = extend_schema(operation_id="deleteResponse", summary="Delete a response",
                       responses={200: OpenApiResponse(deleted("response.deleted"))})
CANCEL = extend_schema(operation_id="cancelResponse", summary="Cancel a background response", request=None,
                       responses={200: OpenApiResponse(ref("Response"))})
INPUT_ITEMS = extend_schema(
    operation_id="listInputItems",
    summary="List a response's input items",
    parameters=[
        OpenApiParameter("after", str, description="An item id: list the items after it."),
        OpenApiParameter("limit", int, description="1 to 100 (default 20)."),
        ORDER,
    ],
    responses={200: OpenApiResponse(ref("ResponseItemList"))})
MODELS = extend_schema(
    operation_id="listModels", summary="List the models",
    description="With `client_version`, the model catalog Codex CLI reads for a custom provider "
                "(`{\"models\": [ModelInfo]}`, with an ETag) instead of the list.",
    parameters=[OpenApiParameter("client_version", str, description="Codex CLI's version: answer with its catalog.")],
    responses={200: OpenApiResponse({"oneOf": [MODEL_LIST, CODEX_CATALOG]})})
MODEL = extend_schema(operation_id="retrieveModel", summary="Retrieve a model",
                      responses={200: OpenApiResponse(ref("Model"))})


COMPACT = extend_schema(
    operation_id="compactResponse", summary="Compact a context: its user messages and a summary by the model",
    request={"application/json": ref("ResponseCompactParams")},
    examples=[OpenApiExample("A context", request_only=True, value={
        "model": "echo", "input": [{"role": "user", "content": "My name is Ada."},
                                   {"role": "assistant", "content": "Hello Ada."}]})],
    responses={200: OpenApiResponse(COMPACTED_RESPONSE)})
INPUT_TOKENS = extend_schema(
    operation_id="countInputTokens", summary="Count the prompt tokens of a create, without creating it",
    request={"application/json": ref("InputTokenCountParams")},
    examples=[OpenApiExample("A question", request_only=True,
                             value={"model": "echo", "input": "What is the capital of France?"})],
    responses={200: OpenApiResponse(ref("InputTokenCountResponse"))})


# OpenAPI links: what a create's answer lets a client call next (schemathesis follows them
# in its stateful run). The create's operation, the parameters it fills, the operations.
_LINKS: Links = {
    "createResponse": ({"response_id": "$response.body#/id"},
                       ("retrieveResponse", "cancelResponse", "listInputItems", "deleteResponse")),
}

# Each capability's operations (its openapi.py: SDK_TYPES, LINKS), and where the SDK's
# types say other than the wire.
CAPABILITIES = (chat_completion_operations, container_operations, conversation_operations, embedding_operations,
                file_operations, batch_operations, schedule_operations, prompt_operations, webhook_operations,
                vector_store_operations)
SCHEMA_FIXES = (embedding_operations.fix_schemas, file_operations.fix_schemas, vector_store_operations.fix_schemas)
SDK_TYPES: SdkTypes = (*_SDK_TYPES, *(sdk_type for capability in CAPABILITIES for sdk_type in capability.SDK_TYPES))
LINKS: Links = {**_LINKS, **{create: link for capability in CAPABILITIES for create, link in capability.LINKS.items()}}


def add_sdk_schemas_and_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the SDK's schemas become components, and every
    operation's errors are the ``default`` response in the Error shape, and each create links
    to what its answer lets a client call next."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(sdk_components())
    for schema in schemas.values():
        # The SDK types a page's first_id and last_id as strings; an empty page has neither
        # and sends null (as OpenAI does), so the document says so.
        for name in ("first_id", "last_id"):
            cursor = schema.get("properties", {}).get(name)
            if cursor is not None and cursor.get("type") == "string":
                cursor["type"] = ["string", "null"]
    for fix_schemas in SCHEMA_FIXES:
        fix_schemas(schemas)
    schemas["Error"] = ERROR
    error = {"description": "An error in OpenAI's shape (4xx, 5xx).",
             "content": {"application/json": {"schema": ref("Error")}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            operation["responses"]["default"] = error
            if operation.get("operationId") in LINKS:
                parameters, targets = LINKS[operation["operationId"]]
                operation["responses"]["200"]["links"] = {
                    target: {"operationId": target, "parameters": parameters} for target in targets}
    return result


def sdk_components() -> dict[str, Any]:
    keyed, definitions = TypeAdapter.json_schemas(
        [(name, mode, TypeAdapter(sdk_type)) for name, sdk_type, mode in SDK_TYPES], ref_template=REF)
    components = dict(definitions.get("$defs", {}))
    for (name, _mode), schema in keyed.items():
        if schema != ref(name):  # not already a definition of that name
            components[name] = schema
    return components


@cache
def openapi_document() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


@extend_schema(exclude=True)
class OpenApiDocumentView(APIView):
    """GET /v1/openapi.json: public, like OpenAI's own published document."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    content_negotiation_class = IgnoreAccept

    def get(self, request: Request) -> HttpResponseBase:
        return JsonResponse(openapi_document())


