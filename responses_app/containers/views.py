"""/v1/containers and their files, as ``client.containers`` calls them: the code
interpreter's containers, created up front or by a response, and the files in their
/mnt/data (uploaded by the user or written by the model's code)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase, JsonResponse, StreamingHttpResponse
from rest_framework.request import Request

from responses_app.containers import openapi
from responses_app.containers.files_in import copy_file_into_container, create_with_files
from responses_app.containers.objects import container_file_object, container_object
from responses_app.containers.requests import parse_container_create, upload_name
from responses_app.http.base import ApiView
from responses_app.http.file_download import attachment
from responses_app.http.params import json_body, page_params
from responses_app.lib.asyncdb import db
from responses_app.models import Tenant
from responses_app.wire.errors import Conflict, InvalidRequest, NotFound, invalid_type
from responses_app.wire.objects import list_object
from responses_app.wire.request_body import body_fields
from tools_app import container_files, containers

T = TypeVar("T")


# How often a change waits for a code interpreter call to release its container, and for
# how long beyond the call's own timeout before the change is a 409.
BUSY_POLL_S = 0.2
BUSY_MARGIN_S = 5.0


def _not_found(error: Exception, param: str) -> NotFound:
    return NotFound(str(error), param=param)


async def _when_idle(change: Callable[..., T], *args: Any) -> T:
    """``change`` run in a request thread once no code interpreter call holds the
    container: while one does, the request waits here, on the event loop, so that no
    shared thread waits on another tenant's code."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.TOOL_CALL_TIMEOUT_S + BUSY_MARGIN_S
    while True:
        try:
            return await db(change)(*args)
        except containers.ContainerBusy:
            if loop.time() >= deadline:
                raise Conflict("A code interpreter call is still running in this container; try again.",
                               param="container_id", code="container_busy") from None
            await asyncio.sleep(BUSY_POLL_S)


class ContainersView(ApiView):
    """POST (create) and GET (list) /v1/containers"""

    @openapi.CONTAINER_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        create = parse_container_create(json_body(request))
        container = await db(create_with_files)(request.user.tenant, create.name, create.idle_timeout_s,
                                                create.file_ids)
        return JsonResponse(container_object(container))

    @openapi.CONTAINER_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, order = page_params(request.query_params, orders=True, extra=("name",))
        try:
            page, more = await db(containers.containers_page)(request.user.tenant.pk, after=after, limit=limit,
                                                              order=order, name=request.query_params.get("name"))
        except containers.ContainerNotFound as error:
            raise InvalidRequest(str(error), param="after") from None
        return JsonResponse(list_object([container_object(c) for c in page], more))


class ContainerView(ApiView):
    """GET and DELETE /v1/containers/{id}"""

    @openapi.CONTAINER_RETRIEVE
    async def get(self, request: Request, container_id: str) -> HttpResponseBase:
        try:
            container = await db(containers.get_container)(request.user.tenant.pk, container_id)
        except containers.ContainerNotFound as error:
            raise _not_found(error, "container_id") from None
        return JsonResponse(container_object(container))

    @openapi.CONTAINER_DELETE
    async def delete(self, request: Request, container_id: str) -> HttpResponseBase:
        try:
            await _when_idle(containers.delete_container, request.user.tenant.pk, container_id)
        except containers.ContainerNotFound as error:
            raise _not_found(error, "container_id") from None
        return JsonResponse({"id": container_id, "object": "container.deleted", "deleted": True})


class ContainerFilesView(ApiView):
    """POST (upload, multipart) and GET (list) /v1/containers/{id}/files"""

    @openapi.CONTAINER_FILE_CREATE
    async def post(self, request: Request, container_id: str) -> HttpResponseBase:
        file = await _when_idle(_upload, request._request, request.user.tenant, container_id)
        return JsonResponse(container_file_object(file))

    @openapi.CONTAINER_FILE_LIST
    async def get(self, request: Request, container_id: str) -> HttpResponseBase:
        after, limit, order = page_params(request.query_params, orders=True)
        try:
            page, more = await db(container_files.files_page)(request.user.tenant.pk, container_id, after=after,
                                                              limit=limit, order=order)
        except containers.ContainerNotFound as error:
            raise _not_found(error, "container_id") from None
        except container_files.FileNotInContainer as error:
            raise InvalidRequest(str(error), param="after") from None
        return JsonResponse(list_object([container_file_object(f) for f in page], more))


class ContainerFileView(ApiView):
    """GET and DELETE /v1/containers/{id}/files/{file_id}"""

    @openapi.CONTAINER_FILE_RETRIEVE
    async def get(self, request: Request, container_id: str, file_id: str) -> HttpResponseBase:
        file = await db(_found(container_files.get_file))(request.user.tenant.pk, container_id, file_id)
        return JsonResponse(container_file_object(file))

    @openapi.CONTAINER_FILE_DELETE
    async def delete(self, request: Request, container_id: str, file_id: str) -> HttpResponseBase:
        await _when_idle(_found(container_files.delete_file), request.user.tenant.pk, container_id, file_id)
        return JsonResponse({"id": file_id, "object": "container.file.deleted", "deleted": True})


class ContainerFileContentView(ApiView):
    """GET /v1/containers/{id}/files/{file_id}/content: the file's bytes (the ``url`` of a
    code interpreter ``image`` output)."""

    @openapi.CONTAINER_FILE_CONTENT
    async def get(self, request: Request, container_id: str, file_id: str) -> StreamingHttpResponse:
        file, content = await db(_found(container_files.open_file))(request.user.tenant.pk, container_id, file_id)
        response = attachment(content, os.path.basename(file.path), content.size)
        # Files are written by model-run code: never let a browser treat one as a page.
        response["Content-Security-Policy"] = "sandbox"
        response["X-Content-Type-Options"] = "nosniff"
        return response


def _found(read: Any) -> Any:
    """``read`` with the tools' not-found errors as the API's 404."""
    def call(*args: Any) -> Any:
        try:
            return read(*args)
        except containers.ContainerNotFound as error:
            raise _not_found(error, "container_id") from None
        except container_files.FileNotInContainer as error:
            raise _not_found(error, "file_id") from None
    return call


def _upload(request: HttpRequest, tenant: Tenant, container_id: str) -> Any:
    """The multipart ``file`` written into the container (a database thread: Django parses
    the body on first access, and it may be spooled to disk), or the Files API file that a
    JSON body's ``file_id`` names, copied."""
    tenant_id = tenant.pk
    if not request.content_type.startswith("multipart/form-data"):
        body = json_body(request)
        if isinstance(body, dict) and "file_id" in body:
            file_id = body_fields(body, ("file_id",), required=("file_id",))["file_id"]
            if not isinstance(file_id, str):
                raise invalid_type("file_id", "a string", file_id)
            try:
                return copy_file_into_container(tenant, container_id, file_id)
            except containers.ContainerNotFound as error:
                raise _not_found(error, "container_id") from None
        raise InvalidRequest("Upload the file as multipart/form-data with a 'file' part, or name a file of the "
                             "Files API with 'file_id'.", param="file")
    upload = request.FILES.get("file")
    if upload is None:
        raise InvalidRequest("Missing required parameter: 'file'.", param="file", code="missing_required_parameter")
    if upload.size > settings.CONTAINER_FILE_MAX_BYTES:
        raise InvalidRequest(f"The file is {upload.size} bytes; the most a container file may have is "
                             f"{settings.CONTAINER_FILE_MAX_BYTES}.", param="file", code="file_too_large")
    name = upload_name(upload.name)
    try:
        return container_files.upload_file(tenant_id, container_id, name, upload.chunks())
    except containers.ContainerNotFound as error:
        raise _not_found(error, "container_id") from None
    except FileExistsError:
        raise InvalidRequest(f"'/mnt/data/{name}' is a directory or a link in this container.", param="file") from None
