"""What mcpx answers itself in a session of this bridge: ``ping``, ``logging/setLevel``,
``resources/(un)subscribe``, client notifications, the client's answers to input requests and
``DELETE``; a 2026-07-28 server takes none of them."""

from __future__ import annotations

import copy

from ...changes import Change
from ...framing import json_body
from .. import Answer
from .shared import JSON_HEADERS, LATEST, NOTE, SessionState, _error


class LocalAnswers:
    """The part of :class:`~.bridge.LegacyClientBridge` that answers flows without the server."""

    def _local(self, exch, m: dict, result: dict, changes: list[Change]) -> Answer:
        client_rev = exch.session.client_leg
        self.log(exch, "c2s", m, m.get("method"), changes, client_rev, LATEST)
        answer = {"jsonrpc": "2.0", "id": m.get("id"), "result": result}
        self.log(exch, "s2c", answer, m.get("method"), [], LATEST, client_rev)
        return Answer(200, json_body.dumps(answer), self._json_headers(exch), note=NOTE)

    def _local_error(self, exch, m: dict, code: int, message: str, rule: str, changes: list[Change] | None = None,
                     status: int = 200) -> Answer:
        client_rev = exch.session.client_leg
        changes = changes if changes is not None else [Change(pointer="", action="answer-locally", rule=rule, detail=message)]
        self.log(exch, "c2s", m, m.get("method"), changes, client_rev, LATEST)
        answer = _error(m.get("id"), code, message)
        self.log(exch, "s2c", answer, m.get("method"), [], LATEST, client_rev)
        return Answer(status, json_body.dumps(answer), self._json_headers(exch), note=NOTE)

    @staticmethod
    def _json_headers(exch) -> tuple[tuple[str, str], ...]:
        s = exch.session
        return JSON_HEADERS + ((("mcp-session-id", s.token),) if s is not None and s.token else ())

    def _delete(self, exch, s, ss: SessionState) -> Answer:
        """TR-session-delete: the server keeps no session; mcpx ends its own."""
        if ss.listen is not None:
            ss.listen.close("session ended (DELETE)")
        for call in list(ss.calls.values()):
            call.cancel("session ended (DELETE)")
        self.sessions.pop(s.key, None)
        self.rw.tracker.terminate(s)
        closed = getattr(self.state, "closed", None)
        if closed is not None:
            closed.append(s)
        self.rw.record(exch, [Change(pointer="", action="answer-locally", rule="TR-session-delete",
                                     detail="session ended by mcpx: a 2026-07-28 server keeps none")], "c2s", s.client_leg, LATEST)
        exch.is_mcp = True
        return Answer(200, b"", (), note=NOTE)  # 200: mcp 1.x clients warn on any other 2xx

    def _notification(self, exch, s, ss: SessionState, m: dict) -> Answer:
        """Client notifications: a 2026-07-28 server takes none over HTTP but ``notifications/cancelled``
        (docs/specification/2026-07-28/basic/transports/streamable-http.mdx:95), whose HTTP meaning
        is closing the request's stream (TR-cancel-by-stream-close)."""
        name = m.get("method")
        client_rev = s.client_leg
        params = m.get("params") if isinstance(m.get("params"), dict) else {}
        if name == "notifications/cancelled":
            call = ss.calls.get(params.get("requestId"))
            if call is not None:
                call.cancel(f"client cancelled request {params.get('requestId')!r}")
                change = Change(pointer="", action="drop-message", rule="TR-cancel-by-stream-close",
                                detail=f"upstream exchange of request {params.get('requestId')!r} aborted "
                                       "(closing the stream is the 2026-07-28 cancel)")
            else:
                change = Change(pointer="", action="drop-message", rule="CANCEL-direction",
                                detail="no request of this session in flight under that id")
        else:
            rule = {"notifications/initialized": "LC-initialized", "notifications/roots/list_changed": "ROOTS-list-changed",
                    "notifications/progress": "PROG-direction"}.get(name or "")
            if rule is None:
                out = self.walk(copy.deepcopy(m), "notification", name, client_rev, LATEST, "c2s")
                changes = out.changes or [Change(pointer="", action="drop-message", rule="SCHEMA-undefined",
                                                 detail="not a notification a 2026-07-28 server takes over HTTP")]
                self.log(exch, "c2s", m, name, changes, client_rev, LATEST)
                return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)
            change = Change(pointer="", action="drop-message", rule=rule, detail="consumed by mcpx (202): not defined in 2026-07-28")
        self.log(exch, "c2s", m, name, [change], client_rev, LATEST)
        return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)

    def _client_answer(self, exch, s, m: dict) -> Answer:
        """The client's answer to a server->client request mcpx made from an inputRequests entry:
        consumed (a 2026 server never receives a POSTed response, TR-post-body)."""
        jid = m.get("id")
        p = self.pending.get(jid) if isinstance(jid, str) else None
        client_rev = s.client_leg
        if p is None or p.session != s.key:
            change = Change(pointer="", action="drop-message", rule="MRTR-bridge-legacy-client",
                            detail="answer to no outstanding input request of this session (mcpx restarted or failed over?): dropped")
        else:
            self.pending.pop(jid, None)
            if not p.future.done():
                p.future.set_result(m)
            change = Change(pointer="", action="answer-locally", rule="MRTR-bridge-legacy-client",
                            detail=f"answer to input request {p.key!r} ({p.method}): kept for the retry's inputResponses (202)")
        self.log(exch, "c2s", m, p.method if p else None, [change], client_rev, LATEST)
        return Answer(202, b"", self._json_headers(exch)[1:], note=NOTE)


    # -- resources/subscribe -------------------------------------------------------------------------
    async def _subscribe(self, exch, s, ss: SessionState, m: dict, name: str) -> Answer:
        """SUB-resources-subscribe: answered {} by mcpx; the URI goes into (or out of) the listen filter,
        the open listen is re-opened with it before the client hears back."""
        params = m.get("params") if isinstance(m.get("params"), dict) else {}
        uri = params.get("uri")
        if not isinstance(uri, str):
            return self._local_error(exch, m, -32602, f"{name} needs params.uri", "SUB-resources-subscribe")
        if name == "resources/subscribe" and uri not in ss.subscribed:
            ss.subscribed.append(uri)
        elif name == "resources/unsubscribe" and uri in ss.subscribed:
            ss.subscribed.remove(uri)
        detail = f"{'added to' if name == 'resources/subscribe' else 'removed from'} the subscriptions/listen filter"
        if ss.listen is not None and not ss.listen.ended:
            if not await ss.listen.reopen():
                # the open listen keeps its old filter: say so rather than promise updates that will not come
                (ss.subscribed.remove if name == "resources/subscribe" else ss.subscribed.append)(uri)
                ss.listen.filter = self.listen_filter(s, ss)
                return self._local_error(exch, m, -32603, f"mcpx could not re-open the server's subscriptions/listen: {ss.listen.failure}",
                                         "SUB-resources-subscribe")
            detail += "; listen re-opened"
        else:
            detail += " (no GET stream open: applies when the client opens one)"
        return self._local(exch, m, {}, [Change(pointer="", action="answer-locally", rule="SUB-resources-subscribe", detail=detail)])

