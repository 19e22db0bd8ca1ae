"""The harmony vocabulary, written offline from the ``toktok-rs`` package.

openai-harmony downloads ``o200k_base.tiktoken`` on first use unless
TIKTOKEN_ENCODINGS_BASE points at a folder that holds it. These machines are offline,
so setup writes the file from toktok's bundled vocabulary and checks its digest; at
run time a missing or altered file is a clear error, never a download attempt.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from responses_app.lib.files import write_atomically

VOCAB_FILE = "o200k_base.tiktoken"
VOCAB_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


class HarmonyVocabularyError(RuntimeError):
    pass


def write_vocabulary(folder: Path) -> Path:
    """Write ``o200k_base.tiktoken`` into ``folder`` (idempotent) and verify it."""
    import toktok

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / VOCAB_FILE
    if path.exists() and _sha256(path) == VOCAB_SHA256:
        return path
    tokenizer = toktok._encoding("o200k_base")
    specials = set(tokenizer.special_tokens_set)
    lines = []
    for rank in range(tokenizer.max_token_value + 1):
        try:
            token = tokenizer.decode_single_token_bytes(rank)
        except Exception:  # ranks between the ordinary and the special tokens are unused
            continue
        if token.decode("utf-8", "replace") in specials:
            continue
        lines.append(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")
    write_atomically(path, b"".join(lines))
    verify_vocabulary(folder)
    return path


def verify_vocabulary(folder: Path) -> None:
    path = folder / VOCAB_FILE
    if not path.exists():
        raise HarmonyVocabularyError(
            f"Harmony vocabulary {path} is missing; run `python manage.py write_harmony_vocab` (make setup does)."
        )
    digest = _sha256(path)
    if digest != VOCAB_SHA256:
        raise HarmonyVocabularyError(f"Harmony vocabulary {path} has sha256 {digest}, expected {VOCAB_SHA256}.")


def configure_vocabulary(folder: Path) -> None:
    """Point harmony at ``folder`` after checking it; call before harmony loads an encoding."""
    verify_vocabulary(folder)
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
