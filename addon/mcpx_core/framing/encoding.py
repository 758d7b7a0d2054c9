"""Content-Encoding decoders: incremental ones for streamed bodies, strict ones for whole bodies
(gzip, deflate, br, zstd).

A whole body is decoded here (:func:`decode_whole`) and re-encoded by mitmproxy itself when mcpx
changes it (``message.content``). mitmproxy's own gzip decoder takes a body that ends before its
end-of-stream marker (truncated) for complete, and ignores bytes after it (the members after the
first of a multi-member body among them); its deflate decoder ignores bytes after the end too. Here
such a body does not decode, with the decoder's error (zlib's ``incomplete or truncated stream``,
or :class:`TrailingData`), and every member of a multi-member gzip body is decoded (RFC 1952 2.2).

A streamed SSE
body is decoded chunk by chunk here and forwarded *identity*-encoded (the addon removes the
Content-Encoding header before the first byte goes out), so every event can be rewritten as soon
as it is complete. Raises ValueError for an encoding it cannot decode.

A chunk that does not decode raises :class:`DecodeFailed`, which carries what the chunk's bytes
before the fault decode to: the caller can still deliver the events they complete and must
deliver nothing after (the client was told the body is not encoded). gzip and deflate find the
fault to the byte (the zlib state is copied before each chunk, ~1.4 us, and on a fault the copy
is fed the chunk one byte at a time); a brotli or zstd decoder has no copy: nothing of the
failing chunk is decoded (for zstd: nothing of its failing frame).

gzip members and zstd frames that follow one another (a server compressing each event on its own)
are each decoded in turn; what follows the end of a deflate or brotli stream does not decode.

Bounded: with a ``limit`` (:func:`stream_decoder`; the addon gives ``mcpx_max_body``), one chunk
decodes to at most ``limit`` bytes. Each decoder is asked for at most the bytes left plus one
(zlib and zstd ``max_length``, brotli ``output_buffer_limit``, which may exceed it by one output
block), so a 64 KiB gzip chunk that would inflate to 66 MiB, or a 172-byte brotli chunk to 100 MiB,
is never inflated whole: past the limit the chunk fails as a :class:`ChunkTooLarge`
(:class:`DecodeFailed`), whose ``partial`` is its first ``limit`` decoded bytes. The output of one
chunk cannot be handed on in pieces instead: mitmproxy writes all a stream callable returns for a
chunk before it reads the next, so a bound on what one chunk decodes to is the bound on memory.
"""

from __future__ import annotations

import zlib
from typing import Callable


class DecodeFailed(ValueError):
    """A chunk did not decode. ``error``: the decoder's exception; ``at``: how many bytes of the
    chunk decoded before the fault (0 when not known: none counted); ``partial``: what those bytes
    decoded to (through every encoding of the chain)."""

    def __init__(self, error: Exception, at: int = 0, partial: bytes = b""):
        super().__init__(f"{type(error).__name__}: {error}")
        self.error, self.at, self.partial = error, at, partial


class ChunkTooLarge(ValueError):
    """One chunk of ``size`` compressed bytes decodes to more than ``limit`` bytes (the ``error`` of
    the :class:`DecodeFailed` a bounded stream decoder raises: decoding stopped there)."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"a chunk of {size} compressed byte{'' if size == 1 else 's'} decodes to more than {_bytes(limit)} "
                         f"(mcpx_max_body); decoding stopped there")
        self.size, self.limit = size, limit


def _too_large(chunk_size: int, limit: int, out: list[bytes]) -> DecodeFailed:
    """The failure of a chunk whose output ``out`` passed ``limit``: its first ``limit`` bytes as
    ``partial`` (no more: an event they cut short stays within the SSE parser's bound, and is held
    back), ``at`` 0 (the record names the chunk's first byte; what decoded of it is delivered)."""
    return DecodeFailed(ChunkTooLarge(chunk_size, limit), 0, b"".join(out)[:limit])


class _Members:
    """The loop both multi-member decoders share: a chunk's members (gzip) or frames (zstd) decoded in
    turn, its output bounded by ``limit`` (at most one byte more than is left is asked for: getting it
    shows the chunk passes the limit, :func:`_too_large`). A subclass gives :meth:`_next` (what starts
    after a member's end) and :meth:`_decode` (one call of its decompressor, raising
    :class:`DecodeFailed`); ``d`` is the decompressor of the current member."""

    __slots__ = ("d", "limit")

    def _next(self, chunk: bytes, done: int, out: list[bytes]) -> int:
        raise NotImplementedError

    def _decode(self, view: memoryview, done: int, left: int | None, out: list[bytes]) -> bytes:
        raise NotImplementedError

    def __call__(self, chunk: bytes) -> bytes:
        out: list[bytes] = []
        view, done = memoryview(chunk), 0  # bytes of ``chunk`` taken by the members before
        left = self.limit  # decoded bytes this chunk may still give
        while done < len(chunk):
            if self.d.eof:
                done = self._next(chunk, done, out)
                if done == len(chunk):
                    break
            out.append(self._decode(view, done, left, out))
            if left is not None:
                left -= len(out[-1])
                if left < 0:
                    raise _too_large(len(chunk), self.limit, out)  # type: ignore[arg-type]
            if not self.d.eof:
                break
            done = len(chunk) - len(self.d.unused_data)
        return b"".join(out)


class _Zlib(_Members):
    """gzip (``wbits`` 31) or deflate (zlib-wrapped, or raw when ``wbits`` is None: decided on the
    first byte, since some servers send raw deflate under that name).

    A gzip body is a series of members (RFC 1952 2.2; e.g. a server that compresses each event on its
    own), zero bytes may pad its end (as Python's gzip module reads them): each member is decoded in
    turn (a zlib decompressor stops at the end of the first). Bytes after the end of a deflate
    stream, or after a gzip member that do not start another, do not decode (:class:`DecodeFailed`).
    ``limit``: the most bytes one chunk may decode to (None: no bound; see the module docstring)."""

    __slots__ = ("wbits",)

    def __init__(self, wbits: int | None, limit: int | None = None):
        self.wbits = wbits
        self.d = zlib.decompressobj(wbits) if wbits is not None else None
        self.limit = limit

    def __call__(self, chunk: bytes) -> bytes:
        if self.d is None:
            if not chunk:
                return b""
            self.d = zlib.decompressobj(zlib.MAX_WBITS if chunk[:1] == b"\x78" else -zlib.MAX_WBITS)
        return super().__call__(chunk)

    def _next(self, chunk: bytes, done: int, out: list[bytes]) -> int:
        if self.wbits != _GZIP:
            raise DecodeFailed(zlib.error("data after the end of the deflate stream"), done, b"".join(out))
        while done < len(chunk) and chunk[done] == 0:  # zero padding
            done += 1
        if done < len(chunk):
            self.d = zlib.decompressobj(self.wbits)  # the next gzip member
        return done

    def _decode(self, view: memoryview, done: int, left: int | None, out: list[bytes]) -> bytes:
        before = self.d.copy()
        try:
            # (below max_length, zlib took all the input: it stops early only when the output reaches it)
            return self.d.decompress(view[done:], 0 if left is None else left + 1)
        except zlib.error as e:
            at = done
            while at < len(view):  # the fault found to the byte, on the state before this member's bytes
                try:
                    out.append(before.decompress(view[at:at + 1]))
                except zlib.error:
                    break
                at += 1
            raise DecodeFailed(e, at, b"".join(out)) from None


_GZIP = 16 + zlib.MAX_WBITS


class _Opaque:
    """A decoder with no copy of its state (brotli, zstd): a failing chunk decodes to nothing."""

    __slots__ = ("decode",)

    def __init__(self, decode: Callable[[bytes], bytes]):
        self.decode = decode

    def __call__(self, chunk: bytes) -> bytes:
        try:
            return self.decode(chunk)
        except Exception as e:  # brotli.error, zstd.ZstdError, ...
            raise DecodeFailed(e) from None


class _Chain:
    """Several encodings (``Content-Encoding: gzip, br``), undone last first. When an inner one
    fails, ``at`` counts no byte of the chunk (where the fault lies in the outer bytes is not known)."""

    def __init__(self, decoders: list):
        self.decoders = decoders

    def __call__(self, chunk: bytes) -> bytes:
        for i, d in enumerate(self.decoders):
            try:
                chunk = d(chunk)
            except DecodeFailed as f:
                partial, at = f.partial, (f.at if i == 0 else 0)
                for inner in self.decoders[i + 1:]:  # what decoded goes through the other encodings
                    try:
                        partial = inner(partial)
                    except DecodeFailed as g:
                        partial = g.partial
                        break
                raise DecodeFailed(f.error, at, partial) from None
        return chunk


def _br(limit: int | None = None) -> Callable[[bytes], bytes]:
    import brotli  # installed with mitmproxy
    d = brotli.Decompressor()
    if limit is None:
        def free(chunk: bytes) -> bytes:
            """The chunk's whole output: brotli 1.2 returns one output block per ``process`` and keeps
            the rest for a later call, so the decoder is drained with ``process(b"")``, as the bounded
            one is (else an event a chunk completes would wait for the next chunk)."""
            out = [d.process(chunk)]
            while piece := d.process(b""):
                out.append(piece)
            return b"".join(out)
        return _Opaque(free)

    def bounded(chunk: bytes) -> bytes:
        """The chunk's output in blocks of at most the bytes left plus one (and one output block): the
        decoder keeps the input it did not get to, and gives more on ``process(b"")`` until it can take
        input again and has nothing more (brotli 1.1+)."""
        out = [d.process(chunk, output_buffer_limit=limit + 1)]
        got = len(out[0])
        while got <= limit:
            ready = d.can_accept_more_data()
            piece = d.process(b"", output_buffer_limit=limit + 1 - got)
            if not piece:
                if ready:
                    return b"".join(out)
                raise brotli.error("brotli: decoder made no progress")  # (not seen: output is pending)
            out.append(piece)
            got += len(piece)
        raise _too_large(len(chunk), limit, out)

    def call(chunk: bytes) -> bytes:
        try:
            return bounded(chunk)
        except DecodeFailed:
            raise
        except Exception as e:  # brotli.error
            raise DecodeFailed(e) from None
    return call


class _Zstd(_Members):
    """zstd: one or more frames (RFC 8878 3.1), decoded in turn (a decompressor stops at the end of the
    first: it keeps the rest of that chunk aside, and refuses the next chunk). A failing chunk decodes
    to what its frames before the failing one gave."""

    __slots__ = ("new",)

    def __init__(self, limit: int | None = None):
        try:  # the same zstd module mitmproxy itself uses (mitmproxy/net/encoding.py)
            from compression import zstd  # Python >= 3.14
        except ImportError:
            from backports import zstd
        self.new = zstd.ZstdDecompressor
        self.d = self.new()
        self.limit = limit

    def _next(self, chunk: bytes, done: int, out: list[bytes]) -> int:
        self.d = self.new()  # the next frame
        return done

    def _decode(self, view: memoryview, done: int, left: int | None, out: list[bytes]) -> bytes:
        try:
            return self.d.decompress(view[done:], -1 if left is None else left + 1)
        except Exception as e:  # zstd.ZstdError
            raise DecodeFailed(e, done, b"".join(out)) from None


_FACTORIES: dict[str, Callable[[int | None], Callable[[bytes], bytes]]] = {
    "gzip": lambda limit: _Zlib(_GZIP, limit),
    "x-gzip": lambda limit: _Zlib(_GZIP, limit),
    "deflate": lambda limit: _Zlib(None, limit),
    "br": _br,
    "zstd": _Zstd,
    "identity": lambda limit: (lambda b: b),
}


def stream_decoder(content_encoding: str, limit: int | None = None) -> Callable[[bytes], bytes]:
    """A function that decodes successive chunks of a body with this Content-Encoding value
    (raises :class:`DecodeFailed` for a chunk that does not decode). ``limit`` (bytes; None: no
    bound): a chunk that decodes to more fails with a :class:`ChunkTooLarge` error once decoding
    passes it (each encoding of a chain is bounded so), having held at most about ``limit`` decoded
    bytes (brotli: plus one output block); for any chunk within it the output is what the decoder
    gives without a limit. Raises ValueError for an encoding it cannot decode."""
    names = [p.strip().lower() for p in content_encoding.split(",") if p.strip()]
    try:
        return _Chain([_FACTORIES[n](limit) for n in reversed(names)])
    except KeyError as e:
        raise ValueError(f"unsupported content-encoding {e.args[0]!r}") from None


class TrailingData(ValueError):
    """Bytes after the end of a compressed body (not another gzip member)."""


class DecodesTooLarge(ValueError):
    """A body decodes to more than ``limit`` bytes (:func:`decode_whole`): decoding stopped there,
    having produced at most about ``limit`` bytes (a decompression bomb is never inflated whole)."""

    def __init__(self, limit: int):
        super().__init__(f"decodes to more than {_bytes(limit)}")
        self.limit = limit


#: the encodings :func:`decode_whole` decodes (the ones mitmproxy can encode again)
WHOLE = frozenset({"gzip", "deflate", "br", "zstd"})


def _bytes(n: int) -> str:
    return f"{n} byte" if n == 1 else f"{n} bytes"


class _Budget:
    """The decoded bytes a body may still produce (``left``; None: no limit)."""

    __slots__ = ("limit", "left")

    def __init__(self, limit: int | None):
        self.limit, self.left = limit, limit

    def cap(self) -> int:
        """The most output to ask a decoder for: one byte past what is left, so that going over shows."""
        return 0 if self.left is None else self.left + 1

    def take(self, out: bytes) -> bytes:
        if self.left is not None:
            self.left -= len(out)
            if self.left < 0:
                raise DecodesTooLarge(self.limit)  # type: ignore[arg-type]
        return out


def _zlib_member(data: bytes, wbits: int, budget: _Budget):
    """One zlib stream from the start of ``data``: (its output, the zlib object: ``eof``, ``unused_data``).
    With a limit, one call asks for at most the bytes left plus one: more than that left is a body
    that decodes too large (what is left of the input is then in ``unconsumed_tail``, never decoded)."""
    d = zlib.decompressobj(wbits)
    return budget.take(d.decompress(data, budget.cap())), d


def _inflate(data: bytes, wbits: int, what: str, budget: _Budget) -> bytes:
    """One zlib stream (gzip or deflate) that must end exactly where ``data`` does."""
    out, d = _zlib_member(data, wbits, budget)
    if not d.eof:
        zlib.decompress(data, wbits)  # raises zlib's own error for a stream that ends early (its output fits the limit)
        raise zlib.error("incomplete or truncated stream")  # (not reached: zlib.decompress checks the end)
    if d.unused_data:
        raise TrailingData(f"{_bytes(len(d.unused_data))} after the end of the {what} data")
    return out


def _gunzip(data: bytes, budget: _Budget) -> bytes:
    """Every member of a gzip body, in order."""
    out = []
    while True:
        part, d = _zlib_member(data, 16 + zlib.MAX_WBITS, budget)
        out.append(part)
        if not d.eof:
            zlib.decompress(data, 16 + zlib.MAX_WBITS)  # raises zlib's error for a member that ends early
            raise zlib.error("incomplete or truncated stream")  # (not reached)
        data = d.unused_data
        if not data:
            return b"".join(out)
        if data[:2] != b"\x1f\x8b":
            raise TrailingData(f"{_bytes(len(data))} after the end of the gzip data")


def _unbrotli(data: bytes, budget: _Budget) -> bytes:
    """A brotli body, as ``brotli.decompress`` reads it (its error for a stream that ends early, or
    bytes after its end), with at most the bytes left plus a block of output when a limit is set."""
    import brotli  # installed with mitmproxy
    if budget.left is None:
        return brotli.decompress(data)
    d = brotli.Decompressor()
    out = budget.take(d.process(data, output_buffer_limit=budget.cap()))
    if not d.is_finished():
        raise brotli.error("brotli: decoder failed")  # (brotli.decompress's error for a stream that ends early)
    return out


def _unzstd(data: bytes, budget: _Budget) -> bytes:
    """Every frame of a zstd body, as ``zstd.decompress`` reads them, each asked for at most the bytes left plus one."""
    try:
        from compression import zstd  # Python >= 3.14
    except ImportError:
        from backports import zstd
    out = []
    while True:
        d = zstd.ZstdDecompressor()
        out.append(budget.take(d.decompress(data, budget.cap() or -1)))
        if not d.eof:
            raise zstd.ZstdError("Compressed data ended before the end-of-stream marker was reached")
        data = d.unused_data
        if not data:
            return b"".join(out)


def _zlib_header(data: bytes) -> bool:
    """Whether ``data`` starts with a zlib header (RFC 1950 2.2: method 8, check bits)."""
    return len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0


def decode_whole(data: bytes, content_encoding: str, limit: int | None = None) -> bytes:
    """``data`` decoded as one of :data:`WHOLE` says, all of it or nothing: raises the decoder's
    error (zlib.error, brotli.error, ZstdError: their messages never quote the data) or
    :class:`TrailingData`. deflate is zlib-wrapped when it starts with a zlib header, else raw (some
    servers send raw deflate under that name).

    ``limit`` (bytes; None: none): a body that decodes to more raises :class:`DecodesTooLarge` once
    decoding passes it, having held at most about ``limit`` decoded bytes (brotli: plus one output
    block): a small compressed body that inflates to gigabytes is never decoded whole."""
    name = content_encoding.strip().lower()
    if not data:
        return b""
    budget = _Budget(limit)
    if name == "gzip":
        return _gunzip(data, budget)
    if name == "deflate":
        wbits = zlib.MAX_WBITS if _zlib_header(data) else -zlib.MAX_WBITS
        return _inflate(data, wbits, "deflate", budget)
    if name == "br":
        return _unbrotli(data, budget)
    if name == "zstd":
        return _unzstd(data, budget)
    raise ValueError(f"unsupported content-encoding {name!r}")
