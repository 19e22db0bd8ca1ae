"""Reading a request's JSON body and query parameters, with a 400 that names the parameter."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import QueryDict
from rest_framework.request import Request

from responses_app.wire import json_input
from responses_app.wire.errors import InvalidRequest
from responses_app.wire.request_body import MAX_INTEGER, SUPPORTED_INCLUDE_VALUES


def json_body(request: Request) -> Any:
    """The body as JSON, whatever the Content-Type (the SDKs always send JSON); an empty
    body is null, which the endpoint's own validation refuses. Checked once here for
    size, depth and text that cannot be stored (lib/json_input.py)."""
    return json_input.loads(request.body or b"null", max_depth=settings.JSON_BODY_MAX_DEPTH)


def page_params(query: QueryDict, *, orders: bool = False, extra: tuple[str, ...] = (),
                default_order: str = "desc") -> tuple[str | None, int, str]:
    """(after, limit, order) of a list endpoint; any other query parameter but ``extra``
    (the endpoint reads those itself) is a 400."""
    known_query(query, ("after", "limit", "order", *extra) if orders else ("after", "limit", *extra))
    limit = int_param(query, "limit", minimum=1, maximum=100) or 20
    return query.get("after"), limit, order_param(query, default_order) if orders else default_order


def bool_param(query: QueryDict, name: str) -> bool:
    value = query.get(name)
    if value in (None, "", "false", "False", "0"):
        return False
    if value in ("true", "True", "1"):
        return True
    raise InvalidRequest(f"Invalid value for '{name}': {value!r}; expected true or false.", param=name)


def int_param(query: QueryDict, name: str, minimum: int, maximum: int = MAX_INTEGER) -> int | None:
    """``name`` as an integer within its bounds (by default an integer column's, so that a
    cursor such as ``starting_after`` is a 400 here rather than an overflow in a query)."""
    value = query.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise InvalidRequest(f"Invalid value for '{name}': {value!r}; expected an integer.", param=name) from None
    if number < minimum or number > maximum:
        bounds = f"between {minimum} and {maximum}"
        raise InvalidRequest(f"'{name}' must be {bounds}, got {number}.", param=name)
    return number


def order_param(query: QueryDict, default: str = "desc") -> str:
    order = query.get("order", default)
    if order not in ("asc", "desc"):
        raise InvalidRequest(f"Invalid value for 'order': {order!r}; expected 'asc' or 'desc'.", param="order")
    return str(order)


def known_query(query: QueryDict, names: tuple[str, ...]) -> None:
    """A 400 for any query parameter but ``names``, as for an unknown body field."""
    for name in query:
        if name not in names:
            raise InvalidRequest(f"Unknown parameter: '{name}'.", param=name, code="unknown_parameter")


def include_param(query: QueryDict, *others: str) -> list[str]:
    """``include[]=`` (or ``include=``) values, each one this server supports; any query
    parameter but those and ``others`` (the endpoint reads them itself) is a 400."""
    known_query(query, ("include", "include[]", *others))
    values: list[str] = query.getlist("include[]") + query.getlist("include")
    for value in values:
        if value not in SUPPORTED_INCLUDE_VALUES:
            raise InvalidRequest(f"include value {value!r} is not supported by this server yet.", param="include")
    return values
