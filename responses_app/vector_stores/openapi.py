"""The vector stores' operations in the OpenAPI document: the SDK's types they take and
answer, the links a create's answer offers, and each operation's declaration (views.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from openai.types import VectorStore, VectorStoreSearchResponse
from openai.types.vector_store_create_params import VectorStoreCreateParams
from openai.types.vector_store_search_params import VectorStoreSearchParams
from openai.types.vector_store_update_params import VectorStoreUpdateParams
from openai.types.vector_stores import VectorStoreFile, VectorStoreFileBatch
from openai.types.vector_stores.file_batch_create_params import FileBatchCreateParams
from openai.types.vector_stores.file_content_response import FileContentResponse
from openai.types.vector_stores.file_create_params import FileCreateParams as VectorStoreFileCreateParams
from openai.types.vector_stores.file_update_params import FileUpdateParams as VectorStoreFileUpdateParams

from responses_app.http.openapi import ORDER, PAGE, Links, SdkTypes, deleted, list_of, ref

SDK_TYPES: SdkTypes = (
    ("VectorStore", VectorStore, "serialization"),
    ("VectorStoreCreateParams", VectorStoreCreateParams, "validation"),
    ("VectorStoreUpdateParams", VectorStoreUpdateParams, "validation"),
    ("VectorStoreSearchParams", VectorStoreSearchParams, "validation"),
    ("VectorStoreSearchResponse", VectorStoreSearchResponse, "serialization"),
    ("VectorStoreFile", VectorStoreFile, "serialization"),
    ("VectorStoreFileCreateParams", VectorStoreFileCreateParams, "validation"),
    ("VectorStoreFileUpdateParams", VectorStoreFileUpdateParams, "validation"),
    ("VectorStoreFileContent", FileContentResponse, "serialization"),
    ("VectorStoreFileBatch", VectorStoreFileBatch, "serialization"),
    ("FileBatchCreateParams", FileBatchCreateParams, "validation"),
)
LINKS: Links = {
    "createVectorStore": ({"vector_store_id": "$response.body#/id"},
                          ("retrieveVectorStore", "listVectorStoreFiles", "updateVectorStore", "searchVectorStore",
                           "deleteVectorStore")),
}


def fix_schemas(schemas: dict[str, Any]) -> None:
    """Where the SDK's types say other than the wire."""
    # The SDK's FileUpdateParams also holds the path's vector_store_id; the body does not.
    update = schemas["VectorStoreFileUpdateParams"]
    update = schemas[update["$ref"].rsplit("/", 1)[-1]] if "$ref" in update else update
    update["properties"].pop("vector_store_id")
    update["required"] = [name for name in update["required"] if name != "vector_store_id"]


def _page_of(item: dict[str, Any], object_name: str) -> dict[str, Any]:
    """The one-page lists of a search and of a file's content (the SDK's SyncPage)."""
    return {"type": "object", "required": ["object", "data", "has_more"],
            "properties": {"object": {"const": object_name}, "data": {"type": "array", "items": item},
                           "has_more": {"type": "boolean"}, "next_page": {"type": ["string", "null"]},
                           "search_query": {"type": "array", "items": {"type": "string"}}}}


CURSORS = [*PAGE, OpenApiParameter("before", str, description="The id of the first object of the next page."),
           ORDER]
FILE_STATUS = OpenApiParameter("filter", str, enum=["in_progress", "completed", "failed", "cancelled"],
                               description="Only the files of this status.")
VECTOR_STORE_CREATE = extend_schema(
    operation_id="createVectorStore", summary="Create a vector store, with files to ingest",
    request={"application/json": ref("VectorStoreCreateParams")},
    examples=[OpenApiExample("A store", request_only=True, value={"name": "handbook"})],
    responses={200: OpenApiResponse(ref("VectorStore"))})
VECTOR_STORE_LIST = extend_schema(operation_id="listVectorStores", summary="List the vector stores",
                                  parameters=CURSORS, responses={200: OpenApiResponse(list_of(ref("VectorStore")))})
VECTOR_STORE_RETRIEVE = extend_schema(operation_id="retrieveVectorStore", summary="Retrieve a vector store",
                                      responses={200: OpenApiResponse(ref("VectorStore"))})
VECTOR_STORE_UPDATE = extend_schema(
    operation_id="updateVectorStore", summary="Update a vector store's name, metadata or expiry",
    request={"application/json": ref("VectorStoreUpdateParams")},
    responses={200: OpenApiResponse(ref("VectorStore"))})
VECTOR_STORE_DELETE = extend_schema(operation_id="deleteVectorStore", summary="Delete a vector store and its index",
                                    responses={200: OpenApiResponse(deleted("vector_store.deleted"))})
VECTOR_STORE_SEARCH = extend_schema(
    operation_id="searchVectorStore", summary="Search a vector store's chunks",
    request={"application/json": ref("VectorStoreSearchParams")},
    examples=[OpenApiExample("A query", request_only=True, value={"query": "How many days of leave?"})],
    responses={200: OpenApiResponse(_page_of(ref("VectorStoreSearchResponse"), "vector_store.search_results.page"))})
VECTOR_STORE_FILE_CREATE = extend_schema(
    operation_id="createVectorStoreFile", summary="Add a file to a vector store (ingested in the background)",
    request={"application/json": ref("VectorStoreFileCreateParams")},
    examples=[OpenApiExample("A file", request_only=True,
                             value={"file_id": "file-abc123", "attributes": {"team": "finance", "year": 2026}})],
    responses={200: OpenApiResponse(ref("VectorStoreFile"))})
VECTOR_STORE_FILE_LIST = extend_schema(
    operation_id="listVectorStoreFiles", summary="List a vector store's files", parameters=[*CURSORS, FILE_STATUS],
    responses={200: OpenApiResponse(list_of(ref("VectorStoreFile")))})
VECTOR_STORE_FILE_RETRIEVE = extend_schema(
    operation_id="retrieveVectorStoreFile", summary="Retrieve a vector store file",
    responses={200: OpenApiResponse(ref("VectorStoreFile"))})
VECTOR_STORE_FILE_UPDATE = extend_schema(
    operation_id="updateVectorStoreFile", summary="Update a vector store file's attributes",
    request={"application/json": ref("VectorStoreFileUpdateParams")},
    examples=[OpenApiExample("Attributes", request_only=True, value={"attributes": {"year": 2027}})],
    responses={200: OpenApiResponse(ref("VectorStoreFile"))})
VECTOR_STORE_FILE_DELETE = extend_schema(
    operation_id="deleteVectorStoreFile", summary="Take a file out of a vector store (the file stays)",
    responses={200: OpenApiResponse(deleted("vector_store.file.deleted"))})
VECTOR_STORE_FILE_CONTENT = extend_schema(
    operation_id="retrieveVectorStoreFileContent", summary="The text of a vector store file, as it was read",
    responses={200: OpenApiResponse(_page_of(ref("VectorStoreFileContent"), "vector_store.file_content.page"))})
FILE_BATCH_CREATE = extend_schema(
    operation_id="createVectorStoreFileBatch", summary="Add files to a vector store in one batch",
    request={"application/json": ref("FileBatchCreateParams")},
    examples=[OpenApiExample("Files", request_only=True,
                             value={"file_ids": ["file-abc123"], "attributes": {"source": "handbook"}})],
    responses={200: OpenApiResponse(ref("VectorStoreFileBatch"))})
FILE_BATCH_RETRIEVE = extend_schema(operation_id="retrieveVectorStoreFileBatch", summary="Retrieve a file batch",
                                    responses={200: OpenApiResponse(ref("VectorStoreFileBatch"))})
FILE_BATCH_CANCEL = extend_schema(operation_id="cancelVectorStoreFileBatch", request=None,
                                  summary="Cancel a file batch's files still in progress",
                                  responses={200: OpenApiResponse(ref("VectorStoreFileBatch"))})
FILE_BATCH_LIST_FILES = extend_schema(
    operation_id="listFilesInVectorStoreBatch", summary="List a file batch's files", parameters=[*CURSORS, FILE_STATUS],
    responses={200: OpenApiResponse(list_of(ref("VectorStoreFile")))})
