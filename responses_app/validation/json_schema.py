"""Structured outputs: the JSON schema check done before a response is enqueued.

vLLM compiles ``text.format`` schemas with xgrammar (the backend this server configures),
so the same compiler decides here whether a schema can ever run. Where xgrammar is not
installed (a web-only node without vLLM), the worker's engine reports a bad schema as a
failed response instead.
"""

from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from typing import Any

from responses_app.wire.errors import InvalidRequest

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _xgrammar() -> Any:
    try:
        import xgrammar
    except ImportError:
        log.warning("xgrammar is not installed: JSON schemas are checked by the worker only")
        return None
    return xgrammar


def check_grammar(syntax: str, definition: str, param: str) -> None:
    """A custom tool's ``lark`` or ``regex`` grammar, compiled as vLLM will compile it."""
    xgrammar = _xgrammar()
    if xgrammar is None:
        return
    try:
        (xgrammar.Grammar.from_lark if syntax == "lark" else xgrammar.Grammar.from_regex)(definition)
    except Exception as error:  # noqa: BLE001  (xgrammar raises RuntimeError/ValueError with the reason)
        raise InvalidRequest(f"Invalid {syntax} grammar: {_reason(error)}", param=param,
                             code="invalid_grammar") from error


def check_json_schema(schema: dict[str, Any]) -> None:
    xgrammar = _xgrammar()
    if xgrammar is None:
        return
    try:
        xgrammar.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False)
    except Exception as error:  # xgrammar raises RuntimeError/ValueError with the reason
        raise InvalidRequest(f"Invalid JSON schema in text.format.schema: {_reason(error)}",
                             param="text.format.schema", code="invalid_json_schema") from error


def _reason(error: Exception) -> str:
    """xgrammar's message without its "[time] source.cc:line: " prefix: the reason is what helps."""
    return re.sub(r"^\[[^\]]*\] \S+: ", "", str(error).strip())
