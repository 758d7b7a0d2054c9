"""The "MCP" and "MCP original" content views render MCP flows message by message (exact text).

Flows are driven through the real addon's hooks (tests/inspect/mcp_flows.py): initialize, then a
call whose answer mcpx rewrites; the views are asked for the body as mitmproxy's UIs ask
(``contentviews.prettify_message``), on the live flow and on the flow read back from a file.
"""
from __future__ import annotations

from hooks_lib import hook, hook_sync

import asyncio
import io
import json

from mitmproxy import http
from mitmproxy import io as mio
from mitmproxy.test import taddons, tflow, tutils
from mitmproxy.tools.web.app import flow_to_json
from mitmproxy.utils import emoji

from conftest import CASES_DIR
from mcp_flows import Harness, render

B01 = json.loads((CASES_DIR / "01-resource-link-to-older-client.json").read_text())
B05 = json.loads((CASES_DIR / "05-sse-crlf-line-endings.json").read_text())


def run(coro):
    return asyncio.run(coro)


async def json_flow() -> http.HTTPFlow:
    async with Harness() as h:
        await h.initialize("2025-03-26")
        call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "export", "arguments": {}}}
        return await h.exchange(call, B01["input"]["body"].encode(), session="sess-1")


async def sse_flow() -> http.HTTPFlow:
    async with Harness() as h:
        await h.initialize("2024-11-05")
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "sensor", "arguments": {}, "_meta": {"progressToken": "job-7"}}}
        body = b"id: 0\r\ndata: \r\n\r\n" + B05["input"]["body"].encode()  # a priming event, then the case
        return await h.exchange(call, body, session="sess-1", sse=True)


BATCH_REQUEST = [
    {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
    {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "links", "arguments": {}}},
    {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
]
BATCH_RESPONSE = [
    {"jsonrpc": "2.0", "id": 11, "result": {"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}}},
    {"jsonrpc": "2.0", "id": 12, "error": {"code": -32602, "message": "Unknown tool: links"}},
]


async def batch_flow() -> http.HTTPFlow:
    async with Harness() as h:
        await h.initialize("2025-03-26")  # both peers 2025-03-26: batches allowed, not split
        return await h.exchange(BATCH_REQUEST, BATCH_RESPONSE, session="sess-1")


async def sse_batch_flow() -> http.HTTPFlow:
    async with Harness() as h:
        await h.initialize("2025-06-18")
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "add", "arguments": {}}}
        batch = [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
                 {"jsonrpc": "2.0", "id": 5, "result": {"content": []}}]
        return await h.exchange(call, b"id: 1\ndata: " + json.dumps(batch).encode() + b"\n\n", session="sess-1", sse=True)


def replayed(f: http.HTTPFlow) -> http.HTTPFlow:
    """The flow written with -w and read back (what `mitmproxy -r` / mitmweb shows)."""
    buf = io.BytesIO()
    mio.FlowWriter(buf).add(f)
    buf.seek(0)
    (back,) = list(mio.FlowReader(buf).stream())
    return back


def views(f: http.HTTPFlow, side: str = "response") -> dict[str, str]:
    with taddons.context():
        name, text = render(f, side)
        assert name == "MCP"
        _, original = render(f, side, "MCP original")
        return {"MCP": text, "MCP original": original}



# ---------------------------------------------------------------- exact texts

JSON_REQUEST = r'''MCP request (client -> server): 1 message, 0 changes
session: sess-1
client:  2025-03-26 (example-client 1.0.0)
server:  2025-03-26 (example-server 2.0.0)

[1] request tools/call id=4
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 4,
      "method": "tools/call",
      "params": {
        "name": "export",
        "arguments": {}
      }
    }
'''

JSON_MCP = r'''MCP response (server -> client): 1 message, 2 changes (1 rewritten, 1 dropped for 2025-03-26)
session: sess-1
client:  2025-03-26 (example-client 1.0.0)
server:  2025-03-26 (example-server 2.0.0)

[1] result tools/call id=4
    rewrite /result/content/1 [CT-resource_link]
        - {type: "resource_link", uri: "https://example.com/exports/summary.pdf", name: "summary.pdf", title: "Quarterly summary", description: "Exported summary document", mimeType: "application/pdf", size: 48213, annotations: {audience: […1 items], priority: 0.8, lastModified: "2026-11-28T10:00:00Z"}}
        + {type: "resource", resource: {uri: "https://example.com/exports/summary.pdf", mimeType: "text/plain", text: <str len=197 sha256=e43732211f1a>}, annotations: {audience: […1 items], priority: 0.8, lastModified: "2026-11-28T10:00:00Z"}}
    drop /result/content/1/annotations/lastModified [ANN-lastModified]
        - "2026-11-28T10:00:00Z"
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 4,
      "result": {
        "content": [
          {
            "type": "text",
            "text": "Export finished."
          },
          {
            "type": "resource",
            "resource": {
              "uri": "https://example.com/exports/summary.pdf",
              "mimeType": "text/plain",
              "text": "Resource link (content not embedded): https://example.com/exports/summary.pdf\nname: summary.pdf\ntitle: Quarterly summary\ndescription: Exported summary document\nmimeType: application/pdf\nsize: 48213"
            },
            "annotations": {
              "audience": [
                "user"
              ],
              "priority": 0.8
            }
          }
        ]
      }
    }
'''

JSON_ORIGINAL = r'''MCP response (server -> client): 1 message, 2 changes (1 rewritten, 1 dropped for 2025-03-26); as sent
session: sess-1
client:  2025-03-26 (example-client 1.0.0)
server:  2025-03-26 (example-server 2.0.0)

[1] result tools/call id=4
    rewrite /result/content/1 [CT-resource_link]
        - {type: "resource_link", uri: "https://example.com/exports/summary.pdf", name: "summary.pdf", title: "Quarterly summary", description: "Exported summary document", mimeType: "application/pdf", size: 48213, annotations: {audience: […1 items], priority: 0.8, lastModified: "2026-11-28T10:00:00Z"}}
        + {type: "resource", resource: {uri: "https://example.com/exports/summary.pdf", mimeType: "text/plain", text: <str len=197 sha256=e43732211f1a>}, annotations: {audience: […1 items], priority: 0.8, lastModified: "2026-11-28T10:00:00Z"}}
    drop /result/content/1/annotations/lastModified [ANN-lastModified]
        - "2026-11-28T10:00:00Z"
    sent:
    {
      "jsonrpc": "2.0",
      "id": 4,
      "result": {
        "content": [
          {
            "type": "text",
            "text": "Export finished."
          },
          {
            "type": "resource_link",
            "uri": "https://example.com/exports/summary.pdf",
            "name": "summary.pdf",
            "title": "Quarterly summary",
            "description": "Exported summary document",
            "mimeType": "application/pdf",
            "size": 48213,
            "annotations": {
              "audience": [
                "user"
              ],
              "priority": 0.8,
              "lastModified": "2026-11-28T10:00:00Z"
            }
          }
        ]
      }
    }
'''

SSE_MCP = r'''MCP response (server -> client): 2 messages, 4 changes (1 message dropped, 3 dropped for 2024-11-05)
session: sess-1
client:  2024-11-05 (example-client 1.0.0)
server:  2024-11-05 (example-server 2.0.0)

[1] empty data (priming event) · event 1
    drop-message [TR-sse-priming-polling]
        - SSE event id='0' data=''
        (empty-data (priming) event: only 2025-11-25 clients get it)
    not delivered

[2] notification notifications/progress · event 2
    drop /params/message [PROG-message]
        - "Reading sensor"
    delivered:
    {
      "jsonrpc": "2.0",
      "method": "notifications/progress",
      "params": {
        "progressToken": "job-7",
        "progress": 1,
        "total": 2
      }
    }

[3] result tools/call id=7 · event 3
    drop /result/structuredContent [SC-structuredContent]
        - {temperature: 21, unit: "C"}
        (the text half carries every value of structuredContent: no text block of its JSON added)
    drop /result/content/0/_meta [META-on-content-blocks]
        - {sensor: "north"}
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 7,
      "result": {
        "content": [
          {
            "type": "text",
            "text": "Temperature is 21 C"
          }
        ]
      }
    }
'''

SSE_ORIGINAL = r'''MCP response (server -> client): 2 messages, 4 changes (1 message dropped, 3 dropped for 2024-11-05); as sent
session: sess-1
client:  2024-11-05 (example-client 1.0.0)
server:  2024-11-05 (example-server 2.0.0)

[1] empty data (priming event) · event 1
    drop-message [TR-sse-priming-polling]
        - SSE event id='0' data=''
        (empty-data (priming) event: only 2025-11-25 clients get it)

[2] notification notifications/progress · event 2
    drop /params/message [PROG-message]
        - "Reading sensor"
    sent:
    {
      "jsonrpc": "2.0",
      "method": "notifications/progress",
      "params": {
        "progressToken": "job-7",
        "progress": 1,
        "total": 2,
        "message": "Reading sensor"
      }
    }

[3] result tools/call id=7 · event 3
    drop /result/structuredContent [SC-structuredContent]
        - {temperature: 21, unit: "C"}
        (the text half carries every value of structuredContent: no text block of its JSON added)
    drop /result/content/0/_meta [META-on-content-blocks]
        - {sensor: "north"}
    sent:
    {
      "jsonrpc": "2.0",
      "id": 7,
      "result": {
        "content": [
          {
            "type": "text",
            "text": "Temperature is 21 C",
            "_meta": {
              "sensor": "north"
            }
          }
        ],
        "structuredContent": {
          "temperature": 21,
          "unit": "C"
        }
      }
    }
'''

BATCH_REQUEST_MCP = r'''MCP request (client -> server): 3 messages, 0 changes
session: sess-1
client:  2025-03-26 (example-client 1.0.0)
server:  2025-03-26 (example-server 2.0.0)

[1] request tools/call id=11 · batch[0]
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 11,
      "method": "tools/call",
      "params": {
        "name": "add",
        "arguments": {
          "a": 2,
          "b": 3
        }
      }
    }

[2] request tools/call id=12 · batch[1]
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 12,
      "method": "tools/call",
      "params": {
        "name": "links",
        "arguments": {}
      }
    }

[3] notification notifications/roots/list_changed · batch[2]
    delivered:
    {
      "jsonrpc": "2.0",
      "method": "notifications/roots/list_changed"
    }
'''

BATCH_RESPONSE_MCP = r'''MCP response (server -> client): 2 messages, 1 change (1 dropped for 2025-03-26)
session: sess-1
client:  2025-03-26 (example-client 1.0.0)
server:  2025-03-26 (example-server 2.0.0)

[1] result tools/call id=11 · batch[0]
    drop /result/structuredContent [SC-structuredContent]
        - {sum: 5}
        (the text half carries every value of structuredContent: no text block of its JSON added)
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 11,
      "result": {
        "content": [
          {
            "type": "text",
            "text": "5"
          }
        ]
      }
    }

[2] error tools/call id=12 · batch[1]
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 12,
      "error": {
        "code": -32602,
        "message": "Unknown tool: links"
      }
    }
'''

SSE_BATCH_MCP = r'''MCP response (server -> client): 2 messages, 1 change (1 split for 2025-06-18)
session: sess-1
client:  2025-06-18 (example-client 1.0.0)
server:  2025-06-18 (example-server 2.0.0)
body:
    split [RPC-batch-response]
        - batch of 2 messages
        + 2 events

[1] notification notifications/message · event 1 batch[0]
    delivered:
    {
      "jsonrpc": "2.0",
      "method": "notifications/message",
      "params": {
        "level": "info",
        "data": "x"
      }
    }

[2] result tools/call id=5 · event 1 batch[1]
    delivered:
    {
      "jsonrpc": "2.0",
      "id": 5,
      "result": {
        "content": []
      }
    }
'''


# ---------------------------------------------------------------- tests

def test_json_body():
    f = run(json_flow())
    for g in (f, replayed(f)):  # live, and read back from a flow file (metadata survives -w)
        assert views(g) == {"MCP": JSON_MCP, "MCP original": JSON_ORIGINAL}
        assert views(g, "request")["MCP"] == JSON_REQUEST
        assert views(g, "request")["MCP original"] == JSON_REQUEST.replace(
            "0 changes\n", "0 changes; delivered as sent\n").replace("delivered:", "sent:")


def test_sse_body():
    f = run(sse_flow())
    for g in (f, replayed(f)):
        assert views(g) == {"MCP": SSE_MCP, "MCP original": SSE_ORIGINAL}


def test_batch():
    f = run(batch_flow())
    assert views(f, "request")["MCP"] == BATCH_REQUEST_MCP
    assert views(f)["MCP"] == BATCH_RESPONSE_MCP


def test_sse_event_with_a_batch_is_split_for_a_2025_06_18_client():
    f = run(sse_batch_flow())
    assert views(f)["MCP"] == SSE_BATCH_MCP


def test_flow_list_shows_what_mcpx_changed():
    f = run(json_flow())
    assert f.comment == "tools/call export #4 · 2025-03-26 · mcpx: 1 rewritten, 1 dropped for 2025-03-26"
    assert f.marked == ":scissors:" and f.marked in emoji.emoji  # a marker `flow.mark` accepts
    with taddons.context():
        web = flow_to_json(f)  # what mitmweb's flow list gets
    assert (web["marked"], web["comment"]) == ("\u2702", "tools/call export #4 · 2025-03-26 · mcpx: 1 rewritten, 1 dropped for 2025-03-26")
    g = run(sse_batch_flow())  # split only: commented, not marked
    assert (g.comment, g.marked) == ("tools/call add #5 · 2025-06-18 · mcpx: 1 split for 2025-06-18", "")


def test_flow_without_mcpx_record():
    """A flow recorded without mcpx: messages still listed; a result named by the request it answers."""
    req = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    resp = {"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}
    f = tflow.tflow(req=tutils.treq(method=b"POST", path=b"/mcp", content=json.dumps(req).encode(),
                                    headers=http.Headers(content_type="application/json")),
                    resp=tutils.tresp(content=json.dumps(resp).encode(),
                                      headers=http.Headers(content_type="application/json")))
    with taddons.context():
        assert render(f) == ("MCP", "MCP response (server -> client): 1 message\n"
                                    "no mcpx record on this flow\n"
                                    "\n"
                                    "[1] result tools/list id=3\n"
                                    "    delivered:\n"
                                    "    {\n"
                                    '      "jsonrpc": "2.0",\n'
                                    '      "id": 3,\n'
                                    '      "result": {\n'
                                    '        "tools": []\n'
                                    "      }\n"
                                    "    }\n")


def test_other_json_is_left_to_the_json_view():
    f = tflow.tflow(resp=tutils.tresp(content=b'{"jsonrpc": "1.0", "items": []}',
                                      headers=http.Headers(content_type="application/json")))
    with taddons.context():
        assert render(f)[0] == "JSON"
        f.response.headers["content-type"] = "text/html"
        f.response.content = b'<p>"jsonrpc": "2.0"</p>'
        assert render(f)[0] != "MCP"


def test_original_truncated_or_not_kept():
    async def flow(keep: int) -> http.HTTPFlow:
        async with Harness(mcpx_keep_original=str(keep)) as h:
            await h.initialize("2025-03-26")
            call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "export", "arguments": {}}}
            return await h.exchange(call, B01["input"]["body"].encode(), session="sess-1")

    head = JSON_MCP.split("\n\n")[0] + "\n"
    body = JSON_MCP[len(head):]
    truncated = views(run(flow(100)))
    note = "note: original body truncated: first 100 of 384 bytes kept (mcpx_keep_original)\n"
    assert truncated["MCP"] == head + note + body
    assert truncated["MCP original"] == head + note + (
        'sent (as kept):\n'
        '    {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"Export finished."},{"type":"reso\n'
    ) + body
    not_kept = views(run(flow(0)))
    note = "note: original body not kept (mcpx_keep_original): messages shown as delivered\n"
    assert not_kept == {"MCP": head + note + body, "MCP original": head + note + body}


def test_flow_read_back_with_the_addon_loaded_keeps_its_records():
    """`mitmweb -r saved.mitm -s addon/mcpx.py` (the addon registers the views) runs the hooks on
    each flow read: a flow mcpx already rewrote keeps its bodies and records."""
    f = replayed(run(json_flow()))
    assert not f.live
    body = f.response.content

    async def load():
        async with Harness() as h:
            await hook(h.addon, "request", f)
            hook_sync(h.addon, "responseheaders", f)
            await hook(h.addon, "response", f)
    run(load())
    assert f.response.content == body
    assert views(f) == {"MCP": JSON_MCP, "MCP original": JSON_ORIGINAL}
