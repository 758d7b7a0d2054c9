"""Fuzzing the SSE path: any byte stream, cut into chunks any way, gives the same output as the
whole body; when no rule applies the output is the input byte for byte.

Three levels: the framing alone (:class:`SSEParser`), the stream rewriter mcpx installs as
``flow.response.stream`` (:class:`SSERewriter`) with a session where nothing needs rewriting
(output == input) and one where rules apply (streamed == whole), and a Content-Encoding'd stream
(gzip, deflate, br, zstd) cut at arbitrary byte offsets of the *compressed* bytes.
"""
from __future__ import annotations

import gzip
import zlib

import brotli
import orjson
from hypothesis import given
from hypothesis import strategies as st

from mcpx_core.framing.encoding import stream_decoder
from mcpx_core.framing.sse import BOM, SSEParser
from mcpx_core.rewrite import Exchange, Rewriter, SSERewriter
from mcpx_core.session import SessionTracker
from rel_lib import FUZZ, count, figures  # noqa: F401  (figures: autouse fixture)

try:
    from compression import zstd  # Python >= 3.14
except ImportError:  # the backport mitmproxy installs
    from backports import zstd

TERMS = st.sampled_from([b"\n", b"\r\n", b"\r"])

#: messages a 2025-11-25 receiver takes as they are (nothing to rewrite, whatever the session)
CLEAN = [
    {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "ok \u00e9\u4e2d"}},
    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 2, "total": 3}},
    {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}], "isError": False}},
    {"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "Method not found"}},
    {"jsonrpc": "2.0", "id": 8, "method": "ping"},
]
#: messages a 2024-11-05 receiver gets rewritten (answers to request id 9 = tools/call)
RULED = [
    {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}],
                                             "structuredContent": {"n": 1}}},
    {"jsonrpc": "2.0", "method": "notifications/progress",
     "params": {"progressToken": 1, "progress": 1, "message": "half"}},
]


def _json_line(msgs: list[dict]) -> st.SearchStrategy[bytes]:
    return st.sampled_from(msgs).map(lambda m: b"data: " + orjson.dumps(m))


def field_lines(msgs: list[dict]) -> st.SearchStrategy[bytes]:
    """One SSE line without terminator: every field kind a server may send."""
    text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12)
    return st.one_of(
        _json_line(msgs),
        _json_line(msgs).map(lambda b: b.replace(b"data: ", b"data:", 1)),  # no space after the colon
        text.map(lambda t: b": " + t.encode()),  # comment
        st.just(b":"),
        st.integers(0, 10**6).map(lambda n: b"id: %d" % n),
        st.just(b"id"),
        st.sampled_from([b"event: message", b"event:", b"retry: 3000", b"retry: x", b"foo: bar", b"data", b"data: "]),
        text.map(lambda t: b"data: " + t.encode()),  # data that is not JSON
        st.just(b"data: \xff\xfe not utf-8"),
    )


@st.composite
def sse_streams(draw, msgs: list[dict]) -> bytes:
    """A stream: optional BOM, events of field lines ended by mixed CR/LF/CRLF, blank lines, maybe
    an unterminated last event."""
    out = [BOM] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 6))):
        for line in draw(st.lists(field_lines(msgs), max_size=4)):
            out += [line, draw(TERMS)]
        out.append(draw(TERMS))  # the blank line that dispatches the event
    if draw(st.booleans()):
        out.append(draw(st.sampled_from([b"data: {\"jsonrpc\":", b"id: 5\n", b"\r", b": tail"])))
    return b"".join(out)


@st.composite
def cuts(draw, data: bytes) -> list[bytes]:
    """``data`` cut into chunks at arbitrary offsets (empty chunks not sent: b"" means end of stream)."""
    if not data:
        return []
    points = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=12))))
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def streamed(rw_factory, chunks: list[bytes], **kw) -> bytes:
    rw, exch = rw_factory()
    s = SSERewriter(rw, exch, **kw)
    return b"".join(s(c) for c in chunks) + s(b"")


def whole(rw_factory, body: bytes) -> bytes:
    rw, exch = rw_factory()
    return SSERewriter(rw, exch).whole(body)


def session(client_rev: str, server_rev: str = "2025-11-25"):
    def make():
        store = SessionTracker()
        s = store.create("s")
        s.client_rev, s.server_rev = client_rev, server_rev
        exch = Exchange(flow_id="f", session=s, is_mcp=True)
        exch.request_ids = {9: "tools/call", 7: "tools/call"}
        exch.single_request_id = 9
        return Rewriter(store), exch
    return make


# -- framing -------------------------------------------------------------------------------------
@FUZZ
@given(st.data())
def test_parser_any_bytes_any_cut(data):
    """Raw bytes (SSE-ish or not): the events' raw bytes plus the tail give back the input, and the
    events do not depend on how the input was cut."""
    body = data.draw(st.one_of(st.binary(max_size=300), sse_streams(CLEAN + RULED)))
    chunks = data.draw(cuts(body))
    p = SSEParser()
    evs = [e for c in chunks for e in p.feed(c)]
    more, tail = p.close()
    evs += more
    assert b"".join(e.raw for e in evs) + tail == body
    q = SSEParser()
    whole_evs = q.feed(body) + q.close()[0]
    assert _merged(evs) == _merged(whole_evs)
    count("fuzz examples: SSE framing (any bytes, any cut)")


def small_before(evs: list, lf, limit: int) -> bool:
    """Whether the event before ``lf`` (the LF of its blank line's CRLF, passed by itself) is within ``limit``."""
    i = next(i for i, e in enumerate(evs) if e is lf)
    return i > 0 and len(evs[i - 1].raw) <= limit


def _merged(evs: list) -> list[tuple]:
    """The events, each with the LF that followed its blank line's CR in the next chunk (``crlf_rest``:
    the event came out at its CR, as an SSE client dispatches it) joined back to it."""
    out: list[tuple] = []
    for e in evs:
        if e.crlf_rest:
            assert out and out[-1][-1], "an LF passed by itself only right after an event ended by a CR at a chunk end"
            out[-1] = (out[-1][0] + e.raw, *out[-1][1:-1], False)
            continue
        out.append((e.raw, e.data, e.last_id, e.event_type, e.decode_error, e.open_cr))
    return [(*t[:-1], False) for t in out]


def _events(body: bytes) -> list[tuple]:
    """What an SSE client reads of ``body``: each event's lines (without their line ends), data, id, type."""
    p = SSEParser()
    evs = p.feed(body)
    more, tail = p.close()
    return [(tuple(ln for ln, _ in e.lines), e.data, e.last_id, e.event_type) for e in evs + more if not e.crlf_rest] + [tail]


def assert_same_stream(out: bytes, expected: bytes, cr_cut: bool) -> None:
    """``out`` (streamed) is ``expected`` (the whole body's output) byte for byte; except where a chunk
    ended in the CR of a rewritten event's blank line (``cr_cut``): that event came out at once, its
    lines written with CRLF (an LF may follow), so the client reads the same events."""
    if out != expected:
        assert cr_cut, "streamed output differs from the whole body's"
        assert _events(out) == _events(expected)


@FUZZ
@given(st.data())
def test_parser_bounded_events(data):
    """With ``max_event`` (mcpx_max_body), events above it come out raw in parts as they arrive, never
    buffered whole; the bytes are still exactly the input, and every event within the bound is the
    same as without a bound."""
    body = data.draw(st.one_of(st.binary(max_size=300), sse_streams(CLEAN + RULED)))
    chunks = data.draw(cuts(body))
    limit = data.draw(st.integers(4, 120))  # (>= 4: a BOM-only first line is a blank line; below, it would be cut)
    p = SSEParser(max_event=limit)
    evs, most = [], 0
    for c in chunks:
        evs += p.feed(c)
        most = max(most, len(p._buf))
    more, tail = p.close()
    evs += more
    assert b"".join(e.raw for e in evs) + tail == body
    assert most <= limit + max(map(len, chunks), default=0)  # never more than the bound and one chunk
    q = SSEParser()  # the same cuts (the events do not depend on them: test_parser_any_bytes_any_cut)
    unbounded = [e for c in chunks for e in q.feed(c)] + q.close()[0]
    small = [(e.raw, e.data, e.last_id, e.crlf_rest) for e in unbounded if len(e.raw) <= limit and not e.crlf_rest
             or e.crlf_rest and small_before(unbounded, e, limit)]
    assert [(e.raw, e.data, e.last_id, e.crlf_rest) for e in evs if not e.oversize] == small
    count("fuzz examples: SSE framing with an event size bound")


# -- the stream rewriter ---------------------------------------------------------------------------
@FUZZ
@given(st.data())
def test_stream_untouched_when_no_rule_applies(data):
    """Session 2025-11-25 <-> 2025-11-25 and only messages that revision defines: the client gets
    the server's bytes exactly (comments, id:, retry:, blank lines, BOM, CR/LF/CRLF kept), however
    the stream is cut, also with no session at all (not MCP-initialised traffic)."""
    body = data.draw(sse_streams(CLEAN))
    chunks = data.draw(cuts(body))
    for factory in (session("2025-11-25"), lambda: (Rewriter(SessionTracker()), Exchange(flow_id="f"))):
        assert streamed(factory, chunks) == body
        assert whole(factory, body) == body
    count("fuzz examples: SSE stream, no rule applies (output == input)")


@FUZZ
@given(st.data())
def test_stream_equals_whole_when_rules_apply(data):
    """Session 2025-11-25 server -> 2024-11-05 client (resource_link, structuredContent, progress
    message and priming events are rewritten): streamed output == whole-body output, whatever the cut,
    and every event (id:, comments, retry:) is still there in order."""
    body = data.draw(sse_streams(CLEAN + RULED))
    chunks = data.draw(cuts(body))
    factory = session("2024-11-05")
    out = streamed(factory, chunks)
    assert_same_stream(out, whole(factory, body), any(c.endswith(b"\r") for c in chunks[:-1]))
    p, q = SSEParser(), SSEParser()
    ins = p.feed(body) + p.close()[0]
    outs = q.feed(out) + q.close()[0]
    assert len(outs) == len(ins)
    for a, b in zip(ins, outs):
        keep = [ln for ln, _ in a.lines if not ln.startswith(b"data")]
        if a.data is not None and a.data.strip() == "":
            continue  # a priming event: replaced by a comment for this client
        assert [ln for ln, _ in b.lines if not ln.startswith(b"data")] == [k.lstrip(BOM) for k in keep]
        assert b.last_id == a.last_id
    count("fuzz examples: SSE stream with rewrites (streamed == whole)")


def _compress(enc: str, body: bytes) -> bytes:
    if enc == "gzip":
        return gzip.compress(body)
    if enc == "deflate":
        return zlib.compress(body)
    if enc == "deflate-raw":
        c = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        return c.compress(body) + c.flush()
    if enc == "br":
        return brotli.compress(body)
    return zstd.compress(body)


@FUZZ
@given(st.data())
def test_encoded_stream_any_cut(data):
    """gzip/deflate (zlib and raw)/br/zstd SSE cut anywhere in the compressed bytes: the same output
    as the decoded whole body."""
    enc = data.draw(st.sampled_from(["gzip", "deflate", "deflate-raw", "br", "zstd"]))
    body = data.draw(sse_streams(CLEAN + RULED))
    packed = _compress(enc, body)
    chunks = data.draw(cuts(packed))
    factory = session("2024-11-05")
    header = "deflate" if enc == "deflate-raw" else enc
    out = streamed(factory, chunks, decoder=stream_decoder(header))
    assert_same_stream(out, whole(factory, body), b"\r" in body)  # (where the decoded chunks end is not known here)
    count("fuzz examples: SSE stream, content-encoded, any cut")
