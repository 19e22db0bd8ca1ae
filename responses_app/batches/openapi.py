"""The batches' operations in the OpenAPI document: the SDK's types they take and answer, and
each operation's declaration (views.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from openai.types import Batch
from openai.types.batch_create_params import BatchCreateParams

from responses_app.http.openapi import PAGE, Links, SdkTypes, list_of, ref

SDK_TYPES: SdkTypes = (
    ("Batch", Batch, "serialization"),
    ("BatchCreateParams", BatchCreateParams, "validation"),
)
LINKS: Links = {}


BATCH_CREATE = extend_schema(
    operation_id="createBatch",
    summary="Create a batch of /v1/responses or /v1/chat/completions requests from a batch file",
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
