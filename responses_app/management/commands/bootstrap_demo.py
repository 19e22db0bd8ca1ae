"""Make sure the `demo` tenant has a working API key, and show how to use it.

Only an HMAC of a key's secret is stored, so the plaintext cannot be read back from the
database: the first run writes it to ``RUN_DIR/demo-api-key`` (mode 0600) and later
runs reuse it while it still authenticates. A key that was revoked, deleted or issued
under another API_KEY_HMAC_SECRET is replaced by a new one.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from responses_app.models import Tenant
from responses_app.tenancy.api_keys import authenticate_bearer, create_api_key
from responses_app.wire.errors import AuthenticationFailed

TENANT = "demo"
KEY_NAME = "demo"
BASE_URL = "http://127.0.0.1:8000/v1"


def _read_saved_key(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def _key_still_works(plaintext: str) -> bool:
    try:
        caller = authenticate_bearer(f"Bearer {plaintext}")
    except AuthenticationFailed:
        return False
    return caller.tenant.name == TENANT


def _save_key(path: Path, plaintext: str) -> None:
    """Write the key readable by its owner only, atomically (no moment with wider modes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (plaintext + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def example_text(key: str, base_url: str = BASE_URL) -> str:
    return f'''\
Demo API key (tenant "{TENANT}"): {key}

Try it with curl:

  curl -sN {base_url}/responses -H "Authorization: Bearer {key}" -H "Content-Type: application/json" \\
    -d '{{"model": "echo", "input": "Hello!", "stream": true}}'

Or with the openai Python SDK (background + stream, resume after a disconnect, cancel);
paste everything from the first line to EOF into a shell in the repository:

.venv/bin/python - <<'EOF'
from openai import OpenAI

client = OpenAI(base_url="{base_url}", api_key="{key}")

# A background response keeps running when the client goes away; stream its events.
stream = client.responses.create(
    model="echo", input="Tell me a long story.", background=True, stream=True,
    metadata={{"echo_token_delay_ms": "100"}},  # echo only: slow enough to cancel mid-way
)
response_id, last = None, -1
for event in stream:
    print(event.sequence_number, event.type)
    last = event.sequence_number
    if event.type == "response.created":
        response_id = event.response.id
    if last >= 3:
        break  # "disconnect"
stream.close()

# Resume right after the last event we saw (works on any server process).
for event in client.responses.retrieve(response_id, stream=True, starting_after=last):
    print(event.sequence_number, event.type)
    if event.sequence_number >= last + 3:
        break

# Cancel: idempotent; a response that already finished stays as it is.
print(client.responses.cancel(response_id).status)
EOF
'''


class Command(BaseCommand):
    help = (
        "Ensure tenant 'demo' and an API key named 'demo' exist; keep the plaintext in "
        "RUN_DIR/demo-api-key and print it with a copy-paste example."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--key-file", default=None, help="where the plaintext key is kept")
        parser.add_argument("--quiet", action="store_true", help="print only the key")

    def handle(self, *args, key_file: str | None, quiet: bool, **options) -> None:
        path = Path(key_file) if key_file else Path(settings.RUN_DIR) / "demo-api-key"
        Tenant.objects.get_or_create(name=TENANT)

        plaintext = _read_saved_key(path)
        if plaintext is not None and _key_still_works(plaintext):
            status = f"Reusing the demo API key from {path}."
        else:
            _, plaintext = create_api_key(TENANT, KEY_NAME)
            _save_key(path, plaintext)
            status = f"Created a new demo API key; saved to {path} (mode 0600)."

        if quiet:
            self.stdout.write(plaintext)
            return
        self.stdout.write(status)
        self.stdout.write("")
        self.stdout.write(example_text(plaintext))
