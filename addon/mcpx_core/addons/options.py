"""mcpx's options (``--set mcpx_...``): registered from :class:`~mcpx_core.settings.Settings`,
parsed in ``configure`` and copied onto the shared state.

An invalid value, or an ``mcpx_*`` name mcpx does not define (or a name one typo from one:
``mpcx_policy``, :func:`~mcpx_core.settings.meant_for_mcpx`), never lets mitmproxy run without
mcpx or with another value than the one typed. While mitmproxy starts (before it listens), mcpx
prints one line to stderr (``mcpx: invalid value "64XB" for mcpx_max_body: ...; e.g. --set
mcpx_max_body=64MiB``) and exits with status 1, as mitmproxy does for its own options given on
the command line (``tools/main.py``). Once it runs (a value set in mitmweb or the console), the
same line is raised as an ``OptionsError``: mitmproxy keeps the previous value and shows the error.

Why mcpx checks options itself: mitmproxy loads ``-s`` scripts after it has read ``--set`` and
``config.yaml``, so it defers the options a script adds (``OptionManager.deferred``). A deferred
value it cannot convert raises inside the script loader's task and leaves the script unloaded
without a word; a deferred name no addon adds stays deferred for ever; and an ``OptionsError``
from ``configure`` is logged with a traceback after "listening at" (``addons/script.py``,
``addons/errorcheck.py``). So every mcpx option is a ``str`` (or a list of ``str``) for mitmproxy;
``load`` checks the deferred ``mcpx*`` entries (names, missing or repeated values) before mitmproxy
converts them, and ``configure`` parses the values (:meth:`Settings.parse`).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from mitmproxy import ctx, exceptions, optmanager
from mitmproxy.utils import human

from .. import __version__, profiles, revisions, seal
from ..changes import ChangeLog
from ..settings import PREFIX, WHAT, OptionError, Settings, meant_for_mcpx, unknown_option
from .state import State

logger = logging.getLogger("mcpx")

#: mitmproxy's holder of a deferred ``--set`` value not yet converted (``OptionManager.set``)
_UNCONVERTED = getattr(optmanager, "_UnconvertedStrings", ())


def stream_size(n: int) -> str:
    """``n`` bytes in the form of mitmproxy's own sizes (``human.parse_size``: ``k``, ``m``, ``g``,
    ``t`` are powers of 1024), the largest unit that divides it: ``67108864`` -> ``"64m"``,
    ``64000000`` -> ``"62500k"``, ``1000`` -> ``"1000"``. The console's status bar shows
    ``stream_large_bodies`` as it is set ("[64m]", not "[67108864]")."""
    for unit, size in sorted(human.SIZE_UNITS.items(), key=lambda kv: -kv[1]):
        if size > 1 and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def starting() -> bool:
    """Whether mitmproxy is starting up (its script loader is not running yet). False under
    ``mitmproxy.test.taddons`` (no script loader) and once mitmproxy runs."""
    loader = ctx.master.addons.get("scriptloader") if getattr(ctx, "master", None) else None
    return loader is not None and not loader.is_running


def fail(err: OptionError) -> None:
    """Refuse an option: while mitmproxy starts, print ``err.line`` to stderr and exit with
    status 1 (nothing listens yet); afterwards, raise it as an ``OptionsError``."""
    if starting():
        print(err.line, file=sys.stderr, flush=True)
        raise SystemExit(1)
    raise exceptions.OptionsError(err.line)


class Options:
    """Defines and applies the ``mcpx_*`` options."""

    name = "mcpx.options"

    def __init__(self, state: State) -> None:
        self.state = state
        self._stream_limit: str | None = None  # the stream_large_bodies value mcpx set, if it did
        self._strategy_set = False  # whether mcpx set connection_strategy (once, when it loads)
        self._key_files: list[str] = []
        self._announced: str | None = None  # the start-up line last written

    def load(self, loader) -> None:
        for option in Settings.option_names():
            kind, default, _, help, choices = Settings.spec(option)
            if kind == "list":
                loader.add_option(option, Sequence[str], list(default), help)
            elif kind == "bool":
                loader.add_option(option, bool, default, help)
            else:
                loader.add_option(option, str, default, help, choices=list(choices) if choices else None)
        self._check_deferred(loader.master.options)

    def _check_deferred(self, opts) -> None:
        """The values given before mcpx loaded (``--set``, ``config.yaml``), before mitmproxy
        converts them: an unknown ``mcpx*`` name, a missing or repeated value stops mitmproxy;
        numbers from ``config.yaml`` become the text mcpx parses."""
        names = set(Settings.option_names())
        for name, value in list(opts.deferred.items()):
            unconverted = isinstance(value, _UNCONVERTED) if _UNCONVERTED else False
            if name not in names:
                if meant_for_mcpx(name):  # mcpx_polcy, mcpx-policy, mpcx_policy: mitmproxy would ignore them
                    given = (value.val[-1] if value.val else None) if unconverted else value
                    fail(unknown_option(name, given))
                continue
            kind, _, example, _, _ = Settings.spec(name)
            if unconverted and kind == "bool":  # mitmproxy's own bool syntax: no value, true, false, toggle
                if len(value.val) > 1 or (value.val and value.val[0] not in ("true", "false", "toggle")):
                    fail(OptionError(name, ",".join(value.val), WHAT["bool"]))
            elif unconverted:
                if kind != "list" and not value.val:
                    fail(OptionError(name, None, "", f"mcpx: {name} needs a value; e.g. --set {name}={example}"))
                if kind != "list" and len(value.val) > 1:
                    given = ", ".join(f'"{v}"' for v in value.val)
                    fail(OptionError(name, value.val, "", f"mcpx: {name} is given {len(value.val)} times ({given}); "
                                                          f"give it once, e.g. --set {name}={value.val[-1]}"))
            elif kind == "list":
                items = [value] if isinstance(value, (str, int, float)) else value
                if not isinstance(items, (list, tuple)) or not all(isinstance(v, (str, int, float)) for v in items):
                    fail(OptionError(name, value, "not a list of strings"))
                opts.deferred[name] = [str(v) for v in items]
            elif kind == "bool":
                if not isinstance(value, bool):
                    fail(OptionError(name, value, WHAT["bool"]))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                opts.deferred[name] = str(value)  # config.yaml: mcpx_max_body: 67108864
            elif not isinstance(value, str):
                fail(OptionError(name, value, "not a string"))

    def configure(self, updated: set[str]) -> None:
        st = self.state
        ours = {name for name in updated if name.startswith(PREFIX)}
        if ours:
            try:
                settings = Settings.parse({name: getattr(ctx.options, name) for name in Settings.option_names()})
            except OptionError as e:
                fail(e)
                return
            self._apply(settings, ours)
        if "mcpx_session_keys" in updated or ("confdir" in updated and not ctx.options.mcpx_session_keys):
            self._keys()
        if {"mcpx_record_lines", "termlog_verbosity", "console_eventlog_verbosity"} & updated:
            st.record_lines = st.settings.record_lines or any(
                getattr(ctx.options, name, None) == "debug" for name in ("termlog_verbosity", "console_eventlog_verbosity"))
        if {"mcpx_log", "mcpx_record_lines", "termlog_verbosity", "console_eventlog_verbosity"} & updated:
            st.sinks_changed()
        if {"mcpx_max_body", "stream_large_bodies"} & updated and hasattr(ctx.options, "stream_large_bodies"):
            # Bodies above mcpx_max_body are not parsed: mitmproxy streams them (also those without
            # Content-Length, once that many bytes came), so none is held whole in memory; unless
            # the user set stream_large_bodies.
            # the form each interface shows readably: the console's status bar shows the value as set
            # ("[64m]"), mitmweb's footer reads it as a number (64mb; "64m" would read "NaNundefined")
            limit = str(st.max_body) if hasattr(ctx.options, "web_port") else stream_size(st.max_body)
            if ctx.options.stream_large_bodies in (None, "", self._stream_limit) and ctx.options.stream_large_bodies != limit:
                self._stream_limit = limit
                ctx.options.update(stream_large_bodies=limit)
        if not self._strategy_set and getattr(ctx.options, "connection_strategy", None) == "eager":
            # eager: a reverse proxy whose server is down closes the client's connection before reading
            # a request, so no answer can say why (addons/unreachable.py); lazy connects for the request
            self._strategy_set = True
            ctx.options.update(connection_strategy="lazy")
        if ours:
            self._announce(st.settings)

    def running(self) -> None:
        """In mitmweb, the flow list's Comment column shows what each MCP flow carries (flowlist.py): mcpx
        adds it to mitmweb's default columns, unless the user set ``web_columns``."""
        if hasattr(ctx.options, "web_columns") and not ctx.options.has_changed("web_columns") \
                and "comment" not in ctx.options.web_columns:
            ctx.options.update(web_columns=[*ctx.options.web_columns, "comment"])
        # the last start-up line: every addon's `running` hook has run (mitmproxy listens before them)
        logger.info("mcpx ready")

    def _apply(self, s: Settings, updated: set[str]) -> None:
        """Copy the parsed settings onto the state (the log file is (re)opened only when it changed)."""
        st = self.state
        if "mcpx_log" in updated:
            try:
                log = ChangeLog(s.log or None)
            except OSError as e:
                fail(OptionError("mcpx_log", s.log, f"cannot open it ({e.strerror or e})"))
                return
            if st.log_file:
                st.log_file.close()
            st.log_file = log
        if "mcpx_pin" in updated:  # pins set with the mcpx.pin command stay until mcpx_pin changes
            st.tracker.pins.clear()
            st.tracker.pins.update(s.pin)
        if "mcpx_bridge" in updated:
            st.rewriter.bridging = s.bridge
        if "mcpx_server_era" in updated:
            st.rewriter.era.forced = s.server_era
        if {"mcpx_profiles", "mcpx_profile"} & updated:
            built = self._profiles(s)
            if built is None:
                return
            st.rewriter.profiles = built
        if "mcpx_audit" in updated:
            st.rewriter.audit = s.audit
        if "mcpx_check_references" in updated:
            st.rewriter.check_references = s.check_references
        if "mcpx_repair" in updated:
            st.rewriter.repair = s.repair
        if "mcpx_sse_resume" in updated:
            st.resume.mode = s.sse_resume
        if "mcpx_http_sse" in updated:
            st.transport.configure(s.http_sse)
        if "mcpx_upstream_sse" in updated:
            st.upstream_sse.configure(s.upstream_sse)
        st.rewriter.policy = s.policy
        st.rewriter.options["audio"] = s.audio
        st.tracker.max_sessions = s.max_sessions
        st.tracker.ttl = s.session_ttl
        st.max_body = s.max_body
        st.keep_original = s.keep_original
        st.sender.keep = s.keep_original
        st.sender.max_body = s.max_body
        st.settings = s

    def _announce(self, s: Settings | None) -> None:
        """The start-up line (again after a change that took effect): version, revisions loaded, every option."""
        if s is None:
            return
        try:
            for rev in revisions.REVISIONS:  # load the schemas now: a broken install fails at start-up
                revisions.model(rev)
        except Exception as e:
            fail(OptionError("", None, "", f"mcpx: cannot load the revision schemas ({type(e).__name__}: {e}); reinstall mcpx"))
        line = s.line(__version__, {"mcpx_session_keys": ",".join(self._key_files)})
        if line != self._announced:  # not again for a refused change, which mitmproxy rolls back to these values
            self._announced = line
            logger.info(line)

    def _profiles(self, s: Settings) -> profiles.ProfileSet | None:
        """The shipped profiles, with the user's file (``mcpx_profiles``) over them, and the one
        ``mcpx_profile`` forces. A file or name that does not load is refused (:func:`fail`) in one
        line: ``mcpx_profiles: FILE: FIELD: REASON`` or ``mcpx_profile: no profile named ...``."""
        path = s.profiles
        try:
            user = profiles.load_file(os.path.expanduser(path)) if path else None
            forced = s.profile.strip()
            built = profiles.ProfileSet.build(user, forced=forced if forced not in ("", "none") else None,
                                              disabled=forced == "none")
        except profiles.ProfileError as e:
            name = "mcpx_profile" if str(e).startswith("no profile named") else "mcpx_profiles"
            fail(OptionError(name, getattr(s, name.removeprefix(PREFIX)), str(e), f"{name}: {e}"))
            return None
        if path:
            logger.info(f"mcpx: {len(built)} host profiles in force ({len(user.profiles) if user else 0} from {path})")
        return built

    def _keys(self) -> None:
        """Load the session keys (creating the default key file on first start)."""
        confdir = getattr(ctx.options, "confdir", "~/.mitmproxy")
        default = os.path.join(os.path.expanduser(confdir), seal.DEFAULT_KEY_FILE)
        paths = list(ctx.options.mcpx_session_keys)
        try:
            keys, created = seal.load_keys(paths, default)
        except OSError as e:
            fail(OptionError("mcpx_session_keys", e.filename or paths or default, f"cannot read it ({e.strerror or e})"))
            return
        except ValueError as e:  # names the file and line
            fail(OptionError("mcpx_session_keys", paths or default, str(e)))
            return
        if created:
            logger.info(f"mcpx: created session key file {created} (mode 0600)")
        self._key_files = paths or [default]
        self.state.tracker.sealer = seal.Sealer(keys)
