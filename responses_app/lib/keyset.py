"""The one keyset pagination of the API's lists by creation time (files, batches, vector
stores and their files, webhook endpoints, scheduled responses): a page after one object,
or before one, in (created_at, tie-break) order, and whether more follow. The lists by
position (a response's input items, a conversation's items) page by ``position`` instead
(selectors.position_page); tools_app pages its containers alike on its own side
(tools_app/containers.created_at_page), since it never imports responses_app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q, QuerySet


def created_at_page(rows: QuerySet[Any], *, after: str | None, limit: int, order: str, before: str | None = None,
                    cursor_field: str = "pk", cursors: QuerySet[Any] | None = None,
                    missing: Callable[[str, str], Exception]) -> tuple[list[Any], bool]:
    """A page of ``rows`` by creation time, then ``cursor_field`` (unique among them), in
    ``order`` (asc or desc): the objects after ``after``, or just before ``before``. A
    cursor is looked up in ``cursors`` (default: ``rows``); ``missing(cursor, param)`` is
    the error raised when it names none."""
    ascending = order == "asc"
    lookup = rows if cursors is None else cursors
    for cursor, param in ((after, "after"), (before, "before")):
        if cursor is None:
            continue
        mark = lookup.filter(**{cursor_field: cursor}).values_list("created_at", flat=True).first()
        if mark is None:
            raise missing(cursor, param)
        later = (param == "after") == ascending
        rows = rows.filter(Q(created_at__gt=mark) | Q(created_at=mark, **{f"{cursor_field}__gt": cursor})) if later \
            else rows.filter(Q(created_at__lt=mark) | Q(created_at=mark, **{f"{cursor_field}__lt": cursor}))
    keys = ("created_at", cursor_field) if ascending else ("-created_at", f"-{cursor_field}")
    if before is not None and after is None:  # the objects just before the cursor, shown in order
        reverse = tuple(key[1:] if key.startswith("-") else f"-{key}" for key in keys)
        page = list(rows.order_by(*reverse)[: limit + 1])
        return page[:limit][::-1], len(page) > limit
    page = list(rows.order_by(*keys)[: limit + 1])
    return page[:limit], len(page) > limit
