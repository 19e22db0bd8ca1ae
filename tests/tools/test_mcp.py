"""MCP client sessions against a real MCP server (a subprocess on 127.0.0.1), the request
``mcp`` tool's validation, and the servers an operator registers."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from responses_app.validation.mcp_tool import validate_mcp_tool
from responses_app.wire.errors import InvalidRequest
from tests.live.stack import free_port
from tests.tools.conftest import SECRET_AUTHORIZATION, RunningMcpServer
from tools_app.mcp.client import McpError, McpServerSpec, McpTool, call_tool, list_tools
from tools_app.mcp.servers import requires_approval, server_for_tool

TIMEOUT_S = 10.0
TOOL_NAMES = ["add", "echo", "fail", "slow", "search", "fetch"]


def _spec(server: RunningMcpServer, **overrides: object) -> McpServerSpec:
    return McpServerSpec(**{"label": "tests", "url": server.url, "transport": server.transport, **overrides})


@pytest.fixture
def allow(mcp_server: RunningMcpServer) -> Iterator[None]:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[mcp_server.host_port]):
        yield


# --- list and call, over both transports ------------------------------------------------------


def test_it_lists_the_tools_of_a_server(mcp_server: RunningMcpServer, allow: None) -> None:
    tools = list_tools(_spec(mcp_server), TIMEOUT_S)
    assert [tool.name for tool in tools] == TOOL_NAMES
    add = tools[0]
    assert isinstance(add, McpTool)
    assert add.description == "Add two integers."
    assert add.input_schema["type"] == "object"
    assert set(add.input_schema["properties"]) == {"a", "b"}
    assert add.annotations == {"readOnlyHint": True}
    assert tools[1].annotations is None


def test_it_lists_only_the_allowed_tools(mcp_server: RunningMcpServer, allow: None) -> None:
    tools = list_tools(_spec(mcp_server, allowed_tools=["echo", "add", "no-such-tool"]), TIMEOUT_S)
    assert [tool.name for tool in tools] == ["add", "echo"]


def test_it_calls_a_tool_and_returns_its_text(mcp_server: RunningMcpServer, allow: None) -> None:
    assert call_tool(_spec(mcp_server), "add", {"a": 2, "b": 40}, TIMEOUT_S) == "42"
    assert call_tool(_spec(mcp_server), "echo", {"text": "héllo\nworld"}, TIMEOUT_S) == "héllo\nworld"


def test_a_tool_outside_allowed_tools_is_not_called(mcp_server: RunningMcpServer, allow: None) -> None:
    with pytest.raises(McpError, match="not among its allowed tools"):
        call_tool(_spec(mcp_server, allowed_tools=["echo"]), "add", {"a": 1, "b": 2}, TIMEOUT_S)


def test_a_tool_error_is_an_mcp_error_with_the_tools_message(mcp_server: RunningMcpServer, allow: None) -> None:
    with pytest.raises(McpError) as error:
        call_tool(_spec(mcp_server), "fail", {"message": "the disk is full"}, TIMEOUT_S)
    assert "the disk is full" in error.value.message
    assert "'fail'" in error.value.message


def test_an_unknown_tool_is_an_mcp_error(mcp_server: RunningMcpServer, allow: None) -> None:
    with pytest.raises(McpError, match="nope"):
        call_tool(_spec(mcp_server), "nope", {}, TIMEOUT_S)


def test_a_slow_tool_times_out_hard(mcp_server: RunningMcpServer, allow: None) -> None:
    started = time.monotonic()
    with pytest.raises(McpError, match="did not answer within 1 seconds"):
        call_tool(_spec(mcp_server), "slow", {"seconds": 30}, 1.0)
    assert time.monotonic() - started < 4.0


def test_the_connection_is_usable_again_after_a_timeout(mcp_server: RunningMcpServer, allow: None) -> None:
    with pytest.raises(McpError):
        call_tool(_spec(mcp_server), "slow", {"seconds": 30}, 0.5)
    assert call_tool(_spec(mcp_server), "slow", {"seconds": 0.1}, TIMEOUT_S) == "slept 0.1"


def test_calls_from_many_threads_at_once_each_get_their_own_answer(mcp_server: RunningMcpServer, allow: None) -> None:
    results: dict[int, str] = {}

    def call(n: int) -> None:
        results[n] = call_tool(_spec(mcp_server), "add", {"a": n, "b": 1000}, TIMEOUT_S)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: str(n + 1000) for n in range(6)}


# --- failures that are not the tool's ----------------------------------------------------------


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
def test_an_unreachable_server_is_an_mcp_error(transport: str) -> None:
    port = free_port()  # nothing listens there
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[f"127.0.0.1:{port}"]), pytest.raises(McpError) as error:
        list_tools(McpServerSpec("gone", f"http://127.0.0.1:{port}/mcp", transport), TIMEOUT_S)
    assert "Cannot reach the MCP server 'gone'" in error.value.message


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers: a hung server."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
def test_a_server_that_never_answers_cannot_hang_the_caller(transport: str, silent_port: int) -> None:
    spec = McpServerSpec("hung", f"http://127.0.0.1:{silent_port}/mcp", transport)
    started = time.monotonic()
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[f"127.0.0.1:{silent_port}"]), pytest.raises(McpError):
        call_tool(spec, "add", {"a": 1, "b": 2}, 1.0)
    assert time.monotonic() - started < 4.0


def test_a_loopback_server_is_refused_without_an_allowlist(mcp_server: RunningMcpServer) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(McpError) as error:
        list_tools(_spec(mcp_server), TIMEOUT_S)
    assert "loopback" in error.value.message
    assert "TOOLS_ALLOWED_PRIVATE_HOSTS" in error.value.message


def test_an_allowlist_entry_for_another_port_does_not_help(mcp_server: RunningMcpServer) -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=["127.0.0.1:1"]), pytest.raises(McpError, match="loopback"):
        list_tools(_spec(mcp_server), TIMEOUT_S)


def test_localhost_is_refused_even_when_127_0_0_1_is_allowed_on_another_port(mcp_server: RunningMcpServer) -> None:
    url = mcp_server.url.replace("127.0.0.1", "localhost")
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=["127.0.0.1:1"]), pytest.raises(McpError, match="loopback"):
        list_tools(_spec(mcp_server, url=url), TIMEOUT_S)


def test_wrong_credentials_are_an_mcp_error_that_never_shows_them(authed_mcp_server: RunningMcpServer) -> None:
    spec = _spec(authed_mcp_server, headers={"Authorization": "Bearer wrong-secret-1234"})
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[authed_mcp_server.host_port]):
        with pytest.raises(McpError) as error:
            call_tool(spec, "echo", {"text": "hi"}, TIMEOUT_S)
    assert "401" in error.value.message
    assert "wrong-secret-1234" not in error.value.message


def test_the_configured_headers_are_sent(authed_mcp_server: RunningMcpServer) -> None:
    spec = _spec(authed_mcp_server, headers={"Authorization": SECRET_AUTHORIZATION})
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[authed_mcp_server.host_port]):
        assert call_tool(spec, "echo", {"text": "hi"}, TIMEOUT_S) == "hi"


# --- validate_mcp_tool -------------------------------------------------------------------------


def _valid(**fields: object) -> dict:
    return validate_mcp_tool({"type": "mcp", "server_label": "docs", **fields}, "tools[0]").to_stored()


def test_a_minimal_tool_is_normalised_with_every_key() -> None:
    assert _valid() == {
        "type": "mcp", "server_label": "docs", "server_url": None, "allowed_tools": None, "require_approval": None,
        "headers": None, "authorization": None, "server_description": None,
    }


def test_a_full_tool_is_kept() -> None:
    tool = _valid(server_url="https://mcp.example.com/mcp", allowed_tools=["a", "b", "a"], require_approval="never",
                  headers={"X-Api-Key": "k"}, authorization="tok", server_description="Docs search")
    assert tool["server_url"] == "https://mcp.example.com/mcp"
    assert tool["allowed_tools"] == ["a", "b"]
    assert tool["require_approval"] == "never"
    assert tool["headers"] == {"X-Api-Key": "k"}
    assert tool["authorization"] == "tok"
    assert tool["server_description"] == "Docs search"


def test_allowed_tools_as_a_filter_object_becomes_a_list() -> None:
    assert _valid(allowed_tools={"tool_names": ["search"]})["allowed_tools"] == ["search"]
    assert _valid(allowed_tools={})["allowed_tools"] is None


def test_require_approval_as_a_filter_object_is_normalised() -> None:
    tool = _valid(require_approval={"never": {"tool_names": ["search", "fetch"]}})
    assert tool["require_approval"] == {"never": {"tool_names": ["search", "fetch"]}}


@pytest.mark.parametrize("fields, param", [
    ({"server_label": None}, "tools[0].server_label"),
    ({"server_label": ""}, "tools[0].server_label"),
    ({"server_label": "my server"}, "tools[0].server_label"),
    ({"server_label": "a.b"}, "tools[0].server_label"),
    ({"server_label": "x" * 65}, "tools[0].server_label"),
    ({"server_label": 7}, "tools[0].server_label"),
    ({"server_url": "ftp://example.com/"}, "tools[0].server_url"),
    ({"server_url": "example.com/mcp"}, "tools[0].server_url"),
    ({"server_url": "http://"}, "tools[0].server_url"),
    ({"server_url": 5}, "tools[0].server_url"),
    ({"connector_id": "connector_gmail"}, "tools[0].connector_id"),
    ({"allowed_tools": "search"}, "tools[0].allowed_tools"),
    ({"allowed_tools": ["search", 3]}, "tools[0].allowed_tools"),
    ({"allowed_tools": {"tool_names": "search"}}, "tools[0].allowed_tools.tool_names"),
    ({"allowed_tools": {"names": ["search"]}}, "tools[0].allowed_tools.names"),
    ({"require_approval": "sometimes"}, "tools[0].require_approval"),
    ({"require_approval": True}, "tools[0].require_approval"),
    ({"require_approval": {"never": ["search"]}}, "tools[0].require_approval.never"),
    ({"require_approval": {"never": {"tool_names": "search"}}}, "tools[0].require_approval.never.tool_names"),
    ({"require_approval": {"maybe": {"tool_names": []}}}, "tools[0].require_approval.maybe"),
    ({"headers": ["Authorization: x"]}, "tools[0].headers"),
    ({"headers": {"X-Count": 3}}, "tools[0].headers.X-Count"),
    ({"headers": {"X-Evil": "a\r\nHost: b"}}, "tools[0].headers.X-Evil"),
    ({"authorization": 12}, "tools[0].authorization"),
    ({"surprise": 1}, "tools[0].surprise"),
])
def test_invalid_tools_are_refused_with_the_parameter_named(fields: dict, param: str) -> None:
    with pytest.raises(InvalidRequest) as error:
        _valid(**fields)
    assert error.value.param == param


def test_a_missing_label_is_a_missing_parameter() -> None:
    with pytest.raises(InvalidRequest) as error:
        validate_mcp_tool({"type": "mcp", "server_url": "https://mcp.example.com"}, "tools[2]")
    assert (error.value.param, error.value.code) == ("tools[2].server_label", "missing_required_parameter")


def test_connector_id_is_refused_as_unsupported() -> None:
    with pytest.raises(InvalidRequest, match="not supported"):
        _valid(connector_id="connector_dropbox")


@pytest.mark.parametrize("url", ["http://10.0.0.1/mcp", "http://169.254.169.254/", "http://2130706433/",
                                 "http://127.1:8080/", "http://[::ffff:192.168.0.1]/", "http://metadata.google.internal/",
                                 "http://LOCALHOST./mcp", "http://api.localhost/"])
def test_a_private_address_is_refused_at_validation(url: str) -> None:
    with pytest.raises(InvalidRequest) as error:
        _valid(server_url=url)
    assert (error.value.param, error.value.code) == ("tools[0].server_url", "invalid_url")


def test_validation_resolves_no_host_name() -> None:
    # A host name's addresses are the run-time guard's business (they may change by then).
    assert _valid(server_url="http://mcp.internal.invalid/mcp")["server_url"] == "http://mcp.internal.invalid/mcp"


# --- requires_approval -------------------------------------------------------------------------


@pytest.mark.parametrize("policy, expected", [
    (None, {"search": True, "fetch": True}),
    ("always", {"search": True, "fetch": True}),
    ("never", {"search": False, "fetch": False}),
    ({"never": {"tool_names": ["search"]}}, {"search": False, "fetch": True}),
    ({"always": {"tool_names": ["fetch"]}}, {"search": True, "fetch": True}),
    ({"always": {"tool_names": ["fetch"]}, "never": {"tool_names": ["search"]}}, {"search": False, "fetch": True}),
])
def test_requires_approval_follows_the_policy_and_defaults_to_always(policy: object, expected: dict) -> None:
    tool = _valid(require_approval=policy)
    assert {name: requires_approval(tool, name) for name in expected} == expected


# --- server_for_tool ---------------------------------------------------------------------------


@pytest.fixture
def tenants(db: None) -> tuple[int, int]:
    from responses_app.models import Tenant

    # Names of their own: the live tests' alice and bob may be committed in this database.
    return Tenant.objects.create(name="mcp-alice").id, Tenant.objects.create(name="mcp-bob").id


def _register(server: RunningMcpServer, label: str, tenant_ids: list[int], **fields: object) -> None:
    from tools_app.models import McpServer

    registered = McpServer.objects.create(label=label, server_url=server.url, transport=server.transport, **fields)
    registered.tenants.set(tenant_ids)


def test_a_registered_server_is_used_with_its_secret_headers(authed_mcp_server: RunningMcpServer,
                                                             tenants: tuple[int, int]) -> None:
    alice, _bob = tenants
    _register(authed_mcp_server, "private-docs", [alice], headers={"Authorization": SECRET_AUTHORIZATION})
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[authed_mcp_server.host_port]):
        spec = server_for_tool(alice, _valid(server_label="private-docs", allowed_tools=["echo"]))
        assert (spec.url, spec.transport, spec.allowed_tools) == (authed_mcp_server.url, "streamable_http", ["echo"])
        assert call_tool(spec, "echo", {"text": "secret sent"}, TIMEOUT_S) == "secret sent"


def test_a_registered_server_is_not_available_to_other_tenants(authed_mcp_server: RunningMcpServer,
                                                               tenants: tuple[int, int]) -> None:
    alice, bob = tenants
    _register(authed_mcp_server, "private-docs", [alice], headers={"Authorization": SECRET_AUTHORIZATION})
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[authed_mcp_server.host_port]):
        with pytest.raises(McpError, match="No MCP server labelled 'private-docs' is available"):
            server_for_tool(bob, _valid(server_label="private-docs"))
        with pytest.raises(McpError, match="No MCP server labelled 'unknown' is available"):
            server_for_tool(alice, _valid(server_label="unknown"))


def test_a_registered_server_without_tenants_is_available_to_all(streamable_server: RunningMcpServer,
                                                                  tenants: tuple[int, int]) -> None:
    alice, bob = tenants
    _register(streamable_server, "shared", [])
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[streamable_server.host_port]):
        for tenant in (alice, bob):
            assert call_tool(server_for_tool(tenant, _valid(server_label="shared")), "add", {"a": 1, "b": 1},
                             TIMEOUT_S) == "2"


def test_a_registered_server_is_still_subject_to_the_url_guard(streamable_server: RunningMcpServer,
                                                                tenants: tuple[int, int]) -> None:
    alice, _bob = tenants
    _register(streamable_server, "shared", [])
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(McpError, match="loopback"):
        server_for_tool(alice, _valid(server_label="shared"))


def test_a_server_url_tool_sends_its_authorization_as_a_bearer_token(authed_mcp_server: RunningMcpServer) -> None:
    token = SECRET_AUTHORIZATION.removeprefix("Bearer ")
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[authed_mcp_server.host_port]):
        tool = _valid(server_url=authed_mcp_server.url, authorization=token, headers={"X-Trace": "1"})
        spec = server_for_tool(1, tool)
        assert spec.headers == {"X-Trace": "1", "Authorization": SECRET_AUTHORIZATION}
        assert call_tool(spec, "echo", {"text": "ok"}, TIMEOUT_S) == "ok"


def test_a_server_url_tool_to_a_private_address_is_refused() -> None:
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]), pytest.raises(McpError) as error:
        # As a tool stored before validation refused such URLs: the run-time guard refuses it too.
        server_for_tool(1, {**_valid(authorization="tok-123456"), "server_url": "http://169.254.169.254/mcp"})
    assert "cloud metadata" in error.value.message
    assert "tok-123456" not in error.value.message


# --- the web search tools of the test server, as JSON ------------------------------------------


def test_the_search_and_fetch_tools_answer_json(mcp_server: RunningMcpServer, allow: None) -> None:
    results = json.loads(call_tool(_spec(mcp_server), "search", {"query": "harmony"}, TIMEOUT_S))["results"]
    assert [hit["id"] for hit in results] == ["doc-harmony"]
    document = json.loads(call_tool(_spec(mcp_server), "fetch", {"id": "doc-harmony"}, TIMEOUT_S))
    assert set(document) == {"id", "title", "text", "url"}


# --- McpSearchBackend --------------------------------------------------------------------------


def test_the_mcp_search_backend_searches_and_opens(mcp_server: RunningMcpServer, allow: None) -> None:
    from tools_app.browser.backends import Document, SearchBackend, SearchHit
    from tools_app.browser.mcp_backend import McpSearchBackend

    backend = McpSearchBackend(_spec(mcp_server), timeout_s=TIMEOUT_S)
    assert isinstance(backend, SearchBackend)
    hits = backend.search("MCP celery", topn=5)
    assert [hit.url for hit in hits] == ["https://example.com/mcp", "https://example.com/celery"]
    text = "MCP servers expose tools over streamable HTTP or SSE to language model clients."
    assert hits[0] == SearchHit(url="https://example.com/mcp", title="Model Context Protocol", snippet=text)
    assert len(backend.search("MCP celery", topn=1)) == 1
    document = backend.open("https://example.com/mcp")
    assert document == Document(url="https://example.com/mcp", title="Model Context Protocol", text=text)
    assert backend.open("doc-harmony").title == "The harmony response format"


def test_the_mcp_search_backend_knows_no_unknown_document(mcp_server: RunningMcpServer, allow: None) -> None:
    from tools_app.browser.mcp_backend import McpSearchBackend

    assert McpSearchBackend(_spec(mcp_server), timeout_s=TIMEOUT_S).open("https://example.com/nowhere") is None


def test_the_mcp_search_backend_reports_a_refused_server_as_a_backend_error(mcp_server: RunningMcpServer) -> None:
    from tools_app.browser.backends import BackendError
    from tools_app.browser.mcp_backend import McpSearchBackend

    backend = McpSearchBackend(_spec(mcp_server), timeout_s=TIMEOUT_S)
    with override_settings(TOOLS_ALLOWED_PRIVATE_HOSTS=[]):
        with pytest.raises(BackendError, match="loopback"):
            backend.search("harmony", topn=3)
        with pytest.raises(BackendError, match="loopback"):
            backend.open("doc-harmony")


def test_the_mcp_search_backend_refuses_a_server_without_json(mcp_server: RunningMcpServer, allow: None) -> None:
    from tools_app.browser.backends import BackendError
    from tools_app.browser.mcp_backend import McpSearchBackend

    backend = McpSearchBackend(_spec(mcp_server), timeout_s=TIMEOUT_S)
    with pytest.raises(BackendError, match="other than JSON"):
        backend._call("echo", {"text": "not json"})


# --- McpServerAdmin ----------------------------------------------------------------------------


def _change_form(**fields: str) -> dict[str, str]:
    return {"label": "docs", "server_url": "https://mcp.example.com/mcp", "transport": "streamable_http",
            "description": "", "new_headers": "", **fields}


def test_the_admin_never_shows_header_values(admin_client: object, db: None) -> None:
    from tools_app.models import McpServer

    server = McpServer.objects.create(label="docs", server_url="https://mcp.example.com/mcp",
                                      headers={"Authorization": SECRET_AUTHORIZATION})
    listing = admin_client.get("/admin/tools_app/mcpserver/")
    assert listing.status_code == 200 and b"docs" in listing.content
    page = admin_client.get(f"/admin/tools_app/mcpserver/{server.id}/change/")
    assert page.status_code == 200
    assert b"Authorization" in page.content
    assert SECRET_AUTHORIZATION.split()[-1].encode() not in page.content


def test_the_admin_keeps_headers_left_blank_and_replaces_given_ones(admin_client: object, db: None) -> None:
    from tools_app.models import McpServer

    server = McpServer.objects.create(label="docs", server_url="https://mcp.example.com/mcp",
                                      headers={"Authorization": SECRET_AUTHORIZATION})
    url = f"/admin/tools_app/mcpserver/{server.id}/change/"
    assert admin_client.post(url, _change_form(description="kept")).status_code == 302
    server.refresh_from_db()
    assert (server.description, server.headers) == ("kept", {"Authorization": SECRET_AUTHORIZATION})
    assert admin_client.post(url, _change_form(new_headers='{"X-Api-Key": "k2"}')).status_code == 302
    server.refresh_from_db()
    assert server.headers == {"X-Api-Key": "k2"}
    refused = admin_client.post(url, _change_form(new_headers='{"X-Count": 3}'))
    assert refused.status_code == 200
    server.refresh_from_db()
    assert server.headers == {"X-Api-Key": "k2"}
