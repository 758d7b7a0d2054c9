"""``stream_decoder`` with a limit (framing/encoding.py): one chunk of a compressed SSE answer that
inflates past it stops decoding there (``DecodeFailed`` whose error is ``ChunkTooLarge``, its
``partial`` the chunk's first ``limit`` decoded bytes), having held a bounded amount of memory; every
chunk within it decodes exactly as without a limit, however the compressed bytes are cut.

Before: the decoders took no limit; a chunk was inflated whole (32 MiB here from under 33 KiB; a
172-byte brotli chunk to 100 MiB)."""
from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpx_core.framing.encoding import ChunkTooLarge, DecodeFailed, stream_decoder

EVENT = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\n'
#: one SSE event of 32 MiB after a small one
BOMB = EVENT + b"data: " + b"A" * (32 << 20) + b"\n\n"
LIMIT = 64 << 10


def compress(enc: str, data: bytes) -> bytes:
    if enc == "gzip":
        return gzip.compress(data, mtime=0)
    if enc == "deflate":
        return zlib.compress(data)
    if enc == "deflate-raw":
        c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if enc == "br":
        return brotli.compress(data)
    from backports import zstd
    return zstd.compress(data)


ENCODINGS = ["gzip", "deflate", "deflate-raw", "br", "zstd"]


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {enc: compress(enc, BOMB) for enc in ENCODINGS}


@pytest.mark.parametrize("enc", ENCODINGS)
def test_a_chunk_that_inflates_past_the_limit_stops_there_in_bounded_memory(bombs, enc):
    """32 MiB from at most 33 KiB, in one chunk: with a 64 KiB limit the decoder's peak stays under
    1 MiB (without one: 32 MiB and more); the failure carries the first 64 KiB decoded, the first
    event complete in it."""
    chunk = bombs[enc]
    assert len(chunk) < 33 << 10
    decode = stream_decoder(enc.split("-")[0], LIMIT)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeFailed) as e:
            decode(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    f = e.value
    assert (type(f.error), f.at, f.partial, str(f.error)) == (
        ChunkTooLarge, 0, BOMB[:LIMIT],
        f"a chunk of {len(chunk)} compressed bytes decodes to more than 65536 bytes (mcpx_max_body); decoding stopped there")
    assert peak < 1 << 20, peak


def test_each_encoding_of_a_chain_is_bounded(bombs):
    """``Content-Encoding: br, gzip``: gzip undone first, its output (the brotli bytes) then br."""
    chunk = gzip.compress(bombs["br"], mtime=0)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeFailed) as e:
            stream_decoder("br, gzip", LIMIT)(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (type(e.value.error), e.value.partial) == (ChunkTooLarge, BOMB[:LIMIT])
    assert peak < 1 << 20, peak


#: a stream a server compresses as it writes: events of various sizes (some highly compressible)
EVENTS = [EVENT, b"data: " + b"x" * 5000 + b"\n\n", b": keep-alive\n\n", b"data: " + bytes(range(256)) * 40 + b"\n\n",
          EVENT * 3, b"data: " + b"y" * 20000 + b"\n\n"]


def parts(enc: str) -> bytes:
    """EVENTS compressed as one stream, flushed after each (gzip: a member per event; zstd: a frame
    per event, as servers that compress each event on its own send them)."""
    if enc == "gzip":
        return b"".join(gzip.compress(e, mtime=0) for e in EVENTS)
    if enc in ("deflate", "deflate-raw"):
        c = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS if enc == "deflate" else -zlib.MAX_WBITS)
        return b"".join(c.compress(e) + c.flush(zlib.Z_SYNC_FLUSH) for e in EVENTS) + c.flush()
    if enc == "br":
        c = brotli.Compressor()
        return b"".join(c.process(e) + c.flush() for e in EVENTS) + c.finish()
    from backports import zstd
    return b"".join(zstd.compress(e) for e in EVENTS)


STREAMS = {enc: parts(enc) for enc in ENCODINGS}
PLAIN = b"".join(EVENTS)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    edges = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [data[a:b] for a, b in zip(edges, edges[1:])]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(enc=st.sampled_from(ENCODINGS), points=st.lists(st.integers(0, 1 << 20), max_size=12))
@example(enc="br", points=[321760])  # brotli 1.2 kept 2,997 bytes of the first chunk's output for the next call
def test_within_the_limit_the_output_is_the_unbounded_decoders(enc, points):
    """However the stream is cut: with the limit at the largest chunk's output, every chunk decodes
    to what the unbounded decoder gives it; one byte lower, the chunk with the largest output fails
    with its first ``limit`` bytes, the chunks before it as without a limit."""
    name = enc.split("-")[0]
    chunks = cut(STREAMS[enc], points)
    free = stream_decoder(name)
    want = [free(c) for c in chunks]
    assert b"".join(want) == PLAIN
    top = max(len(w) for w in want)
    bounded = stream_decoder(name, top)
    assert [bounded(c) for c in chunks] == want
    if top == 0:
        return
    low = stream_decoder(name, top - 1)
    first = next(i for i, w in enumerate(want) if len(w) == top)
    assert [low(c) for c in chunks[:first]] == want[:first]
    with pytest.raises(DecodeFailed) as e:
        low(chunks[first])
    assert (type(e.value.error), e.value.partial) == (ChunkTooLarge, want[first][:top - 1])
