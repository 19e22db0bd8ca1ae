"""The operator console through Django's test client: what each page shows, who may do
what, and that every action goes through a service and leaves an admin LogEntry.

The live tail and the buttons in a real browser are in test_browser.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.admin.utils import quote
from django.utils import timezone

from responses_app.models import (
    InputItem,
    OutputItem,
    Response,
    ResponseEvent,
    ResponseStatus,
    ResponseSteer,
    SteerState,
)
from responses_app.services.ended import end_response
from tests.admin.conftest import create

pytestmark = [pytest.mark.django_db, pytest.mark.core]

LIST = "/admin/responses_app/response/"


def page(response: Response, action: str = "change") -> str:
    return f"{LIST}{quote(response.pk)}/{action}/"


def finished(tenant, **fields) -> Response:
    now = timezone.now()
    defaults = {"model": "echo", "status": ResponseStatus.COMPLETED, "background": True, "completed_at": now,
                "last_sequence_number": 0}
    response = Response.objects.create(tenant=tenant, **{**defaults, **fields})
    Response.objects.filter(pk=response.pk).update(created_at=now - timedelta(seconds=2.5))
    response.refresh_from_db()
    return response


# --- the list -----------------------------------------------------------------------------------


def test_the_list_shows_a_status_badge_the_duration_and_the_tokens(operator_client, tenant):
    response = finished(tenant, usage={"input_tokens": 7, "output_tokens": 5, "total_tokens": 12})
    html = operator_client.get(LIST).content.decode()
    assert response.pk in html
    assert '<span class="response-status status-completed" data-status="completed">completed</span>' in html
    assert "2.5 s" in html
    assert '<span title="7 in, 5 out">12</span>' in html


def test_search_finds_a_response_by_id_and_by_a_metadata_value(operator_client, tenant):
    tagged = finished(tenant, request={"metadata": {"customer": "Zoë Ltd", "ticket": "T-4711"}})
    other = finished(tenant, request={"metadata": {"customer": "Acme"}})
    for term in (tagged.pk, "t-4711", "zoë", "ZOË LTD"[:2]):
        html = operator_client.get(LIST, {"q": term}).content.decode()
        assert tagged.pk in html, term
        assert other.pk not in html, term


def test_search_keeps_the_list_filters(operator_client, tenant):
    completed = finished(tenant, request={"metadata": {"batch": "nightly"}})
    failed = finished(tenant, status=ResponseStatus.FAILED, request={"metadata": {"batch": "nightly"}})
    html = operator_client.get(LIST, {"q": "nightly", "status__exact": "failed"}).content.decode()
    assert failed.pk in html and completed.pk not in html


def test_django_s_own_delete_action_is_replaced_by_the_service_backed_one(operator_client, tenant):
    finished(tenant)
    html = operator_client.get(LIST).content.decode()
    assert 'value="delete_responses"' in html and 'value="rerun_responses"' in html
    assert 'value="delete_selected"' not in html


# --- the detail page ----------------------------------------------------------------------------


def test_the_detail_page_shows_the_request_and_the_output_as_a_reader_wants_them(operator_client, tenant):
    response = finished(tenant, request={
        "instructions": "Answer briefly.", "temperature": 0.3, "metadata": {"ticket": "T-1"},
        "tools": [{"type": "function", "name": "get_weather", "description": "Weather of a city.",
                   "parameters": {"type": "object"}},
                  {"type": "mcp", "server_label": "dice", "server_url": "http://x", "headers": {"X-Key": "s3cret"}}],
    }, usage={"input_tokens": 30, "output_tokens": 20, "total_tokens": 50,
              "output_tokens_details": {"reasoning_tokens": 4}})
    InputItem.objects.create(response=response, position=0, item_id="msg_in", data={
        "id": "msg_in", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi there"}]})
    items = [
        {"id": "rs_1", "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Mull."}]},
        {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": '{"city":"Paris"}', "status": "completed"},
        {"id": "ci_1", "type": "code_interpreter_call", "code": "print(6*7)", "container_id": "cntr_1",
         "outputs": [{"type": "logs", "logs": "42\n"}], "status": "completed"},
        {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "dice",
         "tools": [{"name": "roll", "description": "Roll dice.", "input_schema": {}}]},
        {"id": "mcp_1", "type": "mcp_call", "server_label": "dice", "name": "roll", "arguments": '{"sides":6}',
         "output": "4", "error": None, "status": "completed"},
        {"id": "mcpr_1", "type": "mcp_approval_request", "server_label": "dice", "name": "wipe", "arguments": "{}"},
        {"id": "ws_1", "type": "web_search_call", "status": "completed",
         "action": {"type": "search", "query": "weather paris", "sources": [{"type": "url", "url": "https://a.example/"}]}},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "It is sunny.", "annotations": [
                {"type": "url_citation", "url": "https://weather.example/paris", "title": "Paris weather",
                 "start_index": 0, "end_index": 5},
                {"type": "url_citation", "url": "javascript:alert(1)", "title": "evil", "start_index": 0,
                 "end_index": 5}]}]},
    ]
    for index, item in enumerate(items):
        OutputItem.objects.create(response=response, output_index=index, item_id=item["id"], item_type=item["type"],
                                  status=item.get("status", ""), data=item)

    html = operator_client.get(page(response)).content.decode()

    assert "Answer briefly." in html and "Hi there" in html and "temperature" in html and "T-1" in html
    assert "get_weather" in html and "Weather of a city." in html
    assert "s3cret" not in html  # an MCP server's headers are credentials
    assert "Mull." in html
    assert "&quot;city&quot;: &quot;Paris&quot;" in html  # arguments, indented JSON
    assert "print(6*7)" in html and "42\n" in html
    assert "roll" in html and "Roll dice." in html and "&quot;sides&quot;: 6" in html
    assert "wipe" in html and "Waits for an <code>mcp_approval_response</code>" in html
    assert "weather paris" in html and 'href="https://a.example/"' in html
    assert "It is sunny." in html and 'href="https://weather.example/paris"' in html
    assert 'href="javascript:' not in html and "javascript:alert(1)" in html  # shown, never a link
    assert "reasoning tokens" in html and "<td>50</td>" in html


def test_a_finished_response_has_no_live_tail_and_a_running_one_tails_after_the_last_event_shown(
        operator_client, tenant, django_capture_on_commit_callbacks):
    done = finished(tenant)
    assert "live-tail-config" not in operator_client.get(page(done)).content.decode()

    running = create(tenant, django_capture_on_commit_callbacks, background=True)  # queued, event 0 written
    html = operator_client.get(page(running)).content.decode()
    assert "live-tail-config" in html
    assert f'"url": "{page(running, "events")}"' in html and '"after": 0' in html
    assert '"response.output_text.delta"' in html  # the named SSE events the page listens to


def test_the_change_form_is_never_saved(operator_client, tenant):
    response = finished(tenant)
    assert operator_client.post(page(response), {"model": "tampered"}).status_code == 405
    response.refresh_from_db()
    assert response.model == "echo"


# --- permissions --------------------------------------------------------------------------------


def test_a_view_only_staff_member_sees_no_actions_and_a_forged_post_is_refused(viewer_client, tenant,
                                                                              django_capture_on_commit_callbacks):
    running = create(tenant, django_capture_on_commit_callbacks, background=True)
    html = viewer_client.get(page(running)).content.decode()
    assert "Hello" in html  # the page itself is readable
    assert 'id="action-cancel"' not in html and 'id="action-rerun"' not in html and 'id="action-delete"' not in html
    assert 'name="action"' not in viewer_client.get(LIST).content.decode()  # no bulk actions

    for action in ("cancel", "rerun", "delete"):
        assert viewer_client.post(page(running, action)).status_code == 403, action
    assert viewer_client.get(page(running, "delete")).status_code == 403
    reply = viewer_client.post(LIST, {"action": "cancel_responses", "_selected_action": [running.pk]})
    assert reply.status_code == 200  # Django answers an unknown action with the list again
    running.refresh_from_db()
    assert running.status == "queued" and not running.cancel_requested
    # Nothing re-run or deleted, nothing logged (other tests' committed rows may share the database).
    assert Response.objects.filter(tenant=tenant).count() == 1
    assert not LogEntry.objects.filter(user__username="viewer").exists()


def test_the_event_stream_needs_a_staff_session_with_the_view_permission(client, tenant, django_user_model):
    response = finished(tenant)
    url = page(response, "events")
    reply = client.get(url)
    assert reply.status_code == 302 and "/admin/login/" in reply["Location"]
    staff = django_user_model.objects.create_user("staff-no-perms", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 403
    assert client.get(url, {"after": "x"}).status_code == 403  # permission first, then parameters


def test_an_action_needs_a_post(operator_client, tenant):
    response = finished(tenant)
    assert operator_client.get(page(response, "rerun")).status_code == 403
    assert not Response.objects.filter(rerun_of=response).exists()


# --- actions ------------------------------------------------------------------------------------


def test_cancel_requests_the_cancel_and_logs_it(operator_client, tenant, django_capture_on_commit_callbacks):
    queued = create(tenant, django_capture_on_commit_callbacks, background=True)
    reply = operator_client.post(page(queued, "cancel"))
    assert reply.status_code == 302 and reply["Location"] == page(queued)
    queued.refresh_from_db()
    assert queued.status == "cancelled"
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.action_flag, entry.change_message) == (queued.pk, CHANGE, "Requested cancel.")


def test_cancel_leaves_a_foreground_response_alone(operator_client, tenant, django_capture_on_commit_callbacks):
    foreground = create(tenant, django_capture_on_commit_callbacks)
    operator_client.post(page(foreground, "cancel"))
    foreground.refresh_from_db()
    assert foreground.status == "queued" and not foreground.cancel_requested
    assert not LogEntry.objects.exists()


def test_rerun_starts_a_new_background_response_that_copies_the_request(
        operator_client, tenant, django_capture_on_commit_callbacks):
    first = create(tenant, django_capture_on_commit_callbacks)
    end_response(first.pk, ResponseStatus.COMPLETED)
    original = create(tenant, django_capture_on_commit_callbacks, instructions="Be terse.", temperature=0.2,
                      metadata={"ticket": "T-9"}, previous_response_id=first.pk,
                      input=[{"role": "user", "content": "Once more"}])
    end_response(original.pk, ResponseStatus.FAILED, error={"code": "server_error", "message": "boom"})
    original.refresh_from_db()

    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        reply = operator_client.post(page(original, "rerun"))

    rerun = Response.objects.get(rerun_of=original)
    assert reply.status_code == 302 and reply["Location"] == page(rerun)
    assert len(enqueued) == 1  # enqueued once its row is committed, as an API create is
    assert (rerun.tenant, rerun.model, rerun.status, rerun.background, rerun.store) == (
        tenant, "echo", "queued", True, True)
    assert rerun.request == original.request and rerun.previous_response_id == first.pk
    assert [i.data for i in rerun.input_items.all()] == [i.data for i in original.input_items.all()]
    assert list(rerun.events.values_list("sequence_number", "type")) == [(0, "response.created")]
    unchanged = Response.objects.get(pk=original.pk)
    assert (unchanged.status, unchanged.error, unchanged.last_sequence_number) == (
        "failed", original.error, original.last_sequence_number)
    assert set(LogEntry.objects.values_list("object_id", "action_flag", "change_message")) == {
        (original.pk, CHANGE, f"Re-ran as {rerun.pk}."), (rerun.pk, ADDITION, f"Re-run of {original.pk}.")}
    html = operator_client.get(page(original)).content.decode()
    assert f'<a class="rerun-link" href="{page(rerun)}">{rerun.pk}</a>' in html
    assert f'href="{page(original)}"' in operator_client.get(page(rerun)).content.decode()  # its rerun_of


def test_a_rerun_that_no_longer_validates_is_reported_and_creates_nothing(
        operator_client, tenant, django_capture_on_commit_callbacks):
    first = create(tenant, django_capture_on_commit_callbacks)
    end_response(first.pk, ResponseStatus.COMPLETED)
    follow_up = create(tenant, django_capture_on_commit_callbacks, previous_response_id=first.pk)
    Response.objects.filter(pk=first.pk).delete()

    reply = operator_client.post(page(follow_up, "rerun"), follow=True)

    assert "Could not re-run" in reply.content.decode() and "not found" in reply.content.decode()
    assert not Response.objects.filter(rerun_of=follow_up).exists() and not LogEntry.objects.exists()


def test_delete_asks_first_then_deletes_through_the_service_and_logs_it(operator_client, tenant):
    response = finished(tenant, last_sequence_number=2)
    ResponseEvent.objects.bulk_create(ResponseEvent(response=response, sequence_number=n, type="t", data={})
                                      for n in range(3))
    confirmation = operator_client.get(page(response, "delete")).content.decode()
    assert "3 stream events" in confirmation and 'id="confirm-delete"' in confirmation
    assert Response.objects.filter(pk=response.pk).exists()

    reply = operator_client.post(page(response, "delete"))

    assert reply.status_code == 302 and reply["Location"] == LIST
    assert not Response.objects.filter(pk=response.pk).exists()
    assert not ResponseEvent.objects.filter(response_id=response.pk).exists()
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.action_flag) == (response.pk, DELETION)


def test_the_bulk_actions_rerun_and_delete_what_is_selected(operator_client, tenant):
    one, two = finished(tenant), finished(tenant)
    operator_client.post(LIST, {"action": "rerun_responses", "_selected_action": [one.pk, two.pk]})
    assert Response.objects.filter(rerun_of__in=[one, two]).count() == 2

    confirmation = operator_client.post(LIST, {"action": "delete_responses", "_selected_action": [one.pk]})
    assert confirmation.status_code == 200 and one.pk in confirmation.content.decode()
    assert Response.objects.filter(pk=one.pk).exists()  # not before the confirmation
    operator_client.post(LIST, {"action": "delete_responses", "_selected_action": [one.pk], "post": "yes"})
    assert not Response.objects.filter(pk=one.pk).exists() and Response.objects.filter(pk=two.pk).exists()
    assert LogEntry.objects.filter(action_flag=DELETION, object_id=one.pk).count() == 1
    assert LogEntry.objects.filter(action_flag=ADDITION).count() == 2


def test_ids_that_look_like_admin_quoting_still_reach_their_response(operator_client, tenant):
    # The admin escapes "_" in URLs as "_5F"; an unquoted "resp_41..." would be read as "respA...".
    response = finished(tenant, id="resp_4142", status=ResponseStatus.IN_PROGRESS, completed_at=None)
    html = operator_client.get(page(response)).content.decode()
    assert "resp_5F4142" in page(response)
    assert f'action="{page(response, "rerun")}"' in html and f'"url": "{page(response, "events")}"' in html
    assert operator_client.post(page(response, "rerun")).status_code == 302
    assert Response.objects.filter(rerun_of=response).exists()


def test_a_websocket_response_shows_its_session_its_lane_and_its_steering_input(operator_client, tenant):
    ahead = finished(tenant, socket_session="agent-7", stream_id="main")
    response = finished(tenant, socket_session="agent-7", stream_id="main", lane_after=ahead)
    successor = finished(tenant, socket_session="agent-7", stream_id="main")
    ResponseSteer.objects.create(tenant=tenant, response=response, input="Go on", input_items=[],
                                 state=SteerState.COMMITTED, successor=successor)
    ResponseSteer.objects.create(tenant=tenant, response=response, input="Late", input_items=[],
                                 state=SteerState.FAILED, error_code="response_not_active")
    html = operator_client.get(page(response)).content.decode()
    assert "agent-7" in html and ">main<" in html and f'{quote(ahead.pk)}/change/">{ahead.pk}</a>' in html
    assert html.count('class="steer"') == 2 and "response_not_active" in html
    assert f'{quote(successor.pk)}/change/">{successor.pk}</a>' in html


def test_a_conversation_shows_its_items_in_order_each_with_the_response_it_came_from(
        operator_client, tenant, django_capture_on_commit_callbacks):
    from responses_app.conversations import store
    from responses_app.conversations.requests import parse_conversation_create

    conversation = store.create_conversation(tenant, *parse_conversation_create(
        {"metadata": {"topic": "trains"}, "items": [{"role": "user", "content": "First words"}]}))
    response = create(tenant, django_capture_on_commit_callbacks, input="Second words",
                      conversation=conversation.pk)
    html = operator_client.get(f"/admin/responses_app/conversation/{quote(conversation.pk)}/change/").content.decode()
    assert f'{quote(response.pk)}/change/">{response.pk}</a>' in html  # working on it now
    assert end_response(response.pk, ResponseStatus.COMPLETED)

    html = operator_client.get(f"/admin/responses_app/conversation/{quote(conversation.pk)}/change/").content.decode()
    assert html.index("First words") < html.index("Second words") and "trains" in html
    assert html.count(f'{quote(response.pk)}/change/">{response.pk}</a>') == 1  # the second item's response
    assert f'conversation/{quote(conversation.pk)}/change/">{conversation.pk}</a>' in \
        operator_client.get(page(response)).content.decode()
    listing = operator_client.get("/admin/responses_app/conversation/").content.decode()
    assert conversation.pk in listing


def test_the_admin_lists_files_read_only_and_a_delete_takes_the_bytes(operator_client, tenant, settings, tmp_path,
                                                                      django_capture_on_commit_callbacks):
    from django.contrib.admin.utils import quote
    from django.core.files.base import ContentFile

    from responses_app.files import store

    settings.STORAGES = {**settings.STORAGES, "files": {**settings.STORAGES["files"],
                                                         "OPTIONS": {"location": str(tmp_path)}}}
    row = store.create_file(tenant, ContentFile(b"hello", name="a.txt"), "a.txt", "user_data", None)
    assert row.id in operator_client.get("/admin/responses_app/storedfile/").content.decode()
    change = f"/admin/responses_app/storedfile/{quote(row.id)}/change/"
    assert 'name="filename"' not in operator_client.get(change).content.decode()
    assert operator_client.get("/admin/responses_app/storedfile/add/").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        reply = operator_client.post(f"/admin/responses_app/storedfile/{quote(row.id)}/delete/", {"post": "yes"})
    assert reply.status_code == 302 and not store.file_storage().exists(row.storage_name)


def test_a_batch_shows_its_progress_files_and_responses_and_an_operator_may_cancel_it(operator_client, tenant):
    from responses_app.models import Batch, BatchRequest, BatchRequestState

    batch = Batch.objects.create(tenant=tenant, endpoint="/v1/responses", input_file_id="file-in",
                                 completion_window="24h", model="echo", status="in_progress", total=3, completed=1,
                                 expires_at=timezone.now() + timedelta(hours=1))
    BatchRequest.objects.bulk_create(BatchRequest(batch=batch, line=n, custom_id=f"q{n}", body={},
                                                  state=BatchRequestState.QUEUED) for n in range(2))
    response = finished(tenant, batch_id=batch.pk)
    finished(tenant)  # another response, not the batch's

    listing = operator_client.get("/admin/responses_app/batch/").content.decode()
    assert batch.pk in listing and "1 / 3 (1 completed, 0 failed)" in listing
    detail = operator_client.get(f"/admin/responses_app/batch/{quote(batch.pk)}/change/").content.decode()
    assert "/admin/responses_app/storedfile/file-in/change/" in detail
    assert f"{LIST}?q={batch.pk}" in detail
    found = operator_client.get(LIST, {"q": batch.pk}).content.decode()
    assert response.pk in found and found.count('class="action-select"') == 1
    assert operator_client.get("/admin/responses_app/batch/add/").status_code == 403

    reply = operator_client.post("/admin/responses_app/batch/", {"action": "cancel_batches",
                                                                 "_selected_action": [batch.pk]})
    assert reply.status_code == 302
    batch.refresh_from_db()
    assert batch.status in ("cancelling", "cancelled") and batch.cancelling_at is not None
    assert set(BatchRequest.objects.filter(batch=batch).values_list("state", flat=True)) == {"cancelled"}
    assert LogEntry.objects.get(object_id=batch.pk).change_message == "Cancelled from the admin."


# --- prompt templates ---------------------------------------------------------------------------


def test_prompt_versions_are_listed_and_read_never_written(operator_client, tenant):
    from responses_app.models import PromptVersion

    version = PromptVersion.objects.create(tenant=tenant, version=3, instructions="Greet {{name}}.",
                                           variables=["name"])
    listed = operator_client.get("/admin/responses_app/promptversion/")
    assert listed.status_code == 200 and version.prompt_id in listed.content.decode()
    detail = operator_client.get(f"/admin/responses_app/promptversion/{version.pk}/change/")
    assert detail.status_code == 200 and "Greet {{name}}." in detail.content.decode()
    assert operator_client.get("/admin/responses_app/promptversion/add/").status_code == 403
    operator_client.post(f"/admin/responses_app/promptversion/{version.pk}/change/", {"instructions": "Changed."})
    version.refresh_from_db()
    assert version.instructions == "Greet {{name}}."
