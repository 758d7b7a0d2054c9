"""Sealed session tokens: the ``Mcp-Session-Id`` mcpx gives a client carries the session itself.

A token is ``mcpx1.`` followed by base64url (no padding) of ``nonce (12 bytes) || AES-256-GCM
ciphertext+tag`` of the zlib-compressed JSON of a session's immutable facts (:class:`Facts`),
with the associated data ``b"mcpx-session-v1"``. Any mcpx process holding one of the keys opens
any token, so a restart, an expiry of the in-memory cache or another replica loses no session.
Nothing in the token is readable without a key; the prefix only says which format it is.

Keys (``mcpx_session_keys``): files holding one base64 key of 32 bytes per line (``#`` lines are
comments). The first key of the first file seals; every key opens (rotation: put the new key
first, keep the old one until its sessions are gone). Without the option mcpx creates
``<confdir>/mcpx-session.key`` (mitmproxy's ``confdir``, ``~/.mitmproxy`` by default) with mode
0600 on first start and reuses it.

Size: typically 200-400 characters (measured in tests/unit/test_seal.py); :data:`MAX_TOKEN` is a
hard bound (1,024 characters, far below the 8 KiB a single header line may take in nginx and the
16 KiB all headers may take in Node.js, h11 and HAProxy's default ``tune.bufsize``): capability
objects are trimmed to what mcpx's rules and bridges read before that bound is exceeded.

Errors: :meth:`Sealer.open` raises :class:`BadToken` with a reason (never the token's bytes) for
a token that is not mcpx's, truncated, tampered with or sealed with an unknown key.
Source: AES-GCM as in NIST SP 800-38D via PyPI ``cryptography`` (``AESGCM``).
"""

from __future__ import annotations

import base64
import binascii
import os
import zlib
from dataclasses import asdict, dataclass, replace
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pydantic import TypeAdapter, ValidationError

PREFIX = "mcpx1."
#: the ``bridge`` of a token that names an HTTP+SSE endpoint mcpx serves (mcpx_core.transport.http_sse),
#: never a session: such a token given as ``Mcp-Session-Id`` opens no session
ENDPOINT_ONLY = "http+sse"
AAD = b"mcpx-session-v1"
KEY_BYTES = 32
NONCE_BYTES = 12
#: longest token mcpx mints (characters)
MAX_TOKEN = 1024
DEFAULT_KEY_FILE = "mcpx-session.key"


class BadToken(ValueError):
    """A session id that does not open; ``reason`` names why (no token bytes, no key material)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class TooLarge(ValueError):
    """Facts that do not fit in :data:`MAX_TOKEN` characters even without capabilities: only the
    server's own session id (sealed whole, any length a server chooses) can make them so long."""


@dataclass(frozen=True)
class Facts:
    """What never changes in a session, sealed in its token.

    ``sid``: short random handle (hex) logged as the record's ``session``; ``client_rev`` /
    ``server_rev``: the revision each leg speaks (``client_rev`` already includes a pin);
    ``requested_rev``: the initialize request's protocolVersion; ``pinned``: the pin, if any;
    ``upstream_id``: the server's own ``Mcp-Session-Id`` (None: the server mints none);
    ``client_info`` / ``server_info``: ``{"name", "version"}``; ``client_caps`` /
    ``server_caps``: capabilities as far as mcpx reads them; ``bridge``: the bridge that serves
    the session ("" for none); ``profile``: the name of the client's host profile (chosen from its
    initialize request, whose headers a later request does not repeat), or None; ``issued``: Unix
    seconds at sealing; ``endpoint``: the digest of the server's origin and path the session was
    opened against (:func:`mcpx_core.session.endpoint_digest`): a token opens for that server only;
    ``holder``: the digest of the credential headers of the request that opened it, for a token that
    a later request must hold with the same credentials (the HTTP+SSE transport's stream, resumed:
    :mod:`mcpx_core.transport.http_sse.resume`), else "".
    """

    sid: str
    client_rev: str | None = None
    server_rev: str | None = None
    requested_rev: str | None = None
    pinned: str | None = None
    upstream_id: str | None = None
    client_info: dict | None = None
    server_info: dict | None = None
    client_caps: dict | None = None
    server_caps: dict | None = None
    bridge: str = ""
    issued: int = 0
    profile: str | None = None
    endpoint: str = ""
    holder: str = ""


_FACTS: TypeAdapter[Facts] = TypeAdapter(Facts)
_SHORT = {"sid": "i", "client_rev": "c", "server_rev": "s", "requested_rev": "r", "pinned": "p", "upstream_id": "u",
          "client_info": "ci", "server_info": "si", "client_caps": "cc", "server_caps": "sc", "bridge": "b", "issued": "t",
          "profile": "pf", "endpoint": "e", "holder": "h"}
_LONG = {v: k for k, v in _SHORT.items()}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """Strict base64url: any character outside the alphabet, and any other spelling of the same bytes
    (e.g. a changed unused bit in the last character), raises ValueError."""
    raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    if _b64(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


def trim_caps(caps: Any, depth: int = 2) -> dict | None:
    """Capabilities as mcpx reads them: objects to ``depth`` levels, leaves kept when they are
    booleans or short strings, ``experimental`` values emptied (REVISIONS.md 5.6 lists every
    capability a rule or bridge reads; none lies deeper)."""
    if not isinstance(caps, dict):
        return None
    out: dict = {}
    for k, v in list(caps.items())[:32]:
        if not isinstance(k, str) or len(k) > 64:
            continue
        if isinstance(v, dict):
            out[k] = trim_caps(v, depth - 1) if depth > 0 and k != "experimental" else {}
        elif isinstance(v, bool) or (isinstance(v, str) and len(v) <= 64):
            out[k] = v
    return out


def trim_info(info: Any) -> dict | None:
    """``clientInfo``/``serverInfo`` as mcpx reads it: ``name`` and ``version`` (strings, at most 128 characters)."""
    if not isinstance(info, dict):
        return None
    return {k: info[k][:128] for k in ("name", "version") if isinstance(info.get(k), str)}


class Sealer:
    """Seals :class:`Facts` into tokens and opens them. ``keys``: 32-byte keys, the first seals."""

    def __init__(self, keys: list[bytes]):
        if not keys or any(len(k) != KEY_BYTES for k in keys):
            raise ValueError(f"session keys must be {KEY_BYTES} bytes each, at least one")
        self._aeads = [AESGCM(k) for k in keys]

    def seal(self, facts: Facts) -> str:
        """The token for ``facts`` (at most :data:`MAX_TOKEN` characters: capabilities are trimmed
        further, then dropped, when they would make it longer). Raises :class:`TooLarge` when it
        still would be (a server's session id of about 1,000 random characters or more)."""
        for f in (facts, replace(facts, client_caps=trim_caps(facts.client_caps, 1), server_caps=trim_caps(facts.server_caps, 1)),
                  replace(facts, client_caps=None, server_caps=None)):
            token = self._seal(f)
            if len(token) <= MAX_TOKEN:
                return token
        # names, versions and revisions are bounded; the server's own session id is not
        raise TooLarge(f"too long to seal in a session token (at most {MAX_TOKEN})")

    def _seal(self, facts: Facts) -> str:
        compact = {_SHORT[k]: v for k, v in asdict(facts).items() if v not in (None, "", 0) or k == "sid"}
        payload = zlib.compress(orjson.dumps(compact), 9)
        nonce = os.urandom(NONCE_BYTES)
        return PREFIX + _b64(nonce + self._aeads[0].encrypt(nonce, payload, AAD))

    def open(self, token: str) -> Facts:
        """The facts sealed in ``token``. Raises :class:`BadToken`."""
        if not token.startswith(PREFIX):
            raise BadToken("not a session id mcpx issued")
        if len(token) > MAX_TOKEN + 64:
            raise BadToken("session id too long")
        try:
            raw = _unb64(token[len(PREFIX):])
        except (binascii.Error, ValueError):
            raise BadToken("session id is not base64url") from None
        if len(raw) < NONCE_BYTES + 16:
            raise BadToken("session id truncated")
        nonce, sealed = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
        for aead in self._aeads:
            try:
                payload = aead.decrypt(nonce, sealed, AAD)
                break
            except InvalidTag:
                continue
        else:
            raise BadToken("session id does not open with any session key (tampered, truncated or sealed with another key)")
        try:
            compact = orjson.loads(zlib.decompress(payload))
            return _FACTS.validate_python({_LONG[k]: v for k, v in compact.items() if k in _LONG})
        except (zlib.error, orjson.JSONDecodeError, ValidationError, AttributeError) as e:
            raise BadToken(f"session id holds no session ({type(e).__name__})") from None


def new_key() -> bytes:
    return os.urandom(KEY_BYTES)


def read_key_file(path: str) -> list[bytes]:
    """The keys of one key file (one base64 key per line). Raises ValueError naming the file and line."""
    keys = []
    with open(path, "rb") as fh:
        for n, line in enumerate(fh.read().splitlines(), 1):
            line = line.strip()
            if not line or line.startswith(b"#"):
                continue
            try:
                key = base64.b64decode(line, altchars=b"-_", validate=True) if b"-" in line or b"_" in line \
                    else base64.b64decode(line, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"{path}:{n}: not base64") from None
            if len(key) != KEY_BYTES:
                raise ValueError(f"{path}:{n}: a key must be {KEY_BYTES} bytes, this one has {len(key)}")
            keys.append(key)
    if not keys:
        raise ValueError(f"{path}: no key in the file")
    return keys


def create_key_file(path: str) -> None:
    """Write a new random key to ``path`` (mode 0600, never overwriting an existing file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"# mcpx session key (AES-256-GCM); keep it secret, share it with every mcpx replica\n")
        fh.write(base64.b64encode(new_key()) + b"\n")
    os.chmod(path, 0o600)


def load_keys(paths: list[str], default: str) -> tuple[list[bytes], str | None]:
    """(keys, path of a key file created now or None): the keys of ``paths`` in order, else of
    ``default``, created first when missing. Raises ValueError / OSError naming the file."""
    if paths:
        keys: list[bytes] = []
        for p in paths:
            keys += read_key_file(os.path.expanduser(p))
        return keys, None
    path = os.path.expanduser(default)
    created = None
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            create_key_file(path)
            created = path
        except FileExistsError:  # another replica created it meanwhile
            pass
    return read_key_file(path), created
