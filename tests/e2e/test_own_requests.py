"""Requests mcpx sends itself go out as mitmproxy's own do (issue 18): TLS verification and trusted
CAs, ``ssl_insecure``, ``--mode upstream:``, and never a credential in a log or to another origin.

mcpx originates: the ``initialize`` of every sealed session (MintSession), the single POSTs of a
split batch, and answers on the client's behalf to server requests its revision cannot receive.
The server is the real PyPI mcp 2.3.0 server (stateful, SSE). For the TLS cases it sits behind
``tls_lib.TLSFront``, a small gate that only adds TLS with a certificate of a throwaway test CA and
records the plaintext requests that reach the server.
"""
from __future__ import annotations

import http.client
import json

import orjson
import pytest

import peers_lib as pl
from proxy_lib import Client, Proxy
from tls_lib import ThrowawayCA, TLSFront

pytestmark = pytest.mark.peers
SECRET = "Bearer own-requests-secret-7c1f"
ASK_NAME = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}}
BATCH = [{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
         {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 4, "b": 5}}}]



def ADDED(rid: int, a: int, b: int) -> dict:
    """The py server's ``add`` answer for a 2025-03-26 client (structuredContent dropped: its text carries its value)."""
    text = f"{a} + {b} = {a + b}"
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"text": text, "type": "text"}], "isError": False}}


@pytest.fixture(scope="module")
def server():
    if pl.peers_missing():
        pytest.skip("peers missing")
    with pl.start_py_server() as srv:
        yield srv


@pytest.fixture
def front(server, tmp_path):
    ca = ThrowawayCA(tmp_path / "ca")
    with TLSFront(ca, server.port) as f:
        f.ca = ca
        yield f


def mcp_bodies(front: TLSFront) -> list[dict]:
    return [orjson.loads(b) for m, _, _, b in front.requests() if m == "POST" and b]


def own_flows(px: Proxy) -> list:
    return [f for f in px.flows() if (f.metadata.get("mcpx") or {}).get("origin") == "mcpx"]


def old_client(px: Proxy, revision: str = "2024-11-05", name: str = "own-requests") -> Client:
    c = Client(px.port, headers={"authorization": SECRET})
    c.initialize(revision, name=name)
    return c


def assert_no_secret(px: Proxy) -> None:
    """No credential in the change log or mitmdump's output (flow_detail 0)."""
    assert SECRET.split()[1] not in px.log_path.read_text() + px.output()


def test_tls_with_the_test_ca_option(front, tmp_path):
    """ssl_verify_upstream_trusted_ca names the test CA: mcpx's own initialize, batch members and its
    answer on the client's behalf reach the TLS server, each with the client's Authorization (made on
    its behalf, same origin) and nothing else of the client's credentials store."""
    opts = {"ssl_verify_upstream_trusted_ca": front.ca.ca_pem, "mcpx_pin": "batcher=2025-03-26"}
    with Proxy(f"https://127.0.0.1:{front.port}", tmp_path, options=opts) as px:
        c = old_client(px)  # 2024-11-05: the server's elicitation/create is answered by mcpx
        st, _, msgs = c.rpc(ASK_NAME)
        assert st == 200 and msgs[-1]["id"] == 7
        b = old_client(px, "2025-06-18", name="batcher")  # pinned to 2025-03-26: may send batches
        st, h, body = b.post(BATCH)
        assert st == 200 and h["content-type"] == "application/json"
        assert sorted(orjson.loads(body), key=lambda m: m["id"]) == [ADDED(11, 2, 3), ADDED(12, 4, 5)]
    sent = mcp_bodies(front)
    answers = [m for m in sent if "error" in m and m["error"]["code"] == -32601]
    assert len(answers) == 1 and "elicitation/create" in answers[0]["error"]["message"]
    assert [m["id"] for m in sent if m.get("method") == "tools/call" and m["id"] in (11, 12)] == [11, 12]
    assert sum(1 for m in sent if m.get("method") == "initialize") == 2
    # every request mcpx originated went to the flow's server (the front), with the client's token
    flows = own_flows(px)
    assert {(f.request.host, f.request.port, f.request.scheme) for f in flows} == {("127.0.0.1", front.port, "https")}
    assert len(flows) == 2 + 2 + 1  # 2 initializes, 2 batch members, 1 answer
    assert all(f.request.headers.get("authorization") == SECRET for f in flows)
    # flows are kept as they complete: the answer to the server request is a POST of its own, concurrent
    # with the call's SSE stream, so it may be kept after the next client's initialize or the batch
    # members (its place is not defined; the others come one after the other, in order)
    purposes = [f.metadata["mcpx"]["purpose"] for f in flows]
    answer = "answer to server request id=1 (error -32601)"
    assert sorted(purposes) == sorted([
        "initialize, to seal the session", answer,
        "initialize, to seal the session", "a member of a split batch", "a member of a split batch"])
    assert [p for p in purposes if p != answer] == [
        "initialize, to seal the session", "initialize, to seal the session", "a member of a split batch", "a member of a split batch"]
    assert purposes[0] == "initialize, to seal the session"  # the answer is sent after the session was made
    # each keeps the body the server answered, streamed (SSE) or not: mitmproxy keeps none of a stream
    for f in flows:
        kind = f.response.headers.get("content-type", "").split(";")[0]
        assert f.response.raw_content is not None, f.metadata["mcpx"]["purpose"]
        if kind == "text/event-stream":
            assert f.response.raw_content.startswith((b"event:", b"data:", b"id:")), f.response.raw_content[:40]
            assert f.response.raw_content.endswith((b"\n\n", b"\r\n\r\n"))  # whole: up to its last event
    inits = [f for f in flows if f.metadata["mcpx"]["purpose"] == "initialize, to seal the session"]
    assert all(b'"protocolVersion"' in f.response.get_content() for f in inits)
    assert all(h.get("authorization") == SECRET for m, _, h, b in front.requests() if m == "POST")
    assert front.handshakes_failed == 0
    assert_no_secret(px)


def test_tls_without_the_ca_fails_cleanly(front, tmp_path):
    """Without the CA (mitmproxy's default: verify), mcpx's initialize is not sent: the handshake
    fails, the client gets a JSON-RPC error naming why, a record says so, nothing reached the server.
    A session made with the CA, then a batch through an mcpx without it (same session key): each
    member is answered with a JSON-RPC error, with a record, and nothing is sent."""
    with Proxy(f"https://127.0.0.1:{front.port}", tmp_path, options={"mcpx_pin": "batcher=2025-03-26"}, tag="-noca") as px:
        c = Client(px.port, headers={"authorization": SECRET})
        st, h, body = c.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "batcher", "version": "1"}}})
        assert st == 502 and h["content-type"] == "application/json"
        err = orjson.loads(body)
        assert err["id"] == 0 and err["error"]["code"] == -32603
        assert "mcpx could not reach the server" in err["error"]["message"] and "certificate" in err["error"]["message"].lower()
        assert [(r["action"], r["detail"].split(":")[0]) for r in px.changes()] == [("passthrough", "initialize not sent")]
    assert front.requests() == [] and front.handshakes_failed >= 1
    with Proxy(f"https://127.0.0.1:{front.port}", tmp_path, options={
            "ssl_verify_upstream_trusted_ca": front.ca.ca_pem, "mcpx_pin": "batcher=2025-03-26"}, tag="-ca") as good:
        b = old_client(good, "2025-06-18", name="batcher")
    before = len(front.requests())
    with Proxy(f"https://127.0.0.1:{front.port}", tmp_path, options={"mcpx_pin": "batcher=2025-03-26"}, tag="-noca2") as px:
        b.port = px.port
        b.conn = http.client.HTTPConnection("127.0.0.1", px.port, timeout=30)
        st, h, body = b.post(BATCH)
        assert st == 200
        answers = sorted(orjson.loads(body), key=lambda m: m["id"])
        assert [(a["id"], a["error"]["code"]) for a in answers] == [(11, -32603), (12, -32603)]
        assert all("certificate" in a["error"]["message"].lower() for a in answers)
        recs = [(r["action"], r["rule"], r["detail"].split(":")[0] if r["detail"] else None) for r in px.changes()]
        assert recs == [("synthesize", "TR-protocol-version-header", None),  # the pinned 2025-03-26 leg sends none
                        ("split", "RPC-batch-request", "JSON-RPC batch split"),
                        ("passthrough", "PASSTHROUGH-error", "batch member not sent"),
                        ("passthrough", "PASSTHROUGH-error", "batch member not sent")]
        assert_no_secret(px)
    assert len(front.requests()) == before  # nothing sent


def test_ssl_insecure_makes_them_succeed(front, tmp_path):
    """ssl_insecure=true (the user asked for it): no verification, the same requests succeed."""
    with Proxy(f"https://127.0.0.1:{front.port}", tmp_path, options={"ssl_insecure": "true", "mcpx_pin": "batcher=2025-03-26"}) as px:
        c = old_client(px)
        st, _, msgs = c.rpc(ASK_NAME)
        assert st == 200 and msgs[-1]["id"] == 7
        b = old_client(px, "2025-06-18", name="batcher")
        st, _, body = b.post(BATCH)
        assert st == 200 and sorted(orjson.loads(body), key=lambda m: m["id"]) == [ADDED(11, 2, 3), ADDED(12, 4, 5)]
    sent = mcp_bodies(front)
    assert sum(1 for m in sent if "error" in m and m["error"]["code"] == -32601) == 1
    assert [m["id"] for m in sent if m.get("method") == "tools/call" and m["id"] in (11, 12)] == [11, 12]


def test_upstream_proxy_mode(server, tmp_path):
    """--mode upstream:http://CORP (clients use mcpx as their HTTP proxy; a second mitmdump plays the
    corporate proxy): mcpx's own initialize, batch members and answer reach the server through it."""
    # the corporate proxy streams bodies (stream_large_bodies=1), as such proxies do: a mitmdump that buffers
    # would hold the tools/call SSE stream (and its elicitation/create) until the server ends it, which it
    # does only after the answer: a deadlock that is the test proxy's, not mcpx's
    with Proxy("", tmp_path, script=False, mode="regular", tag="-corp", options={"stream_large_bodies": "1", "store_streamed_bodies": "true"}) as corp, \
            Proxy("", tmp_path, mode=f"upstream:http://127.0.0.1:{corp.port}", options={"mcpx_pin": "batcher=2025-03-26"}) as px:
        target = f"http://127.0.0.1:{server.port}/mcp"
        c = Client(px.port, path=target, headers={"authorization": SECRET})
        c.initialize("2024-11-05")
        st, _, msgs = c.rpc(ASK_NAME)
        assert st == 200 and msgs[-1]["id"] == 7
        b = Client(px.port, path=target)
        b.initialize("2025-06-18", name="batcher")
        st, _, body = b.post(BATCH)
        assert st == 200 and sorted(orjson.loads(body), key=lambda m: m["id"]) == [ADDED(11, 2, 3), ADDED(12, 4, 5)]
        c.close()
        b.close()
    mine = own_flows(px)
    assert len(mine) == 5 and all((f.request.host, f.request.port) == ("127.0.0.1", server.port) for f in mine)
    through = [json.loads(f.request.get_content()) for f in corp.flows() if f.request.method == "POST"]
    assert sum(1 for m in through if isinstance(m, dict) and m.get("method") == "initialize") == 2
    assert sorted(m["id"] for m in through if isinstance(m, dict) and m.get("method") == "tools/call" and m["id"] in (11, 12)) == [11, 12]
    assert sum(1 for m in through if isinstance(m, dict) and "error" in m and m["error"]["code"] == -32601) == 1
    assert [m for m in through if isinstance(m, list)] == []  # the batch itself never left mcpx
    assert_no_secret(px)

