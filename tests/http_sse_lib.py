"""The HTTP+SSE stream mcpx serves (addon/mcpx_core/transport/http_sse/), read back in tests."""
from __future__ import annotations

import re
from typing import NamedTuple

_TOKEN = rb"mcpx1\.[A-Za-z0-9_-]+"
#: the stream's first event, exactly: its id (the token, or token~resume for a resumed ready stream),
#: the client's reconnection time, the endpoint URL with the same token
_ENDPOINT = re.compile(rb"id: (" + _TOKEN + rb")(~" + _TOKEN + rb")?\nretry: 1000\nevent: endpoint\ndata: ([^\n?]*)\?mcpx_session=("
                       + _TOKEN + rb")\n\n")


class Endpoint(NamedTuple):
    path: str
    token: str
    #: the event's id past the token ("" for a new stream; "~R" for a resumed one)
    resume: str
    rest: bytes


def endpoint(body: bytes) -> Endpoint | None:
    """The ``endpoint`` event a stream mcpx served starts with (None: it starts otherwise); its id's token
    is the endpoint URL's."""
    m = _ENDPOINT.match(body)
    if m is None or m[1] != m[4]:
        return None
    return Endpoint(m[3].decode(), m[4].decode(), (m[2] or b"").decode(), body[m.end():])


def is_stream(body: bytes) -> bool:
    return endpoint(body) is not None
