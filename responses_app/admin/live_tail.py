"""The staff-only event stream behind the admin's live tail.

The same SSE reader and framing as ``GET /v1/responses/{id}?stream=true``, but the staff
session authenticates it instead of an API key, and it sees every tenant's responses
(operators do). It is an async view, so a tailing browser holds no sync thread.
"""

from __future__ import annotations

from django.contrib.admin.utils import unquote
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseForbidden

from responses_app import selectors
from responses_app.lib.asyncdb import db
from responses_app.stream.reader import follow_frames
from responses_app.stream.sse import sse_response

# The admin's own rule: a change permission implies the view permission.
VIEW_PERMISSIONS = ("responses_app.view_response", "responses_app.change_response")


@staff_member_required
async def response_events(request: HttpRequest, object_id: str) -> HttpResponse:
    """Events of one response with sequence_number > ``after`` (default -1), live until
    the terminal event. 403 without the view permission, 404 for an unknown id."""
    user = await request.auser()
    if not any([await user.ahas_perm(permission) for permission in VIEW_PERMISSIONS]):
        return HttpResponseForbidden("You may not view responses.")
    try:
        after = int(request.GET.get("after", "-1"))
    except ValueError:
        return HttpResponseBadRequest("'after' must be an integer.")
    if after < -1:
        return HttpResponseBadRequest("'after' must be -1 or more.")
    response_id = unquote(object_id)  # the admin quotes ids in its URLs
    if await db(selectors.stream_state)(response_id) is None:
        raise Http404("No such response.")
    return sse_response(follow_frames(response_id, after))
