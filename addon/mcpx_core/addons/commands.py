"""The ``mcpx.sessions``, ``mcpx.report`` and ``mcpx.pin`` commands (console and mitmweb command bar)."""

from __future__ import annotations

import logging
import os

import orjson
from mitmproxy import command, exceptions, types

from .. import revisions
from ..report import session_report, sessions_text
from .state import State

logger = logging.getLogger("mcpx")


class Commands:
    name = "mcpx.commands"

    def __init__(self, state: State) -> None:
        self.state = state

    @command.command("mcpx.sessions")
    def sessions(self) -> str:
        """Each known MCP session (live, then the last 1000 the client ended): client and server info, revisions, message and change counts."""
        text = sessions_text(self.state.tracker, self.state.closed, self.state.rewriter.profiles.evidence)
        logger.info(text, extra={"mcpx_lines": True})  # one line per session, each escaped (terminal.py)
        return text

    @command.command("mcpx.report")
    def report(self, path: types.Path) -> str:
        """Write a per-session summary of what was dropped or rewritten for whom: JSON to PATH, a text table to PATH.txt.

        Returns the text table. Raises CommandError when a file cannot be written.
        """
        data, table = session_report(self.state.tracker, self.state.closed)
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
