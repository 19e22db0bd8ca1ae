"""POST /v1/embeddings: the inputs embedded by the named model, as CreateEmbeddingResponse."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from responses_app.embeddings.registry import embedding_model, is_served
from responses_app.embeddings.requests import EmbeddingsRequest
from responses_app.wire.errors import InvalidRequest, NotFound

# OpenAI's limits for its embedding models: each input, and all of a request's together.
MAX_INPUT_TOKENS = 8192
MAX_REQUEST_TOKENS = 300_000


def create_embeddings(request: EmbeddingsRequest) -> dict[str, Any]:
    if not is_served(request.model):
        raise NotFound(f"The model '{request.model}' does not exist or you do not have access to it.",
                       param="model", code="model_not_found")
    model = embedding_model(request.model)
    if request.dimensions is not None and request.dimensions > model.dimensions:
        raise InvalidRequest(f"'dimensions' is at most {model.dimensions} for '{request.model}', got "
                             f"{request.dimensions}.", param="dimensions", code="invalid_value")
    token_lists = model.tokenize(request.texts) if request.texts is not None else request.token_lists or []
    tokens = _counted_tokens(token_lists, model.vocabulary_size)
    vectors = model.embed_tokens(token_lists, request.dimensions)
    return {"object": "list", "model": request.model,
            "data": [{"object": "embedding", "index": index, "embedding": _encoded(vector, request.encoding_format)}
                     for index, vector in enumerate(vectors)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _counted_tokens(token_lists: list[list[int]], vocabulary_size: int) -> int:
    """The tokens of all inputs, once each input and the request are known to be within the limits."""
    for index, tokens in enumerate(token_lists):
        if len(tokens) > MAX_INPUT_TOKENS:
            raise InvalidRequest(f"This model's maximum context length is {MAX_INPUT_TOKENS} tokens, however you "
                                 f"requested {len(tokens)} tokens in 'input[{index}]'.", param="input",
                                 code="context_length_exceeded")
        if any(token < 0 or token >= vocabulary_size for token in tokens):
            raise InvalidRequest(f"'input[{index}]' has a token id outside the model's vocabulary (0 to "
                                 f"{vocabulary_size - 1}).", param="input", code="invalid_value")
    total = sum(len(tokens) for tokens in token_lists)
    if total > MAX_REQUEST_TOKENS:
        raise InvalidRequest(f"A request has at most {MAX_REQUEST_TOKENS} tokens of input, got {total}.",
                             param="input", code="max_tokens_per_request")
    return total


def _encoded(vector: np.ndarray, encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":  # float32, little-endian, as the SDK decodes it
        return base64.b64encode(vector.astype("<f4").tobytes()).decode()
    return vector.tolist()
