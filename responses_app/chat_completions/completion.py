"""A finished response said as Chat Completions says it: the ``chat.completion`` object
(one choice), its finish reason and its usage. The reasoning is given twice, as
``reasoning_content`` and as ``reasoning``: clients read one name or the other (vLLM renamed
the field in 0.16), and each name alone leaves half of them without it."""

from __future__ import annotations

from typing import Any

from responses_app.wire.errors import APIError, InvalidRequest

JsonObject = dict[str, Any]


class CompletionFailed(APIError):
    """The response failed on this side (the SDKs retry a 500)."""

    status_code = 500
    error_type = "server_error"


def completion_id(response_id: str) -> str:
    return "chatcmpl-" + response_id.removeprefix("resp_")


def completion_object(response: JsonObject, logprobs: bool = False) -> JsonObject:
    """``response``: a terminal Response object (wire/objects.response_object). Raises the
    error of a failed one. ``logprobs``: the answer's, as its text parts carry them."""
    if response["status"] == "failed":
        raise failure(response["error"] or {})
    message: JsonObject = {"role": "assistant", "content": None, "refusal": None, "annotations": [],
                           "tool_calls": None}
    texts, reasoning, calls, tokens = [], [], [], []
    for item in response["output"]:
        if item["type"] == "reasoning":
            reasoning += [part["text"] for part in item.get("content") or []]
        elif item["type"] == "message":
            texts += [part.get("text") or part.get("refusal") or "" for part in item["content"]]
            tokens += [entry for part in item["content"] for entry in part.get("logprobs") or []]
        elif item["type"] == "function_call":
            calls.append({"id": item["call_id"], "type": "function",
                          "function": {"name": item["name"], "arguments": item["arguments"]}})
    message["content"] = "".join(texts) if texts or not calls else None
    if reasoning:
        message["reasoning_content"] = message["reasoning"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": completion_id(response["id"]), "object": "chat.completion", "created": response["created_at"],
        "model": response["model"], "system_fingerprint": None, "service_tier": response.get("service_tier"),
        "choices": [{"index": 0, "message": message,
                     "logprobs": {"content": tokens, "refusal": None} if logprobs else None,
                     "finish_reason": finish_reason(response, bool(calls))}],
        "usage": usage(response["usage"]),
    }


def finish_reason(response: JsonObject, called: bool) -> str:
    """"length" for a budget spent (during the reasoning too: never an empty "stop")."""
    if response["status"] == "incomplete":
        return "length" if (response.get("incomplete_details") or {}).get("reason") == "max_output_tokens" \
            else "content_filter"
    return "tool_calls" if called else "stop"


def usage(used: JsonObject | None) -> JsonObject | None:
    if used is None:
        return None
    cached = (used.get("input_tokens_details") or {}).get("cached_tokens", 0)
    reasoning = (used.get("output_tokens_details") or {}).get("reasoning_tokens", 0)
    return {"prompt_tokens": used["input_tokens"], "completion_tokens": used["output_tokens"],
            "total_tokens": used["total_tokens"], "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning}}


def failure(error: JsonObject) -> APIError:
    """A failed response's error as the completion's: a prompt that cannot run is the
    client's (400), anything else this server's (500)."""
    message = error.get("message") or "The completion failed."
    if error.get("code") == "invalid_prompt":
        return InvalidRequest(message, param="messages", code="invalid_prompt")
    return CompletionFailed(message, code=error.get("code") or "server_error")
