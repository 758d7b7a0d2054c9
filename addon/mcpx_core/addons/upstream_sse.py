"""The hooks of the upstream HTTP+SSE transport (:mod:`mcpx_core.transport.upstream_sse.serve`):
Streamable HTTP clients in front of a server that speaks only HTTP+SSE. Each hook asks the
transport one question and acts on its one typed answer.

Its ``request`` hook runs after :class:`~.requests.ClientRequests` and :class:`~.authorization.Authorization`
(the client's message already rewritten for the server, its sealed token opened), its ``response``
hook before :class:`~.responses.ServerResponses` (an answer that replaces the server's refusal of an
``initialize`` is rewritten for the client as the server's own would be).
"""

from __future__ import annotations

import asyncio
import logging

from mitmproxy import http

from ..bridge import Answer, Streamed
from ..transport.upstream_sse.serve import Relay
from .headers import make_response
from .state import State

logger = logging.getLogger("mcpx")


class UpstreamSse:
    name = "mcpx.upstream_sse"

    def __init__(self, state: State) -> None:
        self.state = state
        self._tasks: set[asyncio.Task] = set()

    async def request(self, flow: http.HTTPFlow) -> None:
        st = self.state
        try:
            out = await st.upstream_sse.request(flow)
        except Exception as e:  # never lose a message: the request goes on as any other
            logger.warning(f"mcpx: upstream HTTP+SSE transport failed: {type(e).__name__}: {e}")
            return
        match out:
            case Answer(status=status, body=body, headers=headers, note=note):
                flow.response = make_response(status, body, headers)
                _note(flow, note)
            case Streamed(stream=stream, note=note):
                await st.answers.ensure()
                st.answers.route(flow, stream)
                _note(flow, note)
            case Relay(fill=fill, note=note):
                await st.answers.ensure()
                stream = st.answers.relay(flow)
                task = asyncio.get_running_loop().create_task(_filled(fill, stream))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                _note(flow, note)

    async def response(self, flow: http.HTTPFlow) -> None:
        refused = flow.response.status_code if flow.response is not None else None
        try:
            out = await self.state.upstream_sse.response(flow)
        except Exception as e:  # never lose a message: the server's answer stands
            logger.warning(f"mcpx: upstream HTTP+SSE transport failed: {type(e).__name__}: {e}")
            return
        match out:
            case Answer(status=status, body=body, headers=headers, note=note):
                flow.response = make_response(status, body, headers)
                _note(flow, note)
                flow.comment = f"{flow.comment} · the server refused it (HTTP {refused}): answered from {note}" if flow.comment \
                    else f"mcpx: the server refused it (HTTP {refused}): answered from {note}"


async def _filled(fill, stream) -> None:
    """Run a relay's ``fill``; one that fails still answers (the client never waits in vain)."""
    try:
        await fill(stream)
    except Exception as e:
        logger.warning(f"mcpx: upstream HTTP+SSE transport failed: {type(e).__name__}: {e}")
        if not stream.head.done():
            stream.head.set_result((502, None, [("content-type", "application/json")],
                                    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"mcpx: the upstream HTTP+SSE transport failed"}}'))


TRANSPORTS = {"client": "Streamable HTTP", "server": "HTTP+SSE (2024-11-05)"}


def _note(flow: http.HTTPFlow, note: str | None) -> None:
    """Both legs' transports on the flow (``flow.metadata["mcpx"]["transports"]``, the flow list)."""
    meta = flow.metadata.setdefault("mcpx", {})
    if isinstance(meta, dict):
        meta["transports"] = dict(TRANSPORTS)
        if note:
            meta.setdefault("transport_note", note)
