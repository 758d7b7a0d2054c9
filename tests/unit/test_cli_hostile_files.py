"""``python -m mcpx check`` and ``python -m mcpx log`` on files a user was handed (testing/cli.py):
a file that is no flow file, a flow file or change log nested past Python's recursion limit, and
values holding terminal escapes. Each is told in one line (exit status 2 for a file that cannot be
read), never a traceback, and no byte of the file reaches the terminal unescaped (terminal.py).
Files crafted here: the test is about the hostile bytes."""
from __future__ import annotations

import json

from mitmproxy import io
from mitmproxy.test import tflow

from mcpx_core.testing import changelog, check, cli

ESC = "\x1b]0;owned\x07\x1b[2J"


def run(capsys, *argv: str) -> tuple[int, str]:
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_a_file_that_is_no_flow_file_is_said_so_in_one_line(tmp_path, capsys):
    p = tmp_path / "not.mitm"
    p.write_bytes(b"garbage, not a tnetstring")
    rc, out = run(capsys, "check", str(p))
    assert (rc, out) == (2, f"mcpx check: {p}: not a mitmproxy flow file (Invalid data format.)\n")


def test_a_flow_file_nested_past_the_recursion_limit_is_said_so(tmp_path, capsys):
    p = tmp_path / "deep.mitm"
    p.write_bytes(_nested_tnetstring(5000))
    rc, out = run(capsys, "check", str(p))
    assert rc == 2 and out.startswith(f"mcpx check: {p}: not a mitmproxy flow file (") and out.count("\n") == 1


def _nested_tnetstring(depth: int) -> bytes:
    inner = b"0:]"
    for _ in range(depth):
        inner = b"%d:%s]" % (len(inner), inner)
    return inner


def test_a_change_log_line_nested_past_the_recursion_limit_is_skipped(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    good = {"session": "s-1", "method": "tools/call", "action": "drop", "rule": "SC-structuredContent",
            "from_rev": "2025-06-18", "to_rev": "2025-03-26"}
    p.write_text("[" * 100_000 + "\n" + json.dumps(good) + "\n")
    rc, out = run(capsys, "log", str(p))
    assert rc == 0 and out.splitlines()[0] == "1 records, 1 sessions"


def test_log_escapes_every_value_of_the_file(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    rec = {"session": "s" + ESC, "method": "m" + ESC, "action": "drop" + ESC, "rule": "R" + ESC,
           "from_rev": "2025-06-18" + ESC, "to_rev": ESC}
    p.write_text(json.dumps(rec) + "\n")
    rc, out = run(capsys, "log", str(p))
    assert rc == 0 and "\x1b" not in out and "\x07" not in out
    assert "(2025-06-18\\x1b]0;owned\\x07\\x1b[2J->\\x1b]0;owned\\x07\\x1b[2J)" in out


def test_check_escapes_the_revisions_and_errors_a_file_names(tmp_path, capsys):
    data = {"file": "f.mitm", "client_revision": "2025-06-18" + ESC, "server_revision": ESC, "ok": True,
            "revisions": [{"revision": "2025-06-18" + ESC, "recorded": True, "by_method": {}, "not_delivered": [],
                           "invalid": [], "calls": []}]}
    lines = check.text(data)
    assert not any("\x1b" in line or "\x07" in line for line in lines)
    assert lines[0] == "f.mitm: client 2025-06-18\\x1b]0;owned\\x07\\x1b[2J, server \\x1b]0;owned\\x07\\x1b[2J"
    # an error naming what the file holds: a flow recorded through mcpx, its server revision a hostile string
    f = tflow.tflow(resp=True)
    f.metadata["mcpx"] = {"server_revision": ESC, "changes": []}
    p = tmp_path / "through-mcpx.mitm"
    with open(p, "wb") as fh:
        io.FlowWriter(fh).add(f)
    rc, out = run(capsys, "check", str(p), "--client-revision", "2024-11-05")
    assert rc == 2 and "\x1b" not in out and out.startswith(f"mcpx check: {p} was recorded through mcpx")
