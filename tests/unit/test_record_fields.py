"""What a change record says about its message: the two revisions, and bounded summaries (issue 19).

``from_rev`` is the revision the sender speaks, ``to_rev`` the one the receiver gets (changes.py
record shape; README "Change log"). A session has two legs: the server's revision and the
client's leg, which differ when mcpx pins a client to an older revision (``mcpx_pin``) or bridges a
client that asked for an older revision than the server answered (REVISIONS.md 2.4, mcpx_bridge),
or when the client's host profile names the revision it parses (profiles.py, ``revision``).
Server-to-client records then go ``server_rev -> client leg``, client-to-server ones the other way.

``before``/``after`` are summaries (:func:`changes.summarize`): a string over 80 characters, as a
value or as a key, becomes ``<str len=N sha256=…>`` (12 hex digits of its UTF-8 sha256), so a
payload is never copied into the log; 80 characters are written as they are.
"""
from __future__ import annotations

import orjson
import pytest

from mcpx_core.profiles import ProfileSet, parse
from mcpx_core.rewrite import PROFILE_REVISION_RULE, VERSION_BRIDGE_RULE, Exchange, Rewriter
from mcpx_core.session import SessionTracker

#: a user's profile file (mcpx_profiles): the host "old-host" parses 2025-03-26
OLD_HOST = parse('[profiles.old-host]\ndescription = "a host"\nsource = "measured"\nrevision = "2025-03-26"\n'
                 'match = { client_name = "old-host" }\n', "mine.toml")
#: (client name, revision it asks, pins, revision the server answers, the record of the initialize result)
LEGS = {
    "pinned": ("pinned-client", "2025-06-18", {"pinned-client": "2025-03-26"}, "2025-06-18",
               {"rule": "MCPX-pin", "detail": "session pinned to an older revision by mcpx.pin"}),
    "bridged": ("old-client", "2025-03-26", {}, "2025-06-18",
                {"rule": VERSION_BRIDGE_RULE,
                 "detail": "the server answered a newer revision than the client asked for: the client is told its own "
                           "and mcpx translates between the two (mcpx_bridge)"}),
    "profile": ("old-host", "2025-06-18", {}, "2025-06-18",
                {"rule": PROFILE_REVISION_RULE, "detail": "profile old-host: the client is told the revision it parses",
                 "profile": "old-host"}),
}


def fields(exch: Exchange) -> list[dict]:
    """The exchange's records, without the time they were made."""
    return [{k: v for k, v in c.as_dict().items() if k != "time"} for c in exch.changes]


@pytest.mark.parametrize("leg", LEGS)
def test_records_of_a_session_with_two_legs_go_from_the_sender_to_the_receiver(leg):
    """A 2025-06-18 server and a client whose leg is 2025-03-26: the initialize result, a client
    POST (header and a batch split toward the server) and a tool result (toward the client)."""
    name, asked, pins, answered, init_record = LEGS[leg]
    store = SessionTracker()
    store.pins.update(pins)
    rw = Rewriter(store, profile_set=ProfileSet.build(OLD_HOST))
    init = Exchange(flow_id="f-init", is_mcp=True)
    rw.request(init, "POST", orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}}), {})
    out = rw.response_json(init, orjson.dumps({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": answered, "capabilities": {}, "serverInfo": {"name": "srv", "version": "1"}}}))
    assert orjson.loads(out)["result"]["protocolVersion"] == "2025-03-26"
    rw.session_learned(init, "up-1")
    s2c = {"direction": "s2c", "from_rev": "2025-06-18", "to_rev": "2025-03-26"}
    c2s = {"direction": "c2s", "from_rev": "2025-03-26", "to_rev": "2025-06-18"}
    # which profile applies on what evidence: a record of the initialize request (profiles.ProfileSet.decide)
    chosen = [{"pointer": "/params/clientInfo", "action": "audit", "rule": "MCPX-profile", "before": None, "after": None,
               "detail": "profile old-host on clientInfo old-host", "flow": "f-init", "session": "flow:f-init",
               "direction": "c2s", "jsonrpc_id": 0, "method": "initialize", "from_rev": None, "to_rev": None,
               "profile": "old-host"}] if leg == "profile" else []
    assert fields(init) == chosen + [{"pointer": "/result/protocolVersion", "action": "rewrite", "before": '"2025-06-18"',
                             "after": '"2025-03-26"', "flow": "f-init", "session": "flow:f-init", "jsonrpc_id": 0,
                             "method": "initialize"} | init_record | s2c]

    call = Exchange(flow_id="f-call", is_mcp=True)
    rw.request(call, "POST", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{}}}',
               {"Mcp-Session-Id": "up-1"})
    rw.response_json(call, b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\"total\\":3}"}],'
                           b'"structuredContent":{"total":3}}}')
    assert fields(call) == [
        {"pointer": "header:MCP-Protocol-Version", "action": "synthesize", "rule": "TR-protocol-version-header",
         "before": None, "after": "2025-06-18", "detail": None, "flow": "f-call", "session": "up-1",
         "jsonrpc_id": None, "method": None} | c2s,
        {"pointer": "/result/structuredContent", "action": "drop", "rule": "SC-structuredContent", "before": "{total: 3}",
         "after": None, "detail": None, "flow": "f-call", "session": "up-1", "jsonrpc_id": 1, "method": "tools/call"} | s2c]

    batch = Exchange(flow_id="f-batch", is_mcp=True)
    rw.request(batch, "POST", b'[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]',
               {"Mcp-Session-Id": "up-1", "MCP-Protocol-Version": "2025-06-18"})
    assert fields(batch) == [
        {"pointer": "", "action": "split", "rule": "RPC-batch-request", "before": "batch of 2 messages", "after": "2 single POSTs",
         "detail": "JSON-RPC batch split: the server revision has no batches", "flow": "f-batch", "session": "up-1",
         "jsonrpc_id": None, "method": None} | c2s]


#: 80 characters (written as they are) and 81 (bounded), the longer one not ASCII
MSG80 = "step 1 of 2: " + "x" * 67
MSG81 = "étape 2 sur 2 : " + "y" * 65


def test_a_dropped_string_over_80_characters_is_logged_as_its_length_and_hash():
    """PROG-message: a 2024-11-05 client gets progress notifications without ``message``."""
    assert (len(MSG80), len(MSG81)) == (80, 81)
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev, s.client_rev = "2025-03-26", "2024-11-05"
    exch = Exchange(flow_id="f1", session=s, is_mcp=True)
    body = b"".join(b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d,'
                    b'"total":2,"message":%s}}\n\n' % (i, orjson.dumps(m)) for i, m in ((1, MSG80), (2, MSG81)))
    out = Rewriter(store).sse(exch).whole(body)
    assert out == b"".join(b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d,'
                           b'"total":2}}\n\n' % i for i in (1, 2))
    record = {"pointer": "/params/message", "action": "drop", "rule": "PROG-message", "after": None, "detail": None,
              "flow": "f1", "session": "sess-1", "direction": "s2c", "jsonrpc_id": None, "method": "notifications/progress",
              "from_rev": "2025-03-26", "to_rev": "2024-11-05"}
    assert fields(exch) == [record | {"before": f'"{MSG80}"'}, record | {"before": "<str len=81 sha256=2736e0d66dc8>"}]


def test_strings_over_80_characters_inside_a_dropped_object_are_bounded_values_and_keys():
    """SC-structuredContent: a 2025-03-26 client gets structuredContent as a text block; the
    record of the dropped object summarises it, each long string (value or key) bounded."""
    store = SessionTracker()
    s = store.create("sess-1")
    s.server_rev, s.client_rev = "2025-06-18", "2025-03-26"
    exch = Exchange(flow_id="f1", session=s, is_mcp=True)
    exch.request_ids[4] = "tools/call"
    structured = {"note": "n" * 81, "k" * 81: 1, "k" * 80: "n" * 80}
    Rewriter(store, audit_results=False).response_json(exch, orjson.dumps(
        {"jsonrpc": "2.0", "id": 4, "result": {"content": [], "structuredContent": structured}}))
    assert [(c.pointer, c.before) for c in exch.changes] == [
        ("/result/content/0", None),
        ("/result/structuredContent",
         f'{{note: <str len=81 sha256=30ed7cca26f6>, <str len=81 sha256=163f6a3740ab>: 1, {"k" * 80}: "{"n" * 80}"}}')]
