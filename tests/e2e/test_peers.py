"""Real peers through mitmdump + mcpx (PEERS.md): released SDK clients of each revision against
the npm everything server and an mcp 2.3.0 server (``@modelcontextprotocol/client`` 2.4.0 in its default
``legacy`` version negotiation, the plain 2025 handshake; its ``auto`` and ``pin`` modes:
test_bridge_get_stream.py).

For every (client, server) pair: every op that passes directly passes through mcpx; the calls
PEERS.md lists as failing directly fail directly and pass through mcpx, with the exact change
records; every message mcpx delivers validates against the receiver's schema.json with unknown
properties forbidden.
"""
from __future__ import annotations


import pytest

import peers_lib
from peers_run import run
from schema_check import message_errors

pytestmark = pytest.mark.peers

CLIENTS = ["sdk-1.10.2", "sdk-1.12.3", "sdk-1.13.0", "sdk-1.25.0", "client-2.4.0", "mcp-1.8.1", "mcp-1.9.4", "mcp-1.12.4"]

#: (server, client) -> op id -> the exact change records mcpx must log for that call, for the calls
#: that fail directly (PEERS.md "Direct failures") and must pass through mcpx
FIXED = {
    ('everything', 'sdk-1.10.2'): {
        'get-resource-links': [('/result/content/1', 'rewrite', 'CT-resource_link'), ('/result/content/2', 'rewrite', 'CT-resource_link')],
        'gzip-file-as-resource-resourceLink': [('/result/content/0', 'rewrite', 'CT-resource_link')],
    },
    ('everything', 'sdk-1.12.3'): {
        'get-resource-links': [('/result/content/1', 'rewrite', 'CT-resource_link'), ('/result/content/2', 'rewrite', 'CT-resource_link')],
        'gzip-file-as-resource-resourceLink': [('/result/content/0', 'rewrite', 'CT-resource_link')],
    },
    ('everything', 'mcp-1.8.1'): {
        'get-resource-links': [('/result/content/1', 'rewrite', 'CT-resource_link'), ('/result/content/2', 'rewrite', 'CT-resource_link')],
        'gzip-file-as-resource-resourceLink': [('/result/content/0', 'rewrite', 'CT-resource_link')],
    },
    ('everything', 'mcp-1.9.4'): {
        'get-resource-links': [('/result/content/1', 'rewrite', 'CT-resource_link'), ('/result/content/2', 'rewrite', 'CT-resource_link')],
        'gzip-file-as-resource-resourceLink': [('/result/content/0', 'rewrite', 'CT-resource_link')],
    },
    ('everything', 'sdk-1.13.0'): {
        'trigger-elicitation-request': [('/params/requestedSchema/properties/untitledMultipleSelectEnum', 'drop', 'ELIC-enum-multi'), ('/params/requestedSchema/properties/titledSingleSelectEnum', 'rewrite', 'ELIC-enum-titled-single'), ('/params/requestedSchema/properties/titledMultipleSelectEnum', 'drop', 'ELIC-enum-multi'), ('/params/requestedSchema/properties/firstLine/default', 'drop', 'ELIC-default-string-number'), ('/params/requestedSchema/properties/integer/default', 'drop', 'ELIC-default-string-number'), ('/params/requestedSchema/properties/number/default', 'drop', 'ELIC-default-string-number'), ('/params/requestedSchema/properties/untitledSingleSelectEnum/default', 'drop', 'ELIC-enum-untitled-single-default'), ('/params/requestedSchema/properties/legacyTitledEnum/default', 'drop', 'ELIC-enum-untitled-single-default')],
    },
    ('py', 'sdk-1.10.2'): {
        'resource-link': [('/result/content/1', 'rewrite', 'CT-resource_link')],
        'prompt-rich-prompt': [('/result/messages/1/content', 'rewrite', 'CT-resource_link'), ('/result/messages/2/content', 'rewrite', 'CT-audio')],
    },
    ('py', 'sdk-1.12.3'): {
        'resource-link': [('/result/content/1', 'rewrite', 'CT-resource_link')],
        'prompt-rich-prompt': [('/result/messages/1/content', 'rewrite', 'CT-resource_link')],
    },
    ('py', 'mcp-1.8.1'): {
        'resource-link': [('/result/content/1', 'rewrite', 'CT-resource_link')],
        'prompt-rich-prompt': [('/result/messages/1/content', 'rewrite', 'CT-resource_link'), ('/result/messages/2/content', 'rewrite', 'CT-audio')],
        'audio-clip': [('/result/content/0', 'rewrite', 'CT-audio')],
    },
    ('py', 'mcp-1.9.4'): {
        'resource-link': [('/result/content/1', 'rewrite', 'CT-resource_link')],
        'prompt-rich-prompt': [('/result/messages/1/content', 'rewrite', 'CT-resource_link')],
    },
}


@pytest.fixture(scope="module")
def servers():
    peers_lib.require(peers_lib.peers_missing(), "run scripts/setup_peers.sh")
    ev = peers_lib.start_everything_server()
    py = peers_lib.start_py_server()
    # the same server without sessions and with application/json answers: mcpx keys state by client
    stateless = peers_lib.start_py_server(stateless=True, json_response=True)
    yield {"everything": ev, "py": py, "py-stateless": stateless}
    ev.stop()
    py.stop()
    stateless.stop()


def _is_error(res: dict) -> bool:
    return bool((res.get("result") or {}).get("isError"))


@pytest.mark.parametrize("server", ["everything", "py", "py-stateless"])
@pytest.mark.parametrize("client", CLIENTS)
def test_client_through_mcpx(servers, server, client, tmp_path):
    scenario = "py" if server == "py-stateless" else server
    r = run(client, scenario, servers[server], tmp_path)
    assert r.via.get("protocolVersion") == r.direct.get("protocolVersion")
    fixed = FIXED.get((scenario, client), {})
    for op in r.ops:
        d, v = r.result("direct", op["id"]), r.result("via", op["id"])
        if op["id"] in fixed:
            assert not d["ok"] or _is_error(d), f"{op['id']} was expected to fail directly"
            assert v["ok"] and not _is_error(v), f"{op['id']} through mcpx: {v.get('error')}"
            assert r.records.get(op["id"], []) == fixed[op["id"]], op["id"]
        elif d["ok"]:
            assert v["ok"], f"{op['id']} passes directly but fails through mcpx: {v.get('error')}"
            assert _is_error(v) == _is_error(d), op["id"]
    assert not [c for c in r.changes if c["action"] == "passthrough"], r.output[-3000:]
    invalid = []
    for rev, msg, method, direction in r.delivered:
        errs = message_errors(rev, msg, method)
        if errs:
            invalid.append((direction, msg.get("method") or method, errs[:3]))
    assert invalid == []
