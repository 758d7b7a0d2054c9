"""One HTTP exchange, message by message: framing -> session -> downgrade -> repair -> change records.

:class:`Rewriter` is what the mitmproxy addon calls; it knows HTTP only as header values and body
bytes, so tests drive it with plain bytes. For each body it

1. frames it (:mod:`framing.json_body`, :mod:`framing.sse`),
2. looks up and updates the session (:mod:`session`): initialize handshake, request id -> method,
3. downgrades each JSON-RPC message from the sender's to the receiver's revision (:mod:`downgrade`),
   then repairs what the receiver's schema rejects and can mean one thing only (:mod:`repair`;
   ``Rewriter.repair``, option ``mcpx_repair``),
4. returns the bytes to deliver (None: forward the original bytes untouched) and the change records.

Never loses a message: a body or event that cannot be parsed, or whose rewrite raises, is forwarded
byte for byte and one ``passthrough`` record says why.

Its parts, by job: :mod:`.exchange` (what mcpx knows about one flow), :mod:`.body` (parsing and
writing bodies), :mod:`.leg` (choosing the leg of a client request), :mod:`.message` (the rule pass
on one message, :func:`~.message.rule_pass`, which any bridge or transport calls), :mod:`.records`
(writing change records), :mod:`.responses` (JSON response bodies), :mod:`.sse` (SSE events and
streams), :mod:`.rewriter` (:class:`Rewriter`, those parts put together).
"""

from __future__ import annotations

from .body import GC_PAUSE_MIN, SPLIT_MIN, declares_json
from .exchange import FLOW_KEEP_MAX, Exchange
from .leg import BATCH_REQUEST_RULE, UNKNOWN_SESSION
from .message import PROFILE_REVISION_RULE, VERSION_BRIDGE_RULE, Rules, rule_pass
from .records import PROFILE_RULE, logger
from .rewriter import Rewriter
from .sse import BATCH_RESPONSE_RULE, PRIMING_RULE, SSERewriter, _Kept, summ_event, undecodable_detail

__all__ = ["BATCH_REQUEST_RULE", "BATCH_RESPONSE_RULE", "FLOW_KEEP_MAX", "GC_PAUSE_MIN", "PRIMING_RULE",
           "PROFILE_REVISION_RULE", "PROFILE_RULE", "SPLIT_MIN", "UNKNOWN_SESSION", "VERSION_BRIDGE_RULE",
           "Exchange", "Rewriter", "Rules", "SSERewriter", "_Kept", "declares_json", "logger", "rule_pass", "summ_event",
           "undecodable_detail"]
