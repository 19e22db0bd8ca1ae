"""Every code example of README.md and docs/ (tests/docs/examples.py finds them): those that
talk to the server run here, as a reader would run them, against the live stack with a key
of their own and the ``echo`` model; those marked not run are parsed, and their reason is
printed by ``python -m tests.docs.examples`` (make test shows it).

An example is changed only where the reader's setup differs from the test's: the stack's
port for 8000, a real key for ``sk-...``, ``echo`` for the gpt-oss model it names. A page's
fragments (no client of their own) get the client that Getting started makes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.examples import Example, examples
from tests.live.stack import LiveStack

PRELUDE = """import time
from openai import OpenAI

client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="sk-...")
"""
RUN = [example for example in examples() if example.not_run is None]
NOT_RUN = [example for example in examples() if example.not_run is not None]


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


@pytest.mark.parametrize("example", RUN, ids=[example.name for example in RUN])
def test_the_example_runs_against_the_server(example: Example, stack: LiveStack, alice_key: str,
                                             reader_folder: Path):
    code = as_run_here(example, stack, alice_key)
    command = [sys.executable, "-c", code] if example.language == "python" else ["bash", "-euo", "pipefail", "-c", code]
    done = subprocess.run(command, cwd=reader_folder, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"{example.name} failed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("example", NOT_RUN, ids=[example.name for example in NOT_RUN])
def test_an_example_that_is_not_run_still_parses(example: Example, tmp_path: Path):
    if example.language == "python":
        compile(example.code, example.name, "exec")
    else:
        done = subprocess.run(["bash", "-n", "-c", example.code], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{example.name}: {done.stderr}"
