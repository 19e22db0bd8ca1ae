"""The embeddings' operation in the OpenAPI document: the SDK's types it takes and answers,
and its declaration (views.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from openai.types import (
    CreateEmbeddingResponse,
    EmbeddingCreateParams,
)

from responses_app.http.openapi import Links, SdkTypes, ref

SDK_TYPES: SdkTypes = (
    ("EmbeddingCreateParams", EmbeddingCreateParams, "validation"),
    ("CreateEmbeddingResponse", CreateEmbeddingResponse, "serialization"),
)
LINKS: Links = {}


def fix_schemas(schemas: dict[str, Any]) -> None:
    """Where the SDK's types say other than the wire."""
    # The SDK types an embedding as its numbers; with encoding_format "base64" the wire holds
    # them as a string, float32 little-endian (the SDK decodes it), at OpenAI as here.
    embedding = schemas["Embedding"]["properties"]
    embedding["embedding"] = {"title": "Embedding", "anyOf": [
        embedding["embedding"],
        {"type": "string", "contentEncoding": "base64",
         "description": "With encoding_format 'base64': the float32 values, little-endian, in base64."}]}


EMBEDDINGS_CREATE = extend_schema(
    operation_id="createEmbedding", summary="Embed texts or token ids with an embedding model",
    request={"application/json": ref("EmbeddingCreateParams")},
    examples=[OpenApiExample("Two texts", request_only=True,
                             value={"model": "wordllama-l2-supercat", "input": ["a cat", "a dog"]})],
    responses={200: OpenApiResponse(ref("CreateEmbeddingResponse"))})
