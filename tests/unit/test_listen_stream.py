"""The listen stream a 2026-07-28 client gets from a legacy server's GET stream (bridge/client2026.py
ListenStream): exact bytes out for exact bytes in, and exact records."""
from __future__ import annotations

import orjson

from mcpx_core.bridge.client2026 import Listen, ListenStream

SUB = {"io.modelcontextprotocol/subscriptionId": "listen:3"}


def event(msg: dict, eid: str = "e1") -> bytes:
    return b"id: " + eid.encode() + b"\nevent: message\ndata: " + orjson.dumps(msg) + b"\n\n"


def test_ack_then_only_what_was_asked_for():
    got: list = []
    t = ListenStream(Listen(sub_id="listen:3", honoured={"toolsListChanged": True, "resourceSubscriptions": ["demo://a"]},
                            server_rev="2025-11-25"), got.extend)
    first = t(None)
    assert first == [b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":'
                     b'{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:3"},"notifications":{"toolsListChanged":true,'
                     b'"resourceSubscriptions":["demo://a"]}}}\n\n']
    upstream = (b"id: p0\ndata: \n\n"  # a priming event: nothing
                + event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                + event({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
                + event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
                + event({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "demo://b"}})
                + event({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "demo://a"}}))
    out = t(upstream[:40]) + t(upstream[40:]) + t(b"")
    assert [orjson.loads(b.split(b"data: ", 1)[1]) for b in out] == [
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": SUB}},
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "demo://a", "_meta": SUB}},
    ]
    assert [(c.pointer, c.action, c.rule) for c in got] == [
        ("", "synthesize", "SUB-acknowledged"),
        ("/params/_meta/io.modelcontextprotocol~1subscriptionId", "synthesize", "META-subscriptionId"),
        ("", "drop-message", "SUB-list-changed-delivery"),
        ("", "drop-message", "LOG-message-scope"),
        ("", "drop-message", "SUB-list-changed-delivery"),
        ("/params/_meta/io.modelcontextprotocol~1subscriptionId", "synthesize", "META-subscriptionId"),
    ]
