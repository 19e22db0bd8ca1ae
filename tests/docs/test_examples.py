"""Every code example of README.md and docs/ (tests/docs/examples.py finds them): those that
talk to the server run here, as a reader would run them, against the live stack with a key
of their own and the ``echo`` model; those marked not run are parsed, and their reason is
printed by ``python -m tests.docs.examples`` (make test shows it).

An example is changed only where the reader's setup differs from the test's: the stack's
port for 8000, a real key for ``sk-...``, ``echo`` for the gpt-oss model it names. A page's
Python fragments (no client of their own) get the client that Getting started makes; a
JavaScript example is whole, an ES module run by the Node 22 of tests/clients with the npm
packages pinned there (``make clients`` installs both), as the reader runs it in a project
that has them: it is written to the reader's folder beside a ``node_modules`` link to
tests/clients/node_modules, since ES modules resolve ``import ... from "openai"`` from the
file's folder up, whatever NODE_PATH says.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.test_node_clients import CLIENTS, NODE
from tests.docs.examples import Example, examples
from tests.live.stack import LiveStack

PRELUDE = """import time
from openai import OpenAI

client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="sk-...")
"""
RUN = [example for example in examples() if example.not_run is None]
NOT_RUN = [example for example in examples() if example.not_run is not None]
JAVASCRIPT = ("js", "javascript")


def as_run_here(example: Example, stack: LiveStack, key: str) -> str:
    code = example.code
    if example.language == "python" and "OpenAI(" not in code:
        code = PRELUDE + code
    return (code.replace("http://127.0.0.1:8000", f"http://127.0.0.1:{stack.port}").replace("sk-...", key)
            .replace('"gpt-oss-20b"', '"echo"'))


@pytest.fixture
def reader_folder(tmp_path: Path, alice_key: str) -> Path:
    """What the reader has at hand: the key `make run` wrote, and the files an example opens."""
    (tmp_path / ".run").mkdir()
    (tmp_path / ".run" / "demo-api-key").write_text(alice_key + "\n")
    lines = [{"custom_id": f"request-{n}", "method": "POST", "url": "/v1/responses",
              "body": {"model": "echo", "input": f"Hello number {n}"}} for n in range(2)]
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path


def node_command(code: str, folder: Path, *options: str) -> list[str]:
    """Node 22 on the example, saved as an ES module in ``folder``, which sees the npm packages
    of tests/clients as a project of the reader's sees its own."""
    assert NODE.exists(), "Node 22 is not installed here: run `make clients` (make test does)"
    (folder / "node_modules").symlink_to(CLIENTS / "node_modules", target_is_directory=True)
    (folder / "example.mjs").write_text(code)
    return [str(NODE), *options, "example.mjs"]


def command_for(example: Example, code: str, folder: Path) -> list[str]:
    if example.language == "python":
        return [sys.executable, "-c", code]
    if example.language in JAVASCRIPT:
        return node_command(code, folder)
    return ["bash", "-euo", "pipefail", "-c", code]


@pytest.mark.parametrize("example", RUN, ids=[example.name for example in RUN])
def test_the_example_runs_against_the_server(example: Example, stack: LiveStack, alice_key: str,
                                             reader_folder: Path):
    code = as_run_here(example, stack, alice_key)
    command = command_for(example, code, reader_folder)
    done = subprocess.run(command, cwd=reader_folder, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"{example.name} failed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("example", NOT_RUN, ids=[example.name for example in NOT_RUN])
def test_an_example_that_is_not_run_still_parses(example: Example, tmp_path: Path):
    if example.language == "python":
        compile(example.code, example.name, "exec")
    elif example.language in JAVASCRIPT:
        done = subprocess.run(node_command(example.code, tmp_path, "--check"), cwd=tmp_path, capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, f"{example.name}: {done.stderr}"
    else:
        done = subprocess.run(["bash", "-n", "-c", example.code], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{example.name}: {done.stderr}"


CURL = re.compile(r"(?:^|[|;&(]\s*)curl\s+([^\n]*)", re.M)
# What an example must print where its exit code proves too little: a health check answers
# 503 while a model has no worker (the stack serves its vLLM models only in their tests).
PRINTS = {("docs/deploying.md", "/healthz"): re.compile(
    r'"database": \{"ok": true.*"redis": \{"ok": true.*"echo": \{"ok": true.*\}\}'
    r'responses_metrics_source_up\{source="database"\} 1\.0\n', re.S)}


def expected_output(example: Example) -> re.Pattern | None:
    found = [pattern for (path, text), pattern in PRINTS.items() if path == example.path and text in example.code]
    return found[0] if found else None


@pytest.mark.parametrize("example", [e for e in RUN if expected_output(e)], ids=lambda e: e.name)
def test_an_example_prints_what_it_shows(example: Example, stack: LiveStack, alice_key: str, reader_folder: Path):
    code = as_run_here(example, stack, alice_key)
    done = subprocess.run(command_for(example, code, reader_folder), cwd=reader_folder, capture_output=True,
                          text=True, timeout=180, check=False)
    assert expected_output(example).search(done.stdout), f"{example.name} printed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("example", [e for e in examples() if e.language == "sh"], ids=lambda e: e.name)
def test_a_curl_example_fails_on_an_http_error_or_its_output_is_checked(example: Example):
    """An example is judged by its exit code: a curl that exits 0 on a 401 or a 500 would pass."""
    for options in CURL.findall(example.code):
        assert "--fail-with-body" in options.split() or expected_output(example) is not None, (
            f"{example.name}: curl without --fail-with-body, and nothing checks what it prints: curl {options}")
