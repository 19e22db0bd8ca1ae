"""The Files API through Daphne: a large upload is spooled, stored and streamed back
byte for byte, one over the cap is refused before its body is read, and beat purges
expired files."""

from __future__ import annotations

import os

import openai
import pytest
from django.utils import timezone

from tests.helpers import wait_until

pytestmark = pytest.mark.core


def test_a_large_upload_comes_back_byte_for_byte(alice: openai.OpenAI):
    data = os.urandom(3 * 2**20 + 17)
    uploaded = alice.files.create(file=("blob.bin", data), purpose="user_data")
    assert uploaded.bytes == len(data)
    assert alice.files.content(uploaded.id).read() == data


def test_an_upload_over_the_cap_is_413_before_its_body_is_read(alice: openai.OpenAI, db_access):
    from responses_app.models import StoredFile

    before = StoredFile.objects.count()
    with pytest.raises(openai.APIStatusError) as refused:
        alice.files.create(file=("big.bin", b"\0" * (6 * 2**20)), purpose="user_data")  # the stack's cap: 4 MiB
    assert refused.value.status_code == 413 and refused.value.body["type"] == "invalid_request_error"
    assert StoredFile.objects.count() == before


def test_beat_purges_an_expired_file_and_its_bytes(alice: openai.OpenAI, stack, db_access):
    from responses_app.models import StoredFile

    uploaded = alice.files.create(file=("soon.txt", b"soon"), purpose="user_data",
                                  expires_after={"anchor": "created_at", "seconds": 3600})
    path = stack.env["FILES_DIR"] + "/" + StoredFile.objects.get(pk=uploaded.id).storage_name
    assert os.path.exists(path)
    StoredFile.objects.filter(pk=uploaded.id).update(expires_at=timezone.now())
    wait_until(lambda: not StoredFile.objects.filter(pk=uploaded.id).exists(), timeout=15)
    wait_until(lambda: not os.path.exists(path), timeout=5)
