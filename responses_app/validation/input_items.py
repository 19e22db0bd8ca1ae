"""The input items of a create (and of a conversation's items and a prompt's messages): each
checked against the SDK's item types and what this server runs, and made into the item the
row stores."""

from __future__ import annotations

import functools
from typing import Any

from openai.types.responses.response_input_item_param import ResponseInputItemParam
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import SchemaValidator
from typing_extensions import TypedDict

from responses_app.context.compaction import InvalidCompaction, summary_of
from responses_app.harmony.client_tools import BY_CALL_TYPE, BY_OUTPUT_TYPE
from responses_app.lib.ids import new_id
from responses_app.validation.sdk_types import check, strict_validator
from responses_app.validation.tools import (
    approval_response_item,
    checked_name,
    loaded_tools,
    tool_search_item,
)
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.objects import check_servable

MESSAGE_ROLES = ("user", "system", "developer", "assistant")
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
# Item ids are stored in columns of 64 characters (InputItem, ConversationItem).
MAX_ITEM_ID_LENGTH = 64


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
        loaded = loaded_tools(item.get("tools"), f"{param}.tools", constrains=True)
        return {"id": _item_id(item, param, "at"), "type": "additional_tools", "role": "developer",
                "tools": [tool.to_stored() for tool in loaded]}
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
