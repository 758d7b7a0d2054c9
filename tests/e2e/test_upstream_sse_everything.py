"""Released Streamable HTTP clients in front of the npm everything server in its HTTP+SSE mode
(``GET /sse``, ``POST /message?sessionId=``; tests/peers/everything_server.cjs ``sse``), through mcpx
with the README's plain reverse-mode command (addon/mcpx_core/transport/upstream_sse/).

Clients: npm ``@modelcontextprotocol/sdk`` 1.25.0, ``@modelcontextprotocol/client`` 2.4.0, PyPI ``mcp``
1.12.4 and fastmcp 2.10.6, each given ``http://<mcpx>/sse``. Directly each fails at connect (the
server answers ``POST /sse`` with Express's HTML 404). Through mcpx each runs the full scenario of
scenarios.json, and the reference is the same client through mcpx in front of the same server
package in its Streamable HTTP mode (``/mcp``): the same verdicts, the same results (but for the ops
scenarios.json marks non-deterministic), the same server requests (sampling, elicitation: the
client's own handlers answered them), the same change records. Every message the client received
validates against the revision it negotiated; the client's GET stream carries keepalive comments
while it is idle and says not to buffer it. About 15 s on 2 loaded cores.
"""
from __future__ import annotations

import re

import orjson
import pytest

import peers_lib as pl
from mcpx_core.framing.sse import SSEParser
from proxy_lib import Proxy
from schema_check import message_errors

pytestmark = pytest.mark.peers

README = {"connection_strategy": None}
CLIENTS = ["sdk-1.25.0", "client-2.4.0", "mcp-1.12.4", "fastmcp-2.10.6"]
#: the path each client is given: fastmcp's Client picks its transport from the URL (a path ending in
#: ``/sse`` makes it an HTTP+SSE client), so it is given ``/mcp``, whose ``/sse`` beside it mcpx probes
PATH = {"fastmcp-2.10.6": "/mcp"}


def run(client: str, url: str, ops: list) -> dict:
    return pl.run_client(client, url, ops, timeout=120)


def _own(f) -> bool:
    return (f.metadata.get("mcpx") or {}).get("origin") == "mcpx"


@pytest.fixture(scope="module")
def everything(tmp_path_factory):
    pl.require(pl.peers_missing())
    tmp = tmp_path_factory.mktemp("upstream-sse-everything")
    out: dict = {"direct": {}, "sse": {}, "streamable": {}, "marks": {}}
    with pl.start_everything_server(transport="sse") as old, pl.start_everything_server() as new:
        old_base, new_base = f"http://127.0.0.1:{old.port}", f"http://127.0.0.1:{new.port}"
        out["port"] = old.port
        for c in CLIENTS:
            out["direct"][c] = run(c, old_base + PATH.get(c, "/sse"), pl.scenario_ops("everything", c)[:1])
        script = tmp / "keepalive.py"  # a keepalive comment every 0.3 s (instead of 15 s) on the client's GET stream
        script.write_text("import mcpx_core.transport.upstream_sse as t\nt.KEEPALIVE = 0.3\n")
        with Proxy(old_base, tmp, options=README, path="", tag="sse", scripts=(str(script),)) as px, \
             Proxy(new_base, tmp, options=README, path="", tag="streamable") as ref:
            for c in CLIENTS:
                ops = pl.scenario_ops("everything", c)
                out["sse"][c] = run(c, px.url + PATH.get(c, "/sse"), ops)
                out["marks"].setdefault("sse", []).append(len(px.changes()))
                out["streamable"][c] = run(c, ref.url + "/mcp", ops)
                out["marks"].setdefault("streamable", []).append(len(ref.changes()))
            out["records"] = {"sse": px.changes(), "streamable": ref.changes()}
            out["lines"] = [re.sub(r"^\[[\d:.]+\] ", "", ln) for ln in px.output().splitlines() if "] mcpx: " in ln]
        out["flows"] = px.flows()
        yield out



def test_directly_each_client_fails_at_connect(everything):
    for c in CLIENTS:
        got = everything["direct"][c]
        assert got["returncode"] == 2 and got["results"] == [], (c, got)
        assert ("Cannot POST /sse" if c.startswith(("sdk-", "client-")) else "Session terminated") in got["error"], (c, got["error"])


def _same(result: dict) -> dict:
    """A report entry without the progress the client saw before its call's promise resolved (the client's race)."""
    if isinstance(result.get("result"), dict) and "__progress" in result["result"]:
        return {**result, "result": {k: v for k, v in result["result"].items() if k != "__progress"}}
    return result


def test_through_mcpx_each_client_runs_its_scenario_as_against_a_streamable_http_server(everything):
    for c in CLIENTS:
        sse, ref = everything["sse"][c], everything["streamable"][c]
        assert sse["returncode"] == ref["returncode"] == 0, (c, sse["stderr"][-2000:])
        assert pl.verdicts(sse) == pl.expected_verdicts("everything", c, direct=False) == pl.verdicts(ref), c
        assert sse["protocolVersion"] == ref["protocolVersion"] == pl.load_scenarios()["clients"][c]["revision"]
        nondeterministic = {op["id"] for op in pl.scenario_ops("everything", c) if op.get("deterministic") is False}
        assert [_same(r) for r in sse["results"] if r["id"] not in nondeterministic] == \
               [_same(r) for r in ref["results"] if r["id"] not in nondeterministic], c
        # the server's sampling and elicitation requests reached the client's own handlers, as over Streamable HTTP
        assert sse["serverRequests"] == ref["serverRequests"]
        assert [r["method"] for r in sse["serverRequests"]] == ["sampling/createMessage", "elicitation/create"], c
        by_id = {r["id"]: r for r in sse["results"]}
        assert "mcpx test sampling reply" in by_id["trigger-sampling-request"]["result"]["content"][0]["text"]
        assert "- Name: Test User" in by_id["trigger-elicitation-request"]["result"]["content"][1]["text"]
        assert by_id["echo"]["result"]["content"] == [{"type": "text", "text": "Echo: hello mcpx"}]


def _key(r: dict) -> tuple:
    return (r["direction"], r["method"], r["jsonrpc_id"], r["pointer"], r["action"], r["rule"], r["from_rev"], r["to_rev"])


def test_the_change_records_are_those_of_a_streamable_http_session(everything):
    """Client by client, the records of the bridged session equal those of the reference (place, action, rule,
    revisions; the before/after of get-resource-reference's random resource may differ)."""
    got = {}
    for leg in ("sse", "streamable"):
        recs, marks = everything["records"][leg], everything["marks"][leg]
        got[leg] = dict(zip(CLIENTS, (recs[a:b] for a, b in zip([0, *marks], marks))))
    for c in CLIENTS:
        assert sorted(map(_key, got["sse"][c])) == sorted(map(_key, got["streamable"][c])), c
        assert len({r["session"] for r in got["sse"][c]}) <= 1
    # the two 2025-11-25 clients speak the server's revision: nothing to change; the 2025-06-18 ones get downgrades
    assert got["sse"]["sdk-1.25.0"] == got["sse"]["client-2.4.0"] == []
    for c in ("mcp-1.12.4", "fastmcp-2.10.6"):
        rules = {(r["method"], r["action"], r["rule"]) for r in got["sse"][c]}
        assert {("tools/list", "drop", "TOOL-execution"), ("initialize", "drop", "CAP-server-tasks"),
                ("elicitation/create", "rewrite", "ELIC-enum-titled-single")} <= rules, (c, rules)


def _messages(body: bytes, ctype: str) -> list:
    if not body:
        return []
    if ctype.startswith("text/event-stream"):
        events = SSEParser().feed(body)
        return [orjson.loads(e.payload) for e in events if e.payload and e.payload.strip()[:1] in (b"{", b"[")]
    v = orjson.loads(body)
    return v if isinstance(v, list) else [v]


def test_every_message_the_client_sent_and_received_validates_against_its_revision(everything):
    """The client's leg: each POST's message and each answer (JSON or SSE, and the GET stream mcpx served)."""
    flows = [f for f in everything["flows"] if not _own(f) and f.response is not None]
    checked = {c: 0 for c in ("2025-11-25", "2025-06-18")}
    for f in flows:
        rev = f.metadata["mcpx"]["client_revision"]
        assert f.metadata["mcpx"]["transports"] == {"client": "Streamable HTTP", "server": "HTTP+SSE (2024-11-05)"}, f.comment
        assert f.comment.endswith(" · transports: client Streamable HTTP, server HTTP+SSE"), f.comment  # the flow list
        sent = _messages(f.request.content, "application/json") if f.request.method == "POST" else []
        got = _messages(f.response.content, f.response.headers.get("content-type", ""))
        asked = {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}
        told = {m["id"]: m["method"] for m in got if "method" in m and "id" in m}
        for m in sent:
            assert message_errors(rev, m, m.get("method") or told.get(m.get("id"))) == [], (f.comment, m)
        for m in got:
            assert message_errors(rev, m, m.get("method") or asked.get(m.get("id"))) == [], (f.comment, m)
        checked[rev] += len(sent) + len(got)
    assert checked["2025-11-25"] > 100 and checked["2025-06-18"] > 100, checked


def test_one_refusal_then_each_session_has_its_own_upstream_stream(everything):
    """The first client's ``initialize`` to ``/sse`` is refused (404), the later ones on ``/sse`` go to the known
    stream at once; fastmcp's, given ``/mcp``, is asked of the server first and its 404 sends mcpx to the ``/sse``
    beside it (no probe). Each client's session has one upstream stream (``GET /sse``), its ``DELETE`` ends it."""
    assert [ln for ln in everything["lines"] if "refused" in ln] == [
        "mcpx: /sse refused the initialize (HTTP 404); /sse is an HTTP+SSE server: messages go to /message",
        "mcpx: /mcp refused the initialize (HTTP 404); /sse is an HTTP+SSE server: messages go to /message"]
    assert [ln for ln in everything["lines"] if "stream of" in ln] == \
        [f"mcpx: upstream HTTP+SSE stream of http://127.0.0.1:{everything['port']}/sse ended: the client's DELETE"] * 4
    own = [f for f in everything["flows"] if _own(f)]
    assert [(f.request.path, f.response.status_code) for f in own if f.request.method == "GET"] == [("/sse", 200)] * 4
    posts = {f.request.path.split("?")[0] for f in own if f.request.method == "POST"}
    assert posts == {"/message", "/sse", "/mcp"}  # the endpoint, and each client's sealed initialize
    deletes = [(f.request.path, f.response.status_code) for f in everything["flows"] if f.request.method == "DELETE"]
    assert deletes == [("/sse", 200)] * 3 + [("/mcp", 200)]


def test_the_clients_get_stream_has_keepalive_comments(everything):
    """Each client's GET stream (served by mcpx): unbuffered, its messages (list changes) and, while idle,
    keepalive comments (every 0.3 s here) between them; the comments are the only other bytes on it."""
    streams = [f for f in everything["flows"] if f.request.method == "GET" and not _own(f)]
    assert len(streams) == len(CLIENTS)
    for f in streams:
        assert (f.response.headers["content-type"], f.response.headers["x-accel-buffering"]) == ("text/event-stream", "no")
        body = f.response.content
        assert body.count(b": keepalive\n\n") >= 1, body[:500]  # (each session lasts about 0.6 s)
        events = SSEParser().feed(body)
        assert {e.raw for e in events if not e.payload} == {b": keepalive\n\n"}
        assert [orjson.loads(e.payload)["method"] for e in events if e.payload][:1] == ["notifications/tools/list_changed"]
