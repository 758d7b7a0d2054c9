"""A host profile's content rule, through the rewriter (issue 19: the fast tests had no profile's
content rule; mutation testing showed that path unchecked). The shipped profile
``pydantic-ai-0.4`` (data/profiles.toml: pydantic-ai-slim 0.4.4 has no ResourceLink branch) takes
resource_link blocks of tool results away from a 2025-06-18 client that defines them."""
from __future__ import annotations

import pytest

from mcpx_core.profiles import ProfileSet
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker


def test_a_profile_rewrites_a_block_the_clients_revision_defines():
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev = s.client_rev = "2025-06-18"
    s.profile = "pydantic-ai-0.4"  # chosen at initialize (test_profile_files.py: how it is chosen)
    exch = Exchange(flow_id="f", session=s, is_mcp=True, request_ids={3: "tools/call"})
    out = Rewriter(store, profile_set=ProfileSet.build()).response_json(
        exch, b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource_link","uri":"file:///r.txt","name":"r.txt"}]}}')
    text = "Resource link (content not embedded): file:///r.txt\\nname: r.txt"
    assert out == (b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource","resource":{"uri":"file:///r.txt",'
                   b'"mimeType":"text/plain","text":"' + text.encode() + b'"}}]}}')
    assert [{k: v for k, v in c.as_dict().items() if k != "time"} for c in exch.changes] == [
        {"pointer": "/result/content/0", "action": "rewrite", "rule": "MCPX-profile-content",
         "before": '{type: "resource_link", uri: "file:///r.txt", name: "r.txt"}',
         "after": '{type: "resource", resource: {uri: "file:///r.txt", mimeType: "text/plain", text: "' + text + '"}}',
         "detail": "profile pydantic-ai-0.4: the client does not parse a resource_link block in a tools/call result",
         "flow": "f", "session": "sess-1", "direction": "s2c", "jsonrpc_id": 3, "method": "tools/call",
         "from_rev": "2025-06-18", "to_rev": "2025-06-18", "profile": "pydantic-ai-0.4"}]


@pytest.mark.parametrize("profile,revision,method,body,delivered,detail", [
    # mcp 1.9.0-1.9.3 declare 2025-03-26 but have no AudioContent: the audio bytes as an embedded blob resource
    ("mcp-1.9", "2025-03-26", "tools/call",
     b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}]}}',
     b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource","resource":{"uri":"urn:mcpx:audio:aa40ebcc97ccf9ef",'
     b'"mimeType":"audio/wav","blob":"UklGRg=="}}]}}',
     "profile mcp-1.9: the client does not parse an audio block in a tools/call result"),
    # langchain-mcp-adapters 0.1 turns only text prompt content into messages: an image becomes a text note
    ("langchain-mcp-adapters-0.1", "2025-06-18", "prompts/get",
     b'{"jsonrpc":"2.0","id":3,"result":{"messages":[{"role":"user","content":{"type":"image","data":"iVBORw==","mimeType":"image/png"}}]}}',
     b'{"jsonrpc":"2.0","id":3,"result":{"messages":[{"role":"user","content":{"type":"text","text":"[image content omitted: image/png, 4 bytes]"}}]}}',
     "profile langchain-mcp-adapters-0.1: the client does not parse an image block in a prompts/get result"),
])
def test_a_profile_rewrites_a_block_as_a_resource_or_a_text_note(profile, revision, method, body, delivered, detail):
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev = s.client_rev = revision
    s.profile = profile
    exch = Exchange(flow_id="f", session=s, is_mcp=True, request_ids={3: method})
    assert Rewriter(store, profile_set=ProfileSet.build()).response_json(exch, body) == delivered
    assert [(c.action, c.rule, c.detail, c.profile) for c in exch.changes] == [("rewrite", "MCPX-profile-content", detail, profile)]
