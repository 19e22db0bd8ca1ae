"""The python tool's sandbox: one fresh bubblewrap process per call, a notebook-like
session saved between calls. See execute.py for the isolation and limits."""

from __future__ import annotations

from tools_app.sandbox.execute import ExecutionResult, Limits, run_code
from tools_app.sandbox.workspace import Workspace

__all__ = ["ExecutionResult", "Limits", "Workspace", "run_code"]
