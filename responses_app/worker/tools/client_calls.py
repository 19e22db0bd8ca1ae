"""Calls of the client tools that the API types as items of their own (``shell``,
``local_shell``, ``apply_patch``: harmony/client_tools).

The model writes such a call as a function call with JSON arguments. The call is read
whole and then put out at once as its item (``shell_call``, ``local_shell_call``,
``apply_patch_call``); the response ends there, as it does after a function call, and
the client answers with the item's output in its next request. A call whose arguments
do not describe the tool never reaches the client, who could not run it: the model is
told what was wrong, as a tool's answer, and calls again.
"""

from __future__ import annotations

from openai.types import responses as types

from responses_app.harmony.client_tools import ClientTool, UnreadableCall, call_fields
from responses_app.harmony.messages import FUNCTIONS_NAMESPACE
from responses_app.lib.ids import new_id
from responses_app.stream.builder import EventBuilder
from responses_app.worker.tools.base import ToolResult, WholeCall


class ClientToolCall(WholeCall):
    """Nothing streams: the item's fields are known only once the arguments are whole."""

    def __init__(self, builder: EventBuilder, tool: ClientTool) -> None:
        self.builder = builder
        self.tool = tool

    def execute(self) -> ToolResult | None:
        try:
            fields = call_fields(self.tool, self.arguments)
        except UnreadableCall as error:
            return ToolResult(author=f"{FUNCTIONS_NAMESPACE}.{self.tool.tool_type}", channel="commentary",
                              text=f"Error: the call could not be read: {error}. Call {self.tool.tool_type} again "
                                   "with arguments that match its parameters.")
        builder = self.builder
        builder.add_item({"id": new_id(self.tool.id_prefix), "type": self.tool.call_type, "call_id": new_id("call"),
                          **fields, "status": "in_progress"})
        if self.tool.call_type == "shell_call":
            for index, command in enumerate(fields["action"]["commands"]):
                common = {"command_index": index}
                builder.output_event(types.ResponseShellCallCommandAddedEvent, "response.shell_call_command.added",
                                     command="", **common)
                builder.output_event(types.ResponseShellCallCommandDeltaEvent, "response.shell_call_command.delta",
                                     delta=command, **common)
                builder.output_event(types.ResponseShellCallCommandDoneEvent, "response.shell_call_command.done",
                                     command=command, **common)
        builder.finish_item("completed")
        return None  # the client runs it
