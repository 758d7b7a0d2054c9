"""Streamed Content-Encoding decoders (framing/encoding.py) that fail part way: where, and what still
decoded; and what the SSE stream rewriter delivers then (nothing compressed, nothing after)."""
from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from mcpx_core.framing.encoding import DecodeFailed, stream_decoder
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.session import SessionTracker

EV1 = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"one"}}\n\n'
EV2 = b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'


def flushed(*plain: bytes, wbits: int = 31) -> list[bytes]:
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return [c.compress(p) + c.flush(zlib.Z_SYNC_FLUSH) for p in plain]


def test_gzip_fault_found_to_the_byte_with_what_decoded_before_it():
    a, b = flushed(EV1, EV2[:10])
    d = stream_decoder("gzip")
    assert d(a[:5]) == b""
    with pytest.raises(DecodeFailed) as e:
        d(a[5:] + b + b"\xff" + b"tail")
    assert (e.value.at, e.value.partial) == (len(a) - 5 + len(b), EV1 + EV2[:10])
    assert str(e.value) == "error: Error -3 while decompressing data: invalid block type"


def test_a_decoder_without_a_copy_decodes_nothing_of_the_failing_chunk():
    with pytest.raises(DecodeFailed) as e:
        stream_decoder("br")(brotli.compress(EV1)[:-1] + b"\xff\xff")
    assert (e.value.at, e.value.partial, type(e.value.error).__name__) == (0, b"", "error")


def test_an_inner_encoding_that_fails_passes_on_what_it_decoded():
    """``Content-Encoding: gzip, br``: gzip applied first, br last; the gzip data is corrupt after EV1."""
    a, = flushed(EV1)
    wire = brotli.compress(a + b"\xff" + b"rest")
    with pytest.raises(DecodeFailed) as e:
        stream_decoder("gzip, br")(wire)
    assert (e.value.at, e.value.partial) == (0, EV1)  # where in the outer (br) bytes: not known
    assert stream_decoder("gzip, br")(brotli.compress(gzip.compress(EV2))) == EV2


def test_the_stream_rewriter_delivers_complete_events_then_nothing():
    store = SessionTracker()
    s = store.create("k")
    s.server_rev = s.client_rev = "2025-06-18"
    rw, exch = Rewriter(store), Exchange(flow_id="f", session=s, is_mcp=True)
    a, b = flushed(EV1, EV2[:10])
    stream = rw.sse(exch)
    stream.decoder = stream_decoder("gzip")
    assert stream(a[:4]) == b""
    assert stream(a[4:] + b + b"\xffgarbage") == EV1
    assert stream(b"more compressed bytes") == b""  # swallowed: never compressed bytes to the client
    assert not stream.finished
    assert stream(b"") == b"" and stream.finished
    assert (stream.original, stream.delivered) == (EV1 + EV2[:10], EV1)
    assert [(c.action, c.detail) for c in exch.changes] == [
        ("passthrough", f"content-encoding: SSE stream does not decode from compressed byte {len(a + b)} on "
                        "(error: Error -3 while decompressing data: invalid block type); delivered: the complete events "
                        "before it; not delivered: 10 decoded bytes of an unfinished event and the rest of the stream "
                        "(the client was told it is not encoded)")]


def test_gzip_members_are_decoded_in_turn_however_cut():
    """RFC 1952 2.2: a gzip body is a series of members; zero bytes may pad the end of one."""
    wire = gzip.compress(EV1, mtime=0) + b"\0\0" + gzip.compress(EV2, mtime=0) + b"\0"
    for cut in range(len(wire) + 1):
        d = stream_decoder("gzip")
        assert d(wire[:cut]) + d(wire[cut:]) == EV1 + EV2


@pytest.mark.parametrize("enc,wire,why", [
    ("gzip", gzip.compress(EV1, mtime=0) + b"garbage", "error: Error -3 while decompressing data: incorrect header check"),
    ("deflate", zlib.compress(EV1) + b"x", "error: data after the end of the deflate stream"),
], ids=["gzip", "deflate"])
def test_bytes_after_the_end_of_a_compressed_stream_do_not_decode(enc, wire, why):
    """Before, a zlib decompressor kept them aside (``unused_data``) and they were dropped with no record."""
    with pytest.raises(DecodeFailed) as e:
        stream_decoder(enc)(wire)
    assert (e.value.partial, str(e.value)) == (EV1, why)


def test_zstd_frames_are_decoded_in_turn_however_cut():
    """RFC 8878 3.1: zstd data is one or more frames. Before, a second frame in the same read was kept
    aside by the decompressor and dropped with no record (in a later read it was refused: EOFError)."""
    from backports import zstd
    wire = zstd.compress(EV1) + zstd.compress(EV2)
    for cut in range(len(wire) + 1):
        d = stream_decoder("zstd")
        assert d(wire[:cut]) + d(wire[cut:]) == EV1 + EV2
    with pytest.raises(DecodeFailed) as e:
        stream_decoder("zstd")(zstd.compress(EV1) + b"\xff\xff not zstd")
    assert (e.value.at, e.value.partial) == (len(zstd.compress(EV1)), EV1)
