"""The model catalog that Codex CLI reads from ``GET /v1/models?client_version=...``:
``{"models": [ModelInfo, ...]}`` as Codex 0.171 decodes it, made from the model registry.

Codex needs each model's context window to show how full it is and to know when to
compact (at ``auto_compact_token_limit``, or 90% of the window if less), the reasoning
efforts to offer, the tools to give the model, and the instructions it sends as the first
developer message of every request. One entry Codex cannot decode makes it drop the whole
catalog, so every value here is one it accepts (``apply_patch_tool_type`` is "freeform" or
null, never "function"). A registry entry's ``codex`` object overrides or adds any field.
"""

from __future__ import annotations

from typing import Any

# What gpt-oss was trained with: harmony's three reasoning efforts.
REASONING_LEVELS = [
    {"effort": "low", "description": "Fast answers with light reasoning."},
    {"effort": "medium", "description": "Balances speed and reasoning depth (the default)."},
    {"effort": "high", "description": "Maximum reasoning depth for hard problems."},
]
# Codex truncates each tool output it sends back to the model to this many tokens.
TOOL_OUTPUT_TOKENS = 10_000
# Codex compacts at this share of the context, as context_management does by default.
AUTO_COMPACT_SHARE = 0.8
# The first developer message of every Codex request. Codex's own prompt is written for
# OpenAI's models; this one is the server's, for gpt-oss. A registry entry's
# "codex": {"base_instructions": ...} replaces it.
BASE_INSTRUCTIONS = """\
You are a coding agent working in the user's terminal through Codex CLI. You and the user \
share one workspace: read the code before you change it, make the change the user asked \
for and no more, and check it (run the tests or the command that shows it works) when you can.

- Use the shell tool to read files, search (prefer `rg`) and run commands; use apply_patch, \
when you have it, to edit files.
- Keep to the style of the code around your change; do not fix unrelated problems, but \
mention them.
- Do not undo changes you did not make, and never run destructive commands (such as \
`git reset --hard` or `rm -rf`) unless the user asked for them.
- When you are done, answer briefly: what you changed, where, and how you checked it. \
Quote file paths; show code only when the user needs to read it."""


def codex_catalog(registry: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"models": [model_info(model_id, entry, priority)
                       for priority, (model_id, entry) in enumerate(registry.items())]}


def model_info(model_id: str, entry: dict[str, Any], priority: int) -> dict[str, Any]:
    """One model as Codex's ModelInfo."""
    context_window = entry.get("max_model_len")
    info: dict[str, Any] = {
        "slug": model_id,
        "display_name": model_id,
        "description": f"{model_id}, served by this Responses server",
        "default_reasoning_level": "medium",
        "supported_reasoning_levels": REASONING_LEVELS,
        "shell_type": "unified_exec",
        "visibility": "list",
        "supported_in_api": True,
        "priority": priority,
        "support_verbosity": True,
        "truncation_policy": {"mode": "tokens", "limit": TOOL_OUTPUT_TOKENS},
        "experimental_supported_tools": [],
        "base_instructions": BASE_INSTRUCTIONS,
        "input_modalities": ["text"],  # gpt-oss reads text: Codex then sends no images
        "web_search_tool_type": "text",
        # A freeform apply_patch is a custom tool with a grammar, which only vLLM enforces.
        "apply_patch_tool_type": "freeform" if entry.get("engine") == "vllm" else None,
        "supports_search_tool": True,
    }
    if context_window:
        info["context_window"] = context_window
        info["auto_compact_token_limit"] = int(AUTO_COMPACT_SHARE * context_window)
    if entry.get("reasoning_summary"):
        info["default_reasoning_summary"] = entry["reasoning_summary"]
    return {**info, **(entry.get("codex") or {})}
