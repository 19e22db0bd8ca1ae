"""The embedding models this deployment serves (settings.EMBEDDING_MODELS), each loaded
once per process on first use."""

from __future__ import annotations

import threading

from django.conf import settings

from responses_app.embeddings.static_model import StaticEmbeddingModel

ENGINES = {"wordllama": StaticEmbeddingModel}
_loaded: dict[str, StaticEmbeddingModel] = {}
_lock = threading.Lock()


def is_served(model_id: str) -> bool:
    return model_id in settings.EMBEDDING_MODELS


def embedding_model(model_id: str) -> StaticEmbeddingModel:
    """The loaded model; KeyError for a model the registry does not name."""
    with _lock:
        if model_id not in _loaded:
            engine = settings.EMBEDDING_MODELS[model_id]["engine"]
            if engine not in ENGINES:
                raise ValueError(f"EMBEDDING_MODELS[{model_id!r}]: unknown engine {engine!r} "
                                 f"(known: {', '.join(ENGINES)})")
            _loaded[model_id] = ENGINES[engine]()
        return _loaded[model_id]
