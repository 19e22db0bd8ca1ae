"""Attribute filters (validation/vector_stores.Filter) applied to a file's attributes: a
search keeps the chunks of the files that match. A file without the attribute matches no
comparison; values of different types are never equal (``ne`` and ``nin`` match them) and
never ordered (``gt`` ... ``lte`` do not match them)."""

from __future__ import annotations

import operator
from typing import Any, cast

from responses_app.wire.search_options import Comparison, Compound, Filter

ORDERS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def matches(filter_: Filter, attributes: dict[str, Any] | None) -> bool:
    if isinstance(filter_, Compound):
        results = (matches(item, attributes) for item in filter_.filters)
        return all(results) if filter_.type == "and" else any(results)
    return _compare(filter_, (attributes or {}).get(filter_.key, _MISSING))


_MISSING = object()


def _compare(comparison: Comparison, attribute: Any) -> bool:
    if attribute is _MISSING:
        return False
    kind, value = comparison.type, comparison.value
    if kind in ("in", "nin"):
        found = any(_equal(attribute, item) for item in cast(tuple[str | float, ...], value))  # parse_filter's
        return found if kind == "in" else not found
    if kind in ("eq", "ne"):
        return _equal(attribute, value) == (kind == "eq")
    return _same_kind(attribute, value) and ORDERS[kind](attribute, value)


def _equal(a: Any, b: Any) -> bool:
    return _same_kind(a, b) and a == b


def _same_kind(a: Any, b: Any) -> bool:
    """Both booleans, both numbers (int and float alike) or both strings."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (isinstance(a, str) and isinstance(b, str)) or (
        isinstance(a, int | float) and isinstance(b, int | float))
