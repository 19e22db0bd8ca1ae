"""Validation of ``POST /v1/responses`` bodies.

Everything a client can get wrong is caught here, before any row is written, and
reported as a 400 naming the offending parameter. The body's structure is checked
against the ``openai`` SDK's own request type (``CreateBody``: the SDK's params plus what
today's clients send that it does not type); the code below checks only what a type
cannot say (ranges, what this server runs) and builds what the Response row stores.
The "Request fields" table of docs/api.md says what each field does here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from django.conf import settings
from openai.types.responses.response_create_params import ResponseCreateParamsBase

from responses_app.models.response_params import (
    Compaction,
    PromptReference,
    Reasoning,
    ResponseParams,
    TextFormat,
    TextOptions,
)
from responses_app.validation.input_items import parse_input
from responses_app.validation.json_schema import check_json_schema
from responses_app.validation.request import CreateRequest
from responses_app.validation.sdk_types import check, strict_validator
from responses_app.validation.tools import (
    check_deferred_tools,
    checked_name,
    validate_tool_choice,
    validate_tools,
)
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.metadata import MAX_METADATA_KEY, parse_metadata
from responses_app.wire.request_body import MAX_INTEGER, SUPPORTED_INCLUDE_VALUES, body_fields

# client_metadata: what Codex sends (installation and session ids, its turn's metadata as
# JSON of a few KiB), stored for operators.
MAX_CLIENT_METADATA_PAIRS = 32
MAX_CLIENT_METADATA_VALUE = 16384

MAX_CONTINUATION_ID = 256
# What vLLM returns per token at most (its max_logprobs), as OpenAI bounds top_logprobs.
MAX_TOP_LOGPROBS = 20


class CreateBody(ResponseCreateParamsBase, total=False):
    """What a create may hold: the SDK's request type, and what clients send beyond it."""

    stream: bool | None
    # Codex CLI: ids of its installation and session.
    client_metadata: dict[str, str] | None
    # The Open Responses specification's sampling penalties.
    presence_penalty: float | None
    frequency_penalty: float | None


_CREATE_BODY = strict_validator(CreateBody)


def parse_create_request(body: Any) -> CreateRequest:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    if body.get("model") is None:
        raise InvalidRequest("Missing required parameter: 'model'.", param="model", code="missing_required_parameter")
    body = _without_client_passthrough(body)
    check(_CREATE_BODY, body)
    _refuse_what_cannot_run(body)

    model = body["model"]
    if model not in settings.MODEL_REGISTRY:
        raise InvalidRequest(f"The model '{model}' does not exist.", param="model", code="model_not_found")

    stream = bool(body.get("stream"))
    background = bool(body.get("background"))
    store = body.get("store") is not False
    if background and not store:
        raise InvalidRequest("Background responses must be stored: background=true requires store=true.",
                             param="background")
    if body.get("stream_options") is not None and not stream:
        raise InvalidRequest("'stream_options' is only allowed when 'stream' is true.", param="stream_options")

    previous_response_id = body.get("previous_response_id")
    conversation_id = parse_conversation(body.get("conversation"))
    if conversation_id and previous_response_id is not None:
        raise InvalidRequest("'previous_response_id' cannot be used together with 'conversation'.",
                             param="previous_response_id")
    tools = validate_tools(body.get("tools"), constrains=settings.MODEL_REGISTRY[model]["engine"] == "vllm")
    check_deferred_tools(tools)
    params = ResponseParams(
        instructions=body.get("instructions"),
        max_output_tokens=_optional_int(body, "max_output_tokens", minimum=1),
        max_tool_calls=_optional_int(body, "max_tool_calls", minimum=1),
        temperature=_optional_number(body, "temperature", 0.0, 2.0),
        top_p=_optional_number(body, "top_p", 0.0, 1.0),
        presence_penalty=_optional_number(body, "presence_penalty", -2.0, 2.0),
        frequency_penalty=_optional_number(body, "frequency_penalty", -2.0, 2.0),
        reasoning=_reasoning(body.get("reasoning"), settings.MODEL_REGISTRY[model]),
        metadata=parse_metadata(body.get("metadata")),
        tools=tools,
        tool_choice=validate_tool_choice(body.get("tool_choice") or "auto", tools),
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,
        text=_text(body.get("text"), model),
        truncation=body.get("truncation") or "disabled",
        user=_optional_str(body, "user", max_length=256),
        safety_identifier=_optional_str(body, "safety_identifier", max_length=256),
        prompt_cache_key=_optional_str(body, "prompt_cache_key", max_length=1024),
        prompt_cache_retention=body.get("prompt_cache_retention"),
        top_logprobs=_optional_int(body, "top_logprobs", minimum=0, maximum=MAX_TOP_LOGPROBS) or 0,
        include=_include(body.get("include")),
        client_metadata=_client_metadata(body.get("client_metadata")),
        context_management=_context_management(body.get("context_management")),
    )
    raw_input, compaction_trigger = _compaction_trigger(body.get("input"))
    input_items = parse_input(raw_input, references=True, checked=True)
    # The stored prompt's instructions and input come in where the response is created (prompts/resolve.py).
    prompt = body.get("prompt")
    if not input_items and previous_response_id is None and not conversation_id and prompt is None:
        raise InvalidRequest("'input' must not be empty.", param="input")
    params = replace(params, compaction_trigger=compaction_trigger, prompt=None if prompt is None else PromptReference(
        id=prompt["id"], version=prompt.get("version"), variables=prompt.get("variables") or {}))
    completion_window, continuation_id = _background_options(body.get("background_options"), background, stream)
    return CreateRequest(
        model=model,
        input_items=input_items,
        stream=stream,
        background=background,
        store=store,
        previous_response_id=previous_response_id,
        conversation_id=conversation_id,
        params=params,
        completion_window=completion_window,
        continuation_id=continuation_id,
    )


# Fields a client puts on its input items for OpenAI's own use, which mean nothing to the
# model: Codex CLI's, on each item it sends to a provider it takes for OpenAI's.
CLIENT_PASSTHROUGH_FIELDS = frozenset({"internal_chat_message_metadata_passthrough"})


def _without_client_passthrough(body: dict[str, Any]) -> dict[str, Any]:
    items = body.get("input")
    if not isinstance(items, list) or not any(isinstance(item, dict) and CLIENT_PASSTHROUGH_FIELDS & set(item)
                                              for item in items):
        return body
    return {**body, "input": [{key: value for key, value in item.items() if key not in CLIENT_PASSTHROUGH_FIELDS}
                              if isinstance(item, dict) else item for item in items]}


def _compaction_trigger(value: Any) -> tuple[Any, bool]:
    """``input`` without its final ``compaction_trigger`` item (Codex's inline compaction:
    the response compacts the context before it, worker/side_calls.compact_on_trigger),
    and whether it had one. A trigger anywhere else is a 400."""
    if not isinstance(value, list):
        return value, False
    triggers = [index for index, item in enumerate(value)
                if isinstance(item, dict) and item.get("type") == "compaction_trigger"]
    if not triggers:
        return value, False
    if triggers != [len(value) - 1]:
        index = next(index for index in triggers if index != len(value) - 1)
        raise InvalidRequest("A compaction_trigger item must be the final input item.", param=f"input[{index}].type")
    return value[:-1], True  # its fields (type, id) are checked with the body's


def _refuse_what_cannot_run(body: dict[str, Any]) -> None:
    """Fields the SDK defines whose meaning this server cannot honour: a silent no would
    mislead (a moderation policy it cannot apply)."""
    if body.get("moderation") is not None:
        raise InvalidRequest("The parameter 'moderation' is not supported: this server runs no moderation model.",
                             param="moderation")


# What ``client.responses.input_tokens.count`` sends: the parts of a create that make its prompt.
COUNT_PARAMETERS = frozenset({"model", "conversation", "input", "instructions", "parallel_tool_calls", "personality",
                              "previous_response_id", "reasoning", "text", "tool_choice", "tools", "truncation"})


def parse_count_request(body: Any) -> CreateRequest:
    """The body of an input token count as the create it would be. ``model`` is optional
    (the SDK's own default): every served model renders the same harmony prompt, so the
    first one stands in."""
    create = body_fields(body, COUNT_PARAMETERS)
    if "personality" in create:
        raise InvalidRequest("The parameter 'personality' is not supported by gpt-oss.", param="personality")
    create.setdefault("model", next(iter(settings.MODEL_REGISTRY)))
    return parse_create_request(create)


# What ``client.responses.compact`` sends, and the part of it that is a create's.
COMPACT_PARAMETERS = frozenset({"model", "input", "instructions", "previous_response_id", "prompt_cache_key",
                                "prompt_cache_options", "prompt_cache_retention", "service_tier", "image"})
COMPACTED_FIELDS = ("model", "input", "instructions", "previous_response_id", "prompt_cache_key", "service_tier")


def parse_compact_request(body: Any) -> CreateRequest:
    """The body of a compaction as the create of the context it compacts."""
    fields = body_fields(body, COMPACT_PARAMETERS)
    if "image" in fields:
        raise InvalidRequest("The parameter 'image' is not supported by gpt-oss.", param="image")
    # prompt_cache_options and _retention are vLLM's own business: not part of the context.
    return parse_create_request({name: fields[name] for name in COMPACTED_FIELDS if name in fields})


def parse_conversation(value: Any) -> str:
    """``conversation``: its id, or an object with the id; "" when absent."""
    if value is None:
        return ""
    conversation_id = value.get("id") if isinstance(value, dict) else value
    if not isinstance(conversation_id, str) or not conversation_id:
        raise invalid_type("conversation", "a conversation id or an object with its 'id'", value)
    if isinstance(value, dict) and set(value) != {"id"}:
        raise InvalidRequest("'conversation' takes only its 'id'.", param="conversation")
    return conversation_id


def _background_options(value: Any, background: bool, stream: bool) -> tuple[str, str]:
    """(completion_window, continuation_id); "2h" and "8h" need background=true and no
    stream, as the SDK documents."""
    if value is None:
        return "soonest", ""
    window = value.get("completion_window") or "soonest"
    if window != "soonest" and (not background or stream):
        raise InvalidRequest(f"The completion window {window!r} requires background=true and stream=false.",
                             param="background_options.completion_window")
    name = "background_options.continuation_id"
    continuation_id = _optional_str({name: value.get("continuation_id")}, name, max_length=MAX_CONTINUATION_ID) or ""
    return window, continuation_id


# --- scalars (their JSON types are checked already) -----------------------------------------


def _optional_str(body: dict[str, Any], name: str, max_length: int) -> str | None:
    value = body.get(name)
    if value is not None and len(value) > max_length:
        raise InvalidRequest(f"'{name}' is longer than {max_length} characters.", param=name,
                             code="string_above_max_length")
    return value


def _optional_int(body: dict[str, Any], name: str, minimum: int, maximum: int = MAX_INTEGER) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if value < minimum:
        raise InvalidRequest(f"'{name}' must be at least {minimum}, got {value}.", param=name,
                             code="integer_below_min_value")
    if value > maximum:
        raise InvalidRequest(f"'{name}' must be at most {maximum}, got {value}.", param=name,
                             code="integer_above_max_value")
    return cast(int, value)  # its type was checked against the SDK's (validation/sdk_types.py)


def _optional_number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if not low <= value <= high:
        raise InvalidRequest(f"'{name}' must be between {low} and {high}, got {value}.", param=name,
                             code="decimal_out_of_range")
    return float(value)


# --- structured parameters ---------------------------------------------------------------


def _reasoning(value: Any, model: dict[str, Any]) -> Reasoning:
    """Every effort the SDK names is accepted and echoed; harmony knows low, medium and
    high, onto which the others map (harmony/prompt.HARMONY_EFFORT). ``generate_summary``
    is the SDK's deprecated name of ``summary``, whose default is the model's
    ``reasoning_summary`` (for clients that cannot ask: the AI SDK sends no reasoning
    options for a model it does not know)."""
    value = value or {}
    summary = value.get("summary") or value.get("generate_summary") or model.get("reasoning_summary")
    return Reasoning(effort=value.get("effort"), summary=summary, context=value.get("context"))


def _context_management(value: Any) -> tuple[Compaction, ...]:
    """``[{"type": "compaction", "compact_threshold": N}]``: compact the context once its
    prompt passes N tokens (worker/side_calls.py); the only type OpenAI defines."""
    entries = []
    for index, entry in enumerate(value or []):
        if entry["type"] != "compaction":
            raise InvalidRequest(f"Invalid value for 'context_management[{index}].type': {entry['type']!r}. "
                                 "Supported values are: 'compaction'.", param=f"context_management[{index}].type",
                                 code="invalid_value")
        name = f"context_management[{index}].compact_threshold"
        entries.append(Compaction(compact_threshold=_optional_int({name: entry.get("compact_threshold")}, name,
                                                                  minimum=1)))
    return tuple(entries)


def _client_metadata(value: Any) -> dict[str, str]:
    if value and len(value) > MAX_CLIENT_METADATA_PAIRS:
        raise InvalidRequest(f"'client_metadata' can have at most {MAX_CLIENT_METADATA_PAIRS} pairs.",
                             param="client_metadata", code="object_above_max_properties")
    for key, item in (value or {}).items():
        if len(key) > MAX_METADATA_KEY or len(item) > MAX_CLIENT_METADATA_VALUE:
            raise InvalidRequest(f"client_metadata keys can be at most {MAX_METADATA_KEY} characters and values "
                                 f"{MAX_CLIENT_METADATA_VALUE}.", param=f"client_metadata.{key}")
    return dict(value or {})


def _text(value: Any, model: str) -> TextOptions:
    """``text``: its format, and ``verbosity`` (said to the model in its instructions:
    harmony/prompt.VERBOSITY)."""
    value = value or {}
    return TextOptions(format=_text_format(value.get("format") or {"type": "text"}, model),
                       verbosity=value.get("verbosity"))


def _text_format(text_format: dict[str, Any], model: str) -> TextFormat:
    kind = text_format["type"]
    if kind == "text":
        return TextFormat()
    if settings.MODEL_REGISTRY[model]["engine"] != "vllm":
        raise InvalidRequest(f"The model '{model}' does not support structured outputs (text.format '{kind}').",
                             param="text.format.type")
    if kind == "json_object":
        return TextFormat(type="json_object")
    name = checked_name(text_format["name"], "text.format.name")
    check_json_schema(text_format["schema"])
    return TextFormat(type="json_schema", name=name, schema=text_format["schema"],
                      strict=bool(text_format.get("strict")), description=text_format.get("description"))


def _include(value: Any) -> list[str]:
    for index, entry in enumerate(value or []):
        if entry not in SUPPORTED_INCLUDE_VALUES:
            raise InvalidRequest(f"include value {entry!r} is not supported by this server yet.",
                                 param=f"include[{index}]")
    return sorted(set(value or []))
