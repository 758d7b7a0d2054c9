"""mcpx: a mitmproxy addon that downgrades MCP messages to each peer's negotiated revision.

    mitmdump -s addon/mcpx.py --mode reverse:http://127.0.0.1:3001 --set mcpx_log=changes.jsonl

Every JSON-RPC message between an MCP client and server (Streamable HTTP: JSON bodies, batches,
SSE events as they stream) is rewritten so that the receiver gets exactly what its revision of
the protocol defines; every dropped or rewritten field is logged (``mcpx_log`` JSON Lines file,
mitmproxy's event log, ``flow.metadata["mcpx"]``, the "MCP" content view). Bodies that cannot be
handled, and non-MCP traffic, pass through byte for byte.

The library behind this file lives in ``addon/mcpx_core`` (one module per stage: framing,
session, downgrade, rules, changes, view).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections import deque
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import orjson  # noqa: E402
from mitmproxy import command, contentviews, ctx, exceptions, http, types  # noqa: E402

from mcpx_core import revisions, upstream, view  # noqa: E402
from mcpx_core.changes import Change, ChangeLog, summary_line  # noqa: E402
from mcpx_core.framing import json_body  # noqa: E402
from mcpx_core.framing.encoding import stream_decoder  # noqa: E402
from mcpx_core.framing.sse import SSEParser  # noqa: E402
from mcpx_core.report import session_report, sessions_text  # noqa: E402
from mcpx_core.rules.headers import request_headers  # noqa: E402
from mcpx_core.rewrite import Exchange, Rewriter, SSERewriter  # noqa: E402
from mcpx_core.session import Session, SessionStore  # noqa: E402

logger = logging.getLogger("mcpx")

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
CLOSED_KEPT = 1000  # ended sessions kept for the mcpx.sessions / mcpx.report commands


def _ctype(message: http.Message) -> str:
    return message.headers.get("content-type", "").split(";", 1)[0].strip().lower()


#: the headers mcpx reads (lower case); all ``mcp-*`` fields are read as well (rules/headers.py)
_READ_HEADERS = frozenset({b"content-type", b"content-encoding", b"content-length", b"transfer-encoding"})


def _header_map(message: http.Message) -> tuple[dict[str, str], dict[str, str]]:
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


class MCPX:
    """The addon: options, small hook methods, commands (modelled on mitmproxy/addons/*.py)."""

    def __init__(self) -> None:
        self.store = SessionStore()
        self.rewriter = Rewriter(self.store, on_changes=self._on_changes, on_reply=self._on_reply)
        self.urls: dict[str, str] = {}  # flow id -> MCP endpoint URL, for replies sent mid-stream
        self._tasks: set = set()
        self.log_file: ChangeLog | None = None
        self.exchanges: dict[str, Exchange] = {}
        self.streams: dict[str, SSERewriter] = {}
        #: sessions the client ended (HTTP DELETE), newest last, still listed by mcpx.sessions / mcpx.report
        self.closed: deque[Session] = deque(maxlen=CLOSED_KEPT)
        self._stream_limit: str | None = None  # the stream_large_bodies value mcpx set, if it did
        self._expiry: asyncio.Task | None = None
        # mcpx_max_body and mcpx_keep_original, read on every flow (ctx.options copies each value)
        self.max_body = 64 << 20
        self.keep_original = 1 << 20

    # -- options ------------------------------------------------------------------------------
    def load(self, loader) -> None:
        loader.add_option("mcpx_policy", str, "strict",
                          "strict: deliver only what the receiver's revision defines; lenient: keep fields its schema tolerates.",
                          choices=["strict", "lenient"])
        loader.add_option("mcpx_log", str, "", "Append change records as JSON Lines to this file (created mode 0600).")
        loader.add_option("mcpx_max_body", int, 64 << 20,
                          "Largest body (bytes) mcpx parses; larger bodies pass through untouched, with a log record.")
        loader.add_option("mcpx_max_sessions", int, 10000, "Sessions remembered at most (oldest forgotten first).")
        loader.add_option("mcpx_session_ttl", int, 3600, "Seconds after its last message a session is forgotten.")
        loader.add_option("mcpx_audio", str, "text",
                          "Audio blocks for 2024-11-05 clients: 'text' (a note naming type and size) or 'embed' (an embedded blob resource where allowed).",
                          choices=["text", "embed"])
        loader.add_option("mcpx_keep_original", int, 1 << 20,
                          "Keep up to this many bytes of each original body on the flow for inspection (0: none).")
        loader.add_option("mcpx_pin", Sequence[str], [],
                          "Pin clients to an older revision, as CLIENT_NAME=REVISION (clientInfo.name); may be given several times.")

    def configure(self, updated: set[str]) -> None:
        # mitmproxy does not check `choices` for values --set before the script loads: a typo such as
        # mcpx_policy=stric must not silently run another policy
        for name, allowed in (("mcpx_policy", ("strict", "lenient")), ("mcpx_audio", ("text", "embed"))):
            if name in updated and getattr(ctx.options, name) not in allowed:
                raise exceptions.OptionsError(f"{name} must be one of {', '.join(allowed)}, not {getattr(ctx.options, name)!r}")
        if "mcpx_policy" in updated:
            self.rewriter.policy = ctx.options.mcpx_policy
        if "mcpx_audio" in updated:
            self.rewriter.options["audio"] = ctx.options.mcpx_audio
        if "mcpx_pin" in updated:
            pins = {}
            for spec in ctx.options.mcpx_pin:
                name, sep, rev = spec.rpartition("=")
                if not sep or not name or not revisions.is_known(rev):
                    raise exceptions.OptionsError(f"mcpx_pin: expected CLIENT_NAME=REVISION with one of {', '.join(revisions.REVISIONS)}, got {spec!r}")
                pins[name] = rev
            self.store.pins.clear()
            self.store.pins.update(pins)
        if "mcpx_max_sessions" in updated or "mcpx_session_ttl" in updated:
            self.store.max_sessions = ctx.options.mcpx_max_sessions
            self.store.ttl = ctx.options.mcpx_session_ttl
        if "mcpx_log" in updated:
            if self.log_file:
                self.log_file.close()
            try:
                self.log_file = ChangeLog(ctx.options.mcpx_log or None)
            except OSError as e:
                raise exceptions.OptionsError(f"mcpx_log: cannot open {ctx.options.mcpx_log!r}: {e}") from e
        for name in ("mcpx_max_body", "mcpx_max_sessions", "mcpx_session_ttl", "mcpx_keep_original"):
            if name in updated and getattr(ctx.options, name) < 0:
                raise exceptions.OptionsError(f"{name} must not be negative")
        if "mcpx_max_body" in updated:
            self.max_body = ctx.options.mcpx_max_body
        if "mcpx_keep_original" in updated:
            self.keep_original = ctx.options.mcpx_keep_original
        if {"mcpx_max_body", "stream_large_bodies"} & updated and hasattr(ctx.options, "stream_large_bodies"):
            # Bodies above mcpx_max_body are not parsed: mitmproxy streams them (also those without
            # Content-Length, once that many bytes came), so none is held whole in memory; unless
            # the user set stream_large_bodies.
            ours = str(ctx.options.mcpx_max_body)
            if ctx.options.stream_large_bodies in (None, "", self._stream_limit) and ctx.options.stream_large_bodies != ours:
                self._stream_limit = ours
                ctx.options.update(stream_large_bodies=ours)

    def running(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (tests driving the hooks directly)
            return
        if self._expiry is None or self._expiry.done():
            self._expiry = loop.create_task(self._expire_sessions())

    async def _expire_sessions(self) -> None:
        """Forget idle sessions (mcpx_session_ttl) while no new ones arrive, too."""
        while True:
            await asyncio.sleep(max(0.5, min(self.store.ttl / 2, 60)))
            n = self.store.expire()
            if n:
                logger.info(f"mcpx: {n} idle session keys expired, {len(list(self.store))} sessions remain")

    def done(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if self.log_file:
            self.log_file.close()

    # -- hooks --------------------------------------------------------------------------------
    async def request(self, flow: http.HTTPFlow) -> None:
        if not flow.live and isinstance(flow.metadata.get("mcpx"), dict):
            # read from a file mcpx wrote (mitmweb -r): already rewritten; keep bodies and records as they are
            return
        exch = self._exchange(flow)
        req = flow.request
        method = req.method
        hv, names = _header_map(req)
        if method == "DELETE":
            sid = hv.get(SESSION_HEADER)
            if sid and self.store.get(sid):
                exch.is_mcp = True
            return
        if (req.is_http2 or req.is_http3) and req.raw_content and "content-length" not in hv \
                and "transfer-encoding" not in hv:
            # HTTP/2 frames a body without Content-Length; mitmproxy forwards it to an HTTP/1.1
            # server without one, and the server cannot find the body's end (the MCP POST is lost)
            req.headers["content-length"] = str(len(req.raw_content))
        body = req.raw_content if method == "POST" else None
        too_big = (len(body) if body else 0) > self.max_body or (method == "POST" and req.stream is True)
        if too_big:
            body = None
        if method == "POST" and body is not None and hv.get("content-encoding"):
            body = self._decoded(req)
        try:
            new = self.rewriter.request(exch, body, hv.get(SESSION_HEADER), hv.get(VERSION_HEADER))
        except Exception as e:  # never lose a message
            self.rewriter.passthrough(exch, "c2s", f"internal error: {type(e).__name__}: {e}")
            new = None
        if too_big and (exch.is_mcp or hv.get("content-type", "").split(";", 1)[0].strip().lower() == "application/json"):
            exch.is_mcp = True
            n = len(req.raw_content) if req.raw_content is not None else hv.get("content-length")
            size = f"of {n} bytes" if n is not None else "(streamed by mitmproxy)"
            self.rewriter.passthrough(exch, "c2s", f"body {size} exceeds mcpx_max_body: passed through untouched")
        self._headers(flow, exch, names)
        if exch.split is not None:
            if flow.live:
                await self._send_split(flow, exch)
            else:  # offline replay (mitmdump -nr, FlowReader): never contact the server; the
                # split record says what would be sent, the recorded response is rewritten as usual
                logger.info(f"mcpx: offline flow: batch of {len(exch.split)} messages not split upstream")
        elif exch.local_answer is not None:
            status, payload = exch.local_answer
            flow.response = http.Response.make(status, payload, {"content-type": "application/json"} if payload else {})
        elif new is not None:
            self._keep_original(flow, "request", flow.request.get_content(strict=False) or b"")
            flow.request.content = new
        self._annotate(flow, exch)

    def _headers(self, flow: http.HTTPFlow, exch: Exchange, names: dict[str, str]) -> None:
        s = exch.session
        if s is None or exch.initialize is not None:
            return
        sets, removes, changes = request_headers(names, s.pinned_rev or s.client_rev, s.server_rev)
        for name in removes:
            del flow.request.headers[name]
        for name, value in sets.items():
            flow.request.headers[name] = value
        if changes:
            self.rewriter.record(exch, changes, "c2s", s.pinned_rev or s.client_rev, s.server_rev)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        exch = self.exchanges.get(flow.id)
        if exch is None or not exch.is_mcp or flow.response is None:
            return
        if exch.initialize is not None:
            # key the session by its id now: a server may keep the initialize SSE stream open while
            # the client already sends its next requests with that id
            self.rewriter.session_minted(exch, flow.response.headers.get(SESSION_HEADER))
        if not flow.live:  # offline replay: nothing streams, the response hook rewrites the whole
            return  # (decoded) body and keeps its Content-Encoding
        hv, _ = _header_map(flow.response)
        if hv.get("content-type", "").split(";", 1)[0].strip().lower() != "text/event-stream":
            size = hv.get("content-length")
            if size and size.isdigit() and int(size) > self.max_body:
                flow.response.stream = True
                self.rewriter.passthrough(exch, "s2c", f"body of {size} bytes exceeds mcpx_max_body: streamed through untouched")
            return
        decoder = None
        enc = hv.get("content-encoding", "").strip()
        if enc and enc.lower() != "identity":
            try:
                decoder = stream_decoder(enc)
            except ValueError as e:
                self.rewriter.passthrough(exch, "s2c", f"{e}: SSE stream forwarded untouched")
                flow.response.stream = True
                return
            del flow.response.headers["content-encoding"]
        if "content-length" in hv:
            del flow.response.headers["content-length"]
            if flow.response.http_version == "HTTP/1.1":
                flow.response.headers["transfer-encoding"] = "chunked"
        stream = SSERewriter(self.rewriter, exch, decoder, keep=self.keep_original, max_event=self.max_body)
        self.streams[flow.id] = stream
        flow.response.stream = stream.chunks

    async def response(self, flow: http.HTTPFlow) -> None:
        exch = self.exchanges.pop(flow.id, None)
        stream = self.streams.pop(flow.id, None)
        self.urls.pop(flow.id, None)
        if exch is None or flow.response is None:
            return
        if exch.is_mcp:
            try:
                self._response(flow, exch, stream)
            except Exception as e:  # never lose a message
                self.rewriter.passthrough(exch, "s2c", f"internal error: {type(e).__name__}: {e}")
        self._annotate(flow, exch)

    def _response(self, flow: http.HTTPFlow, exch: Exchange, stream: SSERewriter | None) -> None:
        resp = flow.response
        if flow.live and (exch.local_answer is not None or exch.split is not None):
            return  # mcpx wrote this response itself, already for the client's revision
        if exch.initialize is not None:
            self.rewriter.session_minted(exch, resp.headers.get(SESSION_HEADER))
        if flow.request.method == "DELETE" and 200 <= resp.status_code < 300:
            sid = flow.request.headers.get(SESSION_HEADER)
            if sid:
                ended = self.store.get(sid)
                if ended is not None:
                    self.closed.append(ended)
                self.store.drop(sid)
            return
        if stream is not None and stream.finished:
            # streamed live: keep what was delivered (bounded) so views and -w see it
            if stream.original != stream.delivered:
                self._keep_original(flow, "response", bytes(stream.original))
            if resp.raw_content in (None, b""):
                resp.content = bytes(stream.delivered)
            return
        if resp.stream is True:
            if not any(c.action == "passthrough" and c.direction == "s2c" for c in exch.changes):
                self.rewriter.passthrough(exch, "s2c", "body larger than stream_large_bodies (mcpx_max_body unless set): "
                                                       "streamed through untouched")
            return
        if resp.raw_content is None:
            return
        body = resp.get_content(strict=False) or b""
        if len(body) > self.max_body:
            self.rewriter.passthrough(exch, "s2c", f"body of {len(body)} bytes exceeds mcpx_max_body: passed through untouched")
            return
        if _ctype(resp) == "text/event-stream":
            new = SSERewriter(self.rewriter, exch).whole(body)
            if new == body:
                return
        else:
            new = self.rewriter.response_json(exch, body)
            if new is None:
                return
        self._keep_original(flow, "response", body)
        resp.content = new

    def error(self, flow: http.HTTPFlow) -> None:
        exch = self.exchanges.pop(flow.id, None)
        self.streams.pop(flow.id, None)
        self.urls.pop(flow.id, None)
        if exch is not None and exch.is_mcp:
            self._annotate(flow, exch)

    # -- helpers ------------------------------------------------------------------------------
    def _exchange(self, flow: http.HTTPFlow) -> Exchange:
        if flow.live:  # replies on the client's behalf go here; offline flows get none
            self.urls[flow.id] = flow.request.url
        peer = flow.client_conn.peername
        exch = Exchange(flow_id=flow.id, client_keys=(f"conn:{peer[0]}:{peer[1]}", f"host:{peer[0]}") if peer else ())
        self.exchanges[flow.id] = exch
        return exch

    @staticmethod
    def _decoded(message: http.Message) -> bytes | None:
        try:
            return message.get_content(strict=True)
        except ValueError:
            return None

    def _keep_original(self, flow: http.HTTPFlow, side: str, body: bytes) -> None:
        limit = self.keep_original
        if not limit:
            return
        meta = flow.metadata.setdefault("mcpx", {})
        meta[f"original_{side}"] = body[:limit].decode("utf-8", "replace")
        if len(body) > limit:
            meta[f"original_{side}_truncated"] = len(body)

    def _on_changes(self, exch: Exchange, changes: list[Change]) -> None:
        if self.log_file:
            try:
                self.log_file.write(changes)
            except OSError as e:
                logger.error(f"mcpx: cannot write change log: {e}")
        first = changes[0]
        where = f"{first.direction} {first.method or ''} id={first.jsonrpc_id}" if first.jsonrpc_id is not None else f"{first.direction} {first.method or ''}"
        level = logging.WARNING if any(c.action == "passthrough" for c in changes) else logging.INFO
        by_action: dict[str, set[str]] = {}
        for c in changes:
            by_action.setdefault(c.action, set()).add(c.rule)
        rules = "; ".join(f"{a}: {', '.join(sorted(r))}" for a, r in by_action.items())
        logger.log(level, f"mcpx: {where.strip()} {first.from_rev}->{first.to_rev}: {summary_line(changes, None)} ({rules})")
        if logger.isEnabledFor(logging.DEBUG):
            for c in changes:
                logger.debug(f"mcpx:   {c.line()}")

    def _annotate(self, flow: http.HTTPFlow, exch: Exchange) -> None:
        if not exch.is_mcp:
            return
        meta = flow.metadata.setdefault("mcpx", {})
        s = exch.session
        meta["session"] = s.key if s else None
        meta["client_revision"], meta["server_revision"] = (s.pinned_rev or s.client_rev, s.server_rev) if s else (None, None)
        meta["client_info"], meta["server_info"] = (s.client_info, s.server_info) if s else (None, None)
        meta["messages"] = exch.messages
        kept = meta.get("changes")
        if not isinstance(kept, list) or len(kept) > len(exch.changes):
            kept = meta["changes"] = []
        kept.extend(c.as_dict() for c in exch.changes[len(kept):])  # records are only appended
        if exch.messages_omitted or exch.changes_omitted:  # a long stream: the rest are only in the change log
            meta["messages_omitted"], meta["changes_omitted"] = exch.messages_omitted, exch.changes_omitted
        if exch.replies:
            meta["replies"] = exch.replies
        if exch.changes:
            to_rev = next((c.to_rev for c in exch.changes if c.to_rev), None)
            comment = "mcpx: " + summary_line(exch.changes, to_rev)
            flow.comment = comment
            if any(c.action in ("drop", "drop-message", "passthrough") for c in exch.changes):
                flow.marked = ":scissors:"

    async def _send_split(self, flow: http.HTTPFlow, exch: Exchange) -> None:
        """RPC-batch-request: POST each member alone, answer the client with one batch."""
        headers = {k: v for k, v in flow.request.headers.items()}
        answers: list[bytes] = []  # JSON texts, joined into one batch as they are (exact numbers)
        for body in exch.split or []:
            try:
                reply = await upstream.post(flow.request.url, headers, body)
            except Exception as e:
                self.rewriter.passthrough(exch, "c2s", f"batch member POST failed: {type(e).__name__}: {e}")
                continue
            if reply.status == 202 or not reply.body:
                continue
            if reply.headers.get("content-type", "").startswith("text/event-stream"):
                parser = SSEParser()
                delivered = SSERewriter(self.rewriter, exch).whole(reply.body)
                for ev in parser.feed(delivered) + parser.close()[0]:
                    if ev.payload is not None and not ev.blank():
                        try:
                            answers.extend(json_body.response_texts(ev.payload))
                        except json_body.Unparseable:
                            continue
            else:
                new = self.rewriter.response_json(exch, reply.body)
                try:
                    answers.extend(json_body.response_texts(new if new is not None else reply.body))
                except json_body.Unparseable:
                    self.rewriter.passthrough(exch, "s2c", "batch member answer is not JSON")
        exch.is_mcp = True
        if answers:
            flow.response = http.Response.make(200, b"[" + b",".join(answers) + b"]", {"content-type": "application/json"})
        else:
            flow.response = http.Response.make(202, b"", {})
        sid = next((m for m in [flow.request.headers.get(SESSION_HEADER)] if m), None)
        if sid:
            flow.response.headers[SESSION_HEADER] = sid

    def _on_reply(self, exch: Exchange, reply: dict) -> None:
        """Answer a server request the client's revision cannot receive, on the client's behalf."""
        url = self.urls.get(exch.flow_id or "")
        if url is None:  # offline replay: only logged (and kept in flow.metadata["mcpx"]["replies"])
            exch.replies.append(reply)
            logger.info(f"mcpx: not sent (flow is not live): answer to server request id={reply.get('id')!r}"
                        f" with error {(reply.get('error') or {}).get('code')}")
            return
        task = asyncio.get_running_loop().create_task(self._send_reply(url, exch, reply))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_reply(self, url: str, exch: Exchange, reply: dict) -> None:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        s = exch.session
        if s is not None and s.key and not s.key.startswith(("conn:", "host:", "flow:")):
            headers["mcp-session-id"] = s.key
        if s is not None and s.server_rev and not revisions.older(s.server_rev, "2025-06-18"):
            headers["mcp-protocol-version"] = s.server_rev
        try:
            r = await upstream.post(url, headers, json_body.dumps(reply), timeout=30)
            logger.info(f"mcpx: answered server request id={reply.get('id')!r} with error {reply['error']['code']} (HTTP {r.status})")
        except Exception as e:
            logger.warning(f"mcpx: could not answer server request {reply.get('id')!r}: {e}")

    # -- commands -------------------------------------------------------------------------------
    @command.command("mcpx.sessions")
    def sessions(self) -> str:
        """Each known MCP session (live, then the last 1000 the client ended): client and server info, revisions, message and change counts."""
        text = sessions_text(self.store, self.closed)
        logger.info(text)
        return text

    @command.command("mcpx.report")
    def report(self, path: types.Path) -> str:
        """Write a per-session summary of what was dropped or rewritten for whom: JSON to PATH, a text table to PATH.txt.

        Returns the text table. Raises CommandError when a file cannot be written.
        """
        data, table = session_report(self.store, self.closed)
        path = os.path.expanduser(path)
        try:
            with open(path, "wb") as fh:
                fh.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
            with open(path + ".txt", "w") as fh:
                fh.write(table + "\n")
        except OSError as e:
            raise exceptions.CommandError(f"mcpx.report: {e}") from e
        logger.info(f"mcpx: report written to {path} and {path}.txt")
        return table

    @command.command("mcpx.pin")
    def pin(self, target: str, revision: str) -> str:
        """Pin a session or a client to an older REVISION, for debugging; REVISION "" unpins.

        TARGET is a session id as ``mcpx.sessions`` lists it (that session receives REVISION from its
        next message on), else a clientInfo.name (sessions such clients start from now on are told
        REVISION in the initialize result). Raises CommandError for an unknown revision or one newer
        than the session's server revision.
        """
        if revision and not revisions.is_known(revision):
            raise exceptions.CommandError(f"unknown revision {revision!r}; known: {', '.join(revisions.REVISIONS)}")
        s = self.store.get(target)
        if s is not None:
            if revision and s.server_rev and revisions.older(s.server_rev, revision):
                raise exceptions.CommandError(f"session {target} speaks {s.server_rev}: cannot pin it to the newer {revision}")
            s.pinned_rev = revision or None
            text = f"session {target} pinned to {revision}" if revision else f"session {target} unpinned"
        elif revision:
            self.store.pins[target] = revision
            text = f"clients named {target!r} pinned to {revision} from their next initialize"
        else:
            self.store.pins.pop(target, None)
            text = f"clients named {target!r} unpinned"
        logger.info(f"mcpx: {text}")
        return text

addons = [MCPX()]
# The "MCP" and "MCP original" content views (mitmproxy 12: scripts register them at import).
contentviews.add(view.mcp_view)
contentviews.add(view.mcp_original_view)
