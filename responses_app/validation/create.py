"""Validation of ``POST /v1/responses`` bodies.

Everything a client can get wrong is caught here, before any row is written, and
reported as a 400 naming the offending parameter. Parameters that OpenAI knows but this
server does not implement yet are refused by name rather than silently ignored.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from pydantic import ValidationError as PydanticValidationError

from responses_app.compaction import InvalidCompaction, summary_of
from responses_app.errors import InvalidRequest, invalid_type
from responses_app.ids import new_id
from responses_app.request_body import body_fields
from responses_app.services import CreateRequest
from responses_app.tool_types import NAME_PATTERN
from responses_app.validation.json_schema import check_json_schema
from responses_app.validation.tools import approval_response_item, validate_tool_choice, validate_tools
from responses_app.wire_objects import check_servable

MESSAGE_ROLES = ("user", "system", "developer", "assistant")
REASONING_EFFORTS = ("low", "medium", "high")
MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512

# Input item types of the Responses API that this server does not accept yet.
UNSUPPORTED_ITEM_TYPES = frozenset(
    {
        "item_reference",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "web_search_call",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_call",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
# Known top-level parameters that are refused when set to anything but their default.
UNSUPPORTED_PARAMETERS = ("prompt", "context_management")
COMPLETION_WINDOWS = ("soonest", "2h", "8h")
MAX_CONTINUATION_ID = 256
# The largest integer a client may give (token counts, cursors): what an integer column
# and the engines' 32-bit counters hold.
MAX_INTEGER = 2**31 - 1
# Item ids are stored in columns of 64 characters (InputItem, ConversationItem).
MAX_ITEM_ID_LENGTH = 64
INCLUDE_VALUES = frozenset(
    {
        "code_interpreter_call.outputs",
        "computer_call_output.output.image_url",
        "file_search_call.results",
        "message.input_image.image_url",
        "message.output_text.logprobs",
        "reasoning.encrypted_content",
        "web_search_call.action.sources",
        "web_search_call.results",
    }
)
# What the stored items always hold and the wire leaves out unless asked (wire_objects.public_item).
SUPPORTED_INCLUDE_VALUES = frozenset({"code_interpreter_call.outputs", "web_search_call.action.sources"})
KNOWN_PARAMETERS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "stream",
        "stream_options",
        "background",
        "store",
        "previous_response_id",
        "conversation",
        "max_output_tokens",
        "max_tool_calls",
        "temperature",
        "top_p",
        "top_logprobs",
        "reasoning",
        "metadata",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "truncation",
        "user",
        "safety_identifier",
        "prompt_cache_key",
        "service_tier",
        "include",
        "background_options",
        *UNSUPPORTED_PARAMETERS,
    }
)


def parse_create_request(body: Any) -> CreateRequest:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    for name in body:
        if name not in KNOWN_PARAMETERS:
            raise InvalidRequest(f"Unknown parameter: '{name}'.", param=name, code="unknown_parameter")
    for name in UNSUPPORTED_PARAMETERS:
        if body.get(name) is not None:
            raise InvalidRequest(f"The parameter '{name}' is not supported by this server.", param=name)

    model = _required_str(body, "model")
    if model not in settings.MODEL_REGISTRY:
        raise InvalidRequest(f"The model '{model}' does not exist.", param="model", code="model_not_found")

    stream = _bool(body, "stream", False)
    background = _bool(body, "background", False)
    store = _bool(body, "store", True)
    if background and not store:
        raise InvalidRequest("Background responses must be stored: background=true requires store=true.",
                             param="background")
    _stream_options(body.get("stream_options"), stream)

    previous_response_id = _optional_str(body, "previous_response_id")
    conversation_id = parse_conversation(body.get("conversation"))
    if conversation_id and previous_response_id is not None:
        raise InvalidRequest("'previous_response_id' cannot be used together with 'conversation'.",
                             param="previous_response_id")
    tools = validate_tools(body.get("tools"))
    params: dict[str, Any] = {
        "instructions": _optional_str(body, "instructions"),
        "max_output_tokens": _optional_int(body, "max_output_tokens", minimum=1),
        "max_tool_calls": _optional_int(body, "max_tool_calls", minimum=1),
        "temperature": _optional_number(body, "temperature", 0.0, 2.0),
        "top_p": _optional_number(body, "top_p", 0.0, 1.0),
        "reasoning": _reasoning(body.get("reasoning")),
        "metadata": parse_metadata(body.get("metadata")),
        "tools": tools,
        "tool_choice": validate_tool_choice(body.get("tool_choice", "auto"), tools),
        "parallel_tool_calls": _bool(body, "parallel_tool_calls", True),
        "text": _text(body.get("text"), model),
        "truncation": _truncation(body.get("truncation")),
        "user": _optional_str(body, "user", max_length=256),
        "safety_identifier": _optional_str(body, "safety_identifier", max_length=256),
        "prompt_cache_key": _optional_str(body, "prompt_cache_key", max_length=1024),
        "service_tier": _service_tier(body.get("service_tier")),
        "top_logprobs": _top_logprobs(body.get("top_logprobs")),
        "include": _include(body.get("include")),
    }
    input_items = parse_input(body.get("input"))
    if not input_items and previous_response_id is None and not conversation_id:
        raise InvalidRequest("'input' must not be empty.", param="input")
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
    if not isinstance(value, dict):
        raise invalid_type("background_options", "an object", value)
    for name in value:
        if name not in ("completion_window", "continuation_id"):
            raise InvalidRequest(f"Unknown parameter: 'background_options.{name}'.",
                                 param=f"background_options.{name}", code="unknown_parameter")
    window = value.get("completion_window") or "soonest"
    if window not in COMPLETION_WINDOWS:
        raise InvalidRequest(f"Invalid value for 'background_options.completion_window': {window!r}; expected one "
                             f"of {', '.join(COMPLETION_WINDOWS)}.", param="background_options.completion_window",
                             code="invalid_value")
    if window != "soonest" and (not background or stream):
        raise InvalidRequest(f"The completion window {window!r} requires background=true and stream=false.",
                             param="background_options.completion_window")
    name = "background_options.continuation_id"
    continuation_id = _optional_str({name: value.get("continuation_id")}, name, max_length=MAX_CONTINUATION_ID) or ""
    return window, continuation_id


# --- scalars ---------------------------------------------------------------------------


def _required_str(body: dict, name: str) -> str:
    if name not in body or body[name] is None:
        raise InvalidRequest(f"Missing required parameter: '{name}'.", param=name, code="missing_required_parameter")
    value = body[name]
    if not isinstance(value, str) or not value:
        raise invalid_type(name, "a non-empty string", value)
    return value


def _optional_str(body: dict, name: str, max_length: int | None = None) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_type(name, "a string", value)
    if max_length is not None and len(value) > max_length:
        raise InvalidRequest(f"'{name}' is longer than {max_length} characters.", param=name,
                             code="string_above_max_length")
    return value


def _bool(body: dict, name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid_type(name, "a boolean", value)
    return value


def _optional_int(body: dict, name: str, minimum: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_type(name, "an integer", value)
    if value < minimum:
        raise InvalidRequest(f"'{name}' must be at least {minimum}, got {value}.", param=name,
                             code="integer_below_min_value")
    if value > MAX_INTEGER:
        raise InvalidRequest(f"'{name}' must be at most {MAX_INTEGER}, got {value}.", param=name,
                             code="integer_above_max_value")
    return value


def _optional_number(body: dict, name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid_type(name, "a number", value)
    if not low <= value <= high:
        raise InvalidRequest(f"'{name}' must be between {low} and {high}, got {value}.", param=name,
                             code="decimal_out_of_range")
    return float(value)


# --- structured parameters ---------------------------------------------------------------


def _stream_options(value: Any, stream: bool) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise invalid_type("stream_options", "an object", value)
    if not stream:
        raise InvalidRequest("'stream_options' is only allowed when 'stream' is true.", param="stream_options")
    for key in value:
        if key != "include_obfuscation":
            raise InvalidRequest(f"Unknown parameter: 'stream_options.{key}'.", param=f"stream_options.{key}")


def _reasoning(value: Any) -> dict[str, Any]:
    if value is None:
        return {"effort": None, "summary": None}
    if not isinstance(value, dict):
        raise invalid_type("reasoning", "an object", value)
    for key in value:
        if key not in ("effort", "summary", "generate_summary"):
            raise InvalidRequest(f"Unknown parameter: 'reasoning.{key}'.", param=f"reasoning.{key}")
    effort = value.get("effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        raise InvalidRequest(
            f"Invalid value for 'reasoning.effort': {effort!r}. Supported values are: 'low', 'medium' and 'high'.",
            param="reasoning.effort",
            code="invalid_value",
        )
    for key in ("summary", "generate_summary"):
        if value.get(key) is not None:
            # gpt-oss streams its raw chain of thought as reasoning_text; it has no summarizer.
            raise InvalidRequest(
                f"'reasoning.{key}' is not supported: gpt-oss returns its reasoning as reasoning_text content.",
                param=f"reasoning.{key}",
            )
    return {"effort": effort, "summary": None}


def parse_metadata(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_type("metadata", "an object", value)
    if len(value) > MAX_METADATA_PAIRS:
        raise InvalidRequest(f"'metadata' can have at most {MAX_METADATA_PAIRS} pairs, got {len(value)}.",
                             param="metadata", code="object_above_max_properties")
    for key, item in value.items():
        if len(key) > MAX_METADATA_KEY:
            raise InvalidRequest(f"Metadata keys can be at most {MAX_METADATA_KEY} characters.", param="metadata")
        if not isinstance(item, str):
            raise invalid_type(f"metadata.{key}", "a string", item)
        if len(item) > MAX_METADATA_VALUE:
            raise InvalidRequest(f"Metadata values can be at most {MAX_METADATA_VALUE} characters.",
                                 param=f"metadata.{key}", code="string_above_max_length")
    return dict(value)


def _text(value: Any, model: str) -> dict[str, Any]:
    if value is None:
        return {"format": {"type": "text"}}
    if not isinstance(value, dict):
        raise invalid_type("text", "an object", value)
    for key in value:
        if key not in ("format", "verbosity"):
            raise InvalidRequest(f"Unknown parameter: 'text.{key}'.", param=f"text.{key}")
    if value.get("verbosity") not in (None, "medium"):
        raise InvalidRequest("'text.verbosity' is not supported by gpt-oss.", param="text.verbosity")
    text_format = value.get("format") or {"type": "text"}
    if not isinstance(text_format, dict):
        raise invalid_type("text.format", "an object", text_format)
    kind = text_format.get("type")
    if kind == "text" and len(text_format) == 1:
        return {"format": {"type": "text"}}
    if kind not in ("json_schema", "json_object"):
        raise InvalidRequest(f"Invalid value for 'text.format': {text_format!r}.", param="text.format",
                             code="invalid_value")
    if settings.MODEL_REGISTRY[model]["engine"] != "vllm":
        raise InvalidRequest(f"The model '{model}' does not support structured outputs (text.format '{kind}').",
                             param="text.format.type")
    if kind == "json_object":
        if len(text_format) != 1:
            raise InvalidRequest("text.format of type 'json_object' takes no other fields.", param="text.format")
        return {"format": {"type": "json_object"}}
    return {"format": _json_schema_format(text_format)}


def _json_schema_format(text_format: dict[str, Any]) -> dict[str, Any]:
    for key in text_format:
        if key not in ("type", "name", "schema", "description", "strict"):
            raise InvalidRequest(f"Unknown parameter: 'text.format.{key}'.", param=f"text.format.{key}")
    name = text_format.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise InvalidRequest("'text.format.name' must match ^[a-zA-Z0-9_-]{1,64}$.", param="text.format.name")
    schema = text_format.get("schema")
    if not isinstance(schema, dict):
        raise invalid_type("text.format.schema", "an object", schema)
    description = text_format.get("description")
    if description is not None and not isinstance(description, str):
        raise invalid_type("text.format.description", "a string", description)
    strict = text_format.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise invalid_type("text.format.strict", "a boolean", strict)
    check_json_schema(schema)
    result = {"type": "json_schema", "name": name, "schema": schema, "strict": bool(strict)}
    if description is not None:
        result["description"] = description
    return result


def _truncation(value: Any) -> str:
    if value in (None, "disabled", "auto"):
        return value or "disabled"
    raise InvalidRequest(f"Invalid value for 'truncation': {value!r}.", param="truncation", code="invalid_value")


def _service_tier(value: Any) -> str:
    if value in (None, "auto", "default"):
        return "default"
    raise InvalidRequest(f"service_tier {value!r} is not supported; use 'auto' or 'default'.", param="service_tier")


def _top_logprobs(value: Any) -> int:
    if value in (None, 0):
        return 0
    raise InvalidRequest("'top_logprobs' is not supported by this server yet.", param="top_logprobs")


def _include(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid_type("include", "an array", value)
    for index, entry in enumerate(value):
        if not isinstance(entry, str) or entry not in INCLUDE_VALUES:
            raise InvalidRequest(f"Invalid value for 'include[{index}]': {entry!r}.", param=f"include[{index}]",
                                 code="invalid_value")
        if entry not in SUPPORTED_INCLUDE_VALUES:
            raise InvalidRequest(f"include value {entry!r} is not supported by this server yet.",
                                 param=f"include[{index}]")
    return sorted(set(value))


# --- input items ----------------------------------------------------------------------------


def parse_input(value: Any, param: str = "input") -> list[dict[str, Any]]:
    """``input`` as the input items a response stores (ids given where missing); also the
    items added to a conversation (``param`` names them in errors)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [_message_item("user", [{"type": "input_text", "text": value}], None)]
    if not isinstance(value, list):
        raise invalid_type(param, "a string or an array", value)
    return [_servable(_input_item(item, f"{param}[{index}]"), f"{param}[{index}]") for index, item in enumerate(value)]


def _servable(item: dict[str, Any], param: str) -> dict[str, Any]:
    """The normalised item, once it is known to render as the input items list and a
    conversation's items serve it: what is stored can always be read back."""
    try:
        check_servable(item)
    except PydanticValidationError as error:
        raise InvalidRequest(f"'{param}' cannot be stored in this shape: {error.errors()[0]['msg']}.",
                             param=param) from None
    return item


def _input_item(item: Any, param: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise invalid_type(param, "an object", item)
    item_type = item.get("type", "message")
    if not isinstance(item_type, str):
        raise invalid_type(f"{param}.type", "a string", item_type)
    if item_type == "message":
        return _input_message(item, param)
    if item_type == "function_call":
        return {
            "id": _item_id(item, param, "fc"),
            "type": "function_call",
            "call_id": _item_str(item, "call_id", param),
            "name": _item_str(item, "name", param),
            "arguments": _item_str(item, "arguments", param, allow_empty=True),
            "status": "completed",
        }
    if item_type == "function_call_output":
        output = item.get("output")
        if not isinstance(output, str):
            raise invalid_type(f"{param}.output", "a string", output)
        return {
            "id": _item_id(item, param, "fco"),
            "type": "function_call_output",
            "call_id": _item_str(item, "call_id", param),
            "output": output,
            "status": "completed",
        }
    if item_type == "reasoning":
        return _reasoning_item(item, param)
    if item_type == "compaction":
        return _compaction_item(item, param)
    if item_type == "mcp_approval_response":
        return approval_response_item(item, param)
    if item_type in UNSUPPORTED_ITEM_TYPES:
        raise InvalidRequest(f"Input items of type '{item_type}' are not supported by this server yet.",
                             param=f"{param}.type")
    raise InvalidRequest(f"Invalid value for '{param}.type': {item_type!r}.", param=f"{param}.type",
                         code="invalid_value")


def _input_message(item: dict, param: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in MESSAGE_ROLES:
        raise InvalidRequest(
            f"Invalid value for '{param}.role': {role!r}. Supported values are: 'user', 'system', 'developer' "
            "and 'assistant'.",
            param=f"{param}.role",
            code="invalid_value",
        )
    content = item.get("content")
    part_type = "output_text" if role == "assistant" else "input_text"
    if isinstance(content, str):
        parts = [_content_part({"type": part_type, "text": content}, f"{param}.content", part_type)]
    elif isinstance(content, list) and content:
        parts = [_content_part(part, f"{param}.content[{index}]", part_type) for index, part in enumerate(content)]
    else:
        raise invalid_type(f"{param}.content", "a string or a non-empty array", content)
    return _message_item(role, parts, _item_id(item, param, "msg"))


def _content_part(part: Any, param: str, part_type: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise invalid_type(param, "an object", part)
    kind = part.get("type")
    if kind in ("input_image", "input_file", "input_audio", "refusal"):
        raise InvalidRequest(f"Content of type '{kind}' is not supported by gpt-oss.", param=f"{param}.type")
    if kind not in ("input_text", "output_text"):
        raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r}.", param=f"{param}.type",
                             code="invalid_value")
    text = part.get("text")
    if not isinstance(text, str):
        raise invalid_type(f"{param}.text", "a string", text)
    if part_type == "output_text":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "input_text", "text": text}


def _message_item(role: str, parts: list[dict[str, Any]], item_id: str | None) -> dict[str, Any]:
    if role == "assistant" and parts and parts[0]["type"] == "input_text":
        parts = [{"type": "output_text", "text": p["text"], "annotations": [], "logprobs": []} for p in parts]
    return {"id": item_id or new_id("msg"), "type": "message", "role": role, "content": parts, "status": "completed"}


def _reasoning_item(item: dict, param: str) -> dict[str, Any]:
    if item.get("encrypted_content"):
        raise InvalidRequest("Encrypted reasoning content is not supported by this server.",
                             param=f"{param}.encrypted_content")
    result: dict[str, Any] = {"id": _item_id(item, param, "rs"), "type": "reasoning", "summary": []}
    for key, part_type in (("summary", "summary_text"), ("content", "reasoning_text")):
        parts = item.get(key) or []
        if not isinstance(parts, list):
            raise invalid_type(f"{param}.{key}", "an array", parts)
        for index, part in enumerate(parts):
            if not isinstance(part, dict) or part.get("type") != part_type or not isinstance(part.get("text"), str):
                raise InvalidRequest(f"'{param}.{key}[{index}]' must be {{'type': '{part_type}', 'text': ...}}.",
                                     param=f"{param}.{key}[{index}]")
        result[key] = [{"type": part_type, "text": p["text"]} for p in parts]
    return result


def _compaction_item(item: dict, param: str) -> dict[str, Any]:
    """A compaction item from POST /v1/responses/compact, passed back as input."""
    result = {"id": _item_id(item, param, "cmp"), "type": "compaction",
              "encrypted_content": _item_str(item, "encrypted_content", param)}
    try:
        summary_of(result)
    except InvalidCompaction as error:
        raise InvalidRequest(str(error), param=f"{param}.encrypted_content",
                             code="invalid_encrypted_content") from error
    return result


def _item_id(item: dict, param: str, prefix: str) -> str:
    value = item.get("id")
    if value is None:
        return new_id(prefix)
    if not isinstance(value, str) or not value:
        raise invalid_type(f"{param}.id", "a string", value)
    if len(value) > MAX_ITEM_ID_LENGTH:
        raise InvalidRequest(f"Invalid '{param}.id': string too long. Expected a string with maximum length "
                             f"{MAX_ITEM_ID_LENGTH}, but got a string with length {len(value)} instead.",
                             param=f"{param}.id", code="string_above_max_length")
    return value


def _item_str(item: dict, key: str, param: str, allow_empty: bool = False) -> str:
    value = item.get(key)
    if not isinstance(value, str) or (not value and not allow_empty):
        raise invalid_type(f"{param}.{key}", "a non-empty string", value)
    return value
