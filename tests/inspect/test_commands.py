"""The mcpx.sessions, mcpx.report and mcpx.pin commands, run through mitmproxy's command manager
(as the console's and mitmweb's command bars run them) on sessions driven through the addon's hooks."""
from __future__ import annotations

import asyncio
import json

import orjson
import pytest
from mitmproxy import exceptions

from conftest import CASES_DIR
from mcp_flows import Harness

B01 = json.loads((CASES_DIR / "01-resource-link-to-older-client.json").read_text())


def call(rid: int) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "t", "arguments": {}}}


def structured(rid: int) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "21 C"}],
                                                     "structuredContent": {"temperature": 21}}}


SESSIONS = (
    "sess-a: client example-client 1.0.0 receives 2025-03-26, server example-server 2.0.0 speaks 2025-03-26: "
    "5 messages, 2 changes, 1 dropped\n"
    "sess-b: client legacy-client 1.0.0 receives 2024-11-05 (pinned), server example-server 2.0.0 speaks 2025-06-18: "
    "5 messages, 4 changes, 1 dropped")

TABLE = """\
session  client                revisions               rule                        action      count
sess-a   example-client 1.0.0  2025-03-26->2025-03-26  ANN-lastModified            drop        1
sess-a   example-client 1.0.0  2025-03-26->2025-03-26  CT-resource_link            rewrite     1
sess-b   legacy-client 1.0.0   2025-06-18->2024-11-05  MCPX-pin                    rewrite     1
sess-b   legacy-client 1.0.0   2025-06-18->2024-11-05  SC-structuredContent        drop        1
sess-b   legacy-client 1.0.0   2025-06-18->2024-11-05  TR-protocol-version-header  synthesize  2"""

TABLE_CLOSED = """\
session          client                revisions               rule                        action      count
sess-b           legacy-client 1.0.0   2025-06-18->2024-11-05  MCPX-pin                    rewrite     1
sess-b           legacy-client 1.0.0   2025-06-18->2024-11-05  SC-structuredContent        drop        1
sess-b           legacy-client 1.0.0   2025-06-18->2024-11-05  TR-protocol-version-header  synthesize  2
sess-a (closed)  example-client 1.0.0  2025-03-26->2025-03-26  ANN-lastModified            drop        1
sess-a (closed)  example-client 1.0.0  2025-03-26->2025-03-26  CT-resource_link            rewrite     1"""


def session_json(key, client, client_rev, server_rev, pinned, changes, dropped, by_rule):
    return {"session": key, "client_revision": client_rev, "server_revision": server_rev,
            "requested_revision": "2025-06-18" if key == "sess-b" else client_rev, "pinned": pinned,
            "client": {"name": client, "version": "1.0.0"}, "server": {"name": "example-server", "version": "2.0.0"},
            "messages": 5, "changes": changes, "dropped": dropped,
            "by_rule": [{"rule": r, "action": a, "count": n} for r, a, n in by_rule], "closed": False}


REPORT = {
    "sessions": [
        session_json("sess-a", "example-client", "2025-03-26", "2025-03-26", None, 2, 1,
                     [("ANN-lastModified", "drop", 1), ("CT-resource_link", "rewrite", 1)]),
        # the pinned client leg sends no MCP-Protocol-Version: its 2025-06-18 server gets one on each POST
        session_json("sess-b", "legacy-client", "2024-11-05", "2025-06-18", "2024-11-05", 4, 1,
                     [("MCPX-pin", "rewrite", 1), ("SC-structuredContent", "drop", 1),
                      ("TR-protocol-version-header", "synthesize", 2)]),
    ],
    "totals": {"messages": 10, "changes": 6, "dropped": 2, "sessions": 2},
}


async def two_sessions(h: Harness):
    """sess-a: a 2025-03-26 client gets a resource_link; sess-b: a 2025-06-18 client pinned by name to 2024-11-05."""
    await h.initialize("2025-03-26", session_id="sess-a")
    await h.exchange(call(4), B01["input"]["body"].encode(), session="sess-a")
    init = await h.initialize("2025-06-18", session_id="sess-b", name="legacy-client")
    result = await h.exchange(call(2), structured(2), session="sess-b")
    return init, result


def test_sessions_report_and_pin_by_client_name(tmp_path):
    async def main():
        async with Harness() as h:
            cmd = h.tctx.master.commands.execute
            assert cmd("mcpx.sessions") == ["no MCP sessions yet"]
            assert cmd("mcpx.pin legacy-client 2024-11-05") == \
                "clients named 'legacy-client' pinned to 2024-11-05 from their next initialize"
            init, result = await two_sessions(h)
            # the pinned client is told 2024-11-05 in the initialize result, and gets 2024-11-05 shapes
            assert orjson.loads(init.response.content)["result"]["protocolVersion"] == "2024-11-05"
            assert [(c["pointer"], c["rule"], c["before"], c["after"]) for c in init.metadata["mcpx"]["changes"]] == [
                ("/result/protocolVersion", "MCPX-pin", '"2025-06-18"', '"2024-11-05"')]
            assert result.comment == "tools/call t #2 · client 2024-11-05, server 2025-06-18 · mcpx: 1 added for 2025-06-18; 1 dropped for 2024-11-05"
            assert cmd("mcpx.sessions") == SESSIONS.split("\n")
            path = tmp_path / "report.json"
            assert cmd(f"mcpx.report {path}") == TABLE.split("\n")
            assert orjson.loads(path.read_bytes()) == REPORT
            assert (tmp_path / "report.json.txt").read_text() == TABLE + "\n"
            with pytest.raises(exceptions.CommandError, match="No such file or directory"):
                cmd(f"mcpx.report {tmp_path}/missing/report.json")
            assert cmd('mcpx.pin legacy-client ""') == "clients named 'legacy-client' unpinned"
            assert h.addon.state.tracker.pins == {}
            # a session the client ends (HTTP DELETE) stays listed, as closed
            await h.exchange(None, None, session="sess-a", method=b"DELETE")
            a_line, b_line = SESSIONS.split("\n")
            assert cmd("mcpx.sessions") == [b_line, a_line.replace("sess-a:", "sess-a (closed):")]
            assert cmd(f"mcpx.report {path}") == TABLE_CLOSED.split("\n")
            closed = orjson.loads(path.read_bytes())["sessions"]
            assert [(d["session"], d["closed"]) for d in closed] == [("sess-b", False), ("sess-a", True)]
    asyncio.run(main())


def test_pin_a_live_session():
    async def main():
        async with Harness() as h:
            cmd = h.tctx.master.commands.execute
            await h.initialize("2025-06-18", session_id="sess-c")
            before = await h.exchange(call(1), structured(1), session="sess-c")
            assert before.comment == "tools/call t #1 · 2025-06-18"  # structuredContent is 2025-06-18: delivered as is
            with pytest.raises(exceptions.CommandError, match="cannot pin it to the newer 2025-11-25"):
                cmd("mcpx.pin sess-c 2025-11-25")
            with pytest.raises(exceptions.CommandError, match="unknown revision '2099-01-01'"):
                cmd("mcpx.pin sess-c 2099-01-01")
            assert cmd("mcpx.pin sess-c 2024-11-05") == "session sess-c pinned to 2024-11-05"
            pinned = await h.exchange(call(2), structured(2), session="sess-c")
            assert pinned.comment.endswith(" · client 2024-11-05, server 2025-06-18 · mcpx: 1 added for 2025-06-18; 1 dropped for 2024-11-05")
            assert orjson.loads(pinned.response.content)["result"] == {
                "content": [{"type": "text", "text": "21 C"}]}  # (the text says 21: no JSON block)
            assert cmd("mcpx.sessions") == [
                "sess-c: client example-client 1.0.0 receives 2024-11-05 (pinned), server example-server 2.0.0 "
                "speaks 2025-06-18: 7 messages, 2 changes, 1 dropped"]  # 1 header added, 1 dropped
            assert cmd('mcpx.pin sess-c ""') == "session sess-c unpinned"
            after = await h.exchange(call(3), structured(3), session="sess-c")
            assert after.comment == "tools/call t #3 · 2025-06-18"
    asyncio.run(main())
