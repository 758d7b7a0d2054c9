"""A call: requests forwarded as they are, and calls that may need client input (their first round trip)."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable

from ...changes import Change
from ...framing import json_body
from ...framing.encoding import DecodeFailed
from ...framing.sse import SSEParser, json_values
from ...rewrite import PRIMING_RULE, undecodable_detail
from .. import Answer, Pass, Reply, Upstream
from ..era import first_response
from ..resume import RETRY_CAP_MS, retry_of, retry_text
from .shared import NAME, LATEST, STATE_PREFIX, _mint, _meta_of, logger
from .sessions import Upstream2026Session
from .held import Held
from .lifecycle import SE, SS, TE


class Calls:
    """The part of :class:`~.bridge.Client2026Bridge` that sends a client request upstream."""

    async def _log_level(self, exch, msg: dict, up: Upstream2026Session, upstream: Upstream) -> None:
        """META-logLevel: the level a request asks for, set on the upstream session first when it differs
        from the level last set there (logging/setLevel, only if the server declared logging;
        docs/specification/2026-07-28/server/utilities/logging.mdx:63)."""
        level = _meta_of(msg).get("io.modelcontextprotocol/logLevel")
        if not isinstance(level, str) or level == up.log_level or not isinstance((up.session.server_caps or {}).get("logging"), dict):
            return
        req = {"jsonrpc": "2.0", "id": _mint(), "method": "logging/setLevel", "params": {"level": level}}
        await upstream.send(json_body.dumps(req), self._headers(up), f"logging/setLevel {level}, for a 2026-07-28 request's logLevel", timeout=30)
        up.log_level = level
        self.rw.record(exch, [Change(pointer="/params/_meta/io.modelcontextprotocol~1logLevel", action="rewrite", rule="META-logLevel",
                                     before=level, after=f"logging/setLevel {level} on the upstream session")],
                       "c2s", LATEST, up.session.server_rev)

    def _pass(self, exch, msg: dict, body: bytes, headers: dict[str, str], up: Upstream2026Session) -> Pass:
        """The client's flow goes on to the upstream session: the message walked to the server's
        revision (``_meta`` envelope keys dropped: META-*), an id of mcpx's own, the session's headers."""
        original = msg.get("id")
        if "id" in msg:
            minted = _mint()
            exch.id_map[minted] = original
            msg["id"] = minted
            exch.request_ids[minted] = msg.get("method")
            exch.single_request_id = minted
        new = self.rw.c2s_message(exch, msg, body) or json_body.dumps(msg)
        sets, removes = self.rw.session_headers(exch, headers)
        return Pass(body=new, set=sets, remove=removes)

    # -- calls that may need client input -------------------------------------------------------
    async def _call(self, exch, msg: dict, up: Upstream2026Session, upstream: Upstream, again: bool = True) -> Answer:
        rid, method = msg.get("id"), msg.get("method")
        carried = self._carry(exch, msg, up)  # server requests sent outside any call wait for this one (get_stream.py)
        if carried is not None:
            return carried
        minted = _mint()
        held = Held(handle=STATE_PREFIX + os.urandom(12).hex(), upstream=up, method=method, call_id=minted,
                    log_level=_meta_of(msg).get("io.modelcontextprotocol/logLevel"), exch=exch,
                    record=lambda detail: self.rw.passthrough(exch, "s2c", detail))
        up.inbox.calls.append(held)  # (a server request on the GET stream goes to the first call in progress)
        await self._log_level(exch, msg, up, upstream)
        out_msg = dict(msg, id=minted)
        body = self.rw.c2s_message(exch, out_msg, None) or json_body.dumps(out_msg)
        first: asyncio.Future = asyncio.get_running_loop().create_future()
        # SSE polling (2025-11-25 transports.mdx:107-115, TR-sse-priming-polling): the server may close
        # the call's stream after an event id and before its answer; a 2026-07-28 client cannot resume
        # (no GET, no event ids), so mcpx resumes upstream with GET + Last-Event-ID, after ``retry``
        # (capped, resume.RETRY_CAP_MS), again after each close that follows a newer id
        # (``resumed``: every id resumed from: one that comes back is no newer event, or the resumes would loop);
        # where the stream is (streaming, responded, resuming, ended, undecodable): ``held.stream`` (lifecycle.py)
        stream = {"parser": SSEParser(), "last": None, "retry": 0, "resumed_from": None, "resumed": set()}

        def end(why: str | None = None) -> None:
            """No more of the call comes; ``why``: the resume that failed (the client's -32603 says it).
            Nothing more to do for a stream that had ended already (a late event)."""
            if not held.stream.fire(SE.END if why is None else SE.FAIL):
                return
            if why is not None:
                held.unanswered = (f"the server closed the call's SSE stream after event {stream['resumed_from']} without its "
                                   f"answer and mcpx could not resume it: {why}")
                detail = f"{held.unanswered}; the call ends with -32603"
                logger.warning(f"mcpx: SSE polling: {detail}")
                self.rw.record(exch, [Change(pointer="", action="passthrough", rule=PRIMING_RULE, detail=detail)],
                               "s2c", up.session.server_rev, LATEST)
            held.queue.put_nowait(None)

        def take(events: list) -> None:
            """The call's messages in ``events`` (complete SSE events) to ``held.queue``; their last id, retry."""
            for ev in events:
                if ev.last_id is not None:
                    stream["last"] = ev.last_id
                retry = retry_of(ev)
                if retry is not None:
                    stream["retry"] = retry
            for value in json_values(events):
                for m in value if isinstance(value, list) else [value]:
                    if isinstance(m, dict) and m.get("id") == minted and ("result" in m or "error" in m):
                        held.stream.fire(SE.RESPONSE)
                    held.queue.put_nowait(m)

        def on_chunk(chunk: bytes) -> None:
            if held.stream.state is SS.UNDECODABLE:  # (nothing after a fault in the encoding is read)
                return
            if held.stream.state is SS.RESUMING:  # (a chunk of the resuming GET: it streams)
                held.stream.fire(SE.RESUMED)
            parser = stream["parser"]
            take(parser.feed(chunk) if chunk else parser.close()[0])  # (a cut event's bytes: sent again after the last id)
            if chunk == b"":
                last = stream["last"]
                if held.stream.state is not SS.STREAMING or not last or held.expired:
                    end()  # (responded; ended already; no event id; or nobody waits: nothing to resume or report)
                elif last == stream["resumed_from"]:
                    end("the resumed stream ended with no newer event")
                elif last in stream["resumed"]:
                    end(f"the resumed stream ended after event {last}, which mcpx had resumed from before (no newer event)")
                else:
                    held.stream.fire(SE.RESUME)
                    stream["resumed_from"] = last
                    stream["resumed"].add(last)
                    held.resume_task = asyncio.get_running_loop().create_task(resume(last, stream["retry"]))
                    self._tasks.add(held.resume_task)
                    self._tasks = {t for t in self._tasks if not t.done()}
            if not first.done():
                first.set_result(True)

        def on_undecodable(failed: DecodeFailed, at: int) -> None:
            """The call's SSE stream (the POST's, or a resuming GET's) stopped decoding (its
            Content-Encoding) at compressed byte ``at`` (``failed``: the fault): no close of the server's,
            so never resumed. The complete events before it are used (an unfinished one dropped); then,
            unless they held the answer, the call ends with -32603 saying why; one ``passthrough`` record
            and one warning line; its request is ended (``upstream.abort``: here when its flow is known, else
            once ``upstream.send`` returns it), so it no longer streams unread."""
            if held.stream.state is SS.UNDECODABLE:
                return
            events, tail = stream["parser"].close()
            take(events)
            responded = held.stream.state is SS.RESPONDED
            if not held.stream.fire(SE.UNDECODABLE):  # (ended already: nobody reads it any more)
                if not first.done():
                    first.set_result(True)
                return
            detail = undecodable_detail(at, failed, len(tail))
            if responded:
                detail += "; after the call's answer: its upstream request ended"
            else:
                where = ("SSE answer" if stream["resumed_from"] is None
                         else f"resumed SSE stream (after event {stream['resumed_from']})")
                held.unanswered = (f"the server's {where} stopped decoding at compressed byte {at} ({type(failed.error).__name__}: "
                              f"{failed.error}): mcpx ended the call's upstream request (not resumed: the server had not "
                              "closed the stream)")
                detail += "; the call ends with -32603, its upstream request ended, not resumed"
            logger.warning(f"mcpx: {NAME}: {method}: {detail}")
            self.rw.passthrough(exch, "s2c", detail)
            if held.flow_id:  # the stream's own flow, or (a GET not yet answered) the ended one before it: a no-op
                asyncio.get_running_loop().call_soon(upstream.abort, held.flow_id)  # (not inside mitmproxy's stream callback)
            held.queue.put_nowait(None)
            if not first.done():
                first.set_result(True)

        async def resume(last: str, retry_ms: int) -> None:
            capped = f", capped at {RETRY_CAP_MS} ms" if retry_ms > RETRY_CAP_MS else ""
            self.rw.record(exch, [Change(pointer="", action="bridge", rule=PRIMING_RULE,
                                         detail=f"the server closed the call's SSE stream after event {last} without its answer: "
                                                f"resumed with GET and Last-Event-ID (retry {retry_text(retry_ms)}{capped})")],
                           "s2c", up.session.server_rev, LATEST)
            def not_made() -> None:  # the client will never read it: no GET (the server would hold it open for nobody)
                held.stream.fire(SE.STOP)
                logger.info(f"mcpx: {NAME}: {held.forgotten}: its resume after event {last} not made")
            try:
                await asyncio.sleep(min(retry_ms, RETRY_CAP_MS) / 1000)
            except asyncio.CancelledError:  # nobody waits for the call any more (_stop cancels this task)
                if held.expired:
                    not_made()
                raise
            if held.expired:
                not_made()
                return
            stream["parser"] = SSEParser()
            headers = {**self._headers(up), "accept": "text/event-stream", "last-event-id": last}
            resumed: asyncio.Future = asyncio.get_running_loop().create_future()

            def streaming(handler: Callable[..., None]) -> Callable[..., None]:
                """``handler``, then the GET counts as answered with a stream (``resumed``)."""
                def call(*args: Any) -> None:
                    handler(*args)
                    if not resumed.done():
                        resumed.set_result(True)
                return call
            got, undecodable = streaming(on_chunk), streaming(on_undecodable)
            try:
                # detached: the client's flow this call came on may have ended (answered input_required
                # before the server closed the stream); the GET is still for that flow's server
                reply = await upstream.send(b"", headers, f"GET resuming {method} after event {last}, for a 2026-07-28 client",
                                            method="GET", on_chunk=got, stop=resumed, on_broken=lambda why: got(b""), idle=True,
                                            detached=True, on_undecodable=undecodable)
            except Exception as e:  # no answer to the GET: the call ends, its -32603 says why
                end(f"the GET with Last-Event-ID {last} failed: {getattr(e, 'reason', None) or f'{type(e).__name__}: {e}'}")
                return
            held.flow_id = reply.flow_id
            if held.stream.state is SS.UNDECODABLE or held.expired:
                # it stopped decoding, or the round trip was forgotten, before the GET was returned: ended here
                upstream.abort(reply.flow_id)
                return
            if not resumed.done():  # it did not stream (an error status, JSON, an encoding mcpx cannot decode)
                ctype = reply.headers.get("content-type", "")
                end(f"the GET with Last-Event-ID {last} was answered HTTP {reply.status} ({ctype or 'no content-type'}), "
                    "not an SSE stream")

        # a stream broken off (a connection error) ends as one the server closed: resumed when it can be
        # (2025-11-25 basic/transports.mdx, "Sending Messages to the Server" 6: a disconnection is no cancellation);
        # idle: the POST (and each resuming GET) is ended only after 600 s without a byte from the server, never
        # while it streams (as on a direct connection; a call may stream its progress for longer)
        try:
            reply = await upstream.send(body, self._headers(up), f"{method}, for a 2026-07-28 client (may need client input)",
                                        on_chunk=on_chunk, stop=first, on_broken=lambda why: on_chunk(b""), idle=True,
                                        on_undecodable=on_undecodable)
        except BaseException:
            self._settled(held, {})
            held.trip.fire(TE.FAIL)
            raise
        held.flow_id, held.via = reply.flow_id, upstream
        if held.stream.state is SS.UNDECODABLE:  # it stopped decoding before the POST was returned: ended here
            upstream.abort(reply.flow_id)
        if reply.status == 404 and up.session.upstream_id and again:
            # the server no longer knows the upstream session (restarted, expired): a new one, and once more
            self._settled(held, {})
            held.trip.fire(TE.RESEND)
            self.forget_session(up.session)
            fresh = await self._upstream_session(exch, _meta_of(msg), upstream)
            return await self._call(exch, msg, fresh, upstream, again=False)
        if not reply.headers.get("content-type", "").startswith("text/event-stream"):
            # a JSON answer (or an HTTP error): nothing can be held
            held.stream.fire(SE.END)
            answer = first_response(reply.headers.get("content-type", ""), reply.body)
            if not isinstance(answer, dict):
                self._settled(held, {})
                held.trip.fire(TE.ANSWER)
                return self._unread(exch, reply, rid, minted)
            held.queue.put_nowait(answer)
            held.queue.put_nowait(None)
        return await self._next(exch, rid, minted, held, upstream)

    def _unread(self, exch, reply: Reply, rid: Any, minted: str) -> Answer:
        """The server's answer to a call holds no JSON-RPC response mcpx can read (truncated JSON, an
        HTML error page): it goes to the client as it came (a passthrough record), but never under
        mcpx's own id: where the body names it (``"id":"mcpx-<n>"``), the client's id is put back.
        A body mcpx did not decode (``reply.undecoded``: it decodes past ``mcpx_max_body``, or its
        Content-Encoding does not decode) goes as received, with its Content-Encoding, and that record."""
        if reply.undecoded:
            self.rw.passthrough(exch, "s2c", reply.undecoded)
            return Answer(reply.status, reply.body, reply.answer_headers(("content-type",)))
        body = reply.body
        ours = b'"id":' + json_body.dumps(minted)
        mapped = ours in body
        if mapped:
            body = body.replace(ours, b'"id":' + json_body.dumps(rid))
        self.rw.passthrough(exch, "s2c", f"the server's answer (HTTP {reply.status}) holds no JSON-RPC response mcpx can read: "
                            "forwarded as it came" + ("; mcpx's id in it mapped back to the client's" if mapped else ""))
        return Answer(reply.status, body, tuple((k, v) for k, v in reply.headers.items() if k in ("content-type",))
                      or (("content-type", "application/json"),))
