"""A streamed (SSE) response to a request mcpx sent itself keeps its body on the flow, as an
unstreamed one does: mitmproxy keeps none of a streamed body (``store_streamed_bodies`` off), so
mitmdump printed ``(content missing)`` for every session mcpx sealed, and the MCP view had nothing
to show. A stream longer than ``mcpx_keep_original`` is not kept, and the flow's comment says so."""

from __future__ import annotations

from mitmproxy.test import tflow, tutils

from mcpx_core import upstream


def streamed(keep: int, chunks: list[bytes], encoding: str | None = None):
    sender = upstream.Sender(keep=keep)
    flow = tflow.tflow()
    flow.response = tutils.tresp(content=None)
    flow.response.headers["content-type"] = "text/event-stream"
    if encoding:
        flow.response.headers["content-encoding"] = encoding
    got: list[bytes] = []
    sender.own[flow.id] = upstream._Own(on_chunk=got.append)
    sender.responseheaders(flow)
    out = [flow.response.stream(c) for c in chunks + [b""]]
    assert out == chunks + [b""]  # forwarded to nobody else, unchanged
    return flow, got


def test_a_streamed_answer_keeps_its_body():
    events = [b"event: message\r\ndata: {\"jsonrpc\":\"2.0\",", b"\"id\":0,\"result\":{}}\r\n\r\n"]
    flow, got = streamed(1 << 20, events)
    assert flow.response.raw_content == b"".join(events)
    assert got == events + [b""]
    assert flow.comment == ""


def test_an_encoded_stream_keeps_the_bytes_received():
    import gzip
    body = b"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n\n"
    packed = gzip.compress(body)
    flow, got = streamed(1 << 20, [packed[:10], packed[10:]], "gzip")
    assert flow.response.raw_content == packed and flow.response.get_content() == body
    assert b"".join(got) == body


def test_a_stream_longer_than_keep_is_not_kept():
    flow, _ = streamed(64, [b"data: " + b"x" * 60 + b"\n\n", b"data: y\n\n"])
    assert flow.response.raw_content is None
    assert flow.comment == "mcpx: response body not kept (77 bytes streamed; mcpx_keep_original is 64)"
