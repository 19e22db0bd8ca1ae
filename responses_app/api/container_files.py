"""GET /v1/containers/{id}/files/{path}: a file of a code interpreter container (the
``url`` of an image output), for the container's tenant only."""

from __future__ import annotations

import os

from django.http import FileResponse
from rest_framework.request import Request

from responses_app.api import openapi
from responses_app.api.base import ApiView
from responses_app.asyncdb import db
from responses_app.errors import NotFound
from tools_app import containers


class ContainerFileContentView(ApiView):
    @openapi.CONTAINER_FILE
    async def get(self, request: Request, container_id: str, path: str) -> FileResponse:
        try:
            fd = await db(containers.open_container_file)(request.user.tenant.pk, container_id, path)
        except containers.ContainerNotFound as error:
            raise NotFound(str(error), param="container_id")
        except (FileNotFoundError, ValueError):
            raise NotFound(f"File '{path}' not found in container '{container_id}'.", param="path")
        response = FileResponse(os.fdopen(fd, "rb"), as_attachment=True, filename=os.path.basename(path))
        # Files are written by model-run code: never let a browser treat one as a page.
        response["Content-Security-Policy"] = "sandbox"
        response["X-Content-Type-Options"] = "nosniff"
        return response
