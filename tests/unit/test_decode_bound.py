"""``decode_whole`` with a limit (framing/encoding.py): a body that inflates past it stops decoding
there (DecodesTooLarge), having held a bounded amount of memory; one that fits decodes exactly as
without a limit, and its faults keep their errors."""
from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest

from mcpx_core.framing.encoding import DecodesTooLarge, TrailingData, decode_whole

PLAIN = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"' + b"x" * (32 << 20) + b'"}}}'


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
    return {enc: compress(enc, PLAIN) for enc in ENCODINGS}


@pytest.mark.parametrize("enc", ENCODINGS)
def test_a_body_that_inflates_past_the_limit_stops_there_in_bounded_memory(bombs, enc):
    """32 MiB from at most 33 KiB: with a 64 KiB limit, the decoders' peak is under 1 MiB (without
    one, the whole 32 MiB, twice for gzip: measured 64 MiB+)."""
    body = bombs[enc]
    assert len(body) < 40 << 10
    tracemalloc.start()
    try:
        with pytest.raises(DecodesTooLarge) as e:
            decode_whole(body, enc.split("-")[0], 64 << 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (e.value.limit, str(e.value)) == (64 << 10, "decodes to more than 65536 bytes")
    assert peak < 1 << 20, peak


@pytest.mark.parametrize("enc", ENCODINGS)
def test_a_body_that_fits_the_limit_exactly_decodes_whole(bombs, enc):
    name = enc.split("-")[0]
    assert decode_whole(bombs[enc], name, len(PLAIN)) == PLAIN
    with pytest.raises(DecodesTooLarge):
        decode_whole(bombs[enc], name, len(PLAIN) - 1)


def test_the_limit_counts_every_gzip_member_and_zstd_frame():
    from backports import zstd
    half = 100_000
    two_gzip = gzip.compress(b"a" * half) + gzip.compress(b"b" * half)
    two_zstd = zstd.compress(b"a" * half) + zstd.compress(b"b" * half)
    for enc, body in (("gzip", two_gzip), ("zstd", two_zstd)):
        assert decode_whole(body, enc, 2 * half) == b"a" * half + b"b" * half
        with pytest.raises(DecodesTooLarge):
            decode_whole(body, enc, 2 * half - 1)  # the first member fits, the second passes the limit


@pytest.mark.parametrize("enc,body,error", [
    ("gzip", gzip.compress(PLAIN[:1000])[:-4], "Error -5 while decompressing data: incomplete or truncated stream"),
    ("gzip", gzip.compress(PLAIN[:1000]) + b"\x00junk", "5 bytes after the end of the gzip data"),
    ("deflate", zlib.compress(PLAIN[:1000]) + b"\x00", "1 byte after the end of the deflate data"),
    ("br", brotli.compress(PLAIN[:1000])[:-2], "brotli: decoder failed"),
    ("br", brotli.compress(PLAIN[:1000]) + b"\x00", "brotli: decoder failed"),
    ("zstd", None, "Compressed data ended before the end-of-stream marker was reached"),
], ids=["gzip-truncated", "gzip-trailing", "deflate-trailing", "br-truncated", "br-trailing", "zstd-truncated"])
def test_a_fault_within_the_limit_keeps_the_error_it_has_without_one(enc, body, error):
    if body is None:
        from backports import zstd
        body = zstd.compress(PLAIN[:1000])[:-3]
    errors = []
    for limit in (None, 1 << 20):
        with pytest.raises(Exception) as e:
            decode_whole(body, enc, limit)
        assert not isinstance(e.value, DecodesTooLarge)
        errors.append((type(e.value).__name__, str(e.value)))
    assert errors[0] == errors[1]
    assert error in errors[0][1]
    if enc in ("gzip", "deflate") and "after the end" in error:
        assert errors[0][0] == TrailingData.__name__


def _response(ce: str, raw: bytes):
    from mitmproxy.test import tutils
    r = tutils.tresp(content=b"")
    r.headers["content-encoding"] = ce
    r.raw_content = raw
    return r


@pytest.mark.parametrize("ce,body", [
    ("gzip", zlib.compress(PLAIN)),  # zlib under the name gzip: strict fails, mitmproxy's decoder (wbits 47) reads it
    ("deflate", zlib.compress(PLAIN)[:-4] + b"\0\0\0\0"),  # bad adler32: strict fails, mitmproxy retries raw
    ("bz2", __import__("bz2").compress(PLAIN)),  # Python's bz2 codec (mitmproxy's fallback): 32 MiB from ~100 bytes
    ("zlib", zlib.compress(PLAIN)),  # Python's zlib codec
    ("deflateraw", compress("deflate-raw", PLAIN)),  # mitmproxy's own name for raw deflate
], ids=["zlib-as-gzip", "deflate-bad-checksum", "bz2", "zlib", "deflateraw"])
def test_the_senders_whole_answer_never_inflates_past_the_limit(ce, body):
    """``upstream.Sender._whole`` (the initialize answer mcpx reads itself; a 2026-07-28 bridge's
    upstream answers): before, a body the strict decoder refused, or in an encoding it does not
    know, went to mitmproxy's own decoder, unbounded (32 MiB held, and returned). Now it is given as
    received, the decoders' peak under 1 MiB."""
    from mcpx_core.upstream import Sender
    s = Sender()
    s.max_body = 64 << 10
    r = _response(ce, body)
    tracemalloc.start()
    try:
        got, why = s._whole(r)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == body and why.startswith("content-encoding: body d")  # (the record a bridge writes: Reply.undecoded)
    assert peak < 1 << 20, peak


def test_the_senders_lenient_reading_within_the_limit_is_kept():
    """What fits the limit is read as mitmproxy's lenient decoder reads it (a gzip body cut in its trailer, zlib under gzip)."""
    from mcpx_core.upstream import Sender
    s = Sender()
    s.max_body = 64 << 10
    small = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert s._whole(_response("gzip", gzip.compress(small)[:-4])) == (small, None)
    assert s._whole(_response("gzip", zlib.compress(small))) == (small, None)
    assert s._whole(_response("deflateraw", compress("deflate-raw", small))) == (small, None)
    assert s._whole(_response("identity", small)) == (small, None)
    assert s._whole(_response("bz2", b"xx")) == (b"xx", "content-encoding: body does not decode (unsupported content-encoding 'bz2'); forwarded untouched")
    assert s._whole(_response("br", b"\xff\xff")) == (b"\xff\xff", "content-encoding: body does not decode (error: brotli: decoder failed); forwarded untouched")
