"""The tools a client runs on its own machine that the Responses API types as items of
their own rather than as function calls: ``shell``, ``local_shell`` and ``apply_patch``.

gpt-oss calls every client tool as a function (``to=functions.<tool type>`` with JSON
arguments). This module is where such a call's arguments become the item the SDK types
(``shell_call``'s ``action``, ``local_shell_call``'s ``action``, ``apply_patch_call``'s
``operation``), and where those items and the client's outputs become harmony messages
again when they come back as input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from responses_app.wire.request_body import is_integer


class UnreadableCall(ValueError):
    """The model's arguments do not describe a call of the tool (told to the model)."""


@dataclass(frozen=True)
class ClientTool:
    tool_type: str  # in ``tools``; also the function name the model calls
    call_type: str  # the output item a call becomes
    output_type: str  # the input item that answers it
    id_prefix: str
    description: str
    parameters: dict[str, Any]
    read: Callable[[dict[str, Any]], dict[str, Any]]  # arguments -> the item's fields
    write: Callable[[dict[str, Any]], dict[str, Any]]  # the item -> arguments


def _string_list(arguments: dict[str, Any], key: str) -> list[str]:
    value = arguments.get(key)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(entry, str) and entry for entry in value):
        raise UnreadableCall(f"'{key}' must be a non-empty array of non-empty strings")
    return value


def _positive_int(arguments: dict[str, Any], key: str) -> int | None:
    value = arguments.get(key)
    if value is not None and (not is_integer(value) or value < 1):
        raise UnreadableCall(f"'{key}' must be a positive integer")
    return value


def _string(arguments: dict[str, Any], key: str, required: bool = True) -> str | None:
    value = arguments.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise UnreadableCall(f"'{key}' must be a non-empty string")
    return value


def _without_nulls(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


# --- shell ----------------------------------------------------------------------------------

def _read_shell(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"action": {"commands": _string_list(arguments, "commands"),
                       "timeout_ms": _positive_int(arguments, "timeout_ms"),
                       "max_output_length": _positive_int(arguments, "max_output_length")}}


def _write_shell(item: dict[str, Any]) -> dict[str, Any]:
    action = item["action"]
    return _without_nulls({"commands": action["commands"], "timeout_ms": action.get("timeout_ms"),
                           "max_output_length": action.get("max_output_length")})


SHELL = ClientTool(
    tool_type="shell", call_type="shell_call", output_type="shell_call_output", id_prefix="sh",
    description="Runs shell commands on the user's machine, in order, and returns each one's stdout, stderr and "
                "exit code.",
    parameters={"type": "object", "properties": {
        "commands": {"type": "array", "items": {"type": "string"}, "description": "The commands, run in order."},
        "timeout_ms": {"type": "integer", "description": "The most time the commands may take, in milliseconds."},
        "max_output_length": {"type": "integer",
                              "description": "The most characters of output to return per command."},
    }, "required": ["commands"]},
    read=_read_shell, write=_write_shell)


# --- local_shell ----------------------------------------------------------------------------

def _read_local_shell(arguments: dict[str, Any]) -> dict[str, Any]:
    env = arguments.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        raise UnreadableCall("'env' must be an object of strings")
    return {"action": {"type": "exec", "command": _string_list(arguments, "command"), "env": env,
                       "timeout_ms": _positive_int(arguments, "timeout_ms"), "user": None,
                       "working_directory": _string(arguments, "working_directory", required=False)}}


def _write_local_shell(item: dict[str, Any]) -> dict[str, Any]:
    action = item["action"]
    return _without_nulls({"command": action["command"], "working_directory": action.get("working_directory"),
                           "timeout_ms": action.get("timeout_ms"), "env": action.get("env") or None})


LOCAL_SHELL = ClientTool(
    tool_type="local_shell", call_type="local_shell_call", output_type="local_shell_call_output",
    id_prefix="lsh",
    description="Runs one command on the user's machine and returns its output.",
    parameters={"type": "object", "properties": {
        "command": {"type": "array", "items": {"type": "string"},
                    "description": "The program and its arguments, e.g. [\"bash\", \"-lc\", \"ls\"]."},
        "working_directory": {"type": "string"},
        "timeout_ms": {"type": "integer"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    }, "required": ["command"]},
    read=_read_local_shell, write=_write_local_shell)


# --- apply_patch ----------------------------------------------------------------------------

PATCH_OPERATIONS = ("create_file", "update_file", "delete_file")


def _read_apply_patch(arguments: dict[str, Any]) -> dict[str, Any]:
    kind = arguments.get("type")
    if kind not in PATCH_OPERATIONS:
        raise UnreadableCall("'type' must be one of " + ", ".join(PATCH_OPERATIONS))
    operation = {"type": kind, "path": _string(arguments, "path")}
    if kind != "delete_file":
        diff = arguments.get("diff")
        if not isinstance(diff, str):
            raise UnreadableCall(f"'diff' must be a string for {kind}")
        operation["diff"] = diff
    return {"operation": operation}


def _write_apply_patch(item: dict[str, Any]) -> dict[str, Any]:
    return dict(item["operation"])


APPLY_PATCH = ClientTool(
    tool_type="apply_patch", call_type="apply_patch_call", output_type="apply_patch_call_output", id_prefix="apc",
    description="Creates, updates or deletes one file in the user's workspace. For create_file the diff holds the "
                "new file's lines, each starting with '+'; for update_file it is a diff of the changed hunks, each "
                "starting with '@@', with lines starting with ' ', '-' or '+'.",
    parameters={"type": "object", "properties": {
        "type": {"type": "string", "enum": list(PATCH_OPERATIONS)},
        "path": {"type": "string", "description": "The file's path, relative to the workspace root."},
        "diff": {"type": "string"},
    }, "required": ["type", "path"]},
    read=_read_apply_patch, write=_write_apply_patch)


CLIENT_TOOLS = {tool.tool_type: tool for tool in (SHELL, LOCAL_SHELL, APPLY_PATCH)}
BY_CALL_TYPE = {tool.call_type: tool for tool in CLIENT_TOOLS.values()}
BY_OUTPUT_TYPE = {tool.output_type: tool for tool in CLIENT_TOOLS.values()}
# Every call a client runs, and the item that answers it.
CALL_OUTPUTS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
                **{call_type: tool.output_type for call_type, tool in BY_CALL_TYPE.items()}}


def call_fields(tool: ClientTool, arguments: str) -> dict[str, Any]:
    """The fields of ``tool``'s call item that the model's ``arguments`` give."""
    return tool.read(json_arguments(arguments))


def json_arguments(arguments: str) -> dict[str, Any]:
    """The model's arguments of a call as the JSON object they must be (else UnreadableCall)."""
    try:
        parsed = json.loads(arguments)
    except ValueError as error:
        raise UnreadableCall(f"the arguments are not JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise UnreadableCall("the arguments must be a JSON object")
    return parsed


def call_arguments(item: dict[str, Any]) -> str:
    """A call item as the arguments the model wrote."""
    return json.dumps(BY_CALL_TYPE[item["type"]].write(item))


def output_text(item: dict[str, Any]) -> str:
    """What the model reads of a client's output item."""
    if item["type"] == "shell_call_output":
        return json.dumps([{"stdout": entry.get("stdout", ""), "stderr": entry.get("stderr", ""),
                            **_outcome(entry.get("outcome") or {})} for entry in item.get("output") or []])
    if item["type"] == "apply_patch_call_output":
        return json.dumps(_without_nulls({"status": item.get("status"), "output": item.get("output")}))
    return str(item.get("output") or "")  # local_shell_call_output: a JSON string already


def _outcome(outcome: dict[str, Any]) -> dict[str, Any]:
    if outcome.get("type") == "timeout":
        return {"timed_out": True}
    return {"exit_code": outcome.get("exit_code")}


def answered_call_id(item: dict[str, Any]) -> str:
    """The call an output answers: a local_shell_call_output names it in its ``id``."""
    return str(item["id"] if item["type"] == "local_shell_call_output" else item.get("call_id"))
