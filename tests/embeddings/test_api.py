"""POST /v1/embeddings through the openai SDK (client.embeddings.create) against the live
stack: texts and token ids, the SDK's base64 and plain floats, dimensions, usage, and bad
requests as OpenAI's 4xx."""

from __future__ import annotations

import jsonschema
import numpy as np
import openai
import pytest

from responses_app.embeddings.registry import embedding_model
from tests.conftest import http_client
from tests.helpers import assert_openai_error

pytestmark = pytest.mark.core

MODEL = "wordllama-l2-supercat"


def vectors(response) -> np.ndarray:
    return np.array([item.embedding for item in response.data], dtype=np.float32)


def test_the_sdk_embeds_texts_as_unit_vectors_that_rank_by_meaning(carol: openai.OpenAI):
    texts = ["The cat sat on the mat.", "A kitten was resting on the rug.", "Quarterly revenue rose 12 percent."]
    response = carol.embeddings.create(model=MODEL, input=texts)  # the SDK asks for base64 and decodes it

    assert (response.object, response.model) == ("list", MODEL)
    assert [(item.object, item.index) for item in response.data] == [("embedding", n) for n in range(3)]
    found = vectors(response)
    assert found.shape == (3, 256) and np.allclose(np.linalg.norm(found, axis=1), 1, atol=1e-5)
    similarity = found @ found.T
    assert similarity[0, 1] > similarity[0, 2] and similarity[0, 1] > similarity[1, 2]
    tokens = sum(len(ids) for ids in embedding_model(MODEL).tokenize(texts))
    assert (response.usage.prompt_tokens, response.usage.total_tokens) == (tokens, tokens)

    floats = carol.embeddings.create(model=MODEL, input=texts, encoding_format="float")
    assert np.allclose(vectors(floats), found, atol=1e-6)


def test_token_ids_embed_as_their_text_and_dimensions_cut_the_vector(carol: openai.OpenAI):
    text = "Parking permits are issued within ten days."
    [ids] = embedding_model(MODEL).tokenize([text])
    by_text = vectors(carol.embeddings.create(model=MODEL, input=text))[0]
    assert np.allclose(vectors(carol.embeddings.create(model=MODEL, input=ids))[0], by_text, atol=1e-6)
    both = vectors(carol.embeddings.create(model=MODEL, input=[ids, ids[:3]]))
    assert both.shape == (2, 256) and np.allclose(both[0], by_text, atol=1e-6)

    # Matryoshka weights: the first 64 dimensions, brought to unit length, are an embedding.
    short = vectors(carol.embeddings.create(model=MODEL, input=text, dimensions=64))[0]
    assert short.shape == (64,) and np.allclose(short, by_text[:64] / np.linalg.norm(by_text[:64]), atol=1e-5)


BAD_REQUESTS = [
    ({"input": "x"}, "model"),
    ({"model": MODEL}, "input"),
    ({"model": MODEL, "input": ""}, "input"),
    ({"model": MODEL, "input": []}, "input"),
    ({"model": MODEL, "input": ["a", ""]}, "input"),
    ({"model": MODEL, "input": {"text": "a"}}, "input"),
    ({"model": MODEL, "input": ["a", 1]}, "input"),
    ({"model": MODEL, "input": [[1, 2], []]}, "input"),
    ({"model": MODEL, "input": [True]}, "input"),
    ({"model": MODEL, "input": ["a"] * 2049}, "input"),
    ({"model": MODEL, "input": [32000]}, "input"),
    ({"model": MODEL, "input": [-1]}, "input"),
    ({"model": MODEL, "input": [[5] * 8193]}, "input"),
    ({"model": MODEL, "input": "a", "dimensions": 0}, "dimensions"),
    ({"model": MODEL, "input": "a", "dimensions": 257}, "dimensions"),
    ({"model": MODEL, "input": "a", "dimensions": "64"}, "dimensions"),
    ({"model": MODEL, "input": "a", "encoding_format": "hex"}, "encoding_format"),
    ({"model": 5, "input": "a"}, "model"),
    ({"model": MODEL, "input": "a", "user": 5}, "user"),
    ({"model": MODEL, "input": "a", "truncate": True}, "truncate"),
]


@pytest.mark.parametrize(("body", "param"), BAD_REQUESTS)
def test_a_bad_request_is_a_400_naming_its_parameter(carol: openai.OpenAI, stack, body: dict, param: str):
    with http_client(stack, carol.api_key) as http:
        assert_openai_error(http.post("/embeddings", json=body), 400, param)


def test_an_unknown_model_is_a_404_and_a_request_without_a_key_a_401(carol: openai.OpenAI, stack):
    with pytest.raises(openai.NotFoundError) as refused:
        carol.embeddings.create(model="text-embedding-3-small", input="a")
    assert refused.value.code == "model_not_found"
    with http_client(stack) as http:
        assert http.post("/embeddings", json={"model": MODEL, "input": "a"}).status_code == 401


@pytest.mark.parametrize("encoding_format", ["float", "base64"])
def test_the_openapi_document_describes_the_answer_in_either_encoding(carol: openai.OpenAI, stack,
                                                                      encoding_format: str):
    with http_client(stack, carol.api_key) as http:
        document = http.get("/openapi.json").json()
        answer = http.post("/embeddings", json={"model": MODEL, "input": ["a cat"],
                                                "encoding_format": encoding_format})
    assert answer.status_code == 200
    embedding = answer.json()["data"][0]["embedding"]
    assert isinstance(embedding, str if encoding_format == "base64" else list)
    schema = {"$ref": "#/components/schemas/CreateEmbeddingResponse", "components": document["components"]}
    jsonschema.Draft202012Validator(schema).validate(answer.json())
