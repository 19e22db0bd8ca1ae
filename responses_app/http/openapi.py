"""The OpenAPI document's pieces that every capability's operations use: a reference to a
component, the Error shape, a page of a list and a deleted object, the page parameters, and
the API key's security scheme. Each capability declares its operations in its own
``openapi.py``; api/openapi.py assembles the document from them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter
from pydantic.json_schema import JsonSchemaMode

from responses_app.wire.request_body import SUPPORTED_INCLUDE_VALUES

# (name in components, SDK type, pydantic mode: what a client sends is "validation").
SdkTypes = tuple[tuple[str, Any, JsonSchemaMode], ...]
# A create's operation id -> (the parameters its answer fills, the operations it links to).
Links = dict[str, tuple[dict[str, str], tuple[str, ...]]]

REF = "#/components/schemas/{model}"


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {
        "type": "object",
        "required": ["message", "type", "param", "code"],
        "properties": {
            "message": {"type": "string"},
            "type": {"type": "string"},
            "param": {"type": ["string", "null"]},
            "code": {"type": ["string", "null"]},
        },
    }},
}


def list_of(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": ["object", "data", "first_id", "last_id", "has_more"],
            "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": item},
                           "first_id": {"type": ["string", "null"]}, "last_id": {"type": ["string", "null"]},
                           "has_more": {"type": "boolean"}}}


def deleted(object_name: str) -> dict[str, Any]:
    return {"type": "object", "required": ["id", "object", "deleted"],
            "properties": {"id": {"type": "string"}, "object": {"const": object_name}, "deleted": {"type": "boolean"}}}


PAGE = [OpenApiParameter("after", str, description="The id of the last object of the previous page."),
        OpenApiParameter("limit", int, description="1 to 100 (default 20).")]
ORDER = OpenApiParameter("order", str, enum=["asc", "desc"], description="Default desc.")
INCLUDE = OpenApiParameter("include[]", str, many=True, enum=sorted(SUPPORTED_INCLUDE_VALUES),
                           description="Output item fields to include.")


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "responses_app.http.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An API key: `Authorization: Bearer sk-...`."}
