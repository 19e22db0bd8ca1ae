"""GET, POST (update) and DELETE of one of the caller's objects by the id in its path: the
view of every resource with those three operations (webhook endpoints, conversations,
scheduled responses, vector stores, stored chat completions, prompts). A subclass names its
path parameter and the ``object`` of a delete's answer, and says how its store reads,
updates and deletes one (each on a database thread, for the caller's tenant, returning the
object as the wire shows it); its operations in the OpenAPI document are its
``extend_schema_view``. One whose GET reads a query (a prompt's ``version``) writes its own
``get``."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from django.http import HttpResponseBase, JsonResponse
from rest_framework.request import Request

from responses_app.http.base import ApiView
from responses_app.http.params import json_body
from responses_app.lib.asyncdb import db
from responses_app.models import Tenant


class TenantObjectView(ApiView):
    # The path parameter that holds the object's id, and the delete's ``object``.
    id_param: ClassVar[str]
    deleted_object: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Each subclass gets its own handlers, so that its operations (extend_schema_view)
        # attach to them; drf-spectacular would wrap an inherited one in a plain function,
        # which Django would then take for a synchronous view.
        super().__init_subclass__(**kwargs)
        for name in ("get", "post", "delete"):
            setattr(cls, name, _own_copy(getattr(cls, name)))

    def retrieve(self, tenant: Tenant, object_id: str) -> dict[str, Any]:
        raise NotImplementedError

    def update(self, tenant: Tenant, object_id: str, body: Any) -> dict[str, Any]:
        raise NotImplementedError

    def destroy(self, tenant: Tenant, object_id: str) -> None:
        raise NotImplementedError

    async def get(self, request: Request, **path: str) -> HttpResponseBase:
        return JsonResponse(await db(self.retrieve)(request.user.tenant, path[self.id_param]))

    async def post(self, request: Request, **path: str) -> HttpResponseBase:
        body = json_body(request)
        return JsonResponse(await db(self.update)(request.user.tenant, path[self.id_param], body))

    async def delete(self, request: Request, **path: str) -> HttpResponseBase:
        object_id = path[self.id_param]
        await db(self.destroy)(request.user.tenant, object_id)
        return JsonResponse({"id": object_id, "object": self.deleted_object, "deleted": True})


Handler = Callable[..., Awaitable[HttpResponseBase]]


def _own_copy(handler: Handler) -> Handler:
    @functools.wraps(handler)
    async def copy(self: TenantObjectView, request: Request, **path: str) -> HttpResponseBase:
        return await handler(self, request, **path)

    return copy
