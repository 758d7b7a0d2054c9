"""``mcpx.sessions``, ``mcpx.report`` and the MCP view's call lines on a flow file a user was handed
(``mitmweb -r FILE -s addon/mcpx.py``): what mcpx reads of a flow (``flow.metadata["mcpx"]``,
flowsessions.py, calls.py) is the file's to say, so a value of the wrong type (records that are no
list, a JSON-RPC id that is a list) is left out, not a crash of the command, and every value shown is
escaped (terminal.py). The flows are crafted here: the test is about the hostile metadata."""
from __future__ import annotations

from mitmproxy.test import tflow

from mcpx_core import calls, flowsessions, report

ESC = "\x1b]0;owned\x07\x1b[2J"


def flow(meta: dict, session: str = "s-1"):
    f = tflow.tflow(resp=True)
    f.request.headers["mcp-session-id"] = session
    f.request.content = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}'
    f.response.headers["content-type"] = "application/json"
    f.response.content = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
    f.metadata["mcpx"] = meta
    return f


def test_records_of_the_wrong_type_are_left_out_and_values_escaped():
    flows = [
        flow({"session": "s-1", "client_revision": "2025-06-18" + ESC, "server_revision": ESC,
              "client_info": {"name": "c" + ESC}, "changes": 5}),
        flow({"session": "s-1", "changes": [{"jsonrpc_id": [1, 2], "rule": "R" + ESC, "action": "drop" + ESC,
                                             "direction": "s2c", "method": "m"}, "not a record"]}),
        flow({"session": "s-1", "changes": {"rule": "x"}}),
    ]
    lines = flowsessions.lines(flows)
    assert len(lines) == 1 and "\x1b" not in lines[0] and "\x07" not in lines[0]
    assert ("receives 2025-06-18\\x1b]0;owned\\x07\\x1b[2J, server ? speaks \\x1b]0;owned\\x07\\x1b[2J: "
            "6 messages, 1 changes, 0 dropped") in lines[0]
    data, table = report.flows_report(flowsessions.sessions(flows))
    assert "\x1b" not in table and data["totals"]["changes"] == 1 and data["totals"]["calls"] == 3
    assert [c.changes for c in calls.calls(flows)] == [0, 1, 0]
    assert all("\x1b" not in line for f in flows for line in calls.lines_for(f))
