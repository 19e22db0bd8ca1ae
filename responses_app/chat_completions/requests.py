"""``POST /v1/chat/completions`` bodies: checked against the openai SDK's own request type,
then said as the Responses create they are and parsed by validation/create.py, so that a
completion gets every check a response gets (ranges, tools, formats, metadata, the model),
with the 400 naming the completion's own parameter."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace
from typing import Any

from openai.types.chat.completion_create_params import CompletionCreateParamsBase

from responses_app.chat_completions.messages import Conversation, conversation, without_reasoning
from responses_app.models.response_params import ChatOptions
from responses_app.validation.create import parse_create_request
from responses_app.validation.request import CreateRequest
from responses_app.validation.sdk_types import check, strict_validator
from responses_app.wire.errors import APIError, InvalidRequest
from responses_app.wire.request_body import LOGPROBS_INCLUDE

JsonObject = dict[str, Any]


class ChatCompletionBody(CompletionCreateParamsBase, total=False):
    """What a completion may hold: the SDK's request type, ``stream``, and the fields that
    chat-only clients send to vLLM beyond OpenAI's, where they mean something for gpt-oss."""

    stream: bool | None
    top_k: int | None
    min_p: float | None
    repetition_penalty: float | None
    chat_template_kwargs: dict[str, object] | None


_BODY = strict_validator(ChatCompletionBody)

# What a gpt-oss server cannot do, or does not do yet: a 400 naming the parameter, never a
# silent no (docs/chat-completions.md).
REFUSED = {
    "audio": "gpt-oss writes no audio.",
    "prediction": "Predicted outputs are not supported.",
    "web_search_options": "Chat Completions' web search is not supported: use the Responses API's web_search tool.",
    "functions": "'functions' is deprecated: send 'tools'.",
    "function_call": "'function_call' is deprecated: send 'tool_choice'.",
    "logit_bias": "'logit_bias' is not supported.",
    "moderation": "This server runs no moderation model.",
    "prompt_cache_options": "'prompt_cache_options' is not supported.",
}
# Said the same way in both APIs.
SAME = ("model", "temperature", "top_p", "presence_penalty", "frequency_penalty", "parallel_tool_calls", "metadata",
        "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier")
# OpenAI's limits, and the length of a stop sequence (each is looked for at every token).
MAX_STOP_SEQUENCES = 4
MAX_CHOICES = 128
MAX_STOP_CHARS = 256
# vLLM takes any penalty above 0; past this one no model writes sense.
MAX_REPETITION_PENALTY = 10.0
# What chat_template_kwargs may say to harmony's renderer (vLLM's gpt-oss reads the effort there too).
TEMPLATE_KWARGS = ("reasoning_effort",)
# A parameter of the Responses create, as the completion names it (for the 400s).
RENAMED = (*((f"text.format.{name}", f"response_format.json_schema.{name}") for name in ("name", "schema", "strict")),
           ("text.format", "response_format"), ("text.verbosity", "verbosity"),
           ("reasoning.effort", "reasoning_effort"), ("reasoning", "reasoning_effort"),
           ("tool_choice.name", "tool_choice.function.name"), ("tool_choice.tools", "tool_choice.allowed_tools.tools"),
           ("tool_choice.mode", "tool_choice.allowed_tools.mode"), ("include", "logprobs"))


@dataclass(frozen=True)
class ChatCompletionRequest:
    create: CreateRequest  # the first choice's
    n: int  # choices, each a response of its own, run side by side
    messages: list[JsonObject]  # as sent, which a stored completion keeps (create.params.chat.stored)
    stream: bool
    include_usage: bool
    logprobs: bool  # of the answer's tokens (its final channel)
    body: JsonObject
    said: Conversation

    def choices(self) -> list[CreateRequest]:
        """One create per choice. With a seed, choice i samples with seed + i: the same seed
        for all would make all the same."""
        seed = self.create.params.chat.seed
        return [self.create if index == 0 or seed is None else replace(
            self.create, params=replace(self.create.params, chat=replace(
                self.create.params.chat, seed=(seed + index + 2**63) % 2**64 - 2**63)))
            for index in range(self.n)]

    def renamed(self, error: APIError) -> APIError:
        """A 4xx of the Responses create (its parsing, or its creation: a call id that no
        call has) naming the completion's parameter."""
        return _renamed(error, self.body, self.said)


def parse_chat_completion(body: Any) -> ChatCompletionRequest:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    for name in ("model", "messages"):
        if body.get(name) is None:
            raise InvalidRequest(f"Missing required parameter: '{name}'.", param=name,
                                 code="missing_required_parameter")
    messages, reasoning = without_reasoning(body["messages"])
    checked = {**body, "messages": messages}
    check(_BODY, checked)
    _refuse_what_cannot_run(checked)
    stream = bool(checked.get("stream"))
    if checked.get("stream_options") is not None and not stream:
        raise InvalidRequest("'stream_options' is only allowed when 'stream' is true.", param="stream_options")
    said = conversation(messages, reasoning)
    try:
        create = parse_create_request(_as_response(checked, said))
    except InvalidRequest as error:
        raise _renamed(error, checked, said) from None
    create = replace(create, stream=stream, params=replace(create.params, chat=_chat_options(checked)))
    return ChatCompletionRequest(create=create, n=checked.get("n") or 1, messages=body["messages"], stream=stream,
                                 include_usage=bool((checked.get("stream_options") or {}).get("include_usage")),
                                 logprobs=bool(checked.get("logprobs")), body=checked, said=said)


def _refuse_what_cannot_run(body: JsonObject) -> None:
    for name, why in REFUSED.items():
        if body.get(name) not in (None, False):
            raise InvalidRequest(f"The parameter '{name}' is not supported: {why}", param=name,
                                 code="unsupported_parameter")
    if body.get("n") is not None and not 1 <= body["n"] <= MAX_CHOICES:
        raise InvalidRequest(f"'n' is from 1 to {MAX_CHOICES}.", param="n", code="invalid_value")
    if body.get("top_logprobs") is not None and not body.get("logprobs"):
        raise InvalidRequest("'top_logprobs' requires 'logprobs' to be true.", param="top_logprobs")
    if body.get("modalities") not in (None, ["text"]):
        raise InvalidRequest("gpt-oss writes text only: 'modalities' can only be [\"text\"].", param="modalities",
                             code="unsupported_parameter")


def _as_response(body: JsonObject, said: Conversation) -> JsonObject:
    """The Responses create of the same request: an unstored foreground response."""
    created: JsonObject = {name: body[name] for name in SAME if body.get(name) is not None}
    created |= {"input": said.items, "store": False}
    if said.instructions is not None:
        created["instructions"] = said.instructions
    budget = body.get("max_completion_tokens", body.get("max_tokens"))
    if budget is not None:
        created["max_output_tokens"] = budget
    if body.get("logprobs"):
        created |= {"include": [LOGPROBS_INCLUDE], "top_logprobs": body.get("top_logprobs") or 0}
    effort = body.get("reasoning_effort", _template_kwargs(body).get("reasoning_effort"))
    if effort is not None:
        created["reasoning"] = {"effort": effort}
    text: JsonObject = {}
    if body.get("response_format") is not None:
        text["format"] = _text_format(body["response_format"])
    if body.get("verbosity") is not None:
        text["verbosity"] = body["verbosity"]
    if text:
        created["text"] = text
    if body.get("tools") is not None:
        created["tools"] = [_function_tool(tool, f"tools[{index}]") for index, tool in enumerate(body["tools"])]
    if body.get("tool_choice") is not None:
        created["tool_choice"] = _tool_choice(body["tool_choice"])
    return created


def _template_kwargs(body: JsonObject) -> JsonObject:
    kwargs: JsonObject = body.get("chat_template_kwargs") or {}
    for name in kwargs:
        if name not in TEMPLATE_KWARGS:
            raise InvalidRequest(f"'chat_template_kwargs.{name}' means nothing to gpt-oss's harmony template: it takes "
                                 f"{', '.join(TEMPLATE_KWARGS)}.", param=f"chat_template_kwargs.{name}",
                                 code="unsupported_parameter")
    return kwargs


def _chat_options(body: JsonObject) -> ChatOptions:
    """Stop sequences, a seed and vLLM's sampling extensions (ranges as vLLM takes them)."""
    stop = body.get("stop")
    sequences = (stop,) if isinstance(stop, str) else tuple(stop or ())
    if len(sequences) > MAX_STOP_SEQUENCES:
        raise InvalidRequest(f"'stop' holds at most {MAX_STOP_SEQUENCES} sequences.", param="stop",
                             code="array_above_max_length")
    if any(not 1 <= len(sequence) <= MAX_STOP_CHARS for sequence in sequences):
        raise InvalidRequest(f"A stop sequence holds 1 to {MAX_STOP_CHARS} characters.", param="stop",
                             code="invalid_value")
    seed = body.get("seed")
    if seed is not None and not -2**63 <= seed < 2**63:
        raise InvalidRequest("'seed' is a 64-bit integer.", param="seed", code="invalid_value")
    top_k, min_p, penalty = body.get("top_k"), body.get("min_p"), body.get("repetition_penalty")
    if top_k is not None and top_k < -1:
        raise InvalidRequest("'top_k' is -1 or 0 (every token) or at least 1.", param="top_k", code="invalid_value")
    if min_p is not None and not 0 <= min_p <= 1:
        raise InvalidRequest("'min_p' is a number from 0 to 1.", param="min_p", code="invalid_value")
    if penalty is not None and not 0 < penalty <= MAX_REPETITION_PENALTY:
        raise InvalidRequest(f"'repetition_penalty' is a number above 0, at most {MAX_REPETITION_PENALTY:g}.",
                             param="repetition_penalty", code="invalid_value")
    return ChatOptions(stored=bool(body.get("store")), stop=tuple(dict.fromkeys(sequences)), seed=seed, top_k=top_k,
                       min_p=min_p, repetition_penalty=penalty)


def _function_tool(tool: JsonObject, param: str) -> JsonObject:
    if tool["type"] != "function":
        raise InvalidRequest(f"Only function tools are supported, not {tool['type']!r}.", param=f"{param}.type",
                             code="invalid_value")
    function = tool["function"]
    return {"type": "function", "name": function["name"], "description": function.get("description"),
            "parameters": function.get("parameters") or {"type": "object", "properties": {}},
            "strict": bool(function.get("strict"))}


def _tool_choice(choice: str | JsonObject) -> str | JsonObject:
    if isinstance(choice, str):
        return choice
    if choice["type"] == "allowed_tools":  # the SDK types its tools as open objects: checked here
        allowed = choice["allowed_tools"]
        names = []
        for index, tool in enumerate(allowed["tools"]):
            function = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise InvalidRequest("An allowed tool is {\"type\": \"function\", \"function\": {\"name\": ...}}.",
                                     param=f"tool_choice.allowed_tools.tools[{index}]", code="invalid_value")
            names.append(function["name"])
        return {"type": "allowed_tools", "mode": allowed["mode"],
                "tools": [{"type": "function", "name": name} for name in names]}
    if choice["type"] != "function":
        raise InvalidRequest(f"Only a function can be named in 'tool_choice', not {choice['type']!r}.",
                             param="tool_choice.type", code="invalid_value")
    return {"type": "function", "name": choice["function"]["name"]}


def _text_format(response_format: JsonObject) -> JsonObject:
    if response_format["type"] != "json_schema":
        return {"type": response_format["type"]}
    schema = response_format["json_schema"]
    return {"type": "json_schema", **{key: schema[key] for key in ("name", "schema", "strict", "description")
                                      if schema.get(key) is not None}}


def _renamed(error: APIError, body: JsonObject, said: Conversation) -> APIError:
    if not error.param:
        return error  # a quota's 429, a 404 of the model: nothing to rename
    param = error.param
    if (found := re.match(r"input\[(\d+)\]", param)) is not None:
        param = f"messages[{said.origins[int(found.group(1))]}]"
    elif param.startswith("max_output_tokens"):
        param = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    elif (found := re.match(r"tools\[(\d+)\]\.(.+)", param)) is not None:
        # A chat tool says its type beside its function, and the rest inside it.
        inside = "" if found.group(2) == "type" else "function."
        param = f"tools[{found.group(1)}].{inside}{found.group(2)}"
    else:
        param = next((chat + param[len(responses):] for responses, chat in RENAMED if param.startswith(responses)),
                     param)
    if param == error.param:
        return error
    renamed = copy.copy(error)
    renamed.message = error.message.replace(f"'{error.param}'", f"'{param}'")
    renamed.param = param
    return renamed
