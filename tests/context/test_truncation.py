"""truncation "auto": whole items from the start, calls and their outputs together."""

from __future__ import annotations

from responses_app.context.truncation import fit, without_orphans


def message(text: str) -> dict:
    return {"type": "message", "role": "user", "id": f"msg_{text}", "content": [{"type": "input_text", "text": text}]}


CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "ok"}


def tokens(items: list[dict]) -> list[int]:
    """A stand-in renderer: ten tokens per item and two for the frame around them."""
    return [0] * (2 + 10 * len(items))


def test_the_fewest_items_are_dropped_from_the_start():
    history = [message(str(n)) for n in range(10)]
    prompt, dropped = fit(history, [], tokens, limit=50)  # 4 items make 42 tokens; 5 would make 52
    assert (len(prompt), dropped) == (42, 6)


def test_a_call_and_its_output_leave_together():
    history = [message("a"), CALL, message("b"), OUTPUT, message("c")]
    assert without_orphans(history[2:]) == [message("b"), message("c")]
    prompt, dropped = fit(history, [], tokens, limit=40)  # a cut before b: the orphaned output goes too
    assert dropped == 3 and len(prompt) == 22


def test_the_output_so_far_is_never_dropped_and_nothing_fits_when_it_alone_is_too_long():
    output = [message("out")] * 3
    assert fit([message("a")], output, tokens, limit=40) == ([0] * 32, 1)
    assert fit([message("a")], output, tokens, limit=30) is None


def test_approval_responses_and_custom_tool_outputs_need_their_requests():
    request = {"type": "mcp_approval_request", "id": "mcpr_1"}
    approval = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}
    custom = {"type": "custom_tool_call_output", "call_id": "call_9", "output": "x"}
    assert without_orphans([request, approval, custom]) == [request, approval]
    assert without_orphans([approval]) == []
