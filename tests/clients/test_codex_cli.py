"""Codex CLI (``@openai/codex``, pinned in tests/clients/package.json) against the live
stack, configured as docs/codex.md says: a custom provider with ``wire_api = "responses"``
and the server's model catalog. Codex sends what it always sends (client_metadata, a
client tool_search with its multi-agent tools deferred, web_search without external
access, reasoning summaries, store=false with encrypted reasoning), runs a shell command
the model asks for, loads a deferred tool by search and calls it, and compacts a session
inline, over HTTP and over the Responses WebSocket."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from responses_app.models import Response
from responses_app.selectors import input_items, output_items

CLIENTS = Path(__file__).parent
CODEX = CLIENTS / "node_modules" / ".bin" / "codex"
MARKER = "codex-was-here"
# The echo model's script: the model runs a shell command through Codex's exec_command
# tool, then answers once it has the command's output.
ANSWER = "<|channel|>final<|message|>{text}<|return|>"
SCRIPT = (
    "<|channel|>analysis<|message|>I will write the marker file.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.exec_command <|constrain|>json"
    f'<|message|>{{"cmd": "echo {MARKER} > marker.txt && cat marker.txt"}}<|call|>'
    "<|start|>assistant<|channel|>final<|message|>The marker is written.<|return|>"
)



def codex_home(tmp_path: Path, base_url: str, websockets: bool, name: str = "gpt-oss Responses server",
               top: str = "") -> Path:
    """Codex's configuration as docs/codex.md gives it: a custom provider, with the
    server's model catalog. ``name``: Codex sends inline compaction to a provider named
    "OpenAI" only. ``top``: more top-level settings."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(f"""
model = "echo"
model_provider = "responses-server"
{top}

[model_providers.responses-server]
name = "{name}"
base_url = "{base_url}"
env_key = "RESPONSES_SERVER_API_KEY"
wire_api = "responses"
model_catalog_url = "{base_url}/models"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = {"true" if websockets else "false"}
""")
    return home


def run_codex(home: Path, workdir: Path, key: str, prompt: str, *resume: str) -> list[dict]:
    """``codex exec`` (or ``codex exec resume --last``) with ``prompt``: its JSON events."""
    assert CODEX.exists(), "Codex CLI is not installed: run `make clients` (make test does)"
    environment = {**os.environ, "CODEX_HOME": str(home), "HOME": str(home.parent),
                   "RESPONSES_SERVER_API_KEY": key, "NO_COLOR": "1"}
    finished = subprocess.run(
        [str(CODEX), "exec", *resume, "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
         "--json", prompt],
        cwd=workdir, env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    events = [json.loads(line) for line in finished.stdout.splitlines() if line.startswith("{")]
    # With the server's catalog, Codex knows the model ("Defaulting to fallback metadata" otherwise).
    assert not [e for e in events if e.get("type") == "item.completed" and e["item"]["type"] == "error"], events
    return events


def workdir_of(tmp_path: Path) -> Path:
    workdir = tmp_path / "work"
    workdir.mkdir()
    return workdir


def completed_items(events: list[dict], kind: str) -> list[dict]:
    return [e["item"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == kind]


@pytest.mark.parametrize("websockets", [False, True], ids=["http", "websocket"])
def test_codex_exec_runs_a_tool_round_trip(tmp_path, stack, client_key, db_access, websockets):
    before = set(Response.objects.values_list("pk", flat=True))

    workdir = workdir_of(tmp_path)
    events = run_codex(codex_home(tmp_path, stack.base_url, websockets), workdir, client_key, SCRIPT)
    assert (workdir / "marker.txt").read_text().strip() == MARKER

    [command] = completed_items(events, "command_execution")
    assert MARKER in command["aggregated_output"] and command["exit_code"] == 0
    assert completed_items(events, "agent_message")[-1]["text"] == "The marker is written."
    assert events[-1]["type"] == "turn.completed"
    made = Response.objects.exclude(pk__in=before).order_by("created_at")
    # The call and the answer after its output (and, over the socket, Codex's prewarm).
    assert made.count() >= 2 and all(r.status == "completed" and not r.store for r in made)
    first = next(r for r in made if r.request["tools"])
    assert first.request["client_metadata"]  # what Codex says about itself, kept for operators
    # Its multi-agent namespace is deferred behind a client tool search (the catalog says the model searches).
    assert {tool["type"] for tool in first.request["tools"]} >= {"function", "tool_search", "web_search"}
    assert first.request["include"] == ["reasoning.encrypted_content"]
    assert all(bool(r.socket_session) == websockets for r in made)


def test_codex_reads_the_model_catalog_of_the_registry(tmp_path, stack, client_key):
    home = codex_home(tmp_path, stack.base_url, websockets=False)
    run_codex(home, workdir_of(tmp_path), client_key, ANSWER.format(text="Hello."))
    # Codex keeps the catalog it fetched (GET /v1/models?client_version=...).
    cache = json.loads((home / "models_cache.json").read_text())
    [echo] = [model for model in cache["models"] if model["slug"] == "echo"]
    assert echo["context_window"] == 131072 and echo["auto_compact_token_limit"] == int(0.8 * 131072)
    assert cache["etag"]



def test_the_catalog_is_answered_to_client_version_only_with_an_etag(stack, client_key):
    headers = {"Authorization": f"Bearer {client_key}"}
    listed = httpx.get(f"{stack.base_url}/models", headers=headers).json()
    catalog = httpx.get(f"{stack.base_url}/models", params={"client_version": "0.171.0"}, headers=headers)
    models = catalog.json()["models"]
    # The registry's models, in its order (Codex's priority).
    assert listed["object"] == "list" and [model["slug"] for model in models] == [m["id"] for m in listed["data"]]
    assert [model["priority"] for model in models] == list(range(len(models)))
    echo = models[0]
    assert echo["slug"] == "echo" and echo["visibility"] == "list" and echo["base_instructions"]
    assert [level["effort"] for level in echo["supported_reasoning_levels"]] == ["low", "medium", "high"]
    assert echo["apply_patch_tool_type"] is None  # a freeform apply_patch needs a grammar, which echo cannot keep
    again = httpx.get(f"{stack.base_url}/models", params={"client_version": "0.171.0"},
                      headers={**headers, "If-None-Match": catalog.headers["ETag"]})
    assert again.status_code == 304 and not again.content
    assert httpx.get(f"{stack.base_url}/models", params={"client_version": "1"}).status_code == 401


@pytest.mark.parametrize("websockets", [False, True], ids=["http", "websocket"])
def test_codex_compacts_a_session_inline_and_goes_on_from_the_compaction(tmp_path, stack, client_key, db_access,
                                                                        websockets):
    # A low compaction limit: the first turn's usage passes it, so Codex compacts before the
    # next turn, with a compaction_trigger (sent to a provider named "OpenAI").
    home = codex_home(tmp_path, stack.base_url, websockets, name="OpenAI", top="model_auto_compact_token_limit = 500")
    workdir = workdir_of(tmp_path)
    before = set(Response.objects.values_list("pk", flat=True))
    run_codex(home, workdir, client_key, ANSWER.format(text="First turn."))
    events = run_codex(home, workdir, client_key, ANSWER.format(text="After the compaction."), "resume", "--last")

    assert completed_items(events, "agent_message")[-1]["text"] == "After the compaction."
    made = list(Response.objects.exclude(pk__in=before).order_by("created_at"))
    [compacting] = [r for r in made if r.request.get("compaction_trigger")]
    assert compacting.status == "completed" and [item["type"] for item in output_items(compacting)] == ["compaction"]
    [item] = output_items(compacting)
    last = made[-1]
    assert last.created_at > compacting.created_at and last.status == "completed"
    # The turn after it goes on from the compaction: sent back as input (HTTP), or the
    # response it continues (the socket's previous_response_id).
    assert last.previous_response_id == compacting.pk or item["id"] in {entry["id"] for entry in input_items(last)}



@pytest.mark.parametrize("websockets", [False, True], ids=["http", "websocket"])
def test_codex_loads_a_deferred_tool_by_search_and_calls_it(tmp_path, stack, client_key, db_access, websockets):
    # The catalog says the model can search tools: Codex defers its multi-agent tools behind
    # a client tool_search, runs the model's search itself, and sends the namespace it found.
    home = codex_home(tmp_path, stack.base_url, websockets)
    before = set(Response.objects.values_list("pk", flat=True))
    script = ('<|channel|>commentary to=functions.tool_search <|constrain|>json<|message|>'
              '{"query": "close agent", "limit": 2}<|call|>'
              '<|start|>assistant<|channel|>commentary to=multi_agent_v1.close_agent <|constrain|>json'
              '<|message|>{"target": "no-such-agent"}<|call|><|start|>assistant' + ANSWER.format(text="Closed."))
    events = run_codex(home, workdir_of(tmp_path), client_key, script)

    assert completed_items(events, "agent_message")[-1]["text"] == "Closed."
    made = list(Response.objects.exclude(pk__in=before).order_by("created_at"))
    first = next(r for r in made if any(t["type"] == "tool_search" for t in r.request["tools"]))
    assert not any(t.get("name") == "multi_agent_v1" for t in first.request["tools"])  # deferred, not sent
    outputs = [item for r in made for item in output_items(r)]
    [searched] = [item for item in outputs if item["type"] == "tool_search_call"]
    assert searched["execution"] == "client" and searched["arguments"]["query"] == "close agent"
    [called] = [item for item in outputs if item["type"] == "function_call"]
    assert (called["namespace"], called["name"]) == ("multi_agent_v1", "close_agent")
    # Codex answered the call it could not carry out, and the model read that answer.
    assert [item for r in made for item in input_items(r)
            if item["type"] == "function_call_output" and item["call_id"] == called["call_id"]]
