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
from responses_app.validation.create import parse_create_request
from responses_app.validation.request import CreateRequest
from responses_app.validation.sdk_types import check, strict_validator
from responses_app.wire.errors import APIError, InvalidRequest
from responses_app.wire.request_body import LOGPROBS_INCLUDE

JsonObject = dict[str, Any]


class ChatCompletionBody(CompletionCreateParamsBase, total=False):
    """What a completion may hold: the SDK's request type, and ``stream``."""

    stream: bool | None


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
    "stop": "Stop sequences are not supported yet.",
    "seed": "Seeded sampling is not supported.",
    "moderation": "This server runs no moderation model.",
    "prompt_cache_options": "'prompt_cache_options' is not supported.",
}
# Said the same way in both APIs.
SAME = ("model", "temperature", "top_p", "presence_penalty", "frequency_penalty", "parallel_tool_calls", "metadata",
        "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier")
# A parameter of the Responses create, as the completion names it (for the 400s).
RENAMED = (*((f"text.format.{name}", f"response_format.json_schema.{name}") for name in ("name", "schema", "strict")),
           ("text.format", "response_format"), ("text.verbosity", "verbosity"),
           ("reasoning.effort", "reasoning_effort"), ("reasoning", "reasoning_effort"),
           ("tool_choice.name", "tool_choice.function.name"), ("include", "logprobs"))


@dataclass(frozen=True)
class ChatCompletionRequest:
    create: CreateRequest
    stream: bool
    include_usage: bool
    logprobs: bool  # of the answer's tokens (its final channel)
    body: JsonObject
    said: Conversation

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
    return ChatCompletionRequest(create=replace(create, stream=stream), stream=stream,
                                 include_usage=bool((checked.get("stream_options") or {}).get("include_usage")),
                                 logprobs=bool(checked.get("logprobs")), body=checked, said=said)


def _refuse_what_cannot_run(body: JsonObject) -> None:
    for name, why in REFUSED.items():
        if body.get(name) not in (None, False):
            raise InvalidRequest(f"The parameter '{name}' is not supported: {why}", param=name,
                                 code="unsupported_parameter")
    if body.get("store"):
        raise InvalidRequest("Stored chat completions are not supported yet: leave 'store' false.", param="store",
                             code="unsupported_parameter")
    if body.get("n") not in (None, 1):
        raise InvalidRequest("Only one choice per completion is supported yet ('n': 1).", param="n",
                             code="unsupported_parameter")
    if body.get("top_logprobs") is not None and not body.get("logprobs"):
        raise InvalidRequest("'top_logprobs' requires 'logprobs' to be true.", param="top_logprobs")
    if body.get("modalities") not in (None, ["text"]):
        raise InvalidRequest("gpt-oss writes text only: 'modalities' can only be [\"text\"].", param="modalities",
                             code="unsupported_parameter")


def _as_response(body: JsonObject, said: Conversation) -> JsonObject:
    """The Responses create of the same request: an unstored foreground response."""
    created: JsonObject = {name: body[name] for name in SAME if body.get(name) is not None}
    created |= {"input": said.items, "store": False}
    budget = body.get("max_completion_tokens", body.get("max_tokens"))
    if budget is not None:
        created["max_output_tokens"] = budget
    if body.get("logprobs"):
        created |= {"include": [LOGPROBS_INCLUDE], "top_logprobs": body.get("top_logprobs") or 0}
    if body.get("reasoning_effort") is not None:
        created["reasoning"] = {"effort": body["reasoning_effort"]}
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
    param = error.param or ""
    if (found := re.match(r"input\[(\d+)\]", param)) is not None:
        param = f"messages[{said.origins[int(found.group(1))]}]"
    elif param.startswith("max_output_tokens"):
        param = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    elif (found := re.match(r"tools\[(\d+)\]\.(.+)", param)) is not None:
        param = f"tools[{found.group(1)}].function.{found.group(2)}"
    else:
        param = next((chat + param[len(responses):] for responses, chat in RENAMED if param.startswith(responses)),
                     param)
    renamed = copy.copy(error)
    renamed.message = error.message.replace(f"'{error.param}'", f"'{param}'") if error.param else error.message
    renamed.param = param or None
    return renamed
