"""JSON from a client, checked once at the edge for what no later step can hold.

Python's parser accepts what the databases, harmony and the renderers cannot: lone
surrogates (``"\\ud800"``, which no UTF-8 encoder writes), NUL characters (which
PostgreSQL refuses in text), ``NaN`` and ``Infinity`` (not JSON, and refused by
PostgreSQL's jsonb), numbers too large for a float (``1e400``, which Python reads as
infinity) and nesting deep enough to exhaust the recursion of any recursive
step (the parser itself, JSON Schema checks, the encoders). Each is refused
here, with the path of the offending value, so that nothing behind the edge has to care.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from responses_app.wire.errors import InvalidRequest

# Characters no stored or rendered text may hold: NUL (PostgreSQL) and any surrogate (a
# valid pair is decoded into one astral character, so a surrogate left in a str is lone).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def loads(data: bytes | str, *, max_depth: int) -> Any:
    """``data`` parsed, or a 400 that says what is wrong and where."""
    try:
        value = json.loads(data, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise too_deep(max_depth) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidRequest(f"We could not parse the JSON body of your request: {error}.",
                             code="invalid_json") from error
    check(value, max_depth=max_depth)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is too large a number")
    return number


def check(value: Any, *, max_depth: int) -> None:
    """A 400 when ``value`` nests deeper than ``max_depth`` or holds an unstorable
    character in any key or string. Iterative, so that depth itself cannot break it."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            if UNSTORABLE.search(node):
                raise unstorable_text(path)
        elif isinstance(node, dict | list):
            if depth >= max_depth:
                raise too_deep(max_depth, path)
            if isinstance(node, dict):
                for key, child in node.items():
                    if UNSTORABLE.search(key):
                        raise unstorable_text((*path, key))
                    stack.append((child, depth + 1, (*path, key)))
            else:
                stack.extend((child, depth + 1, (*path, index)) for index, child in enumerate(node))


def param_path(path: tuple[str | int, ...]) -> str | None:
    """``('input', 0, 'content')`` as OpenAI names it: ``input[0].content`` (a key that holds
    an unstorable character is named with U+FFFD in its place)."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return UNSTORABLE.sub("\ufffd", text) or None


def too_deep(max_depth: int, path: tuple[str | int, ...] = ()) -> InvalidRequest:
    return InvalidRequest(f"The JSON body nests deeper than {max_depth} levels.", param=param_path(path),
                          code="nesting_too_deep")


def unstorable_text(path: tuple[str | int, ...]) -> InvalidRequest:
    where = param_path(path)
    return InvalidRequest(
        f"Invalid text{f' in {where!r}' if where else ''}: it contains a NUL character or a lone UTF-16 "
        "surrogate, which cannot be stored.", param=where, code="invalid_text")
