"""The Chat Completions operations in the OpenAPI document: the SDK's types they take and
answer, and their declarations (views.py): the create, and the stored completions' list,
retrieve, update, delete and messages."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionDeleted
from openai.types.chat.completion_create_params import CompletionCreateParamsBase
from openai.types.chat.completion_update_params import CompletionUpdateParams

from responses_app.http.openapi import PAGE, Links, SdkTypes, list_of, ref

SDK_TYPES: SdkTypes = (
    ("ChatCompletionCreateParams", CompletionCreateParamsBase, "validation"),
    ("ChatCompletionUpdateParams", CompletionUpdateParams, "validation"),
    ("ChatCompletion", ChatCompletion, "serialization"),
    ("ChatCompletionChunk", ChatCompletionChunk, "serialization"),
    ("ChatCompletionDeleted", ChatCompletionDeleted, "serialization"),
)
# A completion is found by id only when stored: the create links to nothing.
LINKS: Links = {}
# A request message as stored (the SDK's ChatCompletionStoreMessage types its role as the
# assistant's only; the messages of every role are listed).
STORE_MESSAGE = {
    "type": "object", "required": ["id", "role"],
    "properties": {"id": {"type": "string"}, "role": {"type": "string"}, "content": {"type": ["string", "null"]},
                   "content_parts": {"type": ["array", "null"], "items": {"type": "object"}}},
}
ORDER_ASC = OpenApiParameter("order", str, enum=["asc", "desc"], description="Default asc.")

# The SDK's parameters, plus ``stream`` (the SDK splits them in two only to type the reply)
# and vLLM's extensions that chat-only clients send (requests.ChatCompletionBody).
CREATE_BODY = {"allOf": [ref("ChatCompletionCreateParams"), {"type": "object", "properties": {
    "stream": {"type": ["boolean", "null"]},
    "top_k": {"type": ["integer", "null"], "minimum": -1, "description": "vLLM's: -1 or 0 for every token"},
    "min_p": {"type": ["number", "null"], "minimum": 0, "maximum": 1, "description": "vLLM's"},
    "repetition_penalty": {"type": ["number", "null"], "exclusiveMinimum": 0, "description": "vLLM's"},
    "chat_template_kwargs": {"type": ["object", "null"], "additionalProperties": False,
                             "properties": {"reasoning_effort": {"type": "string"}},
                             "description": "vLLM's: only reasoning_effort means something to harmony"},
}}]}
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
CHAT_COMPLETION_LIST = extend_schema(
    operation_id="listChatCompletions", summary="List stored chat completions",
    parameters=[*PAGE, ORDER_ASC, OpenApiParameter("model", str, description="Only this model's."),
                OpenApiParameter("metadata", {"type": "object", "additionalProperties": {"type": "string"}},
                                 style="deepObject", explode=True,
                                 description="metadata[key]=value: only those with every pair given.")],
    responses={200: OpenApiResponse(list_of(ref("ChatCompletion")))})
CHAT_COMPLETION_RETRIEVE = extend_schema(
    operation_id="retrieveChatCompletion", summary="Retrieve a stored chat completion",
    responses={200: OpenApiResponse(ref("ChatCompletion"))})
CHAT_COMPLETION_UPDATE = extend_schema(
    operation_id="updateChatCompletion", summary="Update a stored chat completion's metadata",
    request={"application/json": ref("ChatCompletionUpdateParams")},
    responses={200: OpenApiResponse(ref("ChatCompletion"))})
CHAT_COMPLETION_DELETE = extend_schema(operation_id="deleteChatCompletion", summary="Delete a stored chat completion",
                                       responses={200: OpenApiResponse(ref("ChatCompletionDeleted"))})
CHAT_COMPLETION_MESSAGES = extend_schema(
    operation_id="listChatCompletionMessages", summary="List a stored chat completion's request messages",
    parameters=[*PAGE, ORDER_ASC], responses={200: OpenApiResponse(list_of(STORE_MESSAGE))})
