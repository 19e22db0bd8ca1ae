"""The process-wide harmony encoding for gpt-oss.

Loading the encoding parses the whole o200k vocabulary, so it happens once per process
and is shared by every request (and thread) afterwards. The vocabulary must be pointed
at before the first load because harmony would otherwise try to download it.
"""

from __future__ import annotations

import os
import threading
from functools import cache, lru_cache
from pathlib import Path

from openai_harmony import HarmonyEncoding, HarmonyEncodingName, load_harmony_encoding

from responses_app.harmony.vocab import configure_vocabulary

_lock = threading.Lock()
_encoding: HarmonyEncoding | None = None

# Fallback when neither Django settings nor HARMONY_VOCAB_DIR are available (mirrors settings.py).
_DEFAULT_VOCAB_DIR = Path(__file__).resolve().parents[2] / ".cache" / "harmony"


def get_encoding() -> HarmonyEncoding:
    """The shared gpt-oss harmony encoding, loaded on first use."""
    global _encoding
    if _encoding is not None:
        return _encoding
    with _lock:
        # Double-checked: another thread may have finished loading while we waited.
        if _encoding is None:
            configure_vocabulary(vocabulary_dir())
            _encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    return _encoding


def vocabulary_dir() -> Path:
    """Where the vocabulary lives: Django settings if configured, else env, else the default."""
    from_settings = _vocab_dir_from_settings()
    if from_settings is not None:
        return from_settings
    from_env = os.environ.get("HARMONY_VOCAB_DIR")
    return Path(from_env) if from_env else _DEFAULT_VOCAB_DIR


def _vocab_dir_from_settings() -> Path | None:
    # Read lazily so that unit tests and scripts work without django.setup().
    try:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
    except ImportError:
        return None
    if not (settings.configured or os.environ.get("DJANGO_SETTINGS_MODULE")):
        return None
    try:
        value = getattr(settings, "HARMONY_VOCAB_DIR", None)
    except (ImproperlyConfigured, ImportError):  # a settings module that cannot be imported
        return None
    return Path(value) if value else None


@cache
def stop_token_ids() -> tuple[int, ...]:
    """Tokens that end an assistant action: ``<|return|>`` and ``<|call|>``."""
    return tuple(get_encoding().stop_tokens_for_assistant_actions())


@cache
def special_token_id(text: str) -> int:
    """The id of one harmony special token, e.g. ``special_token_id("<|end|>")``."""
    ids = get_encoding().encode(text, allowed_special={text})
    if len(ids) != 1 or not get_encoding().is_special_token(ids[0]):
        raise ValueError(f"{text!r} is not a harmony special token")
    return ids[0]


@lru_cache(maxsize=1024)
def markup_tokens(text: str) -> tuple[int, ...]:
    """``text`` encoded with its special tokens as such, for harmony markup written by the
    server (``"<|end|><|start|>assistant"``). Cached: each such encode passes harmony's whole
    set of special tokens (0.1 ms), and the same few markups are written for every response."""
    return tuple(get_encoding().encode(text, allowed_special="all"))


@cache
def max_token_id() -> int:
    """The largest valid token id (the special tokens come last in the vocabulary)."""
    encoding = get_encoding()
    # One encode call over all special tokens; encoding them one by one is much slower.
    return max(encoding.encode("".join(sorted(encoding.special_tokens_set)), allowed_special="all"))


@cache
def ordinary_tokens():  # noqa: ANN202  (toktok's encoding)
    """o200k_base without harmony's special tokens (toktok: fast, with byte offsets): what
    counts and cuts plain text."""
    import toktok

    return toktok._encoding("o200k_base")


def token_bytes(token_id: int) -> bytes:
    """The bytes of one token (a logprob's ``bytes``): harmony decodes only whole UTF-8, and
    a token may hold part of a character."""
    try:
        return ordinary_tokens().decode_single_token_bytes(token_id)
    except Exception:  # noqa: BLE001  (harmony's own special tokens are not in o200k_base)
        try:
            return get_encoding().decode([token_id]).encode()
        except Exception:  # noqa: BLE001  (an id outside the vocabulary)
            return b""
