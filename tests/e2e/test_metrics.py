"""``mcpx_metrics``: the scraped counters of a real-peer run equal what mcpx logged and kept.

The real released client sdk-1.10.2 (2024-11-05) runs its whole scenario against the real
everything server through one mitmdump with ``mcpx_metrics`` on, then the real 2026-07-28 client
``client-2.4.0`` (which the client2026 bridge serves) and one request with a token mcpx never
issued. Scraped while it runs on: change records by action and rule equal the ``mcpx_log`` file's;
messages by direction and method equal the message entries mcpx kept on the flows (``-w`` file);
bridged requests and mcpx's own requests by bridge equal the flows; one 404 answered by mcpx; the
session counters say one session opened; no label holds the session's handle, its token or a tool argument; ``/healthz``
answers 200 (503 while draining: ``tests/e2e/test_operating.py``).
"""
from __future__ import annotations

import collections
import re
import urllib.error
import urllib.request

import pytest

import peers_lib as pl
from proxy_lib import Proxy, free_port

pytestmark = pytest.mark.peers

CLIENT = "sdk-1.10.2"


def _scrape(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as r:
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def _samples(text: str, name: str) -> dict[tuple, float]:
    """{label values in order of the sample: value} of metric ``name`` (a counter's ``_total``)."""
    out = {}
    for labels, value in re.findall(rf"^{name}\{{(.*)\}} (\S+)$", text, re.M):
        out[tuple(re.findall(r'\w+="([^"]*)"', labels))] = float(value)
    return out


def test_scraped_counters_equal_the_change_log_and_the_flows(tmp_path):
    pl.require(pl.peers_missing())
    address = f"127.0.0.1:{free_port()}"
    with pl.start_everything_server() as ev:
        px = Proxy(f"http://127.0.0.1:{ev.port}", tmp_path, options={"mcpx_metrics": address})
        try:
            with urllib.request.urlopen(f"http://{address}/healthz", timeout=5) as r:
                assert (r.status, r.read()) == (200, b"serving\n")
            report = pl.run_client(CLIENT, px.url, pl.scenario_ops("everything", CLIENT), timeout=120)
            # a 2026-07-28 client in front of this legacy server: the client2026 bridge serves it
            bridged = pl.run_client_2026(px.url, [{"id": "listTools", "op": "listTools"},
                                                  {"id": "echo", "op": "callTool", "name": "echo", "arguments": {"message": "m"}}])
            # a token mcpx never issued: mcpx answers 404 itself
            req = urllib.request.Request(px.url, data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', headers={
                "content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-session-id": "mcpx1.AAAA"})
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=10)
            assert e.value.code == 404
            text = _scrape(address)
        finally:
            px.stop()
    assert pl.verdicts(report) == pl.expected_verdicts("everything", CLIENT, direct=False)
    assert pl.verdicts(bridged) == {"listTools": "ok", "echo": "ok"}
    records = px.changes()
    assert records
    by_rule = collections.Counter((r["action"], r["rule"]) for r in records)
    scraped = _samples(text, "mcpx_change_records_total")  # labels: action, rule
    assert {k: int(v) for k, v in scraped.items()} == dict(by_rule)
    kept = collections.Counter()
    flows = px.flows()
    for f in flows:
        meta = f.metadata.get("mcpx") or {}
        if meta.get("origin") == "mcpx":  # mcpx's own requests: their messages are their client flow's
            continue
        assert not meta.get("messages_omitted")
        kept.update((m["direction"], m["method"] or "none") for m in meta.get("messages", []))
    messages = collections.Counter()
    for (direction, frm, method, to), v in _samples(text, "mcpx_messages_total").items():
        messages[(direction, method)] += int(v)
    assert messages == kept
    # the bridge: each request of the 2026-07-28 client, and mcpx's own requests upstream for them
    own = [f for f in flows if (f.metadata.get("mcpx") or {}).get("origin") == "mcpx"]
    clients = sorted((f for f in flows if f not in own), key=lambda f: f.request.timestamp_start)
    ended = next(i for i, f in enumerate(clients) if f.request.method == "DELETE")  # sdk-1.10.2's last
    of_2026 = {f.id for f in clients[ended + 1:] if f.response.status_code != 404}  # then client-2.4.0's
    assert of_2026 and _samples(text, "mcpx_bridged_requests_total") == {("client2026",): float(len(of_2026))}
    # (the server/discover probe that learns the server's era comes before any bridge is chosen: none)
    by_bridge = collections.Counter("client2026" if f.metadata["mcpx"]["for_flow"] in of_2026
                                    and b"mcpx-era-probe" not in f.request.content else "none" for f in own)
    assert {k[0]: int(v) for k, v in _samples(text, "mcpx_own_requests_total").items()} == dict(by_bridge)
    assert by_bridge["client2026"] > 0
    assert _samples(text, "mcpx_errors_answered_total") == {("404",): 1.0}
    calls = sum(1 for op in pl.scenario_ops("everything", CLIENT) if op["op"] == "callTool")
    assert messages[("c2s", "tools/call")] == calls + 1  # and client-2.4.0's echo
    assert re.search(r"^mcpx_sessions_opened_total 1\.0$", text, re.M)
    ended = sum(1 for f in px.flows() if f.request.method == "DELETE")
    assert re.search(rf"^mcpx_sessions_live {1 - ended}\.0$", text, re.M), ended  # a DELETE ends it
    passthroughs = sum(_samples(text, "mcpx_passthroughs_total").values())
    assert passthroughs == sum(1 for r in records if r["action"] == "passthrough")
    assert int(re.search(r'^mcpx_added_seconds_count\{stage="response"\} (\S+)$', text, re.M).group(1).split(".")[0]) > 0
    # bounded labels: nothing of the session or of a call's arguments
    handles = {r["session"] for r in records if r["session"]}
    assert handles and not any(h in text for h in handles)
    assert "mcpx1." not in text and "hello mcpx" not in text and "Chicago" not in text
