"""The Files API: POST/GET /v1/files, GET/DELETE /v1/files/{file_id} and its content."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app.files import openapi, store
from responses_app.files.objects import file_object
from responses_app.files.requests import upload_fields, upload_filename
from responses_app.http.base import ApiView
from responses_app.http.file_download import attachment
from responses_app.http.params import page_params
from responses_app.lib.asyncdb import db
from responses_app.models import StoredFile, Tenant
from responses_app.wire.errors import InvalidRequest
from responses_app.wire.objects import list_object


class FilesView(ApiView):
    @openapi.FILE_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        return JsonResponse(file_object(await db(_upload)(request._request, request.user.tenant)))

    @openapi.FILE_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        after, limit, order = page_params(request.query_params, orders=True, extra=("purpose",))
        page, more = await db(store.files_page)(request.user.tenant, purpose=request.query_params.get("purpose"),
                                                after=after, limit=limit, order=order)
        return JsonResponse(list_object([file_object(row) for row in page], more))


class FileView(ApiView):
    @openapi.FILE_RETRIEVE
    async def get(self, request: Request, file_id: str) -> HttpResponseBase:
        return JsonResponse(file_object(await db(store.get_file)(request.user.tenant, file_id)))

    @openapi.FILE_DELETE
    async def delete(self, request: Request, file_id: str) -> HttpResponseBase:
        await db(store.delete_file)(request.user.tenant, file_id)
        return JsonResponse({"id": file_id, "object": "file", "deleted": True})


class FileContentView(ApiView):
    @openapi.FILE_CONTENT
    async def get(self, request: Request, file_id: str) -> HttpResponseBase:
        row, content = await db(store.open_file)(request.user.tenant, file_id)
        return attachment(content, row.filename, row.bytes)


def _upload(request: HttpRequest, tenant: Tenant) -> StoredFile:
    """The multipart ``file`` stored (a database thread: Django parses the body on first
    access, spooling a large file to disk, never holding it whole in memory)."""
    if not request.content_type.startswith("multipart/form-data"):
        raise InvalidRequest("Upload the file as multipart/form-data with a 'file' part.", param="file")
    purpose, expires_after = upload_fields(request.POST)
    upload = request.FILES.get("file")
    if upload is None:
        raise InvalidRequest("Missing required parameter: 'file'.", param="file", code="missing_required_parameter")
    return store.create_file(tenant, upload, upload_filename(upload.name), purpose, expires_after)
