"""The code_interpreter tool: the model's ``python`` calls, run in the response's
container (tools_app's sandbox), as ``code_interpreter_call`` items."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from openai.types import responses as types

from responses_app.harmony.messages import PYTHON_RECIPIENT
from responses_app.lib.ids import new_id
from responses_app.worker.tools import tools_app_adapter
from responses_app.worker.tools.base import INTERRUPTED, ToolResult
from responses_app.worker.tools.toolbox import Toolbox
from responses_app.worker.tools.tools_app_adapter import ToolError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg")


class CodeInterpreterCall:
    def __init__(self, toolbox: Toolbox) -> None:
        self.toolbox = toolbox
        self.builder = toolbox.builder
        self.error: str | None = None
        try:
            container_id = toolbox.container().id
        except ToolError as error:  # the container named is gone
            assert toolbox.code_interpreter is not None  # a call is routed here only when the tool is given
            container_id, self.error = toolbox.code_interpreter.container_id or "", error.message
        item, _ = toolbox.start_item({"id": new_id("ci"), "type": "code_interpreter_call", "status": "in_progress",
                                      "code": "", "container_id": container_id, "outputs": None},
                                     types.ResponseCodeInterpreterCallInProgressEvent,
                                     "response.code_interpreter_call.in_progress")
        self.code: str = item["code"]

    def delta(self, text: str) -> None:
        self.code += text
        self.builder.update_item(code=self.code)
        self.builder.item_event(types.ResponseCodeInterpreterCallCodeDeltaEvent,
                                "response.code_interpreter_call_code.delta", delta=text)

    def finished(self, text: str) -> None:
        self.code = text
        self.builder.update_item(code=text)
        self.builder.item_event(types.ResponseCodeInterpreterCallCodeDoneEvent,
                                "response.code_interpreter_call_code.done", code=text)

    def execute(self) -> ToolResult:
        refusal = self.error or self.toolbox.take_call()
        if refusal is not None:
            return self._end([{"type": "logs", "logs": refusal}], failed=True)
        self.builder.item_event(types.ResponseCodeInterpreterCallInterpretingEvent,
                                "response.code_interpreter_call.interpreting")
        self.toolbox.flush()
        container = self.toolbox.container()
        result = self.toolbox.wait(lambda: tools_app_adapter.run_code(container, self.code))
        logs = result.logs
        if result.error:
            logs = f"{logs}\n{result.error}" if logs else result.error
        outputs: list[dict[str, Any]] = [{"type": "logs", "logs": logs}]
        ids = tools_app_adapter.container_file_ids(
            container.id, [path for path in result.files if path.lower().endswith(IMAGE_SUFFIXES)])
        outputs += [{"type": "image", "url": container_file_url(container.id, ids[path])}
                    for path in result.files if path in ids]
        if result.files:
            logs += "\n[files written to /mnt/data: " + ", ".join(result.files) + "]"
        return self._end(outputs, failed=bool(result.error), model_text=logs)

    def interrupted(self) -> None:
        """The call was running on a worker that was lost: it may have run in part."""
        self._end([{"type": "logs", "logs": INTERRUPTED}], failed=True)

    def _end(self, outputs: list[dict[str, Any]], failed: bool, model_text: str | None = None) -> ToolResult:
        self.builder.update_item(outputs=outputs)
        if not failed:
            self.builder.item_event(types.ResponseCodeInterpreterCallCompletedEvent,
                                    "response.code_interpreter_call.completed")
        self.builder.finish_item("failed" if failed else "completed")
        text = model_text if model_text is not None else "".join(o.get("logs", "") for o in outputs)
        return ToolResult(author=PYTHON_RECIPIENT, text=text, channel="analysis")


def container_file_url(container_id: str, file_id: str) -> str:
    return f"{settings.PUBLIC_BASE_URL}/v1/containers/{container_id}/files/{file_id}/content"
