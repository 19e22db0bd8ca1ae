"""The prompts' operations in the OpenAPI document (this server's own: no SDK type describes a
prompt's versions), the links a create's answer offers, and each operation's declaration (views.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema

from responses_app.http.openapi import PAGE, Links, SdkTypes, deleted, list_of

SDK_TYPES: SdkTypes = ()
LINKS: Links = {
    "createPrompt": ({"prompt_id": "$response.body#/id"},
                     ("retrievePrompt", "createPromptVersion", "listPromptVersions", "deletePrompt")),
}


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
