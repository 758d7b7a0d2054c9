"""Test instrumentation loaded after the real addon: ``mitmdump -s addon/mcpx.py -s action_faults.py
--set action_fault=NAME`` makes one of mcpx's own actions (addons/actions.py) raise, at a point no
server can reach: an internal fault, to check what the client and the server get then.

- ``initialize-before-send``: mint_session raises before it sends the client's initialize;
- ``initialize-after-send``: the initialize is sent, and mcpx's sender raises once the server answered;
- ``batch-second-member``: split_batch raises on the second member, after it sent the first.
"""
from __future__ import annotations

from mitmproxy import ctx


def inject(name: str) -> None:
    from mcpx_core import upstream
    from mcpx_core.addons import actions

    if name == "initialize-before-send":
        def legacy(flow, exch):
            raise RuntimeError("injected before sending")
        actions._legacy_initialize = legacy
    elif name == "initialize-after-send":
        send = upstream.Sender.send

        async def send_then_fail(self, parent, method, body, headers, purpose, **kw):
            reply = await send(self, parent, method, body, headers, purpose, **kw)
            if purpose.startswith("initialize"):
                raise RuntimeError("injected after sending")
            return reply
        upstream.Sender.send = send_then_fail
    elif name == "batch-second-member":
        request_id = actions._request_id
        calls = []

        def second_fails(body):
            calls.append(body)
            if len(calls) == 2:
                raise RuntimeError("injected on the second batch member")
            return request_id(body)
        actions._request_id = second_fails
    else:
        raise ValueError(f"unknown action_fault {name!r}")


class ActionFaults:
    def load(self, loader) -> None:
        loader.add_option("action_fault", str, "", "the fault to inject (tests/e2e/action_faults.py)")

    def configure(self, updated) -> None:
        if "action_fault" in updated and ctx.options.action_fault:
            inject(ctx.options.action_fault)


addons = [ActionFaults()]
