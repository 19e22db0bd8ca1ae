"""client.containers and client.containers.files against the live stack: containers made
up front, files uploaded into /mnt/data and read by the code interpreter, files the code
wrote listed and downloaded, isolation and key scopes."""

from __future__ import annotations

import openai
import pytest

from tests.conftest import http_client, sdk_client
from tests.helpers import new_key
from tests.live.test_tools import OUTPUTS, final, python_call, script

pytestmark = pytest.mark.core

CSV = b"city,visitors\nParis,30\nRome,12\n"
DOT_PNG = ("import base64\nopen('/mnt/data/dot.png','wb').write(base64.b64decode("
           "'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='))")


def test_containers_are_created_listed_retrieved_and_deleted(carol):  # a tenant of its own: the list is all of it
    made = carol.containers.create(name="analysis", expires_after={"anchor": "last_active_at", "minutes": 5})
    assert (made.object, made.name, made.status) == ("container", "analysis", "running")
    assert made.id.startswith("cntr_") and made.expires_after.minutes == 5
    assert carol.containers.retrieve(made.id).model_dump() == made.model_dump()
    others = [carol.containers.create(name=f"other {n}") for n in range(3)]
    assert [c.id for c in carol.containers.list(name="analysis")] == [made.id]
    newest = carol.containers.list(limit=2)
    assert [c.id for c in newest.data] == [others[2].id, others[1].id] and newest.has_more
    oldest_first = [c.id for c in carol.containers.list(order="asc", limit=1)]  # the SDK follows the pages
    assert oldest_first.index(made.id) < oldest_first.index(others[0].id)

    carol.containers.files.create(made.id, file=("notes.txt", b"hello"))
    carol.containers.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        carol.containers.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        carol.containers.files.list(made.id)


def test_an_uploaded_csv_is_read_by_the_code_and_what_the_code_writes_is_downloaded(alice):
    container = alice.containers.create(name="csv")
    uploaded = alice.containers.files.create(container.id, file=("data.csv", CSV, "text/csv"))
    assert (uploaded.object, uploaded.path, uploaded.bytes, uploaded.source, uploaded.container_id) == (
        "container.file", "/mnt/data/data.csv", len(CSV), "user", container.id)
    assert alice.containers.files.retrieve(uploaded.id, container_id=container.id).model_dump() == \
        uploaded.model_dump()
    assert alice.containers.files.content.retrieve(uploaded.id, container_id=container.id).read() == CSV

    code = "import csv\nrows = list(csv.DictReader(open('/mnt/data/data.csv')))\n" \
           "print(sum(int(r['visitors']) for r in rows))\n" + DOT_PNG
    response = alice.responses.create(
        model="echo", tools=[{"type": "code_interpreter", "container": container.id}], include=OUTPUTS,
        input=script(python_call(code), final("The total is {tool_output}")))
    assert response.status == "completed" and response.output_text.startswith("The total is 42")
    [call] = [item for item in response.output if item.type == "code_interpreter_call"]
    assert call.container_id == container.id

    files = {f.path: f for f in alice.containers.files.list(container.id)}
    assert set(files) == {"/mnt/data/data.csv", "/mnt/data/dot.png"}
    image = files["/mnt/data/dot.png"]
    assert image.source == "assistant" and files["/mnt/data/data.csv"].source == "user"
    [output] = [o for o in call.outputs if o.type == "image"]
    assert output.url.endswith(f"/v1/containers/{container.id}/files/{image.id}/content")
    png = alice.containers.files.content.retrieve(image.id, container_id=container.id).read()
    assert png.startswith(b"\x89PNG") and len(png) == image.bytes

    alice.containers.files.delete(uploaded.id, container_id=container.id)
    assert [f.path for f in alice.containers.files.list(container.id)] == ["/mnt/data/dot.png"]
    with pytest.raises(openai.NotFoundError):
        alice.containers.files.content.retrieve(uploaded.id, container_id=container.id)
    gone = alice.responses.create(
        model="echo", tools=[{"type": "code_interpreter", "container": container.id}],
        input=script(python_call("import os\nprint(sorted(os.listdir('/mnt/data')))"), final("{tool_output}")))
    assert gone.output_text.startswith("['dot.png']")


def test_bad_container_requests_are_4xx(alice, settings):
    container = alice.containers.create(name="bad")
    for body in ({}, {"name": 5}, {"name": "x", "file_ids": "file-1"}, {"name": "x", "memory_limit": "4g"},
                 {"name": "x", "network_policy": {"type": "allowlist", "allowed_domains": ["example.com"]}},
                 {"name": "x", "expires_after": {"anchor": "created_at", "minutes": 5}},
                 {"name": "x", "expires_after": {"anchor": "last_active_at", "minutes": 0}}, {"name": "x", "y": 1}):
        with pytest.raises(openai.BadRequestError):
            alice.post("/containers", body=body, cast_to=dict)
    with pytest.raises(openai.BadRequestError) as too_big:
        alice.containers.files.create(container.id, file=("big.bin", b"x" * 65537))
    assert too_big.value.code == "file_too_large"
    with pytest.raises(openai.NotFoundError) as by_id:
        alice.containers.files.create(container.id, file_id="file-123")
    assert by_id.value.param == "file_id"
    settings.CONTAINER_FILE_MAX_BYTES = 4
    with pytest.raises(openai.BadRequestError) as too_big_to_copy:
        alice.containers.files.create(container.id, file_id=alice.files.create(file=("five", b"12345"),
                                                                               purpose="user_data").id)
    assert (too_big_to_copy.value.param, too_big_to_copy.value.code) == ("file_id", "file_too_large")
    with pytest.raises(openai.BadRequestError):
        alice.containers.files.list(container.id, after="cfile_missing")
    assert alice.containers.files.list(container.id).data == []


def test_another_tenants_containers_and_files_are_not_found(alice, bob):
    container = alice.containers.create(name="private")
    file = alice.containers.files.create(container.id, file=("secret.txt", b"secret"))
    for attempt in (
        lambda: bob.containers.retrieve(container.id),
        lambda: bob.containers.delete(container.id),
        lambda: bob.containers.files.list(container.id),
        lambda: bob.containers.files.create(container.id, file=("x.txt", b"x")),
        lambda: bob.containers.files.retrieve(file.id, container_id=container.id),
        lambda: bob.containers.files.delete(file.id, container_id=container.id),
        lambda: bob.containers.files.content.retrieve(file.id, container_id=container.id),
    ):
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert container.id not in [c.id for c in bob.containers.list()]
    # A response of bob's naming it cannot run code in it either.
    intrusion = bob.responses.create(
        model="echo", tools=[{"type": "code_interpreter", "container": container.id}], include=OUTPUTS,
        input=script(python_call("open('/mnt/data/secret.txt', 'w').write('bob')"), final("{tool_output}")))
    [call] = [item for item in intrusion.output if item.type == "code_interpreter_call"]
    assert call.status == "failed" and "not found" in call.outputs[0].logs
    assert [f.path for f in alice.containers.files.list(container.id)] == ["/mnt/data/secret.txt"]
    assert alice.containers.files.content.retrieve(file.id, container_id=container.id).read() == b"secret"


def test_a_read_only_key_lists_and_downloads_but_cannot_create_upload_or_delete(alice, stack, db_access):
    container = alice.containers.create(name="shared")
    file = alice.containers.files.create(container.id, file=("a.txt", b"a"))
    reader = sdk_client(stack, new_key("alice", scope="read_only"))
    assert container.id in [c.id for c in reader.containers.list()]
    assert reader.containers.files.content.retrieve(file.id, container_id=container.id).read() == b"a"
    for attempt in (
        lambda: reader.containers.create(name="x"),
        lambda: reader.containers.delete(container.id),
        lambda: reader.containers.files.create(container.id, file=("b.txt", b"b")),
        lambda: reader.containers.files.delete(file.id, container_id=container.id),
    ):
        with pytest.raises(openai.PermissionDeniedError):
            attempt()
    # Nothing written: no container made, the container and its one file still there.
    assert "x" not in [c.name for c in alice.containers.list()]
    assert alice.containers.retrieve(container.id).name == "shared"
    assert [(f.id, f.path) for f in alice.containers.files.list(container.id)] == [(file.id, file.path)]


def test_a_download_streams_the_bytes_with_headers_that_keep_browsers_from_running_them(
        alice, stack, alice_key, settings):
    from responses_app.http.file_download import CHUNK_BYTES

    settings.CONTAINER_FILE_MAX_BYTES = 4 * CHUNK_BYTES
    container = alice.containers.create(name="download")
    data = bytes(range(256)) * (CHUNK_BYTES // 256 * 2 + 3)  # three chunks, the last one short
    file = alice.containers.files.create(container.id, file=("page.html", data))
    with http_client(stack, alice_key) as client:
        reply = client.get(f"/containers/{container.id}/files/{file.id}/content")
    assert reply.status_code == 200 and reply.content == data
    assert reply.headers["content-length"] == str(len(data))
    assert reply.headers["content-type"] == "application/octet-stream"
    assert reply.headers["content-disposition"] == 'attachment; filename="page.html"'
    assert (reply.headers["content-security-policy"], reply.headers["x-content-type-options"]) == ("sandbox", "nosniff")
    with http_client(stack, alice_key) as client:
        missing = client.get(f"/containers/{container.id}/files/cfile_nope/content")
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "file_id"
    with http_client(stack) as client:
        assert client.get(f"/containers/{container.id}/files/{file.id}/content").status_code == 401


def test_files_of_the_files_api_go_into_a_container_by_id(carol, bob):
    notes = carol.files.create(file=("notes.txt", b"hello"), purpose="user_data")
    data = carol.files.create(file=("data.csv", CSV), purpose="assistants")
    container = carol.containers.create(name="with files", file_ids=[notes.id, data.id])
    files = {f.path: f for f in carol.containers.files.list(container.id)}
    assert set(files) == {"/mnt/data/notes.txt", "/mnt/data/data.csv"}
    assert carol.containers.files.content.retrieve(files["/mnt/data/data.csv"].id,
                                                   container_id=container.id).read() == CSV

    other = carol.containers.create(name="one more")
    copied = carol.containers.files.create(other.id, file_id=notes.id)
    assert (copied.path, copied.bytes, copied.source) == ("/mnt/data/notes.txt", 5, "user")

    with pytest.raises(openai.NotFoundError) as unknown:
        carol.containers.create(name="x", file_ids=[notes.id, "file-nope"])
    assert unknown.value.param == "file_ids[1]"
    with pytest.raises(openai.NotFoundError):  # another tenant's file is no file
        bob.containers.create(name="x", file_ids=[notes.id])
    with pytest.raises(openai.NotFoundError) as not_bobs:
        bob.containers.files.create(bob.containers.create(name="y").id, file_id=notes.id)
    assert not_bobs.value.param == "file_id"
    assert [c.name for c in carol.containers.list()] == ["one more", "with files"]  # the refused made none


def test_an_auto_container_starts_with_the_tools_files(carol):
    data = carol.files.create(file=("data.csv", CSV), purpose="user_data")
    code = "import csv\nprint(sum(int(r['visitors']) for r in csv.DictReader(open('/mnt/data/data.csv'))))"
    tool = {"type": "code_interpreter", "container": {"type": "auto", "file_ids": [data.id]}}
    response = carol.responses.create(model="echo", tools=[tool], include=OUTPUTS,
                                      input=script(python_call(code), final("The total is {tool_output}")))
    assert response.status == "completed" and response.output_text.startswith("The total is 42")
    with pytest.raises(openai.NotFoundError) as unknown:
        carol.responses.create(model="echo", input="x", tools=[
            {"type": "code_interpreter", "container": {"type": "auto", "file_ids": ["file-nope"]}}])
    assert unknown.value.param == "tools[0].container.file_ids[0]"
