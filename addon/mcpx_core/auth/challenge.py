"""``WWW-Authenticate`` challenges read and written by the syntax of RFC 9110 §11.6.1, sans I/O.

    WWW-Authenticate = #challenge
    challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
    auth-param = token BWS "=" BWS ( token / quoted-string )
    token68    = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="

A comma inside a quoted-string (RFC 9110 §5.6.4) separates nothing, and a quoted ``Bearer`` or
``resource_metadata=`` is a value, not a scheme or a parameter: a server's (or an attacker's)
``error_description`` can hold either. A value that does not parse (an unterminated quoted-string, a
stray character) is never rewritten: :func:`with_param` answers None and the server's header goes on
as it came.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 §5.6.2 tchar
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
#: an unquoted auth-param value: a token (RFC 9110 §5.6.2), read leniently as any run up to a space,
#: comma or quote (servers send ``resource_metadata=https://...`` unquoted; ``:`` and ``/`` are no tchar)
_BARE = re.compile(r'[^\s,"]+')
_OWS = " \t"


@dataclass
class Challenge:
    """One challenge: ``scheme``, where it ends in the header value (``end``: the index after the
    scheme), its ``token68`` or its ``params`` (``(name, value)``, names as sent, values unquoted)."""

    scheme: str
    end: int
    token68: str | None = None
    params: list[tuple[str, str]] = field(default_factory=list)

    def param(self, name: str) -> str | None:
        for k, v in self.params:
            if k.lower() == name.lower():
                return v
        return None


def _ows(s: str, i: int) -> int:
    while i < len(s) and s[i] in _OWS:
        i += 1
    return i


def _quoted(s: str, i: int) -> tuple[str, int] | None:
    """The quoted-string at ``s[i] == '"'`` unquoted (RFC 9110 §5.6.4: ``\\`` escapes one octet), and
    the index after it; None when it never ends."""
    out, i = [], i + 1
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append(s[i + 1])
            i += 2
        elif c == '"':
            return "".join(out), i + 1
        else:
            out.append(c)
            i += 1
    return None


def parse(value: str) -> list[Challenge] | None:
    """Every challenge of a ``WWW-Authenticate`` value, in order; None when the value does not parse."""
    out: list[Challenge] = []
    i, n = 0, len(value)
    while True:
        while i < n and (value[i] in _OWS or value[i] == ","):
            i += 1
        if i >= n:
            return out
        m = _TOKEN.match(value, i)
        if m is None:
            return None
        j = _ows(value, m.end())
        if out and out[-1].token68 is None and j < n and value[j] == "=":  # an auth-param of the last challenge
            j = _ows(value, j + 1)
            if j < n and value[j] == '"':
                q = _quoted(value, j)
                if q is None:
                    return None
                v, i = q
            else:
                t = _BARE.match(value, j)
                if t is None:
                    return None
                v, i = t.group(), t.end()
            out[-1].params.append((m.group(), v))
        else:  # a new challenge: its scheme, then (after 1*SP) a token68 or its auth-params
            ch = Challenge(m.group(), m.end())
            out.append(ch)
            i = m.end()
            if i < n and value[i] in _OWS:
                k = _ows(value, i)
                t = _TOKEN68.match(value, k)
                if t is not None:
                    after = _ows(value, t.end())
                    if after >= n or value[after] == ",":  # (an auth-param's "=" is followed by its value)
                        ch.token68, i = t.group(), after
                        continue
                i = k
            elif i < n and value[i] != ",":
                return None
            continue
        i = _ows(value, i)
        if i < n and value[i] != ",":
            return None


def param(value: str | None, name: str) -> str | None:
    """The first ``name`` auth-param of any challenge in ``value`` (case-insensitive, unquoted); None
    when there is none or the value does not parse."""
    for ch in parse(value or "") or []:
        v = ch.param(name)
        if v is not None:
            return v
    return None


def quote(v: str) -> str | None:
    """``v`` as a quoted-string (``"`` and ``\\`` escaped); None when it holds a control character
    (RFC 9110 §5.6.4 allows none but HTAB)."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in v):
        return None
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def with_param(value: str | None, scheme: str, name: str, v: str) -> str | None:
    """``value`` with ``name=quoted(v)`` first among the auth-params of its first ``scheme`` challenge
    (the rest of the value as the server wrote it), or a ``scheme`` challenge of that parameter alone
    before the others; None (leave the header alone) when ``value`` does not parse, that challenge
    carries a token68 (it can take no auth-param) or ``v`` cannot be quoted."""
    q = quote(v)
    if q is None:
        return None
    added = f"{name}={q}"
    if value is None or not value.strip():
        return f"{scheme} {added}"
    chs = parse(value)
    if chs is None:
        return None
    for ch in chs:
        if ch.scheme.lower() == scheme.lower():
            if ch.token68 is not None:
                return None
            return value[:ch.end] + f" {added}" + ("," if ch.params else "") + value[ch.end:]
    return f"{scheme} {added}, {value}"
