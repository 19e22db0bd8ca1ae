"""A static embedding model: each token of the text has a learned vector, and the text's
embedding is their mean, cut to the dimensions asked for and brought to unit length.

The weights are WordLlama's ``l2_supercat`` (the ``wordllama`` package ships them with its
tokenizer, LLaMA 2's 32,000 tokens, so nothing is downloaded): 256 dimensions trained
Matryoshka-style, so that the first 64 or 128 are an embedding too. It costs a table lookup
per token (a few hundred thousand tokens a second on one core), which lets a CPU-only
deployment rank by meaning; a GPU node would serve a transformer model instead."""

from __future__ import annotations

from importlib import resources

import numpy as np
from safetensors import safe_open
from tokenizers import Tokenizer

WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"


class StaticEmbeddingModel:
    def __init__(self) -> None:
        package = resources.files("wordllama")
        with safe_open(str(package / WEIGHTS), framework="np") as weights:
            self._vectors = np.ascontiguousarray(weights.get_tensor("embedding.weight"), dtype=np.float32)
        self._tokenizer = Tokenizer.from_file(str(package / TOKENIZER))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self.vocabulary_size, self.dimensions = self._vectors.shape

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def embed_tokens(self, token_lists: list[list[int]], dimensions: int | None = None) -> np.ndarray:
        """One unit vector (float32) per token list; the zero vector for an empty one."""
        width = dimensions or self.dimensions
        out = np.zeros((len(token_lists), width), dtype=np.float32)
        for row, tokens in enumerate(token_lists):
            if tokens:
                out[row] = self._vectors[np.asarray(tokens, dtype=np.int64), :width].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed(self, texts: list[str], dimensions: int | None = None) -> np.ndarray:
        return self.embed_tokens(self.tokenize(texts), dimensions)
