"""The Responses API's tool vocabulary that request validation, the harmony prompt and the
worker's tool loop all need, defined once."""

from __future__ import annotations

import re

# The type names under which the API offers web search (its aliases and dated versions).
WEB_SEARCH_TYPES = frozenset({"web_search", "web_search_preview", "web_search_preview_2025_03_11",
                              "web_search_2025_08_26"})
# A function name or an MCP server label: each becomes a harmony recipient, so keep it plain.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
