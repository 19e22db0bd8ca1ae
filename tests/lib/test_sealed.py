"""lib/sealed: what a client carries for the server is unreadable, unalterable and bound."""

from __future__ import annotations

import pytest

from responses_app.lib.sealed import Unsealable, seal, unseal


def test_a_sealed_payload_opens_only_for_its_context_and_purpose():
    token = seal([{"text": "secret reasoning"}], purpose="reasoning", context="7", secrets=["s1"])

    assert "secret" not in token
    assert unseal(token, purpose="reasoning", context="7", secrets=["s1"]) == [{"text": "secret reasoning"}]
    for purpose, context in (("reasoning", "8"), ("other", "7")):
        with pytest.raises(Unsealable):
            unseal(token, purpose=purpose, context=context, secrets=["s1"])


def test_a_secret_is_rotated_by_putting_the_new_one_first():
    old = seal({"a": 1}, purpose="p", context="c", secrets=["old"])

    assert unseal(old, purpose="p", context="c", secrets=["new", "old"]) == {"a": 1}
    new = seal({"a": 2}, purpose="p", context="c", secrets=["new", "old"])
    with pytest.raises(Unsealable):
        unseal(new, purpose="p", context="c", secrets=["old"])
    with pytest.raises(Unsealable):  # the old secret retired
        unseal(old, purpose="p", context="c", secrets=["new"])


@pytest.mark.parametrize("token", ["", "gAAAAB", "sealed1_!!!", "sealed1_AAAA"])
def test_what_this_server_did_not_seal_does_not_open(token):
    with pytest.raises(Unsealable):
        unseal(token, purpose="p", context="c", secrets=["s"])
