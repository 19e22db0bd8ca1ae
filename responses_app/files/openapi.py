"""The Files API's operations in the OpenAPI document: the SDK's types they take and answer,
the links a create's answer offers, and each operation's declaration (views.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from openai.types import FileObject

from responses_app.http.openapi import ORDER, PAGE, Links, SdkTypes, deleted, list_of, ref
from responses_app.models import FilePurpose

SDK_TYPES: SdkTypes = (
    ("FileObject", FileObject, "serialization"),
)
LINKS: Links = {
    "createFile": ({"file_id": "$response.body#/id"}, ("retrieveFile", "retrieveFileContent", "deleteFile")),
}


def fix_schemas(schemas: dict[str, Any]) -> None:
    """Where the SDK's types say other than the wire."""
    # A file uploaded with purpose "evals" (the SDK's FilePurpose allows it) carries it back, as
    # OpenAI's files do; the SDK's FileObject lists only the purposes that came before.
    purposes = schemas["FileObject"]["properties"]["purpose"]["enum"]
    purposes += [purpose for purpose in FilePurpose.values if purpose not in purposes]


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
    parameters=[*PAGE, ORDER,
                OpenApiParameter("purpose", str, description="Only the files of this purpose.")],
    responses={200: OpenApiResponse(list_of(ref("FileObject")))})
FILE_RETRIEVE = extend_schema(operation_id="retrieveFile", summary="Retrieve a file",
                              responses={200: OpenApiResponse(ref("FileObject"))})
FILE_DELETE = extend_schema(operation_id="deleteFile", summary="Delete a file and its bytes",
                            responses={200: OpenApiResponse(deleted("file"))})
FILE_CONTENT = extend_schema(
    operation_id="retrieveFileContent", summary="Download a file's bytes",
    responses={(200, "application/octet-stream"): OpenApiResponse({"type": "string", "contentEncoding": "binary"})})
