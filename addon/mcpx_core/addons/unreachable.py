"""A server mitmproxy cannot connect to: the MCP client gets HTTP 502 with a JSON-RPC error naming why.

mitmproxy answers a request whose server connection fails with an HTML page (12.3.1,
``proxy/layers/http/__init__.py`` ``HttpStream.make_server_connection`` -> ``handle_protocol_error``
-> ``_http1.make_error_response``); its ``error`` hook runs before that page is sent, but what the hook
sets on the flow is not sent. An MCP client cannot read an HTML page as a JSON-RPC answer, so for a
flow mcpx recognised as MCP (:func:`expect`, from the ``request`` hook) the page is replaced by
``502`` ``{"jsonrpc":"2.0","id":<the request's id, else null>,"error":{"code":-32603,"message":"mcpx
could not reach the server: <reason>"}}``, sent as a response an addon set (``responseheaders`` and
``response`` hooks run, not ``error``), with one ``passthrough`` record. A request whose body
mitmproxy streams (its head goes upstream before it is read) keeps mitmproxy's page.

With mitmproxy's default ``connection_strategy`` (eager) a reverse proxy connects to the server as
soon as a client connects, and closes the client's connection without a byte when that fails
(``proxy/layers/modes.py`` ``DestinationKnown.finish_start``): no request is read, no hook runs. So
mcpx sets ``connection_strategy=lazy`` (:class:`~.options.Options`), and the server is connected for
the first request instead.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from mitmproxy import http
from mitmproxy.proxy.layers import http as http_layer
from mitmproxy.proxy.layers.http import HttpResponseHeadersHook

from ..framing import json_body

#: flow -> the callable that makes its answer (not on ``flow.metadata``: a flow file cannot hold it)
_answers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_installed = False


def expect(flow: http.HTTPFlow, answer: Callable[[str], http.Response | None]) -> None:
    """Answer ``flow`` with ``answer(reason)`` if its server cannot be connected."""
    _answers[flow] = answer


def forget(flow: http.HTTPFlow) -> None:
    """The server answered (or the flow ended otherwise): no answer of mcpx's."""
    _answers.pop(flow, None)


def error_body(rid, reason: str) -> bytes:
    """The JSON-RPC error a client gets when mcpx could not reach the server."""
    rid = None if json_body.inexact_number(rid) else rid
    return json_body.dumps({"jsonrpc": "2.0", "id": rid, "error": {
        "code": -32603, "message": f"mcpx could not reach the server: {reason}"}})


def install() -> None:
    """Wrap ``HttpStream.handle_protocol_error`` once: a failed connect of a flow :func:`expect` names
    (its request read whole) is answered as an addon's response instead of mitmproxy's error page."""
    global _installed
    if _installed:
        return
    stream = http_layer.HttpStream
    original = stream.handle_protocol_error

    def handle_protocol_error(self, event):
        answer = _answers.pop(self.flow, None) if self.flow is not None else None
        if answer is not None and isinstance(event, http_layer.ResponseProtocolError) \
                and event.code == http_layer.ErrorCode.CONNECT_FAILED and self.flow.response is None \
                and self.client_state == self.state_done:
            response = answer(event.message)
            if response is not None:
                self.flow.response = response
                yield HttpResponseHeadersHook(self.flow)
                if (yield from self.check_killed(True)):
                    return
                yield from self.send_response()
                return
        yield from original(self, event)

    stream.handle_protocol_error = handle_protocol_error
    _installed = True
