"""Incremental Content-Encoding decoders for streamed bodies (gzip, deflate, br, zstd).

Whole bodies are decoded and re-encoded by mitmproxy itself (``message.content``). A streamed SSE
body is decoded chunk by chunk here and forwarded *identity*-encoded (the addon removes the
Content-Encoding header before the first byte goes out), so every event can be rewritten as soon
as it is complete. Raises ValueError for an encoding it cannot decode.
"""

from __future__ import annotations

import zlib
from typing import Callable


class _Chain:
    def __init__(self, decoders: list):
        self.decoders = decoders

    def __call__(self, chunk: bytes) -> bytes:
        for d in self.decoders:
            chunk = d(chunk)
        return chunk


def _zlib(wbits: int) -> Callable[[bytes], bytes]:
    d = zlib.decompressobj(wbits)
    return d.decompress


def _deflate() -> Callable[[bytes], bytes]:
    # "deflate" is zlib-wrapped by the RFC, raw in some servers: decide on the first bytes.
    state: dict = {}

    def dec(chunk: bytes) -> bytes:
        if "d" not in state:
            state["d"] = zlib.decompressobj(zlib.MAX_WBITS if chunk[:1] == b"\x78" else -zlib.MAX_WBITS)
        return state["d"].decompress(chunk)
    return dec


def _br() -> Callable[[bytes], bytes]:
    import brotli  # installed with mitmproxy
    d = brotli.Decompressor()
    return d.process


def _zstd() -> Callable[[bytes], bytes]:
    try:  # the same zstd module mitmproxy itself uses (mitmproxy/net/encoding.py)
        from compression import zstd  # Python >= 3.14
    except ImportError:
        from backports import zstd
    d = zstd.ZstdDecompressor()
    return d.decompress


_FACTORIES = {
    "gzip": lambda: _zlib(16 + zlib.MAX_WBITS),
    "x-gzip": lambda: _zlib(16 + zlib.MAX_WBITS),
    "deflate": _deflate,
    "br": _br,
    "zstd": _zstd,
    "identity": lambda: (lambda b: b),
}


def stream_decoder(content_encoding: str) -> Callable[[bytes], bytes]:
    """A function that decodes successive chunks of a body with this Content-Encoding value."""
    names = [p.strip().lower() for p in content_encoding.split(",") if p.strip()]
    try:
        return _Chain([_FACTORIES[n]() for n in reversed(names)])
    except KeyError as e:
        raise ValueError(f"unsupported content-encoding {e.args[0]!r}") from None
