"""A gate in front of a real MCP server that makes it answer ``initialize`` with its newest legacy
revision whatever the client asked: ``mitmdump --mode reverse:SERVER -s tests/peers/newest_gate.py``.

It changes only what the test is about (issue 12): the ``protocolVersion`` of an ``initialize``
request becomes ``2025-11-25``, so the real server (its code unchanged) negotiates that and answers
it, as servers that always answer their own newest revision do (mcp-remote users meet them; a
client that asked for an older one then aborts, PEERS.md). Every other message, and every answer,
passes through untouched, streamed as it comes (SSE included).
"""
from __future__ import annotations

import json

NEWEST = "2025-11-25"


class NewestGate:
    def request(self, flow) -> None:
        body = flow.request.get_content(strict=False) or b""
        if b'"initialize"' not in body:
            return
        try:
            msg = json.loads(body)
        except ValueError:
            return
        if isinstance(msg, dict) and msg.get("method") == "initialize" and isinstance(msg.get("params"), dict):
            msg["params"]["protocolVersion"] = NEWEST
            flow.request.content = json.dumps(msg).encode()

    def responseheaders(self, flow) -> None:
        flow.response.stream = True  # SSE answers stream through as they come


addons = [NewestGate()]
