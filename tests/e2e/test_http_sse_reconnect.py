"""Who may continue an HTTP+SSE stream mcpx serves (addon/mcpx_core/transport/http_sse/resume.py), through
one mitmdump in front of the npm everything server in its Streamable HTTP mode, the client played by
raw HTTP here (what is tested is the ``Last-Event-ID`` a reconnect sends, which no released client lets
a test choose): a stream opened with ``Authorization: Bearer alice`` initializes; then, while it is
open, reconnects with its initialize answer's id: with another bearer, with none, with a forged id
and with the endpoint event's id of another MCP path are refused ``404`` and change nothing; with
alice's bearer it continues: the same endpoint URL, the same id, the old stream ends, and a call
POSTed to the endpoint is answered on the new stream from the same upstream session (no second
``initialize`` reached the server). A stream whose client closed it is not resumed. About 10 s."""
from __future__ import annotations

import http.client
import time

import orjson
import pytest

import http_sse_lib
import peers_lib
from proxy_lib import Proxy

pytestmark = pytest.mark.peers

ALICE = {"Authorization": "Bearer alice"}
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}}


class Stream:
    """A ``GET /sse`` read event by event (a raw HTTP+SSE client)."""

    def __init__(self, port: int, path: str = "/sse", headers: dict | None = None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        self.conn.request("GET", path, headers={"Accept": "text/event-stream", **(headers or {})})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def event(self) -> bytes:
        """The next event (comments skipped), with its blank line."""
        lines = []
        while True:
            line = self.resp.readline()
            if not line:
                raise EOFError(b"".join(lines))
            if line.startswith(b":") and not lines:
                continue
            lines.append(line)
            if line == b"\n":
                return b"".join(lines)

    def message(self) -> dict:
        ev = self.event()
        data = [ln[6:] for ln in ev.splitlines() if ln.startswith(b"data: ")]
        assert b"event: message\n" in ev, ev
        return orjson.loads(b"".join(data))

    def close(self) -> None:
        self.resp.close()  # (the response holds the socket open too)
        self.conn.close()


def post(port: int, path: str, message: dict, headers: dict | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("POST", path, body=orjson.dumps(message), headers={"Content-Type": "application/json", **(headers or {})})
    status = conn.getresponse().status
    conn.close()
    return status


def event_id(ev: bytes) -> str:
    first = ev.split(b"\n", 1)[0]
    assert first.startswith(b"id: "), ev
    return first[4:].decode()


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("http-sse-resume")
    out: dict = {}
    with peers_lib.start_everything_server() as srv, Proxy(f"http://127.0.0.1:{srv.port}", tmp,
                                                        options={"connection_strategy": None}, path="/sse") as px:
        first = Stream(px.port, headers=ALICE)
        ep = http_sse_lib.endpoint(first.event())
        assert ep is not None and ep.resume == ""
        assert post(px.port, f"{ep.path}?mcpx_session={ep.token}", INIT, ALICE) == 202
        ready = first.event()
        out["init"] = orjson.loads(ready.split(b"data: ", 1)[1])
        out["ready_id"] = rid = event_id(ready)
        assert post(px.port, f"{ep.path}?mcpx_session={ep.token}",
                    {"jsonrpc": "2.0", "method": "notifications/initialized"}, ALICE) == 202
        out["refused"] = {}
        for name, path, headers in [("bearer mallory", "/sse", {"Authorization": "Bearer mallory", "Last-Event-ID": rid}),
                                    ("no credentials", "/sse", {"Last-Event-ID": rid}),
                                    ("forged", "/sse", {**ALICE, "Last-Event-ID": "mcpx1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
                                    ("other path", "/other/sse", {**ALICE, "Last-Event-ID": rid})]:
            s = Stream(px.port, path, headers)
            out["refused"][name] = (s.status, s.resp.read())
            s.close()
        again = Stream(px.port, headers={**ALICE, "Last-Event-ID": rid})
        out["again_status"] = again.status
        out["again"] = http_sse_lib.endpoint(again.event())
        out["endpoint"] = ep
        # the old stream ends (the new one replaced it)
        try:
            while True:
                first.event()
        except EOFError:
            out["old_ended"] = True
        except TimeoutError:
            out["old_ended"] = False
        assert post(px.port, f"{ep.path}?mcpx_session={ep.token}",
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "again"}}},
                    ALICE) == 202
        while True:
            m = again.message()
            if m.get("id") == 1:
                out["call"] = m
                break
        again.close()
        time.sleep(1.0)  # the client closed its stream: mcpx DELETEs the upstream session
        late = Stream(px.port, headers={**ALICE, "Last-Event-ID": rid})
        out["late"] = (late.status, late.resp.read() if late.status != 200 else late.event())
        late.close()
        first.close()
        out["flows"] = px.flows()
    yield out


def test_a_reconnect_with_other_or_no_credentials_or_a_forged_id_is_refused(resumed):
    assert resumed["refused"] == {name: (404, b"Could not find session") for name in
                                  ("bearer mallory", "no credentials", "forged", "other path")}


def test_the_holder_of_the_stream_continues_it_on_the_same_upstream_session(resumed):
    ep, again = resumed["endpoint"], resumed["again"]
    assert resumed["init"]["result"]["protocolVersion"] == "2024-11-05"
    assert resumed["ready_id"].startswith(ep.token + "~")
    assert resumed["again_status"] == 200
    assert (again.path, again.token, again.token + again.resume) == (ep.path, ep.token, resumed["ready_id"])
    assert resumed["old_ended"] is True
    assert resumed["call"] == {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "Echo: again"}]}}
    legs = [f for f in resumed["flows"] if f.request.path == "/mcp" and f.request.method == "POST"]
    inits = [f for f in legs if b'"initialize"' in f.request.content]
    # the client's initialize leg, and the one mcpx sends to learn the session it seals (nothing for the resume)
    assert sorted("sent by mcpx" in f.comment for f in inits) == [False, True]
    sessions = {f.response.headers.get("mcp-session-id") for f in inits if "sent by mcpx" in f.comment} - {None}
    call = next(f for f in legs if b'"tools/call"' in f.request.content)
    assert len(sessions) == 1 and call.request.headers["mcp-session-id"] in sessions
    assert call.request.headers["authorization"] == "Bearer alice"


def test_a_stream_its_client_closed_is_not_resumed(resumed):
    assert resumed["late"] == (404, b"Could not find session")
    deletes = [f for f in resumed["flows"] if f.request.path == "/mcp" and f.request.method == "DELETE"]
    assert [f.response.status_code for f in deletes] == [200]
