"""POST /v1/embeddings, as ``client.embeddings.create`` sends it: ``input`` a string, an
array of strings, an array of token ids or an array of such arrays; ``model``;
``dimensions``; ``encoding_format`` (the Python SDK asks for base64 unless told otherwise);
``user``. The limits are OpenAI's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.request_body import body_fields, is_integer

MAX_INPUTS = 2048
ENCODING_FORMATS = ("float", "base64")
INPUT_TYPE = "a string, an array of strings, an array of integers or an array of arrays of integers"


@dataclass(frozen=True)
class EmbeddingsRequest:
    model: str
    # Exactly one of the two: the texts, or the token ids of each input.
    texts: list[str] | None
    token_lists: list[list[int]] | None
    dimensions: int | None
    encoding_format: str


def parse_embeddings_create(body: Any) -> EmbeddingsRequest:
    fields = body_fields(body, ("input", "model", "dimensions", "encoding_format", "user"),
                         required=("input", "model"))
    if not isinstance(fields["model"], str):
        raise invalid_type("model", "a string", fields["model"])
    texts, token_lists = _inputs(fields["input"])
    dimensions = fields.get("dimensions")
    if dimensions is not None and (not is_integer(dimensions) or dimensions < 1):
        raise InvalidRequest(f"Invalid value for 'dimensions': expected a positive integer, got {dimensions!r}.",
                             param="dimensions", code="invalid_value")
    encoding_format = fields.get("encoding_format", "float")
    if encoding_format not in ENCODING_FORMATS:
        raise InvalidRequest(f"Invalid value for 'encoding_format': {encoding_format!r}. Supported values are: "
                             "'float' and 'base64'.", param="encoding_format", code="invalid_value")
    if "user" in fields and not isinstance(fields["user"], str):
        raise invalid_type("user", "a string", fields["user"])
    return EmbeddingsRequest(model=fields["model"], texts=texts, token_lists=token_lists, dimensions=dimensions,
                             encoding_format=encoding_format)


def _inputs(value: Any) -> tuple[list[str] | None, list[list[int]] | None]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise invalid_type("input", INPUT_TYPE, value)
    if not value:
        raise InvalidRequest("'input' must not be empty.", param="input", code="invalid_value")
    if all(is_integer(token) for token in value):
        value = [value]  # one input given as its tokens
    if len(value) > MAX_INPUTS:
        raise InvalidRequest(f"'input' has at most {MAX_INPUTS} inputs, got {len(value)}.", param="input",
                             code="array_above_max_length")
    if all(isinstance(text, str) for text in value):
        for index, text in enumerate(value):
            if not text:
                raise InvalidRequest(f"'input[{index}]' is an empty string.", param="input", code="invalid_value")
        return value, None
    if all(isinstance(tokens, list) and tokens and all(is_integer(token) for token in tokens) for tokens in value):
        return None, value
    raise invalid_type("input", INPUT_TYPE, value)
