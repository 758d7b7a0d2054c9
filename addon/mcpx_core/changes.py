"""Change records: one per dropped, rewritten or repaired field, and one per message passed through on error.

A :class:`Change` is what a rule returns; the addon stamps it with the flow and session context
(:meth:`Change.stamped`) and hands it to a :class:`ChangeLog` (JSON Lines file, mode 0600),
to mitmproxy's log (one summary line per rewritten message) and to ``flow.metadata["mcpx"]``.

Record shape (JSON Lines, one object per line)::

    {"time": 1764450000.123, "flow": "<mitmproxy flow id>", "session": "<Mcp-Session-Id or ->",
     "direction": "s2c" | "c2s", "jsonrpc_id": 4, "method": "tools/call",
     "pointer": "/result/content/1", "action": "rewrite", "rule": "CT-resource_link",
     "from_rev": "2025-06-18", "to_rev": "2025-03-26",
     "before": "{type: resource_link, uri: https://..., ...}", "after": "{type: resource, ...}",
     "detail": null}

A record of a host profile's action (:mod:`mcpx_core.profiles`) also has ``"profile": "<name>"``
(last key); records of no profile have no ``profile`` key, so their lines are as before.
An ``audit`` record (the dual-result audit, :mod:`mcpx_core.audit`) changes nothing: it says what
one half of a tool result carries that the other lacks (``detail``).

``before``/``after`` are short summaries (:func:`summarize`), never a whole base64 payload
(strings over 80 characters become ``<str len=N sha256=…>``) and never header values.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

import orjson
from pydantic import TypeAdapter

Action = Literal[
    "drop",  # field or array element removed
    "rewrite",  # value replaced by another shape
    "drop-message",  # whole message not delivered
    "split",  # batch split into single messages
    "answer-locally",  # proxy answered instead of forwarding
    "synthesize",  # added a field, block or header the receiver requires (or its profile asks for) and the sender did not send
    "repair",  # a value every revision rejects, rewritten to the one thing it can mean (mcpx_core.repair)
    "bridge",  # a cross-era translation over several messages (upstream handshake, input_required, listen)
    "keep",  # tolerated by the target, kept (lenient policy), logged
    "passthrough",  # body forwarded byte for byte because it could not be handled (error)
    "audit",  # a finding of the dual-result audit: nothing changed, the message is delivered as sent
]

#: the word of each action in summaries (``2 rewritten, 1 audited for 2025-06-18``)
WORDS: dict[str, str] = {"drop": "dropped", "rewrite": "rewritten", "drop-message": "message dropped", "split": "split",
                         "answer-locally": "answered locally", "synthesize": "added", "bridge": "bridged", "keep": "kept",
                         "passthrough": "passed through", "audit": "audited", "repair": "repaired"}

MAX_STR = 80


@dataclass(frozen=True, slots=True)
class Change:
    """One dropped or rewritten value (or one error passthrough). Units: ``time`` in Unix seconds.

    A plain frozen dataclass, so that the hot path (several records per rewritten message) costs
    no validation; :data:`RECORD` (a pydantic ``TypeAdapter``) validates records read back from
    ``flow.metadata`` or a log file, and its JSON Schema is the log line's schema.
    """

    pointer: str
    action: Action
    rule: str
    before: str | None = None
    after: str | None = None
    detail: str | None = None
    time: float = 0.0
    flow: str | None = None
    session: str | None = None
    direction: Literal["s2c", "c2s"] | None = None
    jsonrpc_id: int | str | None = None
    method: str | None = None
    from_rev: str | None = None
    to_rev: str | None = None
    #: the host profile whose action this is (None: not a profile's action; then not written)
    profile: str | None = None

    def stamped(self, time: float, flow: str | None, session: str | None, direction: str | None,
                jsonrpc_id: int | str | None, method: str | None, from_rev: str | None, to_rev: str | None) -> "Change":
        """This record with its context (what :meth:`Rewriter._emit` knows) filled in."""
        return Change(self.pointer, self.action, self.rule, self.before, self.after, self.detail,  # type: ignore[arg-type]
                      time, flow, session, direction, jsonrpc_id, method, from_rev, to_rev, self.profile)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict, fields in declaration order (the log line's keys);
        ``profile`` only when set."""
        d = {f: getattr(self, f) for f in FIELDS}
        if self.profile is not None:
            d["profile"] = self.profile
        return d

    def key(self) -> tuple[str, str, str]:
        """(pointer, action, rule): what tests compare exactly."""
        return (self.pointer, self.action, self.rule)

    def line(self) -> str:
        arrow = f" {self.before} -> {self.after}" if self.after is not None else (f" {self.before}" if self.before else "")
        who = f" (profile {self.profile})" if self.profile else ""
        return f"{self.action:<12} {self.pointer or '/'}  [{self.rule}]{who}{arrow}"


#: the record's field names, in order (every log line has them); ``profile`` follows, on a profile's records only
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Change) if f.name != "profile")
#: validates a record dict (e.g. from flow.metadata) into a :class:`Change`: ``RECORD.validate_python(d)``;
#: raises pydantic.ValidationError
RECORD: TypeAdapter[Change] = TypeAdapter(Change)


def summarize(value: Any, depth: int = 2) -> str:
    """A short, secret-free description of a JSON value.

    Strings longer than 80 characters are replaced by their length and a sha256 prefix, so a
    base64 payload is never copied into the log; containers are shown to ``depth`` levels.
    """
    return _summ(value, depth)


def _summ(v: Any, depth: int) -> str:
    t = type(v)
    if t is str:
        if len(v) > MAX_STR:
            h = hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            return f"<str len={len(v)} sha256={h}>"
        return orjson.dumps(v).decode()
    if t is dict:
        if depth <= 0:
            return f"{{…{len(v)} keys}}"
        items = [f"{k if len(k) <= MAX_STR else _summ(k, 0)}: {_summ(x, depth - 1)}"
                 for k, x in (v.items() if len(v) <= 8 else islice(v.items(), 8))]
        if len(v) > 8:
            items.append(f"…+{len(v) - 8}")
        return "{" + ", ".join(items) + "}"
    if t is list:
        if depth <= 0:
            return f"[…{len(v)} items]"
        items = [_summ(x, depth - 1) for x in v[:5]]
        if len(v) > 5:
            items.append(f"…+{len(v) - 5}")
        return "[" + ", ".join(items) + "]"
    if isinstance(v, str):
        return _summ(str(v), depth)
    if isinstance(v, (dict, list)):
        return _summ(dict(v) if isinstance(v, dict) else list(v), depth)
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return repr(v)[:MAX_STR]


def flow_summary(changes: list[Change]) -> str:
    """The summary of a flow's records, per receiving revision in order of appearance, e.g.
    ``1 added for 2025-06-18; 2 rewritten, 5 dropped for 2025-03-26`` (one revision: as
    :func:`summary_line`)."""
    groups: dict[str | None, list[Change]] = {}
    for c in changes:
        groups.setdefault(c.to_rev, []).append(c)
    if len(groups) == 1 or None in groups:
        return summary_line(changes, next((c.to_rev for c in changes if c.to_rev), None))
    return "; ".join(summary_line(cs, rev) for rev, cs in groups.items())


def revisions_known(c: Change) -> str:
    """The revisions of a record as far as they are known, for a summary line: ``2025-06-18->2025-03-26``,
    ``->2025-03-26`` (the sender's not known), ``(revision unknown)`` (a session whose initialize
    was not answered), ``(no session)``; never ``None``."""
    if c.from_rev or c.to_rev:
        return f"{c.from_rev or ''}->{c.to_rev or ''}"
    return "(no session)" if c.session is None else "(revision unknown)"


def summary_line(changes: Iterable[Change], to_rev: str | None) -> str:
    """One line per rewritten message, e.g. ``2 rewritten, 5 dropped for 2025-03-26``."""
    counts: dict[str, int] = {}
    for c in changes:
        word = WORDS[c.action]
        counts[word] = counts.get(word, 0) + 1
    parts = [f"{n} {w}" for w, n in counts.items()]
    return ", ".join(parts) + (f" for {to_rev}" if to_rev else "")


class ChangeLog:
    """Append-only JSON Lines writer; the file is created with mode 0600 (owner only).

    Thread-safe; ``path=None`` makes it a no-op. Errors writing the file are raised (OSError).
    """

    def __init__(self, path: str | None):
        self.path = path
        self._fh = None
        self._lock = threading.Lock()
        if path:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.chmod(path, 0o600)
            self._fh = os.fdopen(fd, "ab", buffering=0)

    def write(self, changes: Iterable[Change]) -> None:
        if self._fh is None:
            return
        # field order, as the dataclass; "profile" only on a profile's records (orjson would write it on every one)
        data = b"".join(orjson.dumps(c.as_dict()) + b"\n" for c in changes)
        if data:
            with self._lock:
                self._fh.write(data)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def now() -> float:
    return time.time()
