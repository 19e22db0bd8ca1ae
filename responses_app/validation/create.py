"""Validation of ``POST /v1/responses`` bodies.

Everything a client can get wrong is caught here, before any row is written, and
reported as a 400 naming the offending parameter. The body's structure is checked
against the ``openai`` SDK's own request type (``CreateBody``: the SDK's params plus what
today's clients send that it does not type); the code below checks only what a type
cannot say (ranges, what this server runs) and builds what the Response row stores.
The "Request fields" table of docs/api.md says what each field does here.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from django.conf import settings
from openai.types.responses.response_create_params import ResponseCreateParamsBase
from openai.types.responses.response_input_item_param import ResponseInputItemParam
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import SchemaValidator
from typing_extensions import TypedDict

from responses_app.context.compaction import InvalidCompaction, summary_of
from responses_app.harmony.client_tools import BY_CALL_TYPE, BY_OUTPUT_TYPE
from responses_app.lib.ids import new_id
from responses_app.validation.json_schema import check_json_schema
from responses_app.validation.request import CreateRequest
from responses_app.validation.sdk_types import check, strict_validator
from responses_app.validation.tools import (
    approval_response_item,
    check_deferred_tools,
    checked_name,
    loaded_tools,
    tool_search_item,
    validate_tool_choice,
    validate_tools,
)
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.metadata import MAX_METADATA_KEY, parse_metadata
from responses_app.wire.objects import check_servable
from responses_app.wire.request_body import MAX_INTEGER, SUPPORTED_INCLUDE_VALUES, body_fields

MESSAGE_ROLES = ("user", "system", "developer", "assistant")
# client_metadata: what Codex sends (installation and session ids, its turn's metadata as
# JSON of a few KiB), stored for operators.
MAX_CLIENT_METADATA_PAIRS = 32
MAX_CLIENT_METADATA_VALUE = 16384

# Input item types of the Responses API that this server does not accept yet.
UNSUPPORTED_ITEM_TYPES = frozenset(
    {
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "web_search_call",
        "image_generation_call",
        "code_interpreter_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_call",
        "item_reference",  # outside a create's input
    }
)
MAX_CONTINUATION_ID = 256
# Item ids are stored in columns of 64 characters (InputItem, ConversationItem).
MAX_ITEM_ID_LENGTH = 64
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
    params: dict[str, Any] = {
        "instructions": body.get("instructions"),
        "max_output_tokens": _optional_int(body, "max_output_tokens", minimum=1),
        "max_tool_calls": _optional_int(body, "max_tool_calls", minimum=1),
        "temperature": _optional_number(body, "temperature", 0.0, 2.0),
        "top_p": _optional_number(body, "top_p", 0.0, 1.0),
        "presence_penalty": _optional_number(body, "presence_penalty", -2.0, 2.0),
        "frequency_penalty": _optional_number(body, "frequency_penalty", -2.0, 2.0),
        "reasoning": _reasoning(body.get("reasoning"), settings.MODEL_REGISTRY[model]),
        "metadata": parse_metadata(body.get("metadata")),
        "tools": tools,
        "tool_choice": validate_tool_choice(body.get("tool_choice") or "auto", tools),
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "text": _text(body.get("text"), model),
        "truncation": body.get("truncation") or "disabled",
        "user": _optional_str(body, "user", max_length=256),
        "safety_identifier": _optional_str(body, "safety_identifier", max_length=256),
        "prompt_cache_key": _optional_str(body, "prompt_cache_key", max_length=1024),
        "prompt_cache_retention": body.get("prompt_cache_retention"),
        "service_tier": "default",
        "top_logprobs": _optional_int(body, "top_logprobs", minimum=0, maximum=MAX_TOP_LOGPROBS) or 0,
        "include": _include(body.get("include")),
        "client_metadata": _client_metadata(body.get("client_metadata")),
        "context_management": _context_management(body.get("context_management")),
    }
    raw_input, triggered = _compaction_trigger(body.get("input"))
    if triggered:
        params["compaction_trigger"] = True
    input_items = parse_input(raw_input, references=True, checked=True)
    if body.get("prompt") is not None:
        # The stored prompt's instructions and input come in where the response is created (prompts/resolve.py).
        params["prompt"] = {"id": body["prompt"]["id"], "version": body["prompt"].get("version"),
                            "variables": body["prompt"].get("variables") or {}}
    if not input_items and previous_response_id is None and not conversation_id and "prompt" not in params:
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


def _reasoning(value: Any, model: dict[str, Any]) -> dict[str, Any]:
    """Every effort the SDK names is accepted and echoed; harmony knows low, medium and
    high, onto which the others map (harmony/prompt.HARMONY_EFFORT). ``generate_summary``
    is the SDK's deprecated name of ``summary``, whose default is the model's
    ``reasoning_summary`` (for clients that cannot ask: the AI SDK sends no reasoning
    options for a model it does not know)."""
    value = value or {}
    summary = value.get("summary") or value.get("generate_summary") or model.get("reasoning_summary")
    reasoning = {"effort": value.get("effort"), "summary": summary}
    if value.get("context") is not None:
        reasoning["context"] = value["context"]
    return reasoning


def _context_management(value: Any) -> list[dict[str, Any]] | None:
    """``[{"type": "compaction", "compact_threshold": N}]``: compact the context once its
    prompt passes N tokens (worker/side_calls.py); the only type OpenAI defines."""
    for index, entry in enumerate(value or []):
        if entry["type"] != "compaction":
            raise InvalidRequest(f"Invalid value for 'context_management[{index}].type': {entry['type']!r}. "
                                 "Supported values are: 'compaction'.", param=f"context_management[{index}].type",
                                 code="invalid_value")
        name = f"context_management[{index}].compact_threshold"
        _optional_int({name: entry.get("compact_threshold")}, name, minimum=1)
    return list(value) if value else None


def _client_metadata(value: Any) -> dict[str, str]:
    if value and len(value) > MAX_CLIENT_METADATA_PAIRS:
        raise InvalidRequest(f"'client_metadata' can have at most {MAX_CLIENT_METADATA_PAIRS} pairs.",
                             param="client_metadata", code="object_above_max_properties")
    for key, item in (value or {}).items():
        if len(key) > MAX_METADATA_KEY or len(item) > MAX_CLIENT_METADATA_VALUE:
            raise InvalidRequest(f"client_metadata keys can be at most {MAX_METADATA_KEY} characters and values "
                                 f"{MAX_CLIENT_METADATA_VALUE}.", param=f"client_metadata.{key}")
    return dict(value or {})


def _text(value: Any, model: str) -> dict[str, Any]:
    """``text``: its format, and ``verbosity`` (said to the model in its instructions:
    harmony/prompt.VERBOSITY)."""
    value = value or {}
    text: dict[str, Any] = {"format": _text_format(value.get("format") or {"type": "text"}, model)}
    if value.get("verbosity") is not None:
        text["verbosity"] = value["verbosity"]
    return text


def _text_format(text_format: dict[str, Any], model: str) -> dict[str, Any]:
    kind = text_format["type"]
    if kind == "text":
        return {"type": "text"}
    if settings.MODEL_REGISTRY[model]["engine"] != "vllm":
        raise InvalidRequest(f"The model '{model}' does not support structured outputs (text.format '{kind}').",
                             param="text.format.type")
    if kind == "json_object":
        return {"type": "json_object"}
    name = checked_name(text_format["name"], "text.format.name")
    check_json_schema(text_format["schema"])
    result = {"type": "json_schema", "name": name, "schema": text_format["schema"],
              "strict": bool(text_format.get("strict"))}
    if text_format.get("description") is not None:
        result["description"] = text_format["description"]
    return result


def _include(value: Any) -> list[str]:
    for index, entry in enumerate(value or []):
        if entry not in SUPPORTED_INCLUDE_VALUES:
            raise InvalidRequest(f"include value {entry!r} is not supported by this server yet.",
                                 param=f"include[{index}]")
    return sorted(set(value or []))


# --- input items ----------------------------------------------------------------------------


def parse_input(value: Any, param: str = "input", references: bool = False, checked: bool = False,
                ) -> list[dict[str, Any]]:
    """``input`` as the input items a response stores (ids given where missing); also the
    items added to a conversation, a steer's and a stored prompt's (``param`` names them in
    errors). Every item is checked against the SDK's input item type first (``checked``:
    a create's body was, whole), so that each place that takes items refuses the same
    malformed ones with the same 400. ``references``: a create's ``item_reference`` items
    are kept, for services/create.resolve_input."""
    if value is None:
        return []
    if isinstance(value, str):
        return [_message_item("user", [{"type": "input_text", "text": value}], None)]
    if not isinstance(value, list):
        raise invalid_type(param, "a string or an array", value)
    if not checked:
        check(_items_validator(param), {param: value})
    items = [_reference(item, f"{param}[{index}]") if references and _is_reference(item)
             else _servable(_input_item(item, f"{param}[{index}]"), f"{param}[{index}]")
             for index, item in enumerate(value)]
    for index, item in enumerate(items):
        if not references and item.get("encrypted_content") and item["type"] == "reasoning":
            # Opened where a create's input is resolved (services/create.resolve_input) only.
            raise InvalidRequest("Reasoning with encrypted_content is accepted in a response's input only.",
                                 param=f"{param}[{index}].encrypted_content")
    return items


@functools.cache
def _items_validator(param: str) -> SchemaValidator:
    """The SDK's input item list, under the name the request gives it (errors name it)."""
    return strict_validator(TypedDict("Items", {param: list[ResponseInputItemParam]}))  # type: ignore[operator]


def _is_reference(item: Any) -> bool:
    """An item_reference; the SDK lets it leave out its ``type``."""
    return isinstance(item, dict) and (item.get("type") == "item_reference" or set(item) == {"id"})


def _reference(item: dict[str, Any], param: str) -> dict[str, Any]:
    if not isinstance(item.get("id"), str) or not item["id"]:
        raise invalid_type(f"{param}.id", "a non-empty string", item.get("id"))
    return {"type": "item_reference", "id": item["id"]}


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
            **({"namespace": _namespace(item, param)} if item.get("namespace") is not None else {}),
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
    if item_type == "custom_tool_call":
        return {"id": _item_id(item, param, "ctc"), "type": "custom_tool_call",
                "call_id": _item_str(item, "call_id", param), "name": _item_str(item, "name", param),
                "input": _item_str(item, "input", param, allow_empty=True), "status": "completed"}
    if item_type == "custom_tool_call_output":
        output = item.get("output")
        if not isinstance(output, str):
            raise invalid_type(f"{param}.output", "a string", output)
        return {"id": _item_id(item, param, "ctco"), "type": "custom_tool_call_output",
                "call_id": _item_str(item, "call_id", param), "output": output, "status": "completed"}
    if item_type in BY_CALL_TYPE or item_type in BY_OUTPUT_TYPE:
        return _client_tool_item(item, param)
    if item_type == "reasoning":
        return _reasoning_item(item, param)
    if item_type == "compaction":
        return _compaction_item(item, param)
    if item_type in ("tool_search_call", "tool_search_output"):
        prefix = "ts" if item_type == "tool_search_call" else "tso"
        return {"id": _item_id(item, param, prefix), **tool_search_item(item, param, constrains=True)}
    if item_type == "additional_tools":
        return {"id": _item_id(item, param, "at"), "type": "additional_tools", "role": "developer",
                "tools": loaded_tools(item.get("tools"), f"{param}.tools", constrains=True)}
    if item_type == "mcp_approval_response":
        return approval_response_item(item, param)
    if item_type == "compaction_trigger":
        raise InvalidRequest("A compaction_trigger item is accepted only as the final input item of a create.",
                             param=f"{param}.type", code="invalid_value")
    if item_type in UNSUPPORTED_ITEM_TYPES:
        raise InvalidRequest(f"Input items of type '{item_type}' are not supported by this server yet.",
                             param=f"{param}.type")
    raise InvalidRequest(f"Invalid value for '{param}.type': {item_type!r}.", param=f"{param}.type",
                         code="invalid_value")


def _client_tool_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    """A shell, local_shell or apply_patch call or its output, as the SDK types it (its
    structure is checked already). A local_shell_call_output names its call in ``id``; the
    Agents SDK sends ``call_id`` instead, which is taken for it."""
    item_type = item["type"]
    if item_type == "local_shell_call_output":
        key = "call_id" if item.get("call_id") is not None else "id"
        return {"id": _item_id({"id": _item_str(item, key, param)}, param, "call"), "type": item_type,
                "output": item["output"], "status": item.get("status") or "completed"}
    tool = BY_CALL_TYPE.get(item_type) or BY_OUTPUT_TYPE[item_type]
    prefix = tool.id_prefix if item_type in BY_CALL_TYPE else f"{tool.id_prefix}o"
    result = {"id": _item_id(item, param, prefix), "type": item_type, "call_id": _item_str(item, "call_id", param)}
    if item_type == "shell_call":
        result["action"] = {"commands": list(item["action"]["commands"]),
                            "timeout_ms": item["action"].get("timeout_ms"),
                            "max_output_length": item["action"].get("max_output_length")}
    elif item_type == "local_shell_call":
        result["action"] = {**item["action"], "command": list(item["action"]["command"])}
    elif item_type == "apply_patch_call":
        result["operation"] = dict(item["operation"])
    elif item_type == "shell_call_output":
        result["output"] = [{"stdout": entry["stdout"], "stderr": entry["stderr"], "outcome": entry["outcome"]}
                            for entry in item["output"]]
        if item.get("max_output_length") is not None:
            result["max_output_length"] = item["max_output_length"]
    else:  # apply_patch_call_output
        result["status"] = item["status"]
        if item.get("output") is not None:
            result["output"] = item["output"]
    result.setdefault("status", item.get("status") or "completed")
    return result


def _input_message(item: dict[str, Any], param: str) -> dict[str, Any]:
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
    message = _message_item(role, parts, _item_id(item, param, "msg"))
    if role == "assistant" and item.get("phase") is not None:
        message["phase"] = item["phase"]  # the channel the model wrote it on (harmony/history.py)
    return message


def _content_part(part: Any, param: str, part_type: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise invalid_type(param, "an object", part)
    kind = part.get("type")
    if kind == "input_file" and part_type == "input_text":
        return _input_file_part(part, param)
    if kind in ("input_image", "input_file", "input_audio", "refusal"):
        raise InvalidRequest(f"Content of type '{kind}' is not supported by gpt-oss"
                             f"{' in an assistant message' if kind == 'input_file' else ''}.", param=f"{param}.type")
    if kind not in ("input_text", "output_text"):
        raise InvalidRequest(f"Invalid value for '{param}.type': {kind!r}.", param=f"{param}.type",
                             code="invalid_value")
    text = part.get("text")
    if not isinstance(text, str):
        raise invalid_type(f"{param}.text", "a string", text)
    if part_type == "output_text":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "input_text", "text": text}


def _input_file_part(part: dict[str, Any], param: str) -> dict[str, Any]:
    """An input_file part by ``file_id`` or ``file_data``; its text is read at create
    (files/inputs.py), where the tenant whose file it names is known."""
    if part.get("file_url") is not None:
        raise InvalidRequest("'file_url' is not supported: this server fetches no URLs. Upload the file "
                             "(client.files.create) and give its 'file_id', or send its bytes as 'file_data'.",
                             param=f"{param}.file_url", code="unsupported_parameter")
    sources = [key for key in ("file_id", "file_data") if part.get(key) is not None]
    if len(sources) != 1:
        raise InvalidRequest(f"'{param}' must give exactly one of 'file_id' and 'file_data'.", param=param)
    result = {"type": "input_file", sources[0]: _item_str(part, sources[0], param)}
    for key in ("filename", "detail"):
        if part.get(key) is not None:
            result[key] = _item_str(part, key, param)
    if result.get("detail", "auto") not in ("auto", "low", "high"):
        raise InvalidRequest(f"Invalid value for '{param}.detail': {result['detail']!r}. Supported values are: "
                             "'auto', 'low' and 'high'.", param=f"{param}.detail", code="invalid_value")
    return result


def _message_item(role: str, parts: list[dict[str, Any]], item_id: str | None) -> dict[str, Any]:
    if role == "assistant" and parts and parts[0]["type"] == "input_text":
        parts = [{"type": "output_text", "text": p["text"], "annotations": [], "logprobs": []} for p in parts]
    return {"id": item_id or new_id("msg"), "type": "message", "role": role, "content": parts, "status": "completed"}


def _reasoning_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    """A reasoning item; its ``encrypted_content`` is opened at create
    (services/create.resolve_input), where the tenant it was sealed for is known."""
    result: dict[str, Any] = {"id": _item_id(item, param, "rs"), "type": "reasoning", "summary": []}
    if item.get("encrypted_content") is not None:
        result["encrypted_content"] = item["encrypted_content"]
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


def _compaction_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    """A compaction item from POST /v1/responses/compact, passed back as input."""
    result = {"id": _item_id(item, param, "cmp"), "type": "compaction",
              "encrypted_content": _item_str(item, "encrypted_content", param)}
    try:
        summary_of(result)
    except InvalidCompaction as error:
        raise InvalidRequest(str(error), param=f"{param}.encrypted_content",
                             code="invalid_encrypted_content") from error
    return result


def _namespace(item: dict[str, Any], param: str) -> str:
    return checked_name(_item_str(item, "namespace", param), f"{param}.namespace")


def _item_id(item: dict[str, Any], param: str, prefix: str) -> str:
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


def _item_str(item: dict[str, Any], key: str, param: str, allow_empty: bool = False) -> str:
    value = item.get(key)
    if not isinstance(value, str) or (not value and not allow_empty):
        raise invalid_type(f"{param}.{key}", "a non-empty string", value)
    return value
