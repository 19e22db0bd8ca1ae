"""The tool_search call's arguments as the model writes them."""

from __future__ import annotations

import json

import pytest

from responses_app.harmony.tool_search import DEFAULT_LIMIT, MAX_LIMIT, limit_of


@pytest.mark.parametrize(("arguments", "limit"), [
    ('{"limit": 3}', 3),
    ('{"limit": 2.9}', 2),
    (f'{{"limit": {MAX_LIMIT + 5}}}', MAX_LIMIT),
    ('{"limit": 0}', DEFAULT_LIMIT),
    ('{"limit": true}', DEFAULT_LIMIT),
    ('{"limit": "4"}', DEFAULT_LIMIT),
    ('{"limit": Infinity}', DEFAULT_LIMIT),  # json.loads reads it; int() of it would raise
    ('{"limit": NaN}', DEFAULT_LIMIT),
    ('{}', DEFAULT_LIMIT),
])
def test_a_limit_the_model_wrote_is_kept_within_bounds_and_a_bad_one_is_the_default(arguments, limit):
    assert limit_of(json.loads(arguments)) == limit
