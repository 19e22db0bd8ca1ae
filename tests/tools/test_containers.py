"""Code interpreter containers as services: resolving a request's container (tenant
scoped), running code in it (serialised, stateful across lookups), expiry, and the file
file endpoints. Real bubblewrap, real database (SQLite or PostgreSQL)."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.utils import timezone

from responses_app.models import Tenant
from responses_app.tenancy.api_keys import create_api_key
from tools_app import tasks
from tools_app.container_files import open_file, upload_file
from tools_app.containers import (
    ContainerNotFound,
    execute,
    expire_idle_containers,
    resolve_container,
)
from tools_app.models import Container, ContainerFile, ContainerStatus
from tools_app.sandbox import Workspace
from tools_app.sandbox.files import open_beneath

pytestmark = [pytest.mark.django_db, pytest.mark.core]


@pytest.fixture(autouse=True)
def containers_dir(settings, tmp_path):
    settings.CONTAINERS_DIR = tmp_path / "containers"
    settings.CONTAINER_IDLE_TIMEOUT_S = 600
    return settings.CONTAINERS_DIR


@pytest.fixture
def alice_key() -> str:
    return create_api_key("alice-containers")[1]


@pytest.fixture
def bob_key() -> str:
    return create_api_key("bob-containers")[1]


@pytest.fixture
def alice(alice_key) -> Tenant:
    return Tenant.objects.get(name="alice-containers")


@pytest.fixture
def bob(bob_key) -> Tenant:
    return Tenant.objects.get(name="bob-containers")


def expire(container: Container) -> None:
    Container.objects.filter(pk=container.pk).update(status=ContainerStatus.EXPIRED)


# --- resolve_container ----------------------------------------------------------------------


def test_auto_creates_a_running_container_with_its_dir(alice, containers_dir):
    container = resolve_container(alice.pk, {"type": "auto"})
    assert container.id.startswith("cntr_")
    assert (container.tenant_id, container.status, container.idle_timeout_s) == (alice.pk, "running", 600)
    assert (containers_dir / container.id / "data").is_dir()


def test_auto_reuses_the_conversations_container_only_if_it_is_the_tenants_and_running(alice, bob):
    earlier = resolve_container(alice.pk, {"type": "auto"})
    assert resolve_container(alice.pk, {"type": "auto"}, reuse_id=earlier.id) == earlier
    assert resolve_container(bob.pk, {"type": "auto"}, reuse_id=earlier.id) not in (earlier, None)
    expire(earlier)
    fresh = resolve_container(alice.pk, {"type": "auto", "file_ids": []}, reuse_id=earlier.id)
    assert fresh != earlier and fresh.status == "running"


def test_an_explicit_id_must_be_the_tenants_running_container(alice, bob):
    container = resolve_container(alice.pk, {"type": "auto"})
    assert resolve_container(alice.pk, container.id) == container
    with pytest.raises(ContainerNotFound, match=f"^Container '{container.id}' not found or expired.$"):
        resolve_container(bob.pk, container.id)
    with pytest.raises(ContainerNotFound, match="not found or expired"):
        resolve_container(alice.pk, "cntr_doesnotexist")
    expire(container)
    with pytest.raises(ContainerNotFound, match="not found or expired"):
        resolve_container(alice.pk, container.id)


# --- execute ------------------------------------------------------------------------------


def test_state_persists_across_calls_and_a_new_lookup_of_the_container(alice):
    container = resolve_container(alice.pk, {"type": "auto"})
    first = execute(container, "import json\nanswer = 42\ndef double(n):\n    return 2 * n")
    assert first.error is None
    again = resolve_container(alice.pk, {"type": "auto"}, reuse_id=container.id)
    assert execute(again, "json.dumps({'v': double(answer)})").logs == "'{\"v\": 84}'\n"


def test_containers_do_not_share_state_or_files(alice):
    one = resolve_container(alice.pk, {"type": "auto"})
    other = resolve_container(alice.pk, {"type": "auto"})
    execute(one, "secret = 1\nopen('mine.txt', 'w').write('x')")
    result = execute(other, "import os\nprint('secret' in globals(), os.listdir('.'))")
    assert result.logs == "False []\n"


def test_execute_records_activity_and_lists_files(alice):
    container = resolve_container(alice.pk, {"type": "auto"})
    Container.objects.filter(pk=container.pk).update(last_active_at=timezone.now() - timedelta(hours=1))
    result = execute(container, "open('report.txt', 'w').write('done')")
    assert result.files == ["report.txt"] and result.error is None
    container.refresh_from_db()
    assert timezone.now() - container.last_active_at < timedelta(seconds=30)


def test_execute_refuses_an_expired_container(alice):
    container = resolve_container(alice.pk, {"type": "auto"})
    expire(container)
    with pytest.raises(ContainerNotFound):
        execute(container, "print(1)")


def held_by_another_node(container: Container, for_s: float) -> None:
    """The lease a call on another node holds, until it runs out ``for_s`` from now."""
    Container.objects.filter(pk=container.pk).update(
        lock_owner="node-b:4242:0123456789ab", lock_expires_at=timezone.now() + timedelta(seconds=for_s))


def test_a_call_waits_for_the_call_of_another_node_and_takes_over_a_lost_nodes_lease(alice, settings):
    container = resolve_container(alice.pk, {"type": "auto"})
    held_by_another_node(container, for_s=1.0)
    started = time.time()
    result = execute(container, "import time\ntime.time()")
    # It ran once the other node's lease ran out (a node that is lost renews it no more).
    assert float(result.logs) > started + 0.9
    container.refresh_from_db()
    assert (container.lock_owner, container.lock_expires_at) == ("", None)  # released after the call


def test_a_call_that_outlived_its_lease_keeps_none_of_its_changes(alice, monkeypatch):
    from tools_app import containers

    container = resolve_container(alice.pk, {"type": "auto"})
    execute(container, "open('kept.txt', 'w').write('1')")
    version = Container.objects.get(pk=container.pk).files_version
    real_run_code = containers.run_code

    def paused_past_the_lease(*args, **kwargs):
        result = real_run_code(*args, **kwargs)
        held_by_another_node(container, for_s=30)  # its lease ran out and another node took it
        return result

    monkeypatch.setattr(containers, "run_code", paused_past_the_lease)
    execute(container, "open('lost.txt', 'w').write('2')")
    assert set(ContainerFile.objects.filter(container=container).values_list("path", flat=True)) == {"kept.txt"}
    assert Container.objects.get(pk=container.pk).files_version == version


# --- expiry -------------------------------------------------------------------------------


def test_idle_containers_expire_and_lose_their_files(alice, containers_dir):
    idle = resolve_container(alice.pk, {"type": "auto"})
    active = resolve_container(alice.pk, {"type": "auto"})
    execute(idle, "open('f.txt', 'w').write('x')")
    Container.objects.filter(pk=idle.pk).update(last_active_at=timezone.now() - timedelta(seconds=601))
    assert expire_idle_containers() == 1
    assert Container.objects.get(pk=idle.pk).status == "expired"
    assert Container.objects.get(pk=active.pk).status == "running"
    assert not (containers_dir / idle.id).exists()
    assert (containers_dir / active.id).exists()
    assert expire_idle_containers() == 0


def test_a_container_busy_in_a_call_is_not_expired(alice):
    container = resolve_container(alice.pk, {"type": "auto"})
    Container.objects.filter(pk=container.pk).update(last_active_at=timezone.now() - timedelta(hours=1))
    held_by_another_node(container, for_s=30)
    assert expire_idle_containers() == 0
    Container.objects.filter(pk=container.pk).update(lock_owner="", lock_expires_at=None)  # the call ended
    assert tasks.expire_idle_containers() == 1


# --- files ----------------------------------------------------------------------------------


def test_files_the_code_writes_are_the_containers_files_and_links_are_never_followed(alice, bob):
    container = resolve_container(alice.pk, {"type": "auto"})
    execute(container, "import os\nos.makedirs('out')\nopen('out/a.txt', 'w').write('a')\n"
                       "open('gone.txt', 'w').write('x')\n"
                       "os.symlink('/etc/passwd', 'passwd')\nos.symlink('/etc', 'etc')")
    files = {f.path: (f.bytes, f.source) for f in ContainerFile.objects.filter(container=container)}
    assert files == {"out/a.txt": (1, "assistant"), "gone.txt": (1, "assistant")}  # links are not files
    execute(container, "import os\nos.remove('gone.txt')")
    [written] = ContainerFile.objects.filter(container=container)
    file, content = open_file(alice.pk, container.id, written.id)
    with content:
        assert (file.path, content.read()) == ("out/a.txt", b"a")
    with pytest.raises(ContainerNotFound):
        open_file(bob.pk, container.id, written.id)
    data_dir = Workspace.for_container(container.id).data_dir
    for path in ("../session/session.pkl", "/etc/passwd", "passwd", "etc/passwd", "out", "missing.txt", ""):
        with pytest.raises(FileNotFoundError):
            os.close(open_beneath(data_dir, path))
    with pytest.raises(FileExistsError):  # an upload never writes through a planted link
        upload_file(alice.pk, container.id, "passwd", [b"root::0:0::/:/bin/sh"])
    assert upload_file(alice.pk, container.id, "new.txt", [b"hello"]).source == "user"


def test_the_admin_lists_containers_read_only(client, django_user_model, alice):
    container = resolve_container(alice.pk, {"type": "auto"})
    client.force_login(django_user_model.objects.create_superuser("operator", "op@example.com", "pw"))
    listing = client.get("/admin/tools_app/container/")
    assert listing.status_code == 200 and container.id in listing.content.decode()
    detail = client.get(f"/admin/tools_app/container/{quote(container.id)}/change/")  # as the admin quotes it
    assert detail.status_code == 200 and 'name="status"' not in detail.content.decode()
    assert client.get("/admin/tools_app/container/add/").status_code == 403


def test_a_containers_files_live_in_the_shared_storage_for_any_node_to_serve_and_run(alice, settings, tmp_path):
    from django.core.files.storage import storages

    from tools_app.container_files import delete_file

    settings.STORAGES = {**settings.STORAGES, "files": {**settings.STORAGES["files"],
                                                         "OPTIONS": {"location": str(tmp_path / "files")}}}
    container = resolve_container(alice.pk, {"type": "auto"})
    execute(container, "import os\nos.makedirs('out')\nopen('out/a.txt', 'w').write('from node one')\nx = 41")
    upload_file(alice.pk, container.id, "b.txt", [b"uploaded"])
    assert storages["files"].open(f"containers/{container.id}/out/a.txt").read() == b"from node one"
    assert storages["files"].open(f"containers/{container.id}/b.txt").read() == b"uploaded"

    assert storages["files"].exists(f"container-sessions/{container.id}/session.pkl")

    # Another node: no work dir at all. It serves the files, and a call there finds them,
    # and the interpreter's variables too.
    Workspace.for_container(container.id).remove()
    [written] = ContainerFile.objects.filter(container=container, path="out/a.txt")
    _, content = open_file(alice.pk, container.id, written.id)
    assert content.read() == b"from node one"
    result = execute(container, "print(open('out/a.txt').read(), open('b.txt').read())\nprint(x + 1)")
    assert result.logs.split("\n")[:2] == ["from node one uploaded", "42"]

    # A node whose copy is older drops what was deleted since.
    workspace = Workspace.for_container(container.id)
    (workspace.root / "synced_version").write_text("0")
    [uploaded] = ContainerFile.objects.filter(container=container, path="b.txt")
    delete_file(alice.pk, container.id, uploaded.id)
    assert not storages["files"].exists(f"containers/{container.id}/b.txt")
    result = execute(container, "import os\nprint(sorted(os.listdir('.')))")
    assert result.logs.strip() == "['out']"


def test_the_variables_follow_the_container_from_node_to_node(alice, settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "files": {**settings.STORAGES["files"],
                                                         "OPTIONS": {"location": str(tmp_path / "files")}}}
    container = resolve_container(alice.pk, {"type": "auto"})
    settings.CONTAINERS_DIR = tmp_path / "node-a"
    execute(container, "x = 1")
    settings.CONTAINERS_DIR = tmp_path / "node-b"  # node A is lost; B has never seen the container
    execute(container, "x += 1")
    settings.CONTAINERS_DIR = tmp_path / "node-a"  # A is back, its copy one version old
    assert execute(container, "print(x)").logs.strip() == "2"
