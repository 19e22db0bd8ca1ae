"""/v1/vector_stores, their files, file batches and search, as ``client.vector_stores``
calls them."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponseBase, JsonResponse
from drf_spectacular.utils import extend_schema_view
from rest_framework.request import Request

from responses_app.http.base import ApiView
from responses_app.http.params import int_param, json_body, known_query, order_param
from responses_app.http.resource import TenantObjectView
from responses_app.lib.asyncdb import db
from responses_app.models import Tenant, VectorStore, VectorStoreFileBatch
from responses_app.vector_stores import openapi, store
from responses_app.vector_stores.objects import (
    file_batch_object,
    search_result_object,
    vector_store_file_object,
    vector_store_object,
)
from responses_app.vector_stores.requests import (
    parse_file_batch_create,
    parse_file_create,
    parse_file_update,
    parse_search,
    parse_vector_store_create,
    parse_vector_store_update,
)
from responses_app.wire.objects import list_object

# The SDK's poll helpers (files.poll, file_batches.poll) wait this long between retrieves.
POLL_AFTER = {"openai-poll-after-ms": "250"}


def _store(row: VectorStore) -> dict:
    return vector_store_object(row, store.expires_at(row), store.is_expired(row))


def _batch(row: VectorStoreFileBatch) -> dict:
    return file_batch_object(row, store.file_batch_status(row))


def _page_query(request: Request, *extra: str) -> dict:
    query = request.query_params
    known_query(query, ("after", "before", "limit", "order", *extra))
    return {"after": query.get("after"), "before": query.get("before"), "order": order_param(query),
            "limit": int_param(query, "limit", minimum=1, maximum=100) or 20}


class VectorStoresView(ApiView):
    """POST (create) and GET (list) /v1/vector_stores"""

    @openapi.VECTOR_STORE_CREATE
    async def post(self, request: Request) -> HttpResponseBase:
        row = await db(store.create_vector_store)(request.user.tenant, parse_vector_store_create(json_body(request)))
        return JsonResponse(_store(row))

    @openapi.VECTOR_STORE_LIST
    async def get(self, request: Request) -> HttpResponseBase:
        page, more = await db(store.vector_stores_page)(request.user.tenant, **_page_query(request))
        return JsonResponse(list_object([_store(row) for row in page], more))


@extend_schema_view(get=openapi.VECTOR_STORE_RETRIEVE, post=openapi.VECTOR_STORE_UPDATE,
                    delete=openapi.VECTOR_STORE_DELETE)
class VectorStoreView(TenantObjectView):
    """GET, POST (update) and DELETE /v1/vector_stores/{id}"""

    id_param, deleted_object = "vector_store_id", "vector_store.deleted"

    def retrieve(self, tenant: Tenant, object_id: str) -> dict[str, Any]:
        return _store(store.get_vector_store(tenant, object_id))

    def update(self, tenant: Tenant, object_id: str, body: Any) -> dict[str, Any]:
        return _store(store.update_vector_store(tenant, object_id, parse_vector_store_update(body)))

    def destroy(self, tenant: Tenant, object_id: str) -> None:
        store.delete_vector_store(tenant, object_id)


class VectorStoreSearchView(ApiView):
    """POST /v1/vector_stores/{id}/search"""

    @openapi.VECTOR_STORE_SEARCH
    async def post(self, request: Request, vector_store_id: str) -> HttpResponseBase:
        search = parse_search(json_body(request))
        results = await db(store.search_vector_store)(request.user.tenant, vector_store_id, search)
        return JsonResponse({"object": "vector_store.search_results.page", "search_query": search.queries,
                             "data": [search_result_object(result) for result in results], "has_more": False,
                             "next_page": None})


class VectorStoreFilesView(ApiView):
    """POST (attach) and GET (list) /v1/vector_stores/{id}/files"""

    @openapi.VECTOR_STORE_FILE_CREATE
    async def post(self, request: Request, vector_store_id: str) -> HttpResponseBase:
        row = await db(store.attach_file)(request.user.tenant, vector_store_id, parse_file_create(json_body(request)))
        return JsonResponse(vector_store_file_object(row))

    @openapi.VECTOR_STORE_FILE_LIST
    async def get(self, request: Request, vector_store_id: str) -> HttpResponseBase:
        page, more = await db(store.store_files_page)(request.user.tenant, vector_store_id,
                                                      status=request.query_params.get("filter"),
                                                      **_page_query(request, "filter"))
        return JsonResponse(_files_list(page, more))


class VectorStoreFileView(ApiView):
    """GET, POST (update attributes) and DELETE /v1/vector_stores/{id}/files/{file_id}"""

    @openapi.VECTOR_STORE_FILE_RETRIEVE
    async def get(self, request: Request, vector_store_id: str, file_id: str) -> HttpResponseBase:
        row = await db(store.get_store_file)(request.user.tenant, vector_store_id, file_id)
        return JsonResponse(vector_store_file_object(row), headers=POLL_AFTER)

    @openapi.VECTOR_STORE_FILE_UPDATE
    async def post(self, request: Request, vector_store_id: str, file_id: str) -> HttpResponseBase:
        attributes = parse_file_update(json_body(request))
        row = await db(store.update_store_file)(request.user.tenant, vector_store_id, file_id, attributes)
        return JsonResponse(vector_store_file_object(row))

    @openapi.VECTOR_STORE_FILE_DELETE
    async def delete(self, request: Request, vector_store_id: str, file_id: str) -> HttpResponseBase:
        await db(store.delete_store_file)(request.user.tenant, vector_store_id, file_id)
        return JsonResponse({"id": file_id, "object": "vector_store.file.deleted", "deleted": True})


class VectorStoreFileContentView(ApiView):
    """GET /v1/vector_stores/{id}/files/{file_id}/content"""

    @openapi.VECTOR_STORE_FILE_CONTENT
    async def get(self, request: Request, vector_store_id: str, file_id: str) -> HttpResponseBase:
        text = await db(store.store_file_content)(request.user.tenant, vector_store_id, file_id)
        return JsonResponse({"object": "vector_store.file_content.page", "data": [{"type": "text", "text": text}],
                             "has_more": False, "next_page": None})


class FileBatchesView(ApiView):
    """POST /v1/vector_stores/{id}/file_batches"""

    @openapi.FILE_BATCH_CREATE
    async def post(self, request: Request, vector_store_id: str) -> HttpResponseBase:
        files = parse_file_batch_create(json_body(request))
        return JsonResponse(_batch(await db(store.create_file_batch)(request.user.tenant, vector_store_id, files)))


class FileBatchView(ApiView):
    """GET /v1/vector_stores/{id}/file_batches/{batch_id}"""

    @openapi.FILE_BATCH_RETRIEVE
    async def get(self, request: Request, vector_store_id: str, batch_id: str) -> HttpResponseBase:
        row = await db(store.get_file_batch)(request.user.tenant, vector_store_id, batch_id)
        return JsonResponse(_batch(row), headers=POLL_AFTER)


class FileBatchCancelView(ApiView):
    """POST /v1/vector_stores/{id}/file_batches/{batch_id}/cancel"""

    @openapi.FILE_BATCH_CANCEL
    async def post(self, request: Request, vector_store_id: str, batch_id: str) -> HttpResponseBase:
        return JsonResponse(_batch(await db(store.cancel_file_batch)(request.user.tenant, vector_store_id, batch_id)))


class FileBatchFilesView(ApiView):
    """GET /v1/vector_stores/{id}/file_batches/{batch_id}/files"""

    @openapi.FILE_BATCH_LIST_FILES
    async def get(self, request: Request, vector_store_id: str, batch_id: str) -> HttpResponseBase:
        tenant: Tenant = request.user.tenant
        page, more = await db(store.store_files_page)(tenant, vector_store_id, batch_id=batch_id,
                                                      status=request.query_params.get("filter"),
                                                      **_page_query(request, "filter"))
        return JsonResponse(_files_list(page, more))


def _files_list(page: list, more: bool) -> dict:
    return list_object([vector_store_file_object(row) for row in page], more)
