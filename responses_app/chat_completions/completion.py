"""Finished responses said as Chat Completions says them: the ``chat.completion`` object
(one choice per response: ``n`` of them run side by side), its finish reasons and its usage.
The reasoning is given twice, as ``reasoning_content`` and as ``reasoning``: clients read
one name or the other (vLLM renamed the field in 0.16), and each name alone leaves half of
them without it; a key can keep one (ApiKey.reasoning_fields)."""

from __future__ import annotations

from typing import Any

from responses_app.wire.errors import APIError, InvalidRequest

JsonObject = dict[str, Any]


class CompletionFailed(APIError):
    """The response failed on this side (the SDKs retry a 500)."""

    status_code = 500
    error_type = "server_error"


REASONING_NAMES = ("reasoning_content", "reasoning")


def reasoning_names(fields: str) -> tuple[str, ...]:
    """The names a key's completions give their reasoning under (ApiKey.reasoning_fields)."""
    return REASONING_NAMES if fields == "both" else (fields,)


def with_reasoning_names(completion: JsonObject, names: tuple[str, ...]) -> JsonObject:
    """The completion with its messages' reasoning under ``names`` only."""
    for choice in completion["choices"]:
        for name in REASONING_NAMES:
            if name not in names:
                choice["message"].pop(name, None)
    return completion


def completion_id(response_id: str) -> str:
    return "chatcmpl-" + response_id.removeprefix("resp_")


def completion_object(responses: list[JsonObject], logprobs: bool = False) -> JsonObject:
    """``responses``: terminal Response objects (wire/objects.response_object), one per choice;
    the first names the completion. Raises the error of a failed one. ``logprobs``: the
    answer's, as its text parts carry them."""
    for response in responses:
        if response["status"] == "failed":
            raise failure(response["error"] or {})
    first = responses[0]
    return {
        "id": completion_id(first["id"]), "object": "chat.completion", "created": first["created_at"],
        "model": first["model"], "system_fingerprint": None, "service_tier": first.get("service_tier"),
        "choices": [_choice(index, response, logprobs) for index, response in enumerate(responses)],
        "usage": usage([response["usage"] for response in responses]),
    }


def _choice(index: int, response: JsonObject, logprobs: bool) -> JsonObject:
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
    return {"index": index, "message": message, "logprobs": {"content": tokens, "refusal": None} if logprobs else None,
            "finish_reason": finish_reason(response, bool(calls))}


def finish_reason(response: JsonObject, called: bool) -> str:
    """"length" for a budget spent (during the reasoning too: never an empty "stop")."""
    if response["status"] == "incomplete":
        return "length" if (response.get("incomplete_details") or {}).get("reason") == "max_output_tokens" \
            else "content_filter"
    return "tool_calls" if called else "stop"


def usage(choices: list[JsonObject | None]) -> JsonObject | None:
    """The usage of a completion whose choices are these responses': the prompt once (each
    choice reads the same), the tokens each choice generated added up."""
    used = [value for value in choices if value is not None]
    if len(used) != len(choices):
        return None
    prompt = used[0]["input_tokens"]
    completion = sum(value["output_tokens"] for value in used)
    cached = (used[0].get("input_tokens_details") or {}).get("cached_tokens", 0)
    reasoning = sum((value.get("output_tokens_details") or {}).get("reasoning_tokens", 0) for value in used)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning}}


def failure(error: JsonObject) -> APIError:
    """A failed response's error as the completion's: a prompt that cannot run is the
    client's (400), anything else this server's (500)."""
    message = error.get("message") or "The completion failed."
    if error.get("code") == "invalid_prompt":
        return InvalidRequest(message, param="messages", code="invalid_prompt")
    return CompletionFailed(message, code=error.get("code") or "server_error")
