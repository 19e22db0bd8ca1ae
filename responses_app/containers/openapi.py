"""The containers' operations in the OpenAPI document: the SDK's types they take and answer,
the links a create's answer offers, and each operation's declaration (views.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from openai.types import (
    ContainerCreateResponse,
    ContainerListResponse,
    ContainerRetrieveResponse,
)
from openai.types.container_create_params import ContainerCreateParams
from openai.types.containers import FileCreateResponse, FileListResponse, FileRetrieveResponse

from responses_app.http.openapi import ORDER, PAGE, Links, SdkTypes, deleted, list_of, ref

SDK_TYPES: SdkTypes = (
    ("ContainerCreateParams", ContainerCreateParams, "validation"),
    ("ContainerCreateResponse", ContainerCreateResponse, "serialization"),
    ("ContainerListResponse", ContainerListResponse, "serialization"),
    ("ContainerRetrieveResponse", ContainerRetrieveResponse, "serialization"),
    ("ContainerFileCreateResponse", FileCreateResponse, "serialization"),
    ("ContainerFileListResponse", FileListResponse, "serialization"),
    ("ContainerFileRetrieveResponse", FileRetrieveResponse, "serialization"),
)
LINKS: Links = {
    "createContainer": ({"container_id": "$response.body#/id"},
                        ("retrieveContainer", "createContainerFile", "listContainerFiles", "deleteContainer")),
    "createContainerFile": ({"container_id": "$request.path.container_id", "file_id": "$response.body#/id"},
                            ("retrieveContainerFile", "retrieveContainerFileContent", "deleteContainerFile")),
}


CONTAINER_CREATE = extend_schema(
    operation_id="createContainer", summary="Create a code interpreter container",
    request={"application/json": ref("ContainerCreateParams")},
    examples=[OpenApiExample("A container", request_only=True,
                             value={"name": "analysis", "expires_after": {"anchor": "last_active_at", "minutes": 20}})],
    responses={200: OpenApiResponse(ref("ContainerCreateResponse"))})
CONTAINER_LIST = extend_schema(
    operation_id="listContainers", summary="List the containers",
    parameters=[*PAGE, ORDER,
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
    parameters=[*PAGE, ORDER],
    responses={200: OpenApiResponse(list_of(ref("ContainerFileListResponse")))})
CONTAINER_FILE_RETRIEVE = extend_schema(operation_id="retrieveContainerFile", summary="Retrieve a container file",
                                        responses={200: OpenApiResponse(ref("ContainerFileRetrieveResponse"))})
CONTAINER_FILE_DELETE = extend_schema(operation_id="deleteContainerFile", summary="Delete a container file",
                                      responses={200: OpenApiResponse(deleted("container.file.deleted"))})
CONTAINER_FILE_CONTENT = extend_schema(
    operation_id="retrieveContainerFileContent", summary="Download a container file's bytes",
    responses={(200, "application/octet-stream"): OpenApiResponse({"type": "string", "contentEncoding": "binary"})})
