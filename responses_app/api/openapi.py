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
from openai.types import (
    Batch,
    ContainerCreateResponse,
    ContainerListResponse,
    ContainerRetrieveResponse,
    CreateEmbeddingResponse,
    EmbeddingCreateParams,
    FileObject,
    Model,
)
from openai.types.batch_create_params import BatchCreateParams
from openai.types.container_create_params import ContainerCreateParams
from openai.types.containers import FileCreateResponse, FileListResponse, FileRetrieveResponse
from openai.types.conversations import (
    Conversation,
    ConversationDeletedResource,
    ConversationItem,
    ConversationItemList,
)
from openai.types.conversations.conversation_create_params import ConversationCreateParams
from openai.types.conversations.conversation_update_params import ConversationUpdateParams
from openai.types.conversations.item_create_params import ItemCreateParams
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
from openai.types.webhooks import (
    DeletedWebhookEndpoint,
    WebhookEndpoint,
    WebhookEndpointList,
    WebhookEndpointTestResult,
    WebhookEndpointWithSecret,
    WebhookEventTypeList,
)
from openai.types.webhooks.webhook_create_params import WebhookCreateParams
from openai.types.webhooks.webhook_rotate_secret_params import WebhookRotateSecretParams
from openai.types.webhooks.webhook_test_params import WebhookTestParams
from openai.types.webhooks.webhook_update_params import WebhookUpdateParams
from pydantic import TypeAdapter
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from responses_app.http.base import IgnoreAccept
from responses_app.http.openapi import ERROR, PAGE, REF, Links, SdkTypes, deleted, list_of, ref
from responses_app.models import FilePurpose
from responses_app.vector_stores import openapi as vector_store_operations
from responses_app.wire.request_body import SUPPORTED_INCLUDE_VALUES

# (name in components, SDK type, pydantic mode: what a client sends is "validation").
# The SDK types of the operations declared here; with each capability's own, the
# document's components (SDK_TYPES below).
_SDK_TYPES: SdkTypes = (
    ("Response", Response, "serialization"),
    ("ResponseItemList", ResponseItemList, "serialization"),
    ("ResponseStreamEvent", ResponseStreamEvent, "serialization"),
    ("Model", Model, "serialization"),
    ("ResponseCreateParams", ResponseCreateParamsBase, "validation"),
    ("WebhookEndpoint", WebhookEndpoint, "serialization"),
    ("WebhookEndpointWithSecret", WebhookEndpointWithSecret, "serialization"),
    ("WebhookEndpointList", WebhookEndpointList, "serialization"),
    ("WebhookEndpointTestResult", WebhookEndpointTestResult, "serialization"),
    ("WebhookEventTypeList", WebhookEventTypeList, "serialization"),
    ("DeletedWebhookEndpoint", DeletedWebhookEndpoint, "serialization"),
    ("WebhookCreateParams", WebhookCreateParams, "validation"),
    ("WebhookUpdateParams", WebhookUpdateParams, "validation"),
    ("WebhookRotateSecretParams", WebhookRotateSecretParams, "validation"),
    ("WebhookTestParams", WebhookTestParams, "validation"),
    ("Conversation", Conversation, "serialization"),
    ("ConversationDeletedResource", ConversationDeletedResource, "serialization"),
    ("ConversationItem", ConversationItem, "serialization"),
    ("ConversationItemList", ConversationItemList, "serialization"),
    ("ConversationCreateParams", ConversationCreateParams, "validation"),
    ("ConversationUpdateParams", ConversationUpdateParams, "validation"),
    ("ConversationItemCreateParams", ItemCreateParams, "validation"),
    ("InputTokenCountParams", InputTokenCountParams, "validation"),
    ("ResponseCompactParams", ResponseCompactParams, "validation"),
    ("ResponseItem", ResponseItem, "serialization"),
    ("ContainerCreateParams", ContainerCreateParams, "validation"),
    ("ContainerCreateResponse", ContainerCreateResponse, "serialization"),
    ("ContainerListResponse", ContainerListResponse, "serialization"),
    ("ContainerRetrieveResponse", ContainerRetrieveResponse, "serialization"),
    ("ContainerFileCreateResponse", FileCreateResponse, "serialization"),
    ("ContainerFileListResponse", FileListResponse, "serialization"),
    ("ContainerFileRetrieveResponse", FileRetrieveResponse, "serialization"),
    ("InputTokenCountResponse", InputTokenCountResponse, "serialization"),
    ("FileObject", FileObject, "serialization"),
    ("EmbeddingCreateParams", EmbeddingCreateParams, "validation"),
    ("CreateEmbeddingResponse", CreateEmbeddingResponse, "serialization"),
    ("Batch", Batch, "serialization"),
    ("BatchCreateParams", BatchCreateParams, "validation"),
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

# Scheduled responses are this server's own extension: no SDK type describes them.
SCHEDULE = {
    "oneOf": [
        {"type": "object", "required": ["cron"], "additionalProperties": False,
         "properties": {"cron": {"type": "string", "description": "5 fields: minute hour day month weekday."},
                        "timezone": {"type": "string", "default": "UTC"}}},
        {"type": "object", "required": ["every_seconds"], "additionalProperties": False,
         "properties": {"every_seconds": {"type": "integer", "minimum": 1}}},
        {"type": "object", "required": ["at"], "additionalProperties": False,
         "properties": {"at": {"type": "string", "format": "date-time"}}},
    ],
}
SCHEDULED_RESPONSE = {
    "type": "object",
    "required": ["id", "object", "name", "schedule", "request", "enabled", "created_at", "updated_at",
                 "next_run_at", "last_run_at"],
    "properties": {
        "id": {"type": "string"}, "object": {"const": "scheduled_response"}, "name": {"type": "string"},
        "schedule": SCHEDULE, "request": {"type": "object", "description": "The body of a POST /v1/responses."},
        "enabled": {"type": "boolean"}, "created_at": {"type": "integer"}, "updated_at": {"type": "integer"},
        "next_run_at": {"type": ["integer", "null"]}, "last_run_at": {"type": ["integer", "null"]},
    },
}
SCHEDULE_FIELDS = {"name": {"type": "string"}, "schedule": SCHEDULE,
                   "request": {"type": "object", "description": "The body of a POST /v1/responses."},
                   "enabled": {"type": "boolean"}}
SCHEDULE_CREATE_BODY = {"type": "object", "required": ["name", "schedule", "request"],
                        "properties": SCHEDULE_FIELDS}
SCHEDULE_UPDATE_BODY = {"type": "object", "properties": SCHEDULE_FIELDS}


# Prompt templates are this server's own (OpenAI's dashboard has no public API for them).
PROMPT = {
    "type": "object",
    "required": ["id", "object", "version", "instructions", "input", "variables", "metadata", "created_at"],
    "properties": {
        "id": {"type": "string"}, "object": {"const": "prompt"}, "version": {"type": "string"},
        "instructions": {"type": "string", "description": "With {{name}} variables."},
        "input": {"type": "array", "items": {"type": "object"}, "description": "Messages, with {{name}} variables."},
        "variables": {"type": "array", "items": {"type": "string"}},
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "created_at": {"type": "integer"},
    },
}
PROMPT_BODY = {"type": "object", "properties": {
    "instructions": {"type": "string"}, "input": {"type": "array", "items": {"type": "object"}},
    "metadata": {"type": "object", "additionalProperties": {"type": "string"}}}}


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


INCLUDE = OpenApiParameter("include[]", str, many=True, enum=sorted(SUPPORTED_INCLUDE_VALUES),
                           description="Output item fields to include.")

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
        OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc."),
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


WEBHOOK_CREATE = extend_schema(operation_id="createWebhookEndpoint", summary="Create a webhook endpoint",
                               request={"application/json": ref("WebhookCreateParams")},
                               responses={200: OpenApiResponse(ref("WebhookEndpointWithSecret"))})
WEBHOOK_LIST = extend_schema(operation_id="listWebhookEndpoints", summary="List webhook endpoints",
                             parameters=PAGE, responses={200: OpenApiResponse(ref("WebhookEndpointList"))})
WEBHOOK_RETRIEVE = extend_schema(operation_id="retrieveWebhookEndpoint", summary="Retrieve a webhook endpoint",
                                 responses={200: OpenApiResponse(ref("WebhookEndpoint"))})
WEBHOOK_UPDATE = extend_schema(operation_id="updateWebhookEndpoint", summary="Update a webhook endpoint",
                               request={"application/json": ref("WebhookUpdateParams")},
                               responses={200: OpenApiResponse(ref("WebhookEndpoint"))})
WEBHOOK_DELETE = extend_schema(operation_id="deleteWebhookEndpoint", summary="Delete a webhook endpoint",
                               responses={200: OpenApiResponse(ref("DeletedWebhookEndpoint"))})
WEBHOOK_ROTATE_SECRET = extend_schema(
    operation_id="rotateWebhookEndpointSecret", summary="Rotate a webhook endpoint's signing secret",
    request={"application/json": ref("WebhookRotateSecretParams")},
    responses={200: OpenApiResponse(ref("WebhookEndpointWithSecret"))})
WEBHOOK_TEST = extend_schema(operation_id="testWebhookEndpoint", summary="Send a sample event to a webhook endpoint",
                             request={"application/json": ref("WebhookTestParams")},
                             responses={200: OpenApiResponse(ref("WebhookEndpointTestResult"))})
WEBHOOK_EVENT_TYPES = extend_schema(operation_id="listWebhookEventTypes", summary="List the webhook event types",
                                    responses={200: OpenApiResponse(ref("WebhookEventTypeList"))})
SCHEDULE_CREATE = extend_schema(
    operation_id="createScheduledResponse", summary="Create a scheduled response",
    request={"application/json": SCHEDULE_CREATE_BODY}, responses={200: OpenApiResponse(SCHEDULED_RESPONSE)},
    examples=[OpenApiExample("Every minute", request_only=True, value={
        "name": "digest", "schedule": {"every_seconds": 60}, "request": {"model": "echo", "input": "Summarize."}})])
SCHEDULE_LIST = extend_schema(
    operation_id="listScheduledResponses", summary="List scheduled responses",
    parameters=[*PAGE, OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc.")],
    responses={200: OpenApiResponse(list_of(SCHEDULED_RESPONSE))})
SCHEDULE_RETRIEVE = extend_schema(operation_id="retrieveScheduledResponse", summary="Retrieve a scheduled response",
                                  responses={200: OpenApiResponse(SCHEDULED_RESPONSE)})
SCHEDULE_UPDATE = extend_schema(operation_id="updateScheduledResponse", summary="Update a scheduled response",
                                request={"application/json": SCHEDULE_UPDATE_BODY},
                                responses={200: OpenApiResponse(SCHEDULED_RESPONSE)})
SCHEDULE_DELETE = extend_schema(operation_id="deleteScheduledResponse", summary="Delete a scheduled response",
                                responses={200: OpenApiResponse(deleted("scheduled_response.deleted"))})
SCHEDULE_RUNS = extend_schema(
    operation_id="listScheduledResponseRuns", summary="List the responses a schedule created, newest first",
    parameters=PAGE, responses={200: OpenApiResponse(list_of(ref("Response")))})

PROMPT_CREATE = extend_schema(
    operation_id="createPrompt", summary="Create a prompt template (its version 1)",
    request={"application/json": PROMPT_BODY}, responses={200: OpenApiResponse(PROMPT)},
    examples=[OpenApiExample("A greeting", request_only=True, value={
        "instructions": "Greet {{name}} in {{language}}.", "input": [{"role": "user", "content": "Hello."}]})])
PROMPT_LIST = extend_schema(operation_id="listPrompts", summary="List the prompts (the latest version of each)",
                            parameters=PAGE, responses={200: OpenApiResponse(list_of(PROMPT))})
PROMPT_RETRIEVE = extend_schema(
    operation_id="retrievePrompt", summary="Retrieve a prompt",
    parameters=[OpenApiParameter("version", str, description="Default: the latest.")],
    responses={200: OpenApiResponse(PROMPT)})
PROMPT_NEW_VERSION = extend_schema(
    operation_id="createPromptVersion", summary="Add a version to a prompt",
    request={"application/json": PROMPT_BODY}, responses={200: OpenApiResponse(PROMPT)},
    examples=[OpenApiExample("Briefer", request_only=True, value={"instructions": "Greet {{name}} briefly."})])
PROMPT_DELETE = extend_schema(operation_id="deletePrompt", summary="Delete a prompt and all its versions",
                              responses={200: OpenApiResponse(deleted("prompt.deleted"))})
PROMPT_VERSIONS = extend_schema(operation_id="listPromptVersions", summary="List a prompt's versions, oldest first",
                                responses={200: OpenApiResponse(list_of(PROMPT))})

FILE_CREATE = extend_schema(
    operation_id="createFile", summary="Upload a file",
    request={"multipart/form-data": {
        "type": "object", "required": ["file", "purpose"],
        "properties": {"file": {"type": "string", "format": "binary"},
                       "purpose": {"type": "string", "enum": ["assistants", "batch", "fine-tune", "vision", "user_data",
                                                              "evals"]},
                       "expires_after[anchor]": {"type": "string", "enum": ["created_at"]},
                       "expires_after[seconds]": {"type": "integer", "minimum": 3600, "maximum": 2592000}}}},
    responses={200: OpenApiResponse(ref("FileObject"))})
FILE_LIST = extend_schema(
    operation_id="listFiles", summary="List the files",
    parameters=[*PAGE, OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc."),
                OpenApiParameter("purpose", str, description="Only the files of this purpose.")],
    responses={200: OpenApiResponse(list_of(ref("FileObject")))})
FILE_RETRIEVE = extend_schema(operation_id="retrieveFile", summary="Retrieve a file",
                              responses={200: OpenApiResponse(ref("FileObject"))})
FILE_DELETE = extend_schema(operation_id="deleteFile", summary="Delete a file and its bytes",
                            responses={200: OpenApiResponse(deleted("file"))})
EMBEDDINGS_CREATE = extend_schema(
    operation_id="createEmbedding", summary="Embed texts or token ids with an embedding model",
    request={"application/json": ref("EmbeddingCreateParams")},
    examples=[OpenApiExample("Two texts", request_only=True,
                             value={"model": "wordllama-l2-supercat", "input": ["a cat", "a dog"]})],
    responses={200: OpenApiResponse(ref("CreateEmbeddingResponse"))})
FILE_CONTENT = extend_schema(
    operation_id="retrieveFileContent", summary="Download a file's bytes",
    responses={(200, "application/octet-stream"): OpenApiResponse({"type": "string", "contentEncoding": "binary"})})
BATCH_CREATE = extend_schema(
    operation_id="createBatch", summary="Create a batch of /v1/responses requests from a batch file",
    request={"application/json": ref("BatchCreateParams")},
    examples=[OpenApiExample("A batch", request_only=True,
                             value={"input_file_id": "file-abc", "endpoint": "/v1/responses",
                                    "completion_window": "24h"})],
    responses={200: OpenApiResponse(ref("Batch"))})
BATCH_LIST = extend_schema(operation_id="listBatches", summary="List the batches, newest first", parameters=PAGE,
                           responses={200: OpenApiResponse(list_of(ref("Batch")))})
BATCH_RETRIEVE = extend_schema(operation_id="retrieveBatch", summary="Retrieve a batch",
                               responses={200: OpenApiResponse(ref("Batch"))})
BATCH_CANCEL = extend_schema(operation_id="cancelBatch", summary="Cancel a batch", request=None,
                             responses={200: OpenApiResponse(ref("Batch"))})
CONTAINER_CREATE = extend_schema(
    operation_id="createContainer", summary="Create a code interpreter container",
    request={"application/json": ref("ContainerCreateParams")},
    examples=[OpenApiExample("A container", request_only=True,
                             value={"name": "analysis", "expires_after": {"anchor": "last_active_at", "minutes": 20}})],
    responses={200: OpenApiResponse(ref("ContainerCreateResponse"))})
CONTAINER_LIST = extend_schema(
    operation_id="listContainers", summary="List the containers",
    parameters=[*PAGE, OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc."),
                OpenApiParameter("name", str, description="Only the containers of this name.")],
    responses={200: OpenApiResponse(list_of(ref("ContainerListResponse")))})
CONTAINER_RETRIEVE = extend_schema(operation_id="retrieveContainer", summary="Retrieve a container",
                                   responses={200: OpenApiResponse(ref("ContainerRetrieveResponse"))})
CONTAINER_DELETE = extend_schema(operation_id="deleteContainer", summary="Delete a container and its files",
                                 responses={200: OpenApiResponse(deleted("container.deleted"))})
CONTAINER_FILE_CREATE = extend_schema(
    operation_id="createContainerFile", summary="Upload a file into a container's /mnt/data, or copy one in",
    request={"multipart/form-data": {"type": "object", "required": ["file"],
                                     "properties": {"file": {"type": "string", "format": "binary"}}},
             "application/json": {"type": "object", "required": ["file_id"], "additionalProperties": False,
                                  "properties": {"file_id": {"type": "string"}}}},
    responses={200: OpenApiResponse(ref("ContainerFileCreateResponse"))})
CONTAINER_FILE_LIST = extend_schema(
    operation_id="listContainerFiles", summary="List a container's files",
    parameters=[*PAGE, OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc.")],
    responses={200: OpenApiResponse(list_of(ref("ContainerFileListResponse")))})
CONTAINER_FILE_RETRIEVE = extend_schema(operation_id="retrieveContainerFile", summary="Retrieve a container file",
                                        responses={200: OpenApiResponse(ref("ContainerFileRetrieveResponse"))})
CONTAINER_FILE_DELETE = extend_schema(operation_id="deleteContainerFile", summary="Delete a container file",
                                      responses={200: OpenApiResponse(deleted("container.file.deleted"))})
CONTAINER_FILE_CONTENT = extend_schema(
    operation_id="retrieveContainerFileContent", summary="Download a container file's bytes",
    responses={(200, "application/octet-stream"): OpenApiResponse({"type": "string", "contentEncoding": "binary"})})
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
CONVERSATION_CREATE = extend_schema(
    operation_id="createConversation", summary="Create a conversation",
    request={"application/json": ref("ConversationCreateParams")},
    examples=[OpenApiExample("A thread", request_only=True,
                             value={"metadata": {"topic": "travel"}, "items": [{"role": "user", "content": "Hi."}]})],
    responses={200: OpenApiResponse(ref("Conversation"))})
CONVERSATION_RETRIEVE = extend_schema(operation_id="retrieveConversation", summary="Retrieve a conversation",
                                      responses={200: OpenApiResponse(ref("Conversation"))})
CONVERSATION_UPDATE = extend_schema(
    operation_id="updateConversation", summary="Update a conversation's metadata",
    request={"application/json": ref("ConversationUpdateParams")},
    responses={200: OpenApiResponse(ref("Conversation"))})
CONVERSATION_DELETE = extend_schema(operation_id="deleteConversation", summary="Delete a conversation and its items",
                                    responses={200: OpenApiResponse(ref("ConversationDeletedResource"))})
CONVERSATION_ITEMS_CREATE = extend_schema(
    operation_id="createConversationItems", summary="Add up to 20 items to a conversation", parameters=[INCLUDE],
    request={"application/json": ref("ConversationItemCreateParams")},
    examples=[OpenApiExample("A message", request_only=True,
                             value={"items": [{"type": "message", "role": "user", "content": "And then?"}]})],
    responses={200: OpenApiResponse(ref("ConversationItemList"))})
CONVERSATION_ITEMS_LIST = extend_schema(
    operation_id="listConversationItems", summary="List a conversation's items",
    parameters=[*PAGE, OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc."), INCLUDE],
    responses={200: OpenApiResponse(ref("ConversationItemList"))})
CONVERSATION_ITEM_RETRIEVE = extend_schema(
    operation_id="retrieveConversationItem", summary="Retrieve an item of a conversation", parameters=[INCLUDE],
    responses={200: OpenApiResponse(ref("ConversationItem"))})
CONVERSATION_ITEM_DELETE = extend_schema(
    operation_id="deleteConversationItem", summary="Delete an item of a conversation",
    responses={200: OpenApiResponse(ref("Conversation"))})


# OpenAPI links: what a create's answer lets a client call next (schemathesis follows them
# in its stateful run). The create's operation, the parameters it fills, the operations.
_LINKS: Links = {
    "createResponse": ({"response_id": "$response.body#/id"},
                       ("retrieveResponse", "cancelResponse", "listInputItems", "deleteResponse")),
    "createConversation": ({"conversation_id": "$response.body#/id"},
                           ("retrieveConversation", "updateConversation", "createConversationItems",
                            "listConversationItems", "deleteConversation")),
    "createConversationItems": ({"conversation_id": "$request.path.conversation_id",
                                 "item_id": "$response.body#/data/0/id"},
                                ("retrieveConversationItem", "deleteConversationItem")),
    "createFile": ({"file_id": "$response.body#/id"}, ("retrieveFile", "retrieveFileContent", "deleteFile")),
    "createContainer": ({"container_id": "$response.body#/id"},
                        ("retrieveContainer", "createContainerFile", "listContainerFiles", "deleteContainer")),
    "createContainerFile": ({"container_id": "$request.path.container_id", "file_id": "$response.body#/id"},
                            ("retrieveContainerFile", "retrieveContainerFileContent", "deleteContainerFile")),
    "createWebhookEndpoint": ({"webhook_endpoint_id": "$response.body#/id"},
                              ("retrieveWebhookEndpoint", "updateWebhookEndpoint", "rotateWebhookEndpointSecret",
                               "testWebhookEndpoint", "deleteWebhookEndpoint")),
    "createScheduledResponse": ({"scheduled_response_id": "$response.body#/id"},
                                ("retrieveScheduledResponse", "updateScheduledResponse",
                                 "listScheduledResponseRuns", "deleteScheduledResponse")),
    "createPrompt": ({"prompt_id": "$response.body#/id"},
                     ("retrievePrompt", "createPromptVersion", "listPromptVersions", "deletePrompt")),
}

# The document's components and links: the operations' above, and each capability's own.
SDK_TYPES: SdkTypes = (*_SDK_TYPES, *vector_store_operations.SDK_TYPES)
LINKS: Links = {**_LINKS, **vector_store_operations.LINKS}


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
    # A file uploaded with purpose "evals" (the SDK's FilePurpose allows it) carries it back, as
    # OpenAI's files do; the SDK's FileObject lists only the purposes that came before.
    purposes = schemas["FileObject"]["properties"]["purpose"]["enum"]
    purposes += [purpose for purpose in FilePurpose.values if purpose not in purposes]
    vector_store_operations.fix_schemas(schemas)
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
    # The SDK types an embedding as its numbers; with encoding_format "base64" the wire holds
    # them as a string, float32 little-endian (the SDK decodes it), at OpenAI as here.
    embedding = components["Embedding"]["properties"]
    embedding["embedding"] = {"title": "Embedding", "anyOf": [
        embedding["embedding"],
        {"type": "string", "contentEncoding": "base64",
         "description": "With encoding_format 'base64': the float32 values, little-endian, in base64."}]}
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


