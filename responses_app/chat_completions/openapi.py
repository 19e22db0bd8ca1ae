"""The Chat Completions operation in the OpenAPI document: the SDK's types it takes and
answers, and its declaration (views.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat.completion_create_params import CompletionCreateParamsBase

from responses_app.http.openapi import Links, SdkTypes, ref

SDK_TYPES: SdkTypes = (
    ("ChatCompletionCreateParams", CompletionCreateParamsBase, "validation"),
    ("ChatCompletion", ChatCompletion, "serialization"),
    ("ChatCompletionChunk", ChatCompletionChunk, "serialization"),
)
LINKS: Links = {}

# The SDK's parameters, plus ``stream`` (the SDK splits them in two only to type the reply).
CREATE_BODY = {"allOf": [ref("ChatCompletionCreateParams"),
                         {"type": "object", "properties": {"stream": {"type": ["boolean", "null"]}}}]}
# One Server-Sent Event: its `data` is a ChatCompletionChunk as JSON; the stream ends with
# `data: [DONE]`.
CHUNK_EVENT = {
    "type": "object", "required": ["data"],
    "properties": {"data": {"type": "string", "contentMediaType": "application/json",
                            "contentSchema": ref("ChatCompletionChunk")}},
}

CREATE = extend_schema(
    operation_id="createChatCompletion", summary="Create a chat completion",
    request={"application/json": CREATE_BODY},
    responses={
        (200, "application/json"): OpenApiResponse(ref("ChatCompletion"), description="The completion"),
        (200, "text/event-stream"): OpenApiResponse(CHUNK_EVENT, description="The completion, as chunks (stream=true)"),
    },
    examples=[OpenApiExample("A question", request_only=True, value={
        "model": "echo", "messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "What is the capital of France?"}]})])
