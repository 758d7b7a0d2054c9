"""Host profiles and the dual-result audit through the addon's hooks: what the MCP view, the flow
comment, mcpx.sessions and mcpx.report show, exactly; delivery byte for byte when only the audit
speaks; a user profile's revision; a profile choice sealed with the session."""
from __future__ import annotations

import asyncio
import json

import orjson

from mcp_flows import Harness, render
from mcpx_core import seal
from mcpx_core.session import Session

CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {}}}
DIVERGING = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "results truncated, use offset=10 MARKER-A"}],
                                                   "structuredContent": {"items": ["doc-1"], "next_cursor": "MARKER-B"}}}
FINDING = ('tool search: the text lacks 2 values of structuredContent: /next_cursor "MARKER-B", /items/0 "doc-1"; '
           'structuredContent lacks 2 markers of the text: "offset=10", "MARKER-A"')
LINK = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "see"},
                                                          {"type": "resource_link", "uri": "resource://greeting", "name": "greeting"}]}}

AUDIT_VIEW = f"""\
MCP response (server -> client): 1 message, 1 change (1 audited for 2025-06-18)
session: s2
client:  2025-06-18 (some-host 1.0.0)
server:  2025-06-18 (example-server 2.0.0)

[1] result tools/call id=2
    audit /result [MCPX-audit-dual]
        ({FINDING})
    delivered:
""" + "\n".join("    " + ln for ln in orjson.dumps(DIVERGING, option=orjson.OPT_INDENT_2).decode().split("\n")) + "\n"

PROFILE_VIEW = """\
MCP response (server -> client): 1 message, 1 change (1 rewritten for 2025-06-18)
session: s1
client:  2025-06-18 (mcp 0.1.0), profile pydantic-ai-0.4
server:  2025-06-18 (example-server 2.0.0)

[1] result tools/call id=3
    rewrite /result/content/1 [MCPX-profile-content] (profile pydantic-ai-0.4)
        - {type: "resource_link", uri: "resource://greeting", name: "greeting"}
        + {type: "resource", resource: {uri: "resource://greeting", mimeType: "text/plain", text: "Resource link (content not embedded): resource://greeting\\nname: greeting"}}
        (profile pydantic-ai-0.4: the client does not parse a resource_link block in a tools/call result)
    delivered:
"""

SESSIONS = (
    "s1: client mcp 0.1.0 (profile pydantic-ai-0.4 on clientInfo mcp ==0.1.0, protocolVersion 2025-06-18, capabilities {sampling}) receives 2025-06-18, server example-server 2.0.0 speaks 2025-06-18: "
    "5 messages, 1 changes, 0 dropped\n"
    "s2: client some-host 1.0.0 receives 2025-06-18, server example-server 2.0.0 speaks 2025-06-18: "
    "5 messages, 0 changes, 0 dropped, 1 audit finding")

TABLE = """\
session  client           revisions               rule                  action   count
s1       mcp 0.1.0        2025-06-18->2025-06-18  MCPX-profile-content  rewrite  1
s2       some-host 1.0.0  2025-06-18->2025-06-18  -                     -        0

dual-result audit (a host that shows its model only the text misses what the text lacks; only structuredContent, what it lacks):
session  client           profile  id  tool    text lacks                                    structured lacks
s2       some-host 1.0.0  -        2   search  2: /next_cursor "MARKER-B", /items/0 "doc-1"  2: "offset=10", "MARKER-A\""""


def test_profile_and_audit_in_view_comment_sessions_and_report(tmp_path):
    async def main():
        async with Harness() as h:
            cmd = h.tctx.master.commands.execute
            # pydantic-ai 0.4 as it shows on the wire: mcp's default clientInfo, 2025-06-18, only sampling
            await h.initialize("2025-06-18", name="mcp", version="0.1.0", capabilities={"sampling": {}}, session_id="s1")
            f = await h.exchange({**CALL, "id": 3}, LINK, session="s1")
            assert render(f)[1].startswith(PROFILE_VIEW)
            assert f.comment == "tools/call search #3 · 2025-06-18 · mcpx: 1 rewritten for 2025-06-18" and f.metadata["mcpx"]["profile"] == "pydantic-ai-0.4"
            # a host with no profile: the audit only reports, the bytes are delivered as sent
            await h.initialize("2025-06-18", name="some-host", session_id="s2")
            f = await h.exchange(CALL, DIVERGING, session="s2")
            assert f.response.content == json.dumps(DIVERGING, separators=(",", ":")).encode()
            assert "original_response" not in f.metadata["mcpx"] and "profile" not in f.metadata["mcpx"]
            assert [{k: c[k] for k in ("pointer", "action", "rule", "detail")} for c in f.metadata["mcpx"]["changes"]] == [
                {"pointer": "/result", "action": "audit", "rule": "MCPX-audit-dual", "detail": FINDING}]
            assert render(f) == ("MCP", AUDIT_VIEW)
            assert f.comment == "tools/call search #2 · 2025-06-18 · mcpx: 1 audited for 2025-06-18" and not f.marked
            assert cmd("mcpx.sessions") == SESSIONS.split("\n")
            path = tmp_path / "report.json"
            assert cmd(f"mcpx.report {path}") == TABLE.split("\n")
            report = orjson.loads(path.read_bytes())
            assert [(s["session"], s.get("profile"), s.get("audits")) for s in report["sessions"]] == [
                ("s1", "pydantic-ai-0.4", None), ("s2", None, 1)]
            assert report["sessions"][1]["findings"] == [{
                "id": 2, "tool": "search", "text_lacks": 2, "text_lacks_shown": ['/next_cursor "MARKER-B"', '/items/0 "doc-1"'],
                "structured_lacks": 2, "structured_lacks_shown": ['"offset=10"', '"MARKER-A"'], "profile": None}]
            assert report["totals"] == {"messages": 10, "changes": 1, "dropped": 0, "sessions": 2, "audits": 1}
    asyncio.run(main())


def test_audit_option_off():
    async def main():
        async with Harness(mcpx_audit=False) as h:
            await h.initialize("2025-06-18", name="some-host", session_id="s2")
            f = await h.exchange(CALL, DIVERGING, session="s2")
            assert f.metadata["mcpx"]["changes"] == [] and f.comment == "tools/call search #2 · 2025-06-18"
    asyncio.run(main())


def test_a_user_profile_spells_an_older_revision(tmp_path):
    """A profile's revision is told in the initialize result (MCPX-profile-revision), and the
    session's messages are downgraded to it; mcpx_pin, when it names the client, wins."""
    path = tmp_path / "mine.toml"
    path.write_text('[profiles.old-parser]\ndescription = "a client that parses 2025-03-26 only"\nsource = "measured"\n'
                    'match = { client_name = "old-parser", client_version = ">=1,<2" }\nrevision = "2025-03-26"\n')

    async def main():
        async with Harness(mcpx_profiles=str(path)) as h:
            init = await h.initialize("2025-06-18", name="old-parser", session_id="s1")
            assert orjson.loads(init.response.content)["result"]["protocolVersion"] == "2025-03-26"
            assert [(c["pointer"], c["action"], c["rule"], c["before"], c["after"], c["profile"], c["detail"])
                    for c in init.metadata["mcpx"]["changes"]] == [
                ("/params/clientInfo", "audit", "MCPX-profile", None, None, "old-parser", "profile old-parser on clientInfo old-parser >=1,<2"),
                ("/result/protocolVersion", "rewrite", "MCPX-profile-revision", '"2025-06-18"', '"2025-03-26"', "old-parser",
                 "profile old-parser: the client is told the revision it parses")]
            f = await h.exchange({**CALL, "id": 4}, {"jsonrpc": "2.0", "id": 4, "result": {
                "content": [{"type": "text", "text": "21 C"}], "structuredContent": {"temperature": 21}}}, session="s1")
            assert orjson.loads(f.response.content)["result"] == {"content": [
                {"type": "text", "text": "21 C"}]}  # (the text says 21: no JSON block)
            # the client leg sends no MCP-Protocol-Version: its 2025-06-18 server gets one (as for a pin)
            assert f.comment == "tools/call search #4 · client 2025-03-26, server 2025-06-18 · mcpx: 1 added for 2025-06-18; 1 dropped for 2025-03-26"
            # version 2.0 is outside the range: no profile
            other = await h.initialize("2025-06-18", name="old-parser", session_id="s3", version="2.0")
            assert orjson.loads(other.response.content)["result"]["protocolVersion"] == "2025-06-18"
            h.addon.state.tracker.pins["old-parser"] = "2024-11-05"
            pinned = await h.initialize("2025-06-18", name="old-parser", session_id="s4")
            assert [c["rule"] for c in pinned.metadata["mcpx"]["changes"]] == ["MCPX-profile", "MCPX-pin"]
    asyncio.run(main())


#: the initialize request headers of mcp-use 1.3.3 (PyPI mcp 1.9.3's streamablehttp_client over httpx 0.28.1, with
#: zstandard installed by its langchain dependency), as of langchain-mcp-adapters 0.1.7 (tests/peers/BASELINE.md)
ZSTD_HEADERS = {"Accept-Encoding": "gzip, deflate, zstd", "User-Agent": "python-httpx/0.28.1"}
ZSTD_RECORD = ("profile mcp-1.9 on clientInfo mcp ==0.1.0, protocolVersion 2025-03-26; langchain-mcp-adapters-0.1 matched on "
               "clientInfo mcp ==0.1.0, header accept-encoding *zstd*, which other libraries send too: not applied "
               "(mcpx_profile=NAME applies it)")


def test_a_zstd_client_is_not_taken_for_langchain():
    """mcp-use 1.3.3 sends what langchain-mcp-adapters 0.1.7 sends (mcp's default clientInfo, 2025-03-26, no
    capabilities, Accept-Encoding with zstd): it gets mcp-1.9 (its audio as an embedded resource, which mcp
    1.9.3 parses), not langchain's profile (its prompt's embedded resource stays as sent), and the initialize's
    MCPX-profile record says on what evidence, naming the profile that matched without applying."""
    prompt = {"jsonrpc": "2.0", "id": 5, "result": {"messages": [
        {"role": "user", "content": {"type": "text", "text": "Summarise:"}},
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "resource://greeting", "mimeType": "text/plain", "text": "Hello"}}}]}}
    audio = {"jsonrpc": "2.0", "id": 6, "result": {"content": [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]}}

    async def main():
        async with Harness() as h:
            init = await h.initialize("2025-03-26", name="mcp", version="0.1.0", session_id="mu", headers=ZSTD_HEADERS)
            assert [(c["direction"], c["pointer"], c["action"], c["rule"], c["profile"], c["detail"])
                    for c in init.metadata["mcpx"]["changes"]] == [
                ("c2s", "/params/clientInfo", "audit", "MCPX-profile", "mcp-1.9", ZSTD_RECORD)]
            got = await h.exchange({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "p"}}, prompt, session="mu")
            assert got.metadata["mcpx"]["profile"] == "mcp-1.9" and got.metadata["mcpx"]["changes"] == []
            assert got.response.content == json.dumps(prompt, separators=(",", ":")).encode()
            call = await h.exchange({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "a"}}, audio, session="mu")
            assert orjson.loads(call.response.content)["result"]["content"][0]["type"] == "resource"
            assert [(c["pointer"], c["rule"], c["profile"]) for c in call.metadata["mcpx"]["changes"]] == [
                ("/result/content/0", "MCPX-profile-content", "mcp-1.9")]
            assert h.tctx.master.commands.execute("mcpx.sessions")[0].startswith(
                "mu: client mcp 0.1.0 (profile mcp-1.9 on clientInfo mcp ==0.1.0, protocolVersion 2025-03-26) receives 2025-03-26")
            # langchain's own profile still applies where the user says so
            h.tctx.options.update(mcpx_profile="langchain-mcp-adapters-0.1")
            forced = await h.initialize("2025-03-26", name="mcp", version="0.1.0", session_id="lc", headers=ZSTD_HEADERS)
            assert [c["detail"] for c in forced.metadata["mcpx"]["changes"]] == [
                "profile langchain-mcp-adapters-0.1: forced by mcpx_profile"]
            lc = await h.exchange({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "p"}}, prompt, session="lc")
            assert orjson.loads(lc.response.content)["result"]["messages"][1]["content"] == {"type": "text", "text": "Hello"}
    asyncio.run(main())


def test_the_profile_is_sealed_with_the_session():
    s = Session("s-1", client_rev="2025-03-26", server_rev="2025-03-26", profile="langchain-mcp-adapters-0.1",
                client_info={"name": "mcp", "version": "0.1.0"})
    sealer = seal.Sealer([seal.new_key()])
    opened = Session.from_facts(sealer.open(sealer.seal(s.facts())), "token")
    assert opened.profile == "langchain-mcp-adapters-0.1" and opened.client_rev == "2025-03-26"
    assert Session.from_facts(sealer.open(sealer.seal(Session("s-2").facts())), "t").profile is None
