"""``python -m mcpx check`` and ``python -m mcpx log`` as a user runs them (a subprocess of this
venv's Python, this checkout's ``addon/`` first on its path), on recorded real sessions of ``flows/``:
the exact text for one (the released mcp 1.9.4 client against the PyPI mcp 2.3.0 server, replayed as
its recorded 2025-03-26 and as 2024-11-05), exit status 1 for a recording with a server request no
2025-03-26 or older client can receive (elicitation/create, ELIC-request), the JSON form, and the
change log summary with each rule's meaning."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcpx_core.testing import changelog, cli, replay, run
from proxy_lib import ROOT

FLOWS = ROOT / "flows"

CHECK_PY_JSON = """\
flows/mcp-1.9.4_py-json.mitm: client 2025-03-26, server 2025-03-26

as 2025-03-26 (recorded): 10 of 22 methods changed, 0 not delivered, 0 invalid
  initialize                          2 dropped [IMPL-icons, IMPL-title]
  tools/list                          13 dropped, 2 rewritten [TOOL-title, TOOL-outputSchema, TOOL-icons]
  tools/call add                      1 dropped [SC-structuredContent]
  tools/call resource_link            1 rewritten [CT-resource_link]
  tools/call weather                  1 dropped [SC-structuredContent]
  tools/call progress                 1 dropped [SC-structuredContent]
  prompts/list                        3 dropped [PROMPT-icons, PROMPT-title]
  prompts/get rich_prompt             1 rewritten [CT-resource_link]
  resources/list                      3 dropped [RESOURCE-icons, RESOURCE-title]
  resources/templates/list            1 dropped [RESOURCE-title]

as 2024-11-05: 11 of 22 methods changed, 0 not delivered, 0 invalid
  initialize                          1 rewritten, 2 dropped [MCPX-pin, IMPL-icons, IMPL-title]
  tools/list                          22 dropped [TOOL-annotations, TOOL-outputSchema, TOOL-title, TOOL-icons]
  tools/call add                      1 dropped [SC-structuredContent]
  tools/call audio_clip               1 rewritten [CT-audio]
  tools/call resource_link            1 rewritten [CT-resource_link]
  tools/call weather                  1 dropped [SC-structuredContent]
  tools/call progress                 1 dropped [SC-structuredContent]
  prompts/list                        3 dropped [PROMPT-icons, PROMPT-title]
  prompts/get rich_prompt             2 rewritten [CT-resource_link, CT-audio]
  resources/list                      3 dropped [RESOURCE-icons, RESOURCE-title]
  resources/templates/list            1 dropped [RESOURCE-title]

calls (recorded):
  initialize #0                             600 ms  2 changes
  notifications/initialized                      -  0 changes
  GET stream                                     -  0 changes
  tools/list #1                             600 ms  15 changes
  tools/call add #2                         600 ms  1 change
  tools/call text_and_image #3              600 ms  0 changes
  tools/call audio_clip #4                  600 ms  0 changes
  tools/call resource_link #5               600 ms  1 change
  tools/call embedded_text #6               600 ms  0 changes
  tools/call embedded_blob #7               600 ms  0 changes
  tools/call weather #8                     600 ms  1 change
  tools/call progress #9                    600 ms  1 change
  prompts/list #10                          600 ms  3 changes
  prompts/get plain_prompt #11              600 ms  0 changes
  prompts/get rich_prompt #12               600 ms  1 change
  resources/list #13                        600 ms  3 changes
  resources/read resource://greeting #14    600 ms  0 changes
  resources/read resource://logo.png #15    600 ms  0 changes
  resources/templates/list #16              600 ms  1 change
  resources/read resource://items/42 #17    600 ms  0 changes
  ping #18                                  600 ms  0 changes
  DELETE                                         -  0 changes

ok
"""


def mcpx(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "addon")}
    return subprocess.run([sys.executable, "-m", "mcpx", *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def test_check_text_of_a_session_that_loses_nothing_it_needs():
    cp = mcpx("check", "flows/mcp-1.9.4_py-json.mitm")
    assert (cp.returncode, cp.stdout, cp.stderr) == (0, CHECK_PY_JSON, "")


def test_check_fails_for_a_message_no_older_client_can_receive(capsys):
    cp = mcpx("check", str(FLOWS / "mcp-1.12.4_py.mitm"), "--client-revision", "2025-03-26", "--json")
    assert cp.returncode == 1, cp.stdout + cp.stderr
    data = json.loads(cp.stdout)
    assert data["ok"] is False
    assert [(r["revision"], r["recorded"], r["not_delivered"], r["invalid"]) for r in data["revisions"]] == [
        ("2025-06-18", True, [], []),
        ("2025-03-26", False, ["tools/call ask_name #10: elicitation/create #1 to client [ELIC-request]"], [])]
    ask = next(c for c in data["revisions"][1]["calls"] if c["call"] == "tools/call ask_name #10")
    assert ask["not_delivered"] == [{"to": "client", "message": "elicitation/create #1", "rule": "ELIC-request",
                                     "detail": "answered with -32601 Method not found on the receiver's behalf"}]
    assert ask["duration_ms"] == 600
    # the text says why, and exits 1 too (the same entry point, in this process)
    assert cli.main(["check", str(FLOWS / "elicitation-2025-03-26_everything.mitm"), "--client-revision", "recorded"]) == 1
    out = capsys.readouterr().out
    assert "  not delivered: tools/call trigger-elicitation-request #1: elicitation/create #0 to client [ELIC-request]" \
        in out.splitlines()
    assert out.endswith("FAILED: a message would not be delivered or is invalid for its revision\n")


def test_no_argument_prints_the_addon_path_and_errors_exit_2(tmp_path, capsys):
    cp = mcpx(cwd=tmp_path)
    assert (cp.returncode, cp.stdout) == (0, f"{ROOT / 'addon' / 'mcpx.py'}\n")
    assert cli.main(["check", str(FLOWS / "client-2.4.0-auto_py.mitm"), "--client-revision", "2025-03-26"]) == 2
    assert capsys.readouterr().out.strip() == (
        f"mcpx check: {FLOWS / 'client-2.4.0-auto_py.mitm'}: no client opened a session with initialize; only the recorded revision replays")


def test_log_summary_by_session_method_and_rule(tmp_path, capsys):
    log = tmp_path / "changes.jsonl"
    records = [
        {"session": "s1", "direction": "s2c", "jsonrpc_id": 1, "method": "tools/call", "pointer": "/result/structuredContent",
         "action": "drop", "rule": "SC-structuredContent", "from_rev": "2025-06-18", "to_rev": "2025-03-26"},
        {"session": "s1", "direction": "s2c", "jsonrpc_id": 1, "method": "tools/call", "pointer": "/result/content/1",
         "action": "rewrite", "rule": "CT-resource_link", "from_rev": "2025-06-18", "to_rev": "2025-03-26"},
        {"session": "s1", "direction": "s2c", "jsonrpc_id": 0, "method": "initialize", "pointer": "/result/protocolVersion",
         "action": "rewrite", "rule": "MCPX-pin", "from_rev": "2025-06-18", "to_rev": "2025-03-26"},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"session": "s2", "trunc')  # a line being written
    assert cli.main(["log", str(log)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "3 records, 1 sessions",
        "",
        "session s1 (2025-06-18->2025-03-26): 3 records",
        "  tools/call: 1 dropped [SC-structuredContent], 1 rewritten [CT-resource_link]",
        "  initialize: 1 rewritten [MCPX-pin]",
        "",
        "rules:",
        f"  SC-structuredContent      1  {changelog.meaning('SC-structuredContent')}",
        f"  CT-resource_link          1  {changelog.meaning('CT-resource_link')}",
        f"  MCPX-pin                  1  {changelog.OWN['MCPX-pin']}",
    ]
    # the meaning comes from the revision-delta record: where, which revisions, what the record does
    assert changelog.meaning("SC-structuredContent") == (
        "CallToolResult.structuredContent (JSON object) (since 2025-06-18): For 2024-11-05/2025-03-26 clients remove it; "
        "if no TextContent in `content` already carries the JSON serialisation, append {\"type\":\"text\",\"…")
    more, offset = changelog.read(str(log))
    assert len(more) == 3 and offset == len("".join(json.dumps(r) + "\n" for r in records))


def test_a_file_recorded_through_mcpx_reads_as_the_replay_of_the_raw_one(tmp_path):
    """mitmdump -s mcpx.py -w: the file holds what each side was delivered and mcpx's records; read
    as it is, it gives the same calls as replaying the recording made without mcpx. It cannot be
    replayed as another revision (its bodies are already rewritten): said so, not guessed."""
    from mitmproxy import io

    raw = FLOWS / "sdk-1.12.3_everything.mitm"
    through = tmp_path / "through-mcpx.mitm"
    with open(through, "wb") as fh:
        writer = io.FlowWriter(fh)
        for f in replay.replay(raw):
            writer.add(f)
    expected = run.replay_as(raw).golden()
    assert run.replay_as(through).golden() == expected
    assert any(c["changes"] for c in expected)
    with pytest.raises(run.ReplayError, match="was recorded through mcpx: it shows only the recorded revision"):
        run.replay_as(through, "2024-11-05")


def test_log_follow_prints_the_summary_again_as_records_are_added(tmp_path):
    log = tmp_path / "changes.jsonl"
    rec = {"session": "s1", "method": "tools/call", "action": "drop", "rule": "SC-structuredContent",
           "from_rev": "2025-06-18", "to_rev": "2025-03-26"}
    log.write_text(json.dumps(rec) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "addon"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "mcpx", "log", str(log), "--follow"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline() == "1 records, 1 sessions\n"
        with open(log, "a") as fh:
            fh.write(json.dumps({**rec, "session": "s2"}) + "\n")
        seen = []
        while not seen or seen[-1] != "2 records, 2 sessions\n":
            seen.append(proc.stdout.readline())
            assert seen[-1], "the follower ended"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_rule_mcpx_builds_otherwise_than_its_delta_record_says_is_told_as_built():
    """``CT-resource_link``: the revision-delta record's text says TextContent; mcpx delivers the
    EmbeddedResource the shipped case B01 expects (rules/content.py, AS_BUILT). ``mcpx log`` must
    say what was delivered, not the record's text."""
    from mcpx_core.rules import content

    text = changelog.meaning("CT-resource_link")
    assert text == ("ResourceLink (type \"resource_link\") (since 2025-06-18): For 2024-11-05/2025-03-26 clients "
                    "replace by an EmbeddedResource whose text/plain text names the link (TextContent where none may stand)")
    link = {"type": "resource_link", "uri": "file:///a", "name": "a"}
    assert content.replacement(link, ["TextContent", "EmbeddedResource"])[0]["type"] == "resource"
    assert content.replacement(link, ["TextContent", "ImageContent"])[0]["type"] == "text"
