"""JSON from a client, refused at the edge for what nothing behind it can hold
(wire/json_input.py), and metadata as every object takes it (wire/metadata.py)."""

from __future__ import annotations

import pytest

from responses_app.wire.errors import InvalidRequest
from responses_app.wire.json_input import loads
from responses_app.wire.metadata import parse_metadata

pytestmark = pytest.mark.core


@pytest.mark.parametrize(("body", "code", "param"), [
    (b'{"input": "a', "invalid_json", None),
    (b'{"temperature": NaN}', "invalid_json", None),
    (b'{"temperature": Infinity}', "invalid_json", None),
    (b'{"temperature": 1e400}', "invalid_json", None),
    (b'{"input": [{"content": "\\ud800"}]}', "invalid_text", "input[0].content"),
    (b'{"metadata": {"k": "a\\u0000b"}}', "invalid_text", "metadata.k"),
    (b'{"metadata": {"\\udfff": "v"}}', "invalid_text", "metadata.\ufffd"),
    (b'{"a": {"b": {"c": [1]}}}', "nesting_too_deep", "a.b.c"),
])
def test_what_cannot_be_stored_is_a_400_that_names_where(body, code, param):
    with pytest.raises(InvalidRequest) as error:
        loads(body, max_depth=3)
    assert (error.value.code, error.value.param) == (code, param)


def test_nesting_deeper_than_pythons_recursion_is_a_400_not_a_crash():
    with pytest.raises(InvalidRequest) as error:
        loads("[" * 100_000 + "]" * 100_000, max_depth=64)
    assert error.value.code == "nesting_too_deep"


def test_what_can_be_stored_is_read_as_sent():
    assert loads('{"input": "caf\\u00e9 \\ud83d\\ude00", "n": 1.5}', max_depth=3) == {"input": "café 😀", "n": 1.5}


def test_metadata_takes_sixteen_pairs_of_short_strings():
    assert parse_metadata(None) == {}
    assert parse_metadata({f"k{n}": "v" for n in range(16)}) == {f"k{n}": "v" for n in range(16)}
    for value, code, param in [
        ({f"k{n}": "v" for n in range(17)}, "object_above_max_properties", "metadata"),
        ({"k": 1}, "invalid_type", "metadata.k"),
        ({"k": "v" * 513}, "string_above_max_length", "metadata.k"),
        ({"k" * 65: "v"}, None, "metadata"),
        (["k", "v"], "invalid_type", "metadata"),
    ]:
        with pytest.raises(InvalidRequest) as error:
            parse_metadata(value)
        assert error.value.param == param and (code is None or error.value.code == code)
