"""The files storage on an S3-compatible store (django-storages' S3Storage), against s3rver,
a local S3-compatible server that this module starts: uploads, downloads, deletes, an
input_file part, and a batch's input and output files all go through the bucket."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator

import boto3
import openai
import pytest

from tests.helpers import wait_until
from tests.live.stack import ROOT, free_port

pytestmark = pytest.mark.core

CLIENTS = ROOT / "tests" / "clients" / "node_modules"
BUCKET = "files"
CREDENTIALS = {"aws_access_key_id": "S3RVER", "aws_secret_access_key": "S3RVER"}  # s3rver's own


@pytest.fixture(scope="module")
def s3rver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """s3rver on a free port with an empty bucket; its endpoint URL."""
    node = shutil.which("node", path=str(CLIENTS / ".bin")) or shutil.which("node")
    if node is None or not (CLIENTS / "s3rver").exists():
        pytest.fail("s3rver is not installed: run `make clients`")
    port = free_port()
    process = subprocess.Popen(
        [node, str(CLIENTS / "s3rver" / "bin" / "s3rver.js"), "--directory", str(tmp_path_factory.mktemp("s3")),
         "--address", "127.0.0.1", "--port", str(port), "--configure-bucket", BUCKET, "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: process.poll() is not None or _bucket_exists(url), timeout=30)
        if process.poll() is not None:
            raise RuntimeError(f"s3rver exited: {process.stderr.read().decode()[-2000:]}")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _bucket_exists(url: str) -> bool:
    try:
        return any(b["Name"] == BUCKET for b in _client(url).list_buckets()["Buckets"])
    except Exception:  # noqa: BLE001 - not listening yet
        return False


def _client(url: str):
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", **CREDENTIALS)


def stored_keys(url: str) -> set[str]:
    return {entry["Key"] for entry in _client(url).list_objects_v2(Bucket=BUCKET).get("Contents", [])}


@pytest.fixture
def s3_files(stack, s3rver: str, settings, monkeypatch: pytest.MonkeyPatch) -> str:
    """The in-process stack's files storage on the bucket, as FILES_S3_* would set it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"])
    settings.STORAGES = {**settings.STORAGES, "files": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": BUCKET, "endpoint_url": s3rver, "region_name": "us-east-1", "addressing_style": "path",
        "file_overwrite": True, "default_acl": None}}}
    return s3rver


def test_a_file_goes_to_the_bucket_and_comes_back_byte_for_byte(carol: openai.OpenAI, s3_files: str):
    data = os.urandom(3 * 2**20 + 17)
    uploaded = carol.files.create(file=("blob.bin", data), purpose="user_data")
    [key] = [key for key in stored_keys(s3_files) if key.endswith(uploaded.id)]
    assert _client(s3_files).head_object(Bucket=BUCKET, Key=key)["ContentLength"] == len(data)
    assert carol.files.content(uploaded.id).read() == data
    carol.files.delete(uploaded.id)
    assert key not in stored_keys(s3_files)


def test_an_input_file_and_a_batch_read_and_write_through_the_bucket(carol: openai.OpenAI, s3_files: str):
    notes = carol.files.create(file=("notes.md", b"The venue is the harbour hall."), purpose="user_data")
    response = carol.responses.create(model="echo", input=[{"role": "user", "content": [
        {"type": "input_file", "file_id": notes.id}]}])
    assert "The venue is the harbour hall." in response.output_text

    lines = b"".join(json.dumps({"custom_id": f"q{n}", "method": "POST", "url": "/v1/responses",
                                 "body": {"model": "echo", "input": f"Question {n}"}}).encode() + b"\n"
                     for n in range(3))
    batch = carol.batches.create(input_file_id=carol.files.create(file=("in.jsonl", lines), purpose="batch").id,
                                 endpoint="/v1/responses", completion_window="24h")
    done = wait_until(lambda: (b := carol.batches.retrieve(batch.id)).status == "completed" and b, timeout=60)
    assert any(key.endswith(done.output_file_id) for key in stored_keys(s3_files))
    output = [json.loads(line) for line in carol.files.content(done.output_file_id).read().splitlines()]
    assert [line["custom_id"] for line in output] == ["q0", "q1", "q2"]


def test_files_copied_into_a_container_come_from_the_bucket(carol: openai.OpenAI, s3_files: str):
    data = b"city,visits\nOslo,12\n"
    csv = carol.files.create(file=("visits.csv", data), purpose="user_data")
    container = carol.containers.create(name="s3", file_ids=[csv.id])
    [file] = carol.containers.files.list(container.id).data
    assert file.path == "/mnt/data/visits.csv"
    assert carol.containers.files.content.retrieve(file.id, container_id=container.id).read() == data
