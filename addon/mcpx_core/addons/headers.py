"""HTTP header helpers of the hooks: one decoding pass over the headers mcpx reads."""

from __future__ import annotations

from mitmproxy import http

from ..framing import encoding

#: the headers mcpx reads (lower case); every ``mcp-*`` field is read as well
_READ_HEADERS = frozenset({b"content-type", b"content-encoding", b"content-length", b"transfer-encoding"})


def header_map(message: http.Message) -> tuple[dict[str, str], dict[str, str]]:
    """(lower-case name -> value, name as sent -> value) of the headers mcpx reads
    (:data:`_READ_HEADERS` and every ``Mcp-*`` field), values as ``headers.get`` gives them
    (repeated fields joined by ", "), in one pass that decodes only those: each ``headers.get``
    scans and decodes every field."""
    lower: dict[str, str] = {}
    named: dict[str, str] = {}
    for k, v in message.headers.fields:
        lk = k.lower()
        if lk[:4] != b"mcp-" and lk not in _READ_HEADERS:
            continue
        name = k.decode("utf-8", "surrogateescape")
        value = v.decode("utf-8", "surrogateescape")
        low = lk.decode("utf-8", "surrogateescape")
        if low in lower:
            lower[low] = f"{lower[low]}, {value}"
            first = next(n for n in named if n.lower() == low)
            named[first] = lower[low]
        else:
            lower[low] = named[name] = value
    return lower, named


def header_fields(pairs) -> list[tuple[bytes, bytes]]:
    """(name, value) string pairs as the byte fields ``http.Response.make`` takes."""
    return [(k.encode("utf-8", "surrogateescape"), v.encode("utf-8", "surrogateescape")) for k, v in pairs]


def make_response(status: int, body: bytes, pairs) -> http.Response:
    """``http.Response.make`` with these (name, value) headers, but ``body`` taken as the bytes to send:
    with a Content-Encoding among ``pairs`` (an upstream body mcpx did not decode, bridge ``Reply.undecoded``)
    it is not encoded once more (``make`` encodes its content as that header says)."""
    fields = header_fields(pairs)
    if not any(k.lower() == b"content-encoding" for k, _ in fields):
        return http.Response.make(status, body, fields)
    resp = http.Response.make(status, b"", ())  # (an empty content would drop Content-Encoding)
    resp.headers = http.Headers(fields)
    resp.raw_content = body
    resp.headers["content-length"] = str(len(body))
    return resp


def media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def decoded(message: http.Message, limit: int | None = None) -> tuple[bytes | None, str | None]:
    """(the body decoded as its Content-Encoding says, None) or (None, the detail of the passthrough
    record that says why it is left as it is: ``content-encoding: body does not decode (REASON);
    forwarded untouched`` or ``content-encoding: body decodes to more than mcpx_max_body (N bytes);
    forwarded untouched``).

    gzip, deflate, br and zstd are decoded strictly, all of the body or nothing
    (:func:`mcpx_core.framing.encoding.decode_whole`: mitmproxy's gzip decoder takes a truncated
    body for a complete one), and never past ``limit`` decoded bytes (``mcpx_max_body``; None: no
    limit): decoding stops there, so a small body that inflates to gigabytes is never held whole.
    ``deflateraw`` (mitmproxy's name for raw deflate: it decodes and encodes it) is decoded as
    deflate; ``identity`` and ``none`` are the body itself. Any other value is not decoded (the
    reason: ``unsupported content-encoding 'bz2'``): mitmproxy would hand it to Python's codecs,
    whose ``bz2`` and ``zlib`` inflate without a bound (81 bytes of bz2 to 50 MiB). The reason is
    the decoder's error (mitmproxy's own message quotes the body's first bytes: not logged)."""
    ce = message.headers.get("content-encoding", "").strip().lower()
    if ce in encoding.WHOLE or ce == "deflateraw":
        try:
            return encoding.decode_whole(message.raw_content or b"", "deflate" if ce == "deflateraw" else ce, limit), None
        except encoding.DecodesTooLarge as e:
            return None, f"content-encoding: body decodes to more than mcpx_max_body ({e.limit} bytes); forwarded untouched"
        except Exception as e:  # zlib.error, brotli.error, ZstdError, TrailingData: never the data itself
            return None, _undecodable(f"{type(e).__name__}: {e}")
    if ce in ("", "identity", "none"):
        return message.raw_content, None
    return None, _undecodable(f"unsupported content-encoding {ce!r}")


def _undecodable(why: str) -> str:
    return f"content-encoding: body does not decode ({why}); forwarded untouched"
