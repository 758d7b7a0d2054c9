"""A call's input rounds (MRTR-bridge-legacy-client): the ``inputRequests`` of an
``InputRequiredResult`` sent to the client as server->client requests of its revision, its answers
sent back upstream as ``inputResponses`` under a new id; and the ``tools/list`` that learns a
tool's ``x-mcp-header`` when the server asks for them."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from ... import revisions, upstream as upstream_mod
from ...changes import Change
from ...downgrade import Walk
from ...framing import json_body
from ...rules.api import escape
from .. import era
from .lifecycle import CallEvent
from .shared import LATEST, Pending


class InputRounds:
    """The part of :class:`~.call.Call` that answers ``input_required``."""

    async def _input_round(self, body: dict, resp: dict, round_no: int) -> tuple[dict, str] | None:
        """MRTR-bridge-legacy-client: ask the client what ``inputRequests`` asks, then the retry body."""
        result = resp["result"]
        requests = result.get("inputRequests") if isinstance(result.get("inputRequests"), dict) else {}
        state = result.get("requestState")
        ptr = "/result/inputRequests"
        # every entry must be expressible for this client before anything is sent
        wires: list[tuple[str, str, dict, list[Change]]] = []
        for key, req in requests.items():
            made = self._legacy_request(key, req, f"{ptr}/{escape(key)}")
            if isinstance(made, Change):
                missing = made.detail or ""
                return self._fail(-32603, f"mcpx: the server needs input this client cannot give: {missing}", made,
                                  data={"inputRequest": key, "method": (req or {}).get("method") if isinstance(req, dict) else None})
            wires.append(made)
        if wires and not self._streaming():
            return self._fail(-32603, "mcpx: input required but not expressible for this client (it accepts only application/json)",
                              Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client",
                                     detail="no SSE stream to send the input requests on"))
        loop = asyncio.get_running_loop()
        futures = []
        for key, method, wire, changes in wires:
            fut = loop.create_future()
            self.b.pending[wire["id"]] = Pending(key, method, self.s.key, fut)
            self.waiting.append(wire["id"])
            self.exch.request_ids[wire["id"]] = method
            futures.append((key, method, wire["id"], fut))
            self._deliver(wire, changes, method)
        answers: dict[str, Any] = {}
        if futures:
            self.life.fire(CallEvent.ASK)
            try:
                done = await asyncio.wait_for(asyncio.gather(*(f for *_, f in futures)), self.b.input_timeout)
            except asyncio.TimeoutError:
                for _, _, pid, _ in futures:
                    self.b.pending.pop(pid, None)
                return self._fail(-32603, f"mcpx: the client did not answer the server's input requests within {self.b.input_timeout:g} s",
                                  Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client", detail="input timeout"))
            self.waiting.clear()
            self.life.fire(CallEvent.ANSWERS)
            rchanges: list[Change] = []
            for (key, method, pid, _), answer in zip(futures, done):
                if "error" in answer or not isinstance(answer.get("result"), dict):
                    e = answer.get("error") if isinstance(answer.get("error"), dict) else {}
                    return self._fail(-32603, f"mcpx: the client refused the server's {method} request: {e.get('message', 'error')}",
                                      Change(pointer=f"{ptr}/{escape(key)}", action="rewrite", rule="MRTR-bridge-legacy-client",
                                             detail=f"client answered {method} with error {e.get('code')}"),
                                      data={"inputRequest": key, "error": e})
                answers[key] = self._upgrade_answer(key, method, answer["result"], rchanges)
        elif not isinstance(state, str):
            return self._fail(-32603, "mcpx: the server asked for input without inputRequests or requestState", Change(
                pointer="/result", action="rewrite", rule="MRTR-input-required-result", detail="neither inputRequests nor requestState"))
        else:
            rchanges = []
            await asyncio.sleep(0.25)  # only requestState: retry after a pause (as @modelcontextprotocol/client 2.4.0)
        retry = copy.deepcopy(self.p.message)
        new_id = self.b.mint_id("retry-")
        retry["id"] = new_id
        params = retry["params"]
        changes = [Change(pointer="/id", action="rewrite", rule="RPC-request-id-reuse", before=json_body.dumps(self.rid).decode(),
                          after=f'"{new_id}"', detail=f"retry {round_no} of the client's request: a new id")]
        if answers:
            params["inputResponses"] = answers
            changes.append(Change(pointer="/params/inputResponses", action="synthesize", rule="MRTR-bridge-legacy-client",
                                  after=", ".join(answers)[:80], detail="the client's answers to this round's input requests"))
        if isinstance(state, str):
            params["requestState"] = state
            changes.append(Change(pointer="/params/requestState", action="synthesize", rule="MRTR-bridge-legacy-client",
                                  detail="echoed untouched"))
        self.b.log(self.exch, "c2s", retry, self.method, changes + rchanges, self.client_rev, LATEST)
        return retry, new_id

    def _legacy_request(self, key: str, req: Any, ptr: str) -> tuple[str, str, dict, list[Change]] | Change:
        """One inputRequests entry as a server->client request of the client's revision, or the
        record saying why it cannot be one (the client lacks the capability, the revision lacks the shape)."""
        if not isinstance(req, dict) or not isinstance(req.get("method"), str):
            return Change(pointer=ptr, action="rewrite", rule="MRTR-embedded-requests", detail=f"input request {key!r} is not a request")
        method = req["method"]
        caps = self.s.client_caps if isinstance(self.s.client_caps, dict) else {}
        rev = self.client_rev
        params = copy.deepcopy(req.get("params")) if isinstance(req.get("params"), dict) else None
        changes = [Change(pointer=ptr, action="rewrite", rule="MRTR-embedded-requests",
                          detail=f"input request {key!r} sent to the client as a JSON-RPC request")]
        if method == "elicitation/create":
            mode = (params or {}).get("mode", "form")
            elic = caps.get("elicitation")
            if not isinstance(elic, dict):
                return Change(pointer=ptr, action="rewrite", rule="ELIC-request",
                              detail="elicitation (the client did not declare the elicitation capability)" if "elicitation/create" in
                              revisions.model(rev).server_requests else f"elicitation (MCP {rev} has no elicitation)")
            if mode == "url":
                if revisions.older(rev, "2025-11-25") or not isinstance(elic.get("url"), dict):
                    return Change(pointer=ptr, action="rewrite", rule="ELIC-url-mode",
                                  detail="URL-mode elicitation (the client did not declare elicitation.url)")
                params = params or {}
                if "elicitationId" not in params:
                    params["elicitationId"] = self.b.mint_id("elicitation-")
                    changes.append(Change(pointer=f"{ptr}/params/elicitationId", action="synthesize", rule="ELIC-elicitationId",
                                          after=f'"{params["elicitationId"]}"'))
            elif rev == "2025-11-25" and elic and "form" not in elic and "url" in elic:
                return Change(pointer=ptr, action="rewrite", rule="ELIC-url-mode",
                              detail="form elicitation (the client declared only elicitation.url)")
        elif method == "sampling/createMessage":
            if not isinstance(caps.get("sampling"), dict):
                return Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client",
                              detail="sampling (the client did not declare the sampling capability)")
            if isinstance((params or {}).get("tools"), list) and rev == "2025-11-25" and not isinstance(caps["sampling"].get("tools"), dict):
                return Change(pointer=ptr, action="rewrite", rule="SAMP-tools",
                              detail="sampling with tools (the client did not declare sampling.tools)")
        elif method == "roots/list":
            if not isinstance(caps.get("roots"), dict):
                return Change(pointer=ptr, action="rewrite", rule="MRTR-bridge-legacy-client",
                              detail="roots (the client did not declare the roots capability)")
        else:
            return Change(pointer=ptr, action="rewrite", rule="MRTR-embedded-requests",
                          detail=f"{method} (not an input request a legacy client can answer)")
        wire: dict = {"jsonrpc": "2.0", "id": self.b.mint_id("input-"), "method": method}
        if params is not None:
            wire["params"] = params
        out = self.b.walk(wire, "request", method, LATEST, rev, "s2c")
        if out.message is None or out.reply is not None:
            why = (out.reply or {}).get("message") or f"{method} cannot be expressed for MCP {rev}"
            rule = next((c.rule for c in out.changes if c.action == "drop-message"), "MRTR-embedded-requests")
            return Change(pointer=ptr, action="rewrite", rule=rule, detail=f"{method}: {why}")
        return key, method, out.message, changes + out.changes

    def _upgrade_answer(self, key: str, method: str, result: dict, changes: list[Change]) -> dict:
        """The client's result as an inputResponses entry (MRTR-embedded-requests: ElicitResult and
        ListRootsResult lose ``_meta``, schema/2026-07-28/schema.ts:2718, :2856), walked toward 2026."""
        ptr = f"/params/inputResponses/{escape(key)}"
        result = copy.deepcopy(result)
        if method in ("elicitation/create", "roots/list") and "_meta" in result:
            changes.append(Change(pointer=f"{ptr}/_meta", action="drop", rule="MRTR-embedded-requests",
                                  detail="not a Result in 2026-07-28"))
            del result["_meta"]
        model = revisions.model(LATEST)
        walk = Walk(self.client_rev, LATEST, "c2s", self.b.rw.policy, self.b.rw.options)
        result = walk.named(result, model.result_for(method), ptr)
        changes.extend(walk.changes)
        return result

    async def _learn_tools(self, body: dict) -> bool:
        """tools/list upstream (every page) to learn the called tool's x-mcp-header; True when it has some."""
        cursor = None
        name = body["params"].get("name")
        for _ in range(50):
            params: dict = {"_meta": body["params"]["_meta"]}
            if cursor:
                params["cursor"] = cursor
            req = {"jsonrpc": "2.0", "id": self.b.mint_id("tools-"), "method": "tools/list", "params": params}
            headers = {"mcp-protocol-version": LATEST, "mcp-method": "tools/list"}
            try:
                reply = await self.up.send(json_body.dumps(req), headers, "tools/list, to learn a tool's x-mcp-header", timeout=60)
            except upstream_mod.UpstreamError:
                return False
            msg = era.first_response(reply.headers.get("content-type", ""), reply.body)
            result = msg.get("result") if isinstance(msg, dict) else None
            if not isinstance(result, dict):
                return False
            self.b.learn_tools(self.exch, result)
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return bool(self.b.tools_of(self.exch).get(name))

