"""Host profiles and the dual-result audit (issue 17), with real peers through the real mitmdump.

- The released clients langchain-mcp-adapters 0.1.7 and pydantic-ai-slim 0.4.4, with the shipped
  profiles and no option: every op of their scenario that failed through mcpx before the profiles
  (run again here with ``mcpx_profile=none``) passes, and nothing else changes for them: every other
  op has the same change records with and without profiles, and every record a profile made lies
  in an op that failed without it.
- PyPI mcp 1.9.2 (no audio type, declares 2025-03-26, SDK default clientInfo): the py server's
  audio_clip fails directly and passes through mcpx (profile mcp-1.9), also with mcp-use 1.3.3's
  Accept-Encoding (zstd), which is not taken for langchain's (its profile applies where named).
- The two-marker server (PyPI mcp 2.3.0): for each shipped host profile (picked by clientInfo, and
  once by the option ``mcpx_profile``), the half that host reads carries both markers after mcpx,
  and the audit reports the divergence once per call.
- A host profile chosen from a session's initialize request survives a restart of mitmdump (it is
  sealed in the session's token, like the revisions).
- A profile file that fails validation stops mitmdump at start with one line naming the file, the
  field and the reason.
"""
from __future__ import annotations

import os
import subprocess

import jsonschema
import orjson
import pytest

import peers_lib as pl
from peers_run import run
from proxy_lib import ADDON, Client, Proxy, mitmdump_bin
from schema_check import message_errors

pytestmark = pytest.mark.peers

TP = ("langchain-mcp-adapters-0.1.7", "pydantic-ai-slim-0.4.4")
PROFILE = {"langchain-mcp-adapters-0.1.7": "langchain-mcp-adapters-0.1", "pydantic-ai-slim-0.4.4": "pydantic-ai-0.4"}
#: ops that failed through mcpx before the profiles (scenarios.json "mcpx_failures" until issue 17), and
#: every change record of that op's flows with the profiles (pointer, action, rule, profile)
FIXED = {
    ("langchain-mcp-adapters-0.1.7", "everything"): {"prompt-resource-prompt": [
        ("/result/messages/1/content", "rewrite", "MCPX-profile-content", "langchain-mcp-adapters-0.1")]},
    ("langchain-mcp-adapters-0.1.7", "py"): {"prompt-rich-prompt": [
        ("/result/messages/1/content", "rewrite", "CT-resource_link", None),
        ("/result/messages/1/content", "rewrite", "MCPX-profile-content", "langchain-mcp-adapters-0.1"),
        ("/result/messages/2/content", "rewrite", "MCPX-profile-content", "langchain-mcp-adapters-0.1")]},
    ("pydantic-ai-slim-0.4.4", "everything"): {
        "get-resource-links": [("/result/content/1", "rewrite", "MCPX-profile-content", "pydantic-ai-0.4"),
                               ("/result/content/2", "rewrite", "MCPX-profile-content", "pydantic-ai-0.4")],
        "gzip-file-as-resource-resourceLink": [("/result/content/0", "rewrite", "MCPX-profile-content", "pydantic-ai-0.4")]},
    ("pydantic-ai-slim-0.4.4", "py"): {"resource-link": [
        ("/result/content/1", "rewrite", "MCPX-profile-content", "pydantic-ai-0.4")]},
}
FIXED[("langchain-mcp-adapters-0.1.7", "py-stateless")] = FIXED[("langchain-mcp-adapters-0.1.7", "py")]
#: langchain sends nothing other libraries do not (mcp-use 1.3.3 sends its zstd too): its profile applies where named
ON = {"langchain-mcp-adapters-0.1.7": {"mcpx_profile": "langchain-mcp-adapters-0.1"}}
FIXED[("pydantic-ai-slim-0.4.4", "py-stateless")] = FIXED[("pydantic-ai-slim-0.4.4", "py")]


def _need(*venvs: str) -> None:
    missing = pl.peers_missing() + pl.tp_missing() + [str(p) for p in (pl.VENVS_DIR / v / "bin" / "python" for v in venvs)
                                                       if not p.exists()]
    if missing:
        if os.environ.get("CI") or os.environ.get("MCPX_REQUIRE_PEERS"):
            pytest.fail(f"test peers missing: {missing}; run scripts/setup_peers.sh")
        pytest.skip(f"test peers missing: {missing}; run scripts/setup_peers.sh")


@pytest.fixture(scope="module")
def servers():
    _need("mcp-1.9.2")
    with pl.three_servers() as servers:
        yield servers


@pytest.mark.parametrize("server", ["everything", "py", "py-stateless"])
@pytest.mark.parametrize("client", TP)
def test_released_clients_pass_with_the_shipped_profiles(servers, server, client, tmp_path):
    ops = pl.scenario_ops(server, client)
    (tmp_path / "off").mkdir()
    (tmp_path / "on").mkdir()
    off = run(client, server, servers[server], tmp_path / "off", ops, options={"mcpx_profile": "none"}, direct={})
    on = run(client, server, servers[server], tmp_path / "on", ops, options=ON.get(client), direct={})
    fixed = FIXED[(client, server)]
    # without profiles: what mcpx gave these clients before issue 17
    assert pl.verdicts(off.via) == {op["id"]: "FAIL" if op["id"] in fixed else "ok" for op in ops}
    # with the shipped profiles (langchain's named by mcpx_profile): every op passes
    assert pl.verdicts(on.via) == {op["id"]: "ok" for op in ops}
    assert on.via["clientInfo"] == {"name": "mcp", "version": "0.1.0"} and on.via["protocolVersion"] == off.via["protocolVersion"]
    # every record a profile made lies in a fixed op, and a fixed op's records are exactly these
    profiled = [c for c in on.changes if c.get("profile") and c["rule"] != "MCPX-profile"]
    assert {c["profile"] for c in profiled} == {PROFILE[client]}
    evidence = {c["detail"] for c in on.changes if c["rule"] == "MCPX-profile"}  # one per initialize
    assert evidence == ({f"profile {PROFILE[client]}: forced by mcpx_profile"} if client in ON else {
        f"profile {PROFILE[client]} on clientInfo mcp ==0.1.0, protocolVersion 2025-06-18, capabilities {{sampling}}"})
    assert not [c for c in off.changes if c.get("profile")]
    assert {op: [d for d in _detailed(on, op) if d[2] != "MCPX-profile"] for op in fixed} == fixed
    # nothing else changes for them: every other op has the same records with and without profiles
    for op in ops:
        if op["id"] not in fixed:
            assert [r for r in on.records.get(op["id"], []) if "MCPX-profile" not in r] == off.records.get(op["id"], []), op["id"]
    # every message mcpx delivered validates against the client revision's schema
    invalid = [(d, m.get("method") or meth, errs[:3]) for rev, m, meth, d in on.delivered if (errs := message_errors(rev, m, meth))]
    assert invalid == []
    assert not [c for c in on.changes if c["action"] == "passthrough"], on.output[-3000:]


def _detailed(r, op_id: str) -> list[tuple]:
    """(pointer, action, rule, profile) of the change records of the flows that carried ``op_id``."""
    flows = set(r.op_flows.get(op_id, []))
    return [(c["pointer"], c["action"], c["rule"], c.get("profile")) for c in r.changes if c["flow"] in flows]


AUDIO_OPS = [{"id": "audio-clip", "op": "callTool", "name": "audio_clip", "arguments": {}}]


#: the Accept-Encoding of mcp-use 1.3.3 (PyPI mcp 1.9.3, which sends what 1.9.2 sends; zstandard installed by its
#: langchain dependency): what the langchain profile used to match on
MCP_USE = {"clientInfo": "sdk-default", "headers": {"Accept-Encoding": "gzip, deflate, zstd"}}
MCP_1_9 = "profile mcp-1.9 on clientInfo mcp ==0.1.0, protocolVersion 2025-03-26"
LANGCHAIN_NOT_APPLIED = ("; langchain-mcp-adapters-0.1 matched on clientInfo mcp ==0.1.0, header accept-encoding *zstd*, "
                         "which other libraries send too: not applied (mcpx_profile=NAME applies it)")


@pytest.mark.parametrize("options,evidence", [({"clientInfo": "sdk-default"}, MCP_1_9), (MCP_USE, MCP_1_9 + LANGCHAIN_NOT_APPLIED)],
                         ids=["mcp-1.9.2", "mcp-use-1.3.3-headers"])
def test_mcp_1_9_2_audio_result(servers, tmp_path, options, evidence):
    """PyPI mcp 1.9.2 declares 2025-03-26 but has no AudioContent: the py server's audio_clip fails
    directly; through mcpx (shipped profile mcp-1.9, no option) it passes, as an embedded blob
    resource with the audio's bytes and mimeType. With mcp-use 1.3.3's headers (zstd) too: it gets
    mcp-1.9, not langchain's profile, and the initialize's record says why."""
    r = run("mcp-1.9.2", "py", servers["py"], tmp_path, AUDIO_OPS, client_options=options)
    assert r.direct["protocolVersion"] == r.via["protocolVersion"] == "2025-03-26"
    assert pl.verdicts(r.direct) == {"audio-clip": "FAIL"}
    assert "validation errors for CallToolResult" in r.direct["results"][0]["error"]
    assert pl.verdicts(r.via) == {"audio-clip": "ok"}
    assert r.via["results"][0]["result"] == {"isError": False, "content": [{"type": "resource", "resource": {
        "uri": "urn:mcpx:audio:0ebbfc603ea8fd1e", "mimeType": "audio/wav",
        "blob": "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YRAAAAAAECAwQFBgcICQoLDA0ODw"}}]}
    assert [(c["pointer"], c["action"], c["rule"], c.get("profile"), c["detail"]) for c in r.changes if c.get("profile")] == [
        ("/params/clientInfo", "audit", "MCPX-profile", "mcp-1.9", evidence),
        ("/result/content/0", "rewrite", "MCPX-profile-content", "mcp-1.9",
         "profile mcp-1.9: the client does not parse an audio block in a tools/call result")]


def test_mcp_use_headers_keep_the_prompt_s_embedded_resources(servers, tmp_path):
    """With mcp-use 1.3.3's headers (zstd), the py server's rich_prompt passes through mcpx with its
    blocks as embedded resources (its resource_link by the revision downgrade, its audio by profile
    mcp-1.9), which mcp 1.9.x parses: not flattened to text as langchain's profile would."""
    ops = [{"id": "prompt-rich-prompt", "op": "getPrompt", "name": "rich_prompt", "arguments": {}}]
    r = run("mcp-1.9.2", "py", servers["py"], tmp_path, ops, client_options=MCP_USE)
    assert pl.verdicts(r.via) == {"prompt-rich-prompt": "ok"}
    assert [m["content"]["type"] for m in r.via["results"][0]["result"]["messages"]] == ["text", "resource", "resource"]
    assert _detailed(r, "prompt-rich-prompt") == [("/result/messages/1/content", "rewrite", "CT-resource_link", None),
                                                  ("/result/messages/2/content", "rewrite", "MCPX-profile-content", "mcp-1.9")]


# -- the two-marker server and the host profiles --------------------------------------------------
MARKER_OPS = [{"id": "listTools", "op": "listTools"},
              {"id": "with-schema", "op": "callTool", "name": "search_with_schema", "arguments": {}},
              {"id": "no-schema", "op": "callTool", "name": "search_no_schema", "arguments": {}}]
TEXT = "results truncated, use offset=10 MARKER-A"
STRUCTURED = {"items": [f"doc-{i}" for i in range(1, 11)], "total": 42, "next_cursor": "MARKER-B"}
AUDIT_DETAIL = ('tool {}: the text lacks 12 values of structuredContent: /total 42, /next_cursor "MARKER-B", '
                '/items/0 "doc-1", /items/1 "doc-2", /items/2 "doc-3", …+7; '
                'structuredContent lacks 2 markers of the text: "offset=10", "MARKER-A"')


@pytest.fixture(scope="module")
def marker_server():
    _need()
    srv = pl.start_two_marker_server()
    yield srv
    srv.stop()


def _texts(result: dict) -> str:
    return "\n".join(b["text"] for b in result["content"] if b.get("type") == "text")


@pytest.mark.parametrize("host,profile,options", [
    ("claude-code", "claude-code", None),
    ("opencode", "opencode", None),
    ("codex-mcp-client", "codex", None),
    ("mcpx-py-client", "claude-code", {"mcpx_profile": "claude-code"}),  # a host with no distinctive clientInfo
])
def test_host_profiles_on_the_two_marker_server(marker_server, host, profile, options, tmp_path):
    info = {"clientInfo": {"name": host, "version": "2.0.0"}}
    direct = pl.run_py_client("2.3.0", marker_server.url, MARKER_OPS, options=info)
    with Proxy(f"http://127.0.0.1:{marker_server.port}", tmp_path, options=options) as px:
        via = pl.run_py_client("2.3.0", px.url, MARKER_OPS, options=info)
    changes = px.changes()
    assert direct["protocolVersion"] == via["protocolVersion"] == "2025-11-25"
    assert pl.verdicts(direct) == pl.verdicts(via) == {"listTools": "ok", "with-schema": "ok", "no-schema": "ok"}
    sent = {e["id"]: e["result"] for e in direct["results"][1:]}
    got = {e["id"]: e["result"] for e in via["results"][1:]}
    for r in sent.values():  # the server's two halves diverge
        assert _texts(r) == TEXT and r["structuredContent"] == STRUCTURED
    audits = [(c["jsonrpc_id"], c["pointer"], c["rule"], c["detail"]) for c in changes if c["rule"] == "MCPX-audit-dual"]
    assert [c["detail"] for c in changes if c["rule"] == "MCPX-profile"] == [
        f"profile {profile}: forced by mcpx_profile" if options else f"profile {profile} on clientInfo {host}"]
    ids = [a[0] for a in audits]  # the JSON-RPC ids of the two tools/call requests
    assert audits == [(ids[0], "/result", "MCPX-audit-dual", AUDIT_DETAIL.format("search_with_schema")),
                      (ids[1], "/result", "MCPX-audit-dual", AUDIT_DETAIL.format("search_no_schema"))]  # once per call
    assert ids[0] != ids[1]
    profiled = [(c["jsonrpc_id"], c["pointer"], c["action"], c["rule"], c["profile"]) for c in changes
                if c.get("profile") and c["rule"] != "MCPX-profile"]
    schema = next(t for t in via["results"][0]["result"]["tools"] if t["name"] == "search_with_schema")["outputSchema"]
    if profile == "claude-code":  # the model sees structuredContent only: it must carry both markers
        assert profiled == [(i, "/result/structuredContent/content_text", "synthesize", "MCPX-dual-structured-visible", "claude-code")
                            for i in ids]
        for k, r in got.items():
            assert r["structuredContent"] == {**STRUCTURED, "content_text": TEXT} and r["content"] == sent[k]["content"]
            assert "MARKER-A" in orjson.dumps(r["structuredContent"]).decode()
        jsonschema.validate(got["with-schema"]["structuredContent"], schema)  # the declared outputSchema still holds
    elif profile == "opencode":  # the model sees the text only: it must carry both markers
        assert profiled == [(i, "/result/content/1", "synthesize", "MCPX-dual-text-visible", "opencode") for i in ids]
        for k, r in got.items():
            assert r["content"] == [{"type": "text", "text": TEXT},
                                    {"type": "text", "text": orjson.dumps(STRUCTURED).decode()}]
            assert "MARKER-A" in _texts(r) and "MARKER-B" in _texts(r) and r["structuredContent"] == STRUCTURED
    else:  # codex shows its model both halves: delivered as sent
        assert profiled == [] and got == sent
        for r in got.values():
            seen = _texts(r) + orjson.dumps(r["structuredContent"]).decode()
            assert "MARKER-A" in seen and "MARKER-B" in seen
    flows = px.flows()
    assert {(f.metadata.get("mcpx") or {}).get("profile") for f in flows if (f.metadata.get("mcpx") or {}).get("session")} == {profile}


def test_structured_visible_never_breaks_a_closed_output_schema(marker_server, tmp_path):
    """A user profile (merged over the shipped ones) whose key the declared outputSchema already
    names: the structured half is left as sent, and a keep record says why."""
    path = tmp_path / "hosts.toml"
    path.write_text('[profiles.my-host]\ndescription = "a host that shows only structuredContent"\n'
                    'source = "measured by hand"\nmatch = { client_name = "my-host" }\n'
                    'dual_result = "structured-visible"\nstructured_key = "next_cursor"\n')
    with Proxy(f"http://127.0.0.1:{marker_server.port}", tmp_path, options={"mcpx_profiles": path}) as px:
        via = pl.run_py_client("2.3.0", px.url, MARKER_OPS, options={"clientInfo": {"name": "my-host", "version": "1"}})
    assert pl.verdicts(via) == {"listTools": "ok", "with-schema": "ok", "no-schema": "ok"}
    assert [e["result"]["structuredContent"] for e in via["results"][1:]] == [STRUCTURED, STRUCTURED]
    assert [(c["action"], c["rule"], c.get("profile"), c["detail"]) for c in px.changes() if c["action"] != "audit"] == [
        ("keep", "MCPX-dual-structured-visible", "my-host",
         "profile my-host: left as sent: structuredContent already has a key 'next_cursor'; the text carried 2 markers it lacks")] * 2


# -- a profile chosen from headers survives a restart ---------------------------------------------
AGENT_HEADERS = {"user-agent": "my-agent/1.2"}
AGENT = ('[profiles.my-agent]\ndescription = "an agent told apart by its User-Agent"\nsource = "measured by hand"\n'
         'match = { headers = { "user-agent" = "my-agent/*" } }\n'
         '[[profiles.my-agent.content]]\ntypes = ["resource", "resource_link", "audio"]\nmethods = ["prompts/get"]\nrewrite = "text"\n')


def test_profile_choice_survives_a_restart(servers, tmp_path):
    """A user profile that tells its agent apart by a header of the initialize request only; the
    choice is sealed in the session's token, so a restarted mitmdump (same key file) applies it to a
    prompt the client asks for later, on a request without that header."""
    upstream = f"http://127.0.0.1:{servers['py'].port}"
    path = tmp_path / "hosts.toml"
    path.write_text(AGENT)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "mcp", "version": "0.1.0"}}}
    with Proxy(upstream, tmp_path, save=False, options={"mcpx_profiles": path}) as first:
        c = Client(first.port, headers=AGENT_HEADERS)
        status, headers, msgs = c.rpc(init)
        assert status == 200 and msgs[0]["result"]["protocolVersion"] == "2025-03-26"
        token = headers["mcp-session-id"]
        assert c.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, extra={"mcp-session-id": token})[0] in (200, 202)
        c.close()
    assert [c["detail"] for c in first.changes() if c["rule"] == "MCPX-profile"] == [
        "profile my-agent on header user-agent my-agent/*; also matched mcp-1.9 (on clientInfo mcp ==0.1.0, protocolVersion "
        "2025-03-26): the first in order applies"]
    with Proxy(upstream, tmp_path, save=False, options={"mcpx_profiles": path}) as second:  # the same workdir: the same key file
        c = Client(second.port)  # no User-Agent now: the sealed choice decides
        c.session = token
        status, _, msgs = c.rpc({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "rich_prompt", "arguments": {}}})
        c.close()
    assert status == 200
    content = [m["content"] for m in msgs[-1]["result"]["messages"]]
    assert [b["type"] for b in content] == ["text", "text", "text"]
    assert [(c["pointer"], c["rule"], c.get("profile")) for c in second.changes() if c.get("profile")] == [
        ("/result/messages/1/content", "MCPX-profile-content", "my-agent"),
        ("/result/messages/2/content", "MCPX-profile-content", "my-agent")]
    assert first.handle(token) == second.handle(token)


# -- a profile file that fails validation -----------------------------------------------------------
@pytest.mark.parametrize("text,where", [
    ('[profiles.x]\ndescription = "d"\nsource = "s"\n[[profiles.x.content]]\ntypes = ["audio"]\nrewrite = "blob"\n',
     "profiles.x.content.0.rewrite: Input should be 'text' or 'resource'"),
    ('[profiles.x]\ndescription = "d"\nsource = "s"\nmatch = { client_version = ">=1,<<2" }\n',
     "profiles.x.match.client_version: not a version clause: '<<2' (expected e.g. '>=1.2', '<2', '==0.1.0', '*')"),
    ('[profiles.x]\ndescription = "d"\nsource = "s"\ndual = "keep"\n', "profiles.x.dual: Extra inputs are not permitted"),
    ('[profiles.x\n', "not valid TOML: Expected ']' at the end of a table declaration (at line 1, column 12)"),
])
def test_invalid_profile_file_stops_mitmdump_with_one_line(text, where, tmp_path):
    path = tmp_path / "bad-profiles.toml"
    path.write_text(text)
    cp = subprocess.run([mitmdump_bin(), "-n", "-q", "-s", str(ADDON), "--set", f"mcpx_profiles={path}"],
                        capture_output=True, timeout=60, cwd=tmp_path)
    out = (cp.stdout + cp.stderr).decode(errors="replace")
    assert cp.returncode == 1, out
    lines = [ln for ln in out.splitlines() if str(path) in ln]
    assert lines == [f"mcpx_profiles: {path}: {where}"], out  # one line, before mitmproxy listens (issue 15)
    assert "Traceback" not in out and "listening" not in out, out
