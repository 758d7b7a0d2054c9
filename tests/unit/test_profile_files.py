"""Host profile files (mcpx_core.profiles): the shipped set, validation errors, matching, merging,
and the options that load them."""
from __future__ import annotations

import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import taddons

import mcpx
from mcpx_core import profiles
from mcpx_core.profiles import ProfileError, ProfileSet, VersionRange, load_defaults, parse

SHIPPED = ["langchain-mcp-adapters-0.1", "pydantic-ai-0.4", "mcp-1.9", "claude-code", "opencode", "codex"]
SDK_DEFAULT = {"name": "mcp", "version": "0.1.0"}


def headers(accept_encoding: str = "gzip, deflate") -> http.Headers:
    return http.Headers(Accept_Encoding=accept_encoding, User_Agent="python-httpx/0.28.1",
                        Accept="application/json, text/event-stream")


#: what each client's initialize request shows, as measured through mitmdump -w (tests/peers/BASELINE.md,
#: "Host profiles on the wire"), and the shipped profile it gets
MEASURED = [
    ("fastmcp-2.3.4", SDK_DEFAULT, "2024-11-05", {"sampling": {}, "roots": {"listChanged": True}}, "gzip, deflate", None),
    ("fastmcp-2.10.6", SDK_DEFAULT, "2025-06-18", {"sampling": {}, "elicitation": {}}, "gzip, deflate", None),
    # langchain's zstd is sent by mcp-use too (the same initialize): not evidence of langchain, which gets mcp-1.9
    ("langchain-mcp-adapters-0.1.7", SDK_DEFAULT, "2025-03-26", {"sampling": {}}, "gzip, deflate, zstd", "mcp-1.9"),
    ("langchain-mcp-adapters-0.1.7 (no sampling callback)", SDK_DEFAULT, "2025-03-26", {}, "gzip, deflate, zstd", "mcp-1.9"),
    # mcp-use 1.3.3 (mcp 1.9.3): ClientSession(read, write, sampling_callback=None) (mcp_use/connectors/http.py:54),
    # zstandard installed with its langchain dependency
    ("mcp-use-1.3.3", SDK_DEFAULT, "2025-03-26", {}, "gzip, deflate, zstd", "mcp-1.9"),
    ("pydantic-ai-slim-0.4.4", SDK_DEFAULT, "2025-06-18", {"sampling": {}}, "gzip, deflate", "pydantic-ai-0.4"),
    ("openai-agents-0.0.19", SDK_DEFAULT, "2025-03-26", {}, "gzip, deflate", "mcp-1.9"),
    ("mcp-1.9.2", SDK_DEFAULT, "2025-03-26", {"sampling": {}}, "gzip, deflate", "mcp-1.9"),
    ("mcp-1.12.4 (mcpx-py-client)", {"name": "mcpx-py-client", "version": "1.12.4"}, "2025-06-18", {"sampling": {}}, "gzip, deflate", None),
    ("claude-code", {"name": "claude-code", "version": "2.1.208"}, "2025-06-18", {"roots": {}}, "br, gzip, deflate", "claude-code"),
    ("opencode", {"name": "opencode", "version": "1.0.0"}, "2025-11-25", {}, "gzip", "opencode"),
    ("codex", {"name": "codex-mcp-client", "version": "0.144.3"}, "2025-06-18", {"elicitation": {}}, "gzip", "codex"),
]


def test_shipped_profiles_load_and_each_cites_what_it_corrects():
    shipped = load_defaults()
    assert list(shipped.profiles) == SHIPPED
    for p in shipped.profiles.values():
        assert p.name and p.description and len(p.source) > 80 and p.enabled
    assert ProfileSet.build().header_names == frozenset({"accept-encoding"})


@pytest.mark.parametrize("client,info,declared,caps,accept_encoding,expected", MEASURED, ids=[m[0] for m in MEASURED])
def test_shipped_profiles_match_what_each_client_sends(client, info, declared, caps, accept_encoding, expected):
    chosen = ProfileSet.build().choose(info, declared, caps, headers(accept_encoding))
    assert (chosen.name if chosen else None) == expected


def test_plain_dict_headers_match_in_any_case():
    choice = ProfileSet.build().decide(SDK_DEFAULT, "2025-03-26", {}, {"Accept-Encoding": "gzip, zstd"})
    assert choice.profile.name == "mcp-1.9" and "langchain-mcp-adapters-0.1 matched on" in choice.detail
    assert ProfileSet.build().decide(SDK_DEFAULT, "2025-03-26", {}, None) == (
        profiles.Choice(ProfileSet.build().profiles["mcp-1.9"], "profile mcp-1.9 on clientInfo mcp ==0.1.0, protocolVersion 2025-03-26"))


LANGCHAIN_SHARED = ("langchain-mcp-adapters-0.1 matched on clientInfo mcp ==0.1.0, header accept-encoding *zstd*, which other "
                    "libraries send too: not applied (mcpx_profile=NAME applies it)")
TWO = parse('[profiles.a]\ndescription = "d"\nsource = "s"\nmatch = { client_name = "host", client_version = ">=2" }\n'
            '[profiles.b]\ndescription = "d"\nsource = "s"\nmatch = { client_name = "host", capabilities = ["roots"] }\n'
            '[profiles.ua]\ndescription = "d"\nsource = "s"\nmatch = { headers = { "user-agent" = "host/*" }, identifies = false }\n', "u.toml")


@pytest.mark.parametrize("info,declared,caps,hdrs,profile,detail", [
    # only shared evidence: no profile, and the record says which matched on what
    ({"name": "mcp", "version": "0.1.0"}, "2024-11-05", {}, {"accept-encoding": "gzip, deflate, zstd"}, None,
     "no profile; " + LANGCHAIN_SHARED),
    # shared evidence beside identifying evidence: the identifying one applies, the record names the other
    (SDK_DEFAULT, "2025-03-26", {"sampling": {}}, {"accept-encoding": "gzip, deflate, zstd"}, "mcp-1.9",
     "profile mcp-1.9 on clientInfo mcp ==0.1.0, protocolVersion 2025-03-26; " + LANGCHAIN_SHARED),
    # two identifying matches: the first in order, the other named
    ({"name": "host", "version": "2.1"}, "2025-06-18", {"roots": {}}, {"user-agent": "host/2.1"}, "a",
     "profile a on clientInfo host >=2; also matched b (on clientInfo host, capabilities {roots}): the first in order applies; "
     "ua matched on header user-agent host/*, which other libraries send too: not applied (mcpx_profile=NAME applies it)"),
    # one identifying match, nothing else: no word about others
    ({"name": "host", "version": "1.0"}, "2025-06-18", {"roots": {}}, {}, "b", "profile b on clientInfo host, capabilities {roots}"),
    # nothing matches: no record at all (mcpx stays invisible)
    ({"name": "other", "version": "1"}, "2025-06-18", {}, {"accept-encoding": "zstd"}, None, None),
])
def test_profiles_apply_only_on_evidence(info, declared, caps, hdrs, profile, detail):
    s = ProfileSet.build(TWO)
    choice = s.decide(info, declared, caps, hdrs)
    assert (choice.profile.name if choice.profile else None, choice.detail) == (profile, detail)
    assert s.evidence(profile) == (s.profiles[profile].match.evidence() if profile else None)
    assert ProfileSet.build(forced="opencode").decide(info, declared, caps, hdrs).detail == "profile opencode: forced by mcpx_profile"


@pytest.mark.parametrize("spec,version,inside", [
    (">=1.2,<2", "1.2", True), (">=1.2,<2", "1.10.3", True), (">=1.2,<2", "2.0.0", False), (">=1.2,<2", "1.1.9", False),
    ("==0.1.0", "0.1.0", True), ("0.1.0", "0.1", True), ("==0.1.0", "0.1.1", False), ("!=1.0.3", "1.0.3", False),
    ("*", "anything", True), (">1", None, False), ("<2.0.0-beta", "1.9", True),
])
def test_version_ranges(spec, version, inside):
    assert VersionRange.parse(spec).contains(version) is inside


P = '[profiles.x]\ndescription = "d"\nsource = "s"\n'


@pytest.mark.parametrize("text,message", [
    (P + 'revision = "2025-13-01"\n', "profiles.x.revision: Input should be '2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25' or '2026-07-28'"),
    (P + '[[profiles.x.content]]\ntypes = ["resource"]\nrewrite = "resource"\n',
     "profiles.x.content.0: rewrite 'resource' applies to resource_link, image and audio blocks, not resource"),
    (P + '[[profiles.x.content]]\ntypes = ["text"]\n',
     "profiles.x.content.0.types.0: Input should be 'image', 'audio', 'resource', 'resource_link', 'tool_use' or 'tool_result'"),
    (P + '[[profiles.x.content]]\ntypes = ["audio"]\nmethods = ["resources/read"]\n',
     "profiles.x.content.0.methods.0: Input should be 'tools/call', 'prompts/get' or 'sampling/createMessage'"),
    (P + 'match = { headers = { "user agent" = "x" } }\n', "profiles.x.match.headers: not an HTTP header name: 'user agent'"),
    (P + 'dual_result = "both"\n', "profiles.x.dual_result: Input should be 'keep', 'text-visible' or 'structured-visible'"),
    ('[profiles."my host"]\ndescription = "d"\nsource = "s"\n',
     "profiles: profile name 'my host': letters, digits, '.', '_' and '-' only (at most 64)"),
    ('[profiles.x]\nsource = "s"\nrevision = "x"\n', "profiles.x.description: Field required (and 1 more)"),
    (P + 'name = "y"\n', "profiles: profile 'x': 'name' is the table's key, not a field"),
    ('profile = 1\n', "profile: Extra inputs are not permitted"),
    ('a = "\\xff"\n', "not valid TOML: Unescaped '\\' in a string (at line 1, column 8)"),
])
def test_invalid_profile_files_name_file_field_and_reason(text, message):
    with pytest.raises(ProfileError) as e:
        parse(text, "/etc/mine.toml")
    assert str(e.value) == f"/etc/mine.toml: {message}"
    assert "\n" not in str(e.value)


def test_unreadable_files():
    with pytest.raises(ProfileError, match=r"^/nonexistent/p.toml: cannot read: No such file or directory$"):
        profiles.load_file("/nonexistent/p.toml")
    with pytest.raises(ProfileError, match=r"^f: not UTF-8 text: invalid start byte at byte 0$"):
        parse(b"\xff", "f")


def test_user_profiles_come_first_and_replace_shipped_ones():
    user = parse(P.replace("x", "opencode") + 'match = { client_name = "opencode" }\n'
                 + '[profiles.mine]\ndescription = "d"\nsource = "s"\nmatch = { client_name = "mcp" }\n'
                 + '[profiles.codex]\ndescription = "d"\nsource = "s"\nenabled = false\n', "u.toml")
    s = ProfileSet.build(user)
    assert list(s.profiles) == ["opencode", "mine", "langchain-mcp-adapters-0.1", "pydantic-ai-0.4", "mcp-1.9", "claude-code"]
    assert s.profiles["opencode"].dual_result == "keep"  # the user's, not the shipped text-visible
    assert s.choose(SDK_DEFAULT, "2025-03-26", {}, headers("gzip, zstd")).name == "mine"  # before langchain's
    assert s.choose({"name": "codex-mcp-client", "version": "1"}, "2025-06-18", {}) is None
    assert s.get("codex") is None and s.get("mine").name == "mine"


def test_forced_and_disabled_sets():
    forced = ProfileSet.build(forced="opencode")
    assert forced.choose({"name": "anything"}, "2025-06-18", {}).name == "opencode"
    off = ProfileSet.build(disabled=True)
    assert off.choose({"name": "claude-code"}, "2025-06-18", {}) is None and off.get("claude-code") is None
    with pytest.raises(ProfileError, match=r"^no profile named 'claud'; known: langchain-mcp-adapters-0.1, pydantic-ai-0.4, "
                                           r"mcp-1.9, claude-code, opencode, codex$"):
        ProfileSet.build(forced="claud")
    unmatched = parse(P, "f").profiles["x"]  # no match: only ever picked by mcpx_profile
    assert not unmatched.matches(SDK_DEFAULT, "2025-03-26", {}, lambda name: None)


def test_profile_options(tmp_path):
    addon = mcpx.MCPX()
    good = tmp_path / "good.toml"
    good.write_text(P + 'match = { client_name = "x" }\ndual_result = "text-visible"\n')
    bad = tmp_path / "bad.toml"
    bad.write_text(P + 'dual_result = "both"\n')
    with taddons.context(addon) as tctx:
        assert list(addon.state.rewriter.profiles.profiles) == SHIPPED  # the defaults, before any option
        tctx.configure(addon, mcpx_profiles=str(good))
        assert list(addon.state.rewriter.profiles.profiles) == ["x", *SHIPPED]
        with pytest.raises(exceptions.OptionsError) as e:
            tctx.configure(addon, mcpx_profiles=str(bad))
        assert str(e.value) == (f"mcpx_profiles: {bad}: profiles.x.dual_result: Input should be 'keep', 'text-visible' "
                                "or 'structured-visible'")
        tctx.configure(addon, mcpx_profiles=str(good), mcpx_profile="x")
        assert addon.state.rewriter.profiles.forced == "x"
        with pytest.raises(exceptions.OptionsError, match="^mcpx_profile: no profile named 'y'"):
            tctx.configure(addon, mcpx_profile="y")
        tctx.configure(addon, mcpx_profile="none")
        assert addon.state.rewriter.profiles.disabled
        tctx.configure(addon, mcpx_audit=False)
        assert addon.state.rewriter.audit is False
