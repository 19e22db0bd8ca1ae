"""A call that the request's ``tool_choice`` does not allow (harmony/allowed_calls.py):
nothing of it becomes an item or an event; the model reads why and goes on."""

from __future__ import annotations

from responses_app.worker.tools.base import ToolResult


class RefusedCall:
    def __init__(self, recipient: str, channel: str | None, refusal: str) -> None:
        self.result = ToolResult(author=recipient, text=refusal, channel=channel or "commentary")

    def delta(self, text: str) -> None:
        """The arguments of a refused call are not streamed."""

    def finished(self, text: str) -> None:
        """Nor kept."""

    def execute(self) -> ToolResult:
        return self.result
