"""``truncation: "auto"``: the fewest whole items dropped from the start of the history so
that the prompt fits the model's context.

An item is never cut in half, the instructions (rendered apart from the items) are never
dropped, and neither is the response's own output so far. A tool output whose call was
dropped goes with it: a call and its output leave together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from responses_app.harmony.client_tools import CALL_OUTPUTS

Items = list[dict[str, Any]]

# Output item type -> (the field that names its call, the call's types, their field).
# A local_shell_call_output names its call in its ``id``.
ANSWERS = {
    **{output: ("id" if output == "local_shell_call_output" else "call_id", (call,), "call_id")
       for call, output in CALL_OUTPUTS.items()},
    "mcp_approval_response": ("approval_request_id", ("mcp_approval_request",), "id"),
}


def without_orphans(items: Items) -> Items:
    """``items`` less the outputs that answer a call not among them."""
    calls = {(item["type"], item.get(key)) for item in items for _, types, key in ANSWERS.values()
             if item.get("type") in types}
    kept = []
    for item in items:
        answer = ANSWERS.get(item.get("type", ""))
        if answer is not None:
            field, types, _ = answer
            if not any((call_type, item.get(field)) in calls for call_type in types):
                continue
        kept.append(item)
    return kept


def fit(history: Items, output: Items, render: Callable[[Items], list[int]],
        limit: int) -> tuple[list[int], int] | None:
    """(prompt, items dropped) for the smallest cut of ``history`` whose prompt, with
    ``output`` after it, is shorter than ``limit`` tokens; None when not even the output
    alone fits. A binary search: each render is a whole prompt, and a long conversation
    would otherwise be rendered once per item."""

    def attempt(cut: int) -> list[int]:
        return render(without_orphans(history[cut:]) + output)

    low, high = 0, len(history)
    best = attempt(high)
    if len(best) >= limit:
        return None
    while low < high:  # invariant: the cut ``high`` fits, and ``best`` is its prompt
        middle = (low + high) // 2
        prompt = attempt(middle)
        if len(prompt) < limit:
            high, best = middle, prompt
        else:
            low = middle + 1
    return best, len(history) - len(without_orphans(history[high:]))
