"""Codex CLI (``@openai/codex``, pinned in tests/clients/package.json) against the live
stack, configured as a user would point it at this server: a custom provider with
``wire_api = "responses"``, nothing else changed. Codex sends what it always sends
(client_metadata, a namespace tool, web_search without external access, reasoning
summaries, store=false with encrypted reasoning) and runs a shell command the model asks
for, over HTTP and over the Responses WebSocket."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from responses_app.models import Response

CLIENTS = Path(__file__).parent
CODEX = CLIENTS / "node_modules" / ".bin" / "codex"
MARKER = "codex-was-here"
# The echo model's script: the model runs a shell command through Codex's exec_command
# tool, then answers once it has the command's output.
SCRIPT = (
    "<|channel|>analysis<|message|>I will write the marker file.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.exec_command <|constrain|>json"
    f'<|message|>{{"cmd": "echo {MARKER} > marker.txt && cat marker.txt"}}<|call|>'
    "<|start|>assistant<|channel|>final<|message|>The marker is written.<|return|>"
)



def codex_home(tmp_path: Path, base_url: str, websockets: bool) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(f"""
model = "echo"
model_provider = "responses-server"

[model_providers.responses-server]
name = "gpt-oss Responses server"
base_url = "{base_url}"
env_key = "RESPONSES_SERVER_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = {"true" if websockets else "false"}
""")
    return home


def run_codex(tmp_path: Path, base_url: str, key: str, websockets: bool) -> list[dict]:
    assert CODEX.exists(), "Codex CLI is not installed: run `make clients` (make test does)"
    workdir = tmp_path / "work"
    workdir.mkdir()
    environment = {**os.environ, "CODEX_HOME": str(codex_home(tmp_path, base_url, websockets)),
                   "HOME": str(tmp_path), "RESPONSES_SERVER_API_KEY": key, "NO_COLOR": "1"}
    finished = subprocess.run(
        [str(CODEX), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--json", SCRIPT],
        cwd=workdir, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (workdir / "marker.txt").read_text().strip() == MARKER
    return [json.loads(line) for line in finished.stdout.splitlines() if line.startswith("{")]


def completed_items(events: list[dict], kind: str) -> list[dict]:
    return [e["item"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == kind]


@pytest.mark.parametrize("websockets", [False, True], ids=["http", "websocket"])
def test_codex_exec_runs_a_tool_round_trip(tmp_path, stack, client_key, db_access, websockets):
    before = set(Response.objects.values_list("pk", flat=True))

    events = run_codex(tmp_path, stack.base_url, client_key, websockets)

    [command] = completed_items(events, "command_execution")
    assert MARKER in command["aggregated_output"] and command["exit_code"] == 0
    assert completed_items(events, "agent_message")[-1]["text"] == "The marker is written."
    assert events[-1]["type"] == "turn.completed"
    made = Response.objects.exclude(pk__in=before).order_by("created_at")
    # The call and the answer after its output (and, over the socket, Codex's prewarm).
    assert made.count() >= 2 and all(r.status == "completed" and not r.store for r in made)
    first = next(r for r in made if r.request["tools"])
    assert first.request["client_metadata"]  # what Codex says about itself, kept for operators
    assert {tool["type"] for tool in first.request["tools"]} >= {"function", "namespace", "web_search"}
    assert first.request["include"] == ["reasoning.encrypted_content"]
    assert all(bool(r.socket_session) == websockets for r in made)
