"""mcpx's options (``--set mcpx_...``), checked in ``configure`` and copied onto the shared state."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from mitmproxy import ctx, exceptions

from .. import revisions, seal
from ..changes import ChangeLog
from .state import State

logger = logging.getLogger("mcpx")


class Options:
    """Defines and applies the ``mcpx_*`` options."""

    name = "mcpx.options"

    def __init__(self, state: State) -> None:
        self.state = state
        self._stream_limit: str | None = None  # the stream_large_bodies value mcpx set, if it did

    def load(self, loader) -> None:
        loader.add_option("mcpx_policy", str, "strict",
                          "strict: deliver only what the receiver's revision defines; lenient: keep fields its schema tolerates.",
                          choices=["strict", "lenient"])
        loader.add_option("mcpx_log", str, "", "Append change records as JSON Lines to this file (created mode 0600).")
        loader.add_option("mcpx_max_body", int, 64 << 20,
                          "Largest body (bytes) mcpx parses; larger bodies pass through untouched, with a log record.")
        loader.add_option("mcpx_max_sessions", int, 10000, "Sessions kept in memory at most (oldest forgotten first; a sealed session is opened again from its token).")
        loader.add_option("mcpx_session_ttl", int, 3600, "Seconds after its last message a session leaves memory (a sealed session is opened again from its token).")
        loader.add_option("mcpx_session_keys", Sequence[str], [],
                          "Files with the keys that seal session ids (one base64 32-byte key per line; the first seals, all open). "
                          "Default: <confdir>/mcpx-session.key, created on first start. Give every replica the same file.")
        loader.add_option("mcpx_audio", str, "text",
                          "Audio blocks for 2024-11-05 clients: 'text' (a note naming type and size) or 'embed' (an embedded blob resource where allowed).",
                          choices=["text", "embed"])
        loader.add_option("mcpx_keep_original", int, 1 << 20,
                          "Keep up to this many bytes of each original body on the flow for inspection (0: none).")
        loader.add_option("mcpx_record_lines", bool, False,
                          "Also write every change record to mitmproxy's event log (debug level, one entry per message). "
                          "On as well when termlog_verbosity (or console_eventlog_verbosity) is debug.")
        loader.add_option("mcpx_bridge", bool, True,
                          "Bridge peers of different revisions and eras: a server that answers initialize with a newer "
                          "revision than the client asked for, a 2026-07-28 client in front of a legacy server, legacy "
                          "clients in front of a 2026-07-28-only server. Off: only rewrite where both legs agree.")
        loader.add_option("mcpx_server_era", str, "auto",
                          "Which era the server speaks: auto (learn it: a server/discover probe when the first "
                          "2026-07-28 client comes, the answer to the first legacy initialize), legacy, 2026 or dual.",
                          choices=["auto", "legacy", "2026", "dual"])
        loader.add_option("mcpx_pin", Sequence[str], [],
                          "Pin clients to an older revision, as CLIENT_NAME=REVISION (clientInfo.name); may be given several times.")

    def configure(self, updated: set[str]) -> None:
        st = self.state
        # mitmproxy does not check `choices` for values --set before the script loads: a typo such as
        # mcpx_policy=stric must not silently run another policy
        for name, allowed in (("mcpx_policy", ("strict", "lenient")), ("mcpx_audio", ("text", "embed")),
                              ("mcpx_server_era", ("auto", "legacy", "2026", "dual"))):
            if name in updated and getattr(ctx.options, name) not in allowed:
                raise exceptions.OptionsError(f"{name} must be one of {', '.join(allowed)}, not {getattr(ctx.options, name)!r}")
        if "mcpx_policy" in updated:
            st.rewriter.policy = ctx.options.mcpx_policy
        if "mcpx_bridge" in updated:
            st.rewriter.bridging = ctx.options.mcpx_bridge
        if "mcpx_server_era" in updated:
            st.rewriter.era.forced = ctx.options.mcpx_server_era
        if "mcpx_audio" in updated:
            st.rewriter.options["audio"] = ctx.options.mcpx_audio
        if "mcpx_pin" in updated:
            pins = {}
            for spec in ctx.options.mcpx_pin:
                name, sep, rev = spec.rpartition("=")
                if not sep or not name or not revisions.is_known(rev):
                    raise exceptions.OptionsError(f"mcpx_pin: expected CLIENT_NAME=REVISION with one of {', '.join(revisions.REVISIONS)}, got {spec!r}")
                pins[name] = rev
            st.tracker.pins.clear()
            st.tracker.pins.update(pins)
        for name in ("mcpx_max_body", "mcpx_max_sessions", "mcpx_session_ttl", "mcpx_keep_original"):
            if name in updated and getattr(ctx.options, name) < 0:
                raise exceptions.OptionsError(f"{name} must not be negative")
        if "mcpx_max_sessions" in updated or "mcpx_session_ttl" in updated:
            st.tracker.max_sessions = ctx.options.mcpx_max_sessions
            st.tracker.ttl = ctx.options.mcpx_session_ttl
        if "mcpx_session_keys" in updated or ("confdir" in updated and not ctx.options.mcpx_session_keys):
            self._keys()
        if "mcpx_log" in updated:
            if st.log_file:
                st.log_file.close()
            try:
                st.log_file = ChangeLog(ctx.options.mcpx_log or None)
            except OSError as e:
                st.log_file = None
                st.sinks_changed()
                raise exceptions.OptionsError(f"mcpx_log: cannot open {ctx.options.mcpx_log!r}: {e}") from e
        if {"mcpx_record_lines", "termlog_verbosity", "console_eventlog_verbosity"} & updated:
            st.record_lines = ctx.options.mcpx_record_lines or any(
                getattr(ctx.options, name, None) == "debug" for name in ("termlog_verbosity", "console_eventlog_verbosity"))
        if {"mcpx_log", "mcpx_record_lines", "termlog_verbosity", "console_eventlog_verbosity"} & updated:
            st.sinks_changed()
        if "mcpx_max_body" in updated:
            st.max_body = ctx.options.mcpx_max_body
        if "mcpx_keep_original" in updated:
            st.keep_original = ctx.options.mcpx_keep_original
        if {"mcpx_max_body", "stream_large_bodies"} & updated and hasattr(ctx.options, "stream_large_bodies"):
            # Bodies above mcpx_max_body are not parsed: mitmproxy streams them (also those without
            # Content-Length, once that many bytes came), so none is held whole in memory; unless
            # the user set stream_large_bodies.
            ours = str(ctx.options.mcpx_max_body)
            if ctx.options.stream_large_bodies in (None, "", self._stream_limit) and ctx.options.stream_large_bodies != ours:
                self._stream_limit = ours
                ctx.options.update(stream_large_bodies=ours)

    def _keys(self) -> None:
        """Load the session keys (creating the default key file on first start)."""
        confdir = getattr(ctx.options, "confdir", "~/.mitmproxy")
        default = os.path.join(os.path.expanduser(confdir), seal.DEFAULT_KEY_FILE)
        try:
            keys, created = seal.load_keys(list(ctx.options.mcpx_session_keys), default)
        except (OSError, ValueError) as e:
            raise exceptions.OptionsError(f"mcpx_session_keys: {e}") from e
        if created:
            logger.info(f"mcpx: created session key file {created} (mode 0600)")
        self.state.tracker.sealer = seal.Sealer(keys)
