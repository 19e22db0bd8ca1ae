"""The scheduled responses' operations in the OpenAPI document (this server's own extension: no
SDK type describes them), the links a create's answer offers, and each operation's declaration
(views.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema

from responses_app.http.openapi import ORDER, PAGE, Links, SdkTypes, deleted, list_of, ref

SDK_TYPES: SdkTypes = ()
LINKS: Links = {
    "createScheduledResponse": ({"scheduled_response_id": "$response.body#/id"},
                                ("retrieveScheduledResponse", "updateScheduledResponse",
                                 "listScheduledResponseRuns", "deleteScheduledResponse")),
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
SCHEDULE_CREATE = extend_schema(
    operation_id="createScheduledResponse", summary="Create a scheduled response",
    request={"application/json": SCHEDULE_CREATE_BODY}, responses={200: OpenApiResponse(SCHEDULED_RESPONSE)},
    examples=[OpenApiExample("Every minute", request_only=True, value={
        "name": "digest", "schedule": {"every_seconds": 60}, "request": {"model": "echo", "input": "Summarize."}})])
SCHEDULE_LIST = extend_schema(
    operation_id="listScheduledResponses", summary="List scheduled responses",
    parameters=[*PAGE, ORDER],
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
