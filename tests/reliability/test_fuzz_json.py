"""Fuzzing JSON bodies through the addon's hooks (request, responseheaders, response, the SSE stream).

Any body (arbitrary JSON, JSON-RPC messages with random members, deep nesting, huge numbers,
duplicate keys, lone surrogates, non-UTF-8 bytes, truncated bodies) must never raise out of a hook.
A body mcpx cannot parse is delivered byte for byte with exactly one ``passthrough`` record; a body
it rewrites is valid JSON, and every value it did not touch arrives exactly (exact integers too).

The hooks are those of the real addon class (``addon/mcpx.py``), run under mitmproxy's own test
context (``mitmproxy.test.taddons``) on ``mitmproxy.test.tflow`` flows.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mitmproxy import http
from mitmproxy.test import taddons, tflow

from hooks_lib import hook, hook_sync
from rel_lib import FUZZ, ROOT, count, figures  # noqa: F401  (figures: autouse fixture)

_spec = importlib.util.spec_from_file_location("mcpx_addon_fuzz", ROOT / "addon" / "mcpx.py")
mcpx_addon = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mcpx_addon)

SID = "fuzz-session"
#: one event loop for every hook call (mitmproxy's log handler in the test context is bound to it)
LOOP = asyncio.new_event_loop()
asyncio.set_event_loop(LOOP)
HDRS = {"content-type": "application/json", "mcp-session-id": SID}

# -- strategies ------------------------------------------------------------------------------------
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.integers(2**64, 10**40) | st.integers(-(10**40), -(2**63) - 1),  # beyond 64 bits
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.text(min_size=81, max_size=200),  # long strings (summarised in records)
)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=25)
#: the same without integers beyond 64 bits
exact_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1),
                                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20)),
                            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                            max_leaves=25)

BLOCKS = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)},
                          optional={"annotations": st.fixed_dictionaries({}, optional={"audience": st.just(["user"]), "lastModified": st.just("2025-01-01T00:00:00Z")}),
                                    "_meta": st.dictionaries(st.text(max_size=5), json_values, max_size=2)}),
    st.fixed_dictionaries({"type": st.just("resource_link"), "uri": st.just("file:///x"), "name": st.text(max_size=5)},
                          optional={"icons": st.just([{"src": "https://example.com/i.png"}]), "title": st.text(max_size=5)}),
    st.fixed_dictionaries({"type": st.just("audio"), "data": st.just("AAAA"), "mimeType": st.just("audio/wav")}),
    st.fixed_dictionaries({"type": st.just("image"), "data": st.just("AAAA"), "mimeType": st.just("image/png")}),
    st.dictionaries(st.text(max_size=6), json_values, max_size=3),  # anything at all
)


@st.composite
def rpc_messages(draw) -> dict:
    """JSON-RPC messages: tool results (the rewritten kind), other results, errors, notifications,
    with random extra members, random ids and random open-object values."""
    kind = draw(st.sampled_from(["result", "result", "error", "notification", "request", "junk"]))
    mid = draw(st.one_of(st.just(9), st.integers(), st.text(max_size=4), st.none(), json_values))
    if kind == "result":
        result = {"content": draw(st.lists(BLOCKS, max_size=4))}
        if draw(st.booleans()):
            result["structuredContent"] = draw(st.dictionaries(st.text(max_size=6), json_values, max_size=4))
        if draw(st.booleans()):
            result["_meta"] = draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3))
        result.update(draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2)))
        msg = {"jsonrpc": "2.0", "id": mid, "result": result}
    elif kind == "error":
        msg = {"jsonrpc": "2.0", "id": mid, "error": {"code": draw(st.integers(-33000, 0)), "message": draw(st.text(max_size=8)),
                                                   "data": draw(json_values)}}
        if draw(st.booleans()):
            del msg["id"]
    elif kind in ("notification", "request"):
        method = draw(st.sampled_from(["notifications/progress", "notifications/message", "tools/call", "sampling/createMessage",
                                       "elicitation/create", "ping", "x/unknown"]))
        msg = {"jsonrpc": "2.0", "method": method, "params": draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4))}
        if kind == "request":
            msg["id"] = mid
    else:
        msg = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4))
    return msg


def _nest(n: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":9,"result":{"content":[],"structuredContent":' + b"[" * n + b"]" * n + b"}}"


@st.composite
def bodies(draw) -> bytes:
    """Body bytes, valid or not."""
    shape = draw(st.sampled_from(["msg", "msg", "batch", "json", "nest", "dup", "surrogate", "bytes", "truncated", "number", "bom", "binary"]))
    if shape == "msg":
        return _dumps(draw(rpc_messages()))
    if shape == "batch":
        return _dumps(draw(st.lists(rpc_messages(), max_size=3)))
    if shape == "json":
        return _dumps(draw(json_values))
    if shape == "nest":
        return _nest(draw(st.sampled_from([200, 254, 255, 256, 600, 1020, 1030, 5000, 100_000])))
    if shape == "dup":
        return b'{"jsonrpc":"2.0","id":9,"id":10,"result":{"content":[{"type":"resource_link","uri":"a:b","name":"a","name":"b"}]}}'
    base = _dumps(draw(rpc_messages()))
    if shape == "surrogate":
        i = base.find(b'"', base.find(b":") + 1)
        esc = draw(st.sampled_from([b"\\ud800", b"\\udfff", b"\\ud800\\u0041", b"\xed\xa0\x80"]))
        return base[:i + 1] + esc + base[i + 1:] if i >= 0 else base + esc
    if shape == "bytes":
        pos = draw(st.integers(0, len(base)))
        return base[:pos] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xe9", b"\x80\x80", b"\x00"])) + base[pos:]
    if shape == "truncated":
        return base[:draw(st.integers(0, max(0, len(base) - 1)))]
    if shape == "number":
        lit = draw(st.sampled_from([b"1" * 400, b"1e400", b"-1e400", b"18446744073709551616", b"-9223372036854775809",
                                    b"123456789012345678901234567890", b"1E+2", b"-0", b"0.1e-400"]))
        return b'{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"resource_link","uri":"a:b","name":"n"}],"structuredContent":{"n":' + lit + b"}}}"
    if shape == "bom":
        return b"\xef\xbb\xbf" + base
    return draw(st.binary(max_size=200))


def _dumps(v) -> bytes:
    """Serialise with exact big integers (stdlib json; orjson refuses ints beyond 64 bits)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _has_big_int(v) -> bool:
    if isinstance(v, dict):
        return any(_has_big_int(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_big_int(x) for x in v)
    return isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64


def parseable(body: bytes) -> bool:
    try:
        orjson.loads(body)
        return True
    except orjson.JSONDecodeError:
        return False


# -- driving the hooks ------------------------------------------------------------------------------
class Harness:
    """The real MCPX addon in mitmproxy's test context, with one session: server ``server_rev``,
    client ``client_rev``."""

    def __init__(self, client_rev: str = "2024-11-05", server_rev: str = "2025-11-25"):
        self.addon = mcpx_addon.MCPX()
        self.ctx = taddons.context(self.addon)
        self.ctx.__enter__()
        self.client_rev, self.server_rev = client_rev, server_rev

    def reset(self, client_rev: str | None = None) -> None:
        tracker = self.addon.state.tracker
        for old in list(tracker):
            tracker.end(old)
        s = tracker.create(SID)
        s.client_rev, s.server_rev = client_rev or self.client_rev, self.server_rev

    def close(self) -> None:
        self.ctx.__exit__(None, None, None)

    def request(self, body: bytes) -> http.HTTPFlow:
        req = http.Request.make("POST", "http://127.0.0.1:9/mcp", body, HDRS)
        f = tflow.tflow(req=req)
        LOOP.run_until_complete(hook(self.addon, "request", f))
        return f

    def exchange(self, body: bytes, sse: bool) -> http.HTTPFlow:
        """tools/call id 9 -> response ``body`` (JSON, or one SSE event carrying it)."""
        f = self.request(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t","arguments":{}}}')
        ctype = "text/event-stream" if sse else "application/json"
        raw = b"id: 1\ndata: " + body.replace(b"\n", b" ").replace(b"\r", b" ") + b"\n\n" if sse else body
        f.response = http.Response.make(200, raw if not sse else b"", {"content-type": ctype})
        hook_sync(self.addon, "responseheaders", f)
        if sse:
            stream = f.response.stream
            assert callable(stream)
            f.response.stream_out = _joined(stream(raw)) + _joined(stream(b""))  # what mitmproxy sends on
        LOOP.run_until_complete(hook(self.addon, "response", f))
        f.response.sent = f.response.stream_out if sse else f.response.raw_content
        f.response.original = raw
        return f


def _joined(out: bytes | list[bytes]) -> bytes:
    """A stream callable may return bytes or a list of chunks (mitmproxy takes both)."""
    return out if isinstance(out, bytes) else b"".join(out)


def records(f: http.HTTPFlow) -> list[dict]:
    return (f.metadata.get("mcpx") or {}).get("changes", [])


@pytest.fixture(scope="module")
def harness():
    """One addon in one mitmproxy test context for the whole module (entered here, not at import:
    other modules' test contexts replace mitmproxy's ``ctx`` while they run)."""
    h = Harness()
    yield h
    h.close()


def check_response(f: http.HTTPFlow, sse: bool) -> None:
    sent, original = f.response.sent, f.response.original
    recs = [r for r in records(f) if r["direction"] == "s2c"]
    if sent == original:
        return
    # rewritten: valid JSON (per event), logged; b"" when every message was not delivered (drop-message)
    assert recs, "a body was changed without a change record"
    if sent == b"":
        assert any(r["action"] == "drop-message" for r in recs)
        return
    if sse:
        for line in sent.split(b"\n"):
            if line.startswith(b"data: "):
                orjson.loads(line[6:])
    else:
        orjson.loads(sent)


@FUZZ
@given(body=bodies(), sse=st.booleans())
def test_response_hooks_never_raise(harness, body, sse):
    harness.reset()
    f = harness.exchange(body, sse)
    check_response(f, sse)
    payload = body.replace(b"\n", b" ").replace(b"\r", b" ") if sse else body
    if sse and not payload.strip():
        pass  # whitespace-only SSE data: the priming-event rule applies (dropped for old clients, logged)
    elif payload and not parseable(payload):
        assert f.response.sent == f.response.original
        passthrough = [r for r in records(f) if r["action"] == "passthrough"]
        assert len(passthrough) == 1, records(f)
    count("fuzz examples: JSON bodies through the response hooks")


@FUZZ
@given(body=bodies())
def test_request_hook_never_raises(harness, body):
    harness.reset()
    f = harness.request(body)
    # the harness's client leg (2024-11-05) sends no MCP-Protocol-Version; its 2025-11-25 server gets one
    assert [(r["pointer"], r["action"], r["after"]) for r in records(f) if r["pointer"].startswith("header:")] == [
        ("header:MCP-Protocol-Version", "synthesize", harness.server_rev)]
    if body and not parseable(body):
        assert f.request.raw_content == body
        assert [r["action"] for r in records(f) if not r["pointer"].startswith("header:")] == ["passthrough"]
    elif f.request.raw_content != body:
        orjson.loads(f.request.raw_content)
        assert records(f)
    count("fuzz examples: JSON bodies through the request hook")


@FUZZ
@given(structured=st.dictionaries(st.text(max_size=6), exact_values | json_values, min_size=1, max_size=4),
       meta=st.dictionaries(st.text(max_size=6), exact_values, max_size=3), sse=st.booleans())
def test_untouched_values_arrive_exactly(harness, structured, meta, sse):
    """A 2025-11-25 result rewritten for a 2025-06-18 client (icons dropped): structuredContent and
    _meta (open objects, never rewritten) arrive with exactly the server's values, integers beyond
    64 bits included."""
    result = {"content": [{"type": "resource_link", "uri": "file:///x", "name": "x", "icons": [{"src": "https://e.x/i.png"}]}],
              "structuredContent": structured, "_meta": meta}
    body = _dumps({"jsonrpc": "2.0", "id": 9, "result": result})
    harness.reset("2025-06-18")
    f = harness.exchange(body, sse)
    sent = f.response.sent
    if sse:
        sent = next(line[6:] for line in sent.split(b"\n") if line.startswith(b"data: "))
    if _has_big_int([structured, meta]):
        # orjson would read it as a float: delivered byte for byte, with a passthrough record
        assert f.response.sent == f.response.original
        assert [r["action"] for r in records(f) if r["direction"] == "s2c"][-1] == "passthrough"
        count("fuzz examples: untouched values delivered exactly (integer beyond 64 bits: passed through)")
        return
    got = json.loads(sent)["result"]
    assert "icons" not in got["content"][0]
    assert got["structuredContent"] == structured
    assert got.get("_meta", {}) == meta
    count("fuzz examples: untouched values delivered exactly")
