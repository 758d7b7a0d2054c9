"""The ``mcpx.sessions``, ``mcpx.report`` and ``mcpx.pin`` commands (console and mitmweb command bar)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import orjson
from mitmproxy import command, ctx, exceptions, types

from .. import flowsessions, revisions
from ..report import flows_report, session_report, sessions_text
from .state import State

logger = logging.getLogger("mcpx")


class Commands:
    name = "mcpx.commands"

    def __init__(self, state: State) -> None:
        self.state = state

    @staticmethod
    def _flows() -> list | None:
        """Every flow of mitmproxy's flow list (the console, mitmweb: live or read with ``-r``), or
        None where there is none (mitmdump): the commands then read mcpx's live sessions."""
        if ctx.master is None or ctx.master.addons.get("view") is None:
            return None
        return list(ctx.master.commands.call("view.flows.resolve", "@all"))

    @command.command("mcpx.sessions")
    def sessions(self) -> Sequence[str]:
        """Each MCP session of the flow list, from what mcpx stored on its flows (a 2026-07-28 client: "(no
        session)"): client and server info, revisions, message and change counts. Without a flow list
        (mitmdump): the live sessions, then the last 1000 the client ended.

        Returns one line per session (the console shows them as rows); each is also one entry of the event log."""
        flows = self._flows()
        if flows is not None:
            lines = flowsessions.lines(flows)
        else:
            lines = sessions_text(self.state.tracker, self.state.closed, self.state.rewriter.profiles.evidence).split("\n")
        for line in lines:
            logger.info(line)  # one event log entry per line (mitmweb's command bar shows a value as JSON)
        return lines

    @command.command("mcpx.report")
    def report(self, path: types.Path) -> Sequence[str]:
        """Write a per-session summary of what was dropped or rewritten for whom: JSON to PATH, a text table to PATH.txt.

        Read from the flow list where there is one (as ``mcpx.sessions``), with a table of the calls and
        their durations. Returns the text table, one line per row. Raises CommandError when a file cannot be written.
        """
        flows = self._flows()
        data, table = flows_report(flowsessions.sessions(flows)) if flows is not None \
            else session_report(self.state.tracker, self.state.closed)
        path = os.path.expanduser(path)
        try:
            with open(path, "wb") as fh:
                fh.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
            with open(path + ".txt", "w") as fh:
                fh.write(table + "\n")
        except OSError as e:
            raise exceptions.CommandError(f"mcpx.report: {e}") from e
        logger.info(f"mcpx: report written to {path} and {path}.txt")
        return table.split("\n")

    @command.command("mcpx.pin")
    def pin(self, target: str, revision: str) -> str:
        """Pin a session or a client to an older REVISION, for debugging; REVISION "" unpins.

        TARGET is a session id as ``mcpx.sessions`` lists it (that session receives REVISION from its
        next message on, in this process: a pin set here is not sealed into the session), else a
        clientInfo.name (sessions such clients start from now on are told REVISION in the initialize
        result). Raises CommandError for an unknown revision or one newer than the session's server revision.
        """
        tracker = self.state.tracker
        if revision and not revisions.is_known(revision):
            raise exceptions.CommandError(f"unknown revision {revision!r}; known: {', '.join(revisions.REVISIONS)}")
        s = tracker.get(target)
        if s is not None:
            if revision and s.server_rev and revisions.older(s.server_rev, revision):
                raise exceptions.CommandError(f"session {target} speaks {s.server_rev}: cannot pin it to the newer {revision}")
            s.pinned_rev = revision or None
            text = f"session {target} pinned to {revision}" if revision else f"session {target} unpinned"
        elif revision:
            tracker.pins[target] = revision
            text = f"clients named {target!r} pinned to {revision} from their next initialize"
        else:
            tracker.pins.pop(target, None)
            text = f"clients named {target!r} unpinned"
        logger.info(f"mcpx: {text}")
        return text
