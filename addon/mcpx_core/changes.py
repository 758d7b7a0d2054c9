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
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

import orjson
from pydantic import TypeAdapter

from .framing.json_body import ExactInt

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
_new = object.__new__
_set = object.__setattr__


class Summary:
    """A record's ``before``/``after`` that is made when first read: :func:`summarize` of ``value``.

    Only for a value nothing changes after it is logged (a field the walk removed, an immutable
    string, a copy, see :func:`snapshot`): the text is then the same whenever it is made. A record
    nobody reads (one past the flow's kept records, with no log file) never pays for its text."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def text(self) -> str:
        v = self.value
        return summarize(v.build() if v.__class__ is Rebuilt else v)


class Rebuilt:
    """A value a record shows, made again when the record is first read: ``fn(*args)`` of values
    nothing changes after the record is logged (e.g. the replacement of a content block, built
    from the replaced block, which the walk detached: :func:`mcpx_core.rules.content.content_miss`).
    Stands for a :func:`snapshot` of the value at logging time, which costs a copy per record even
    when nobody reads it (issue 16)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable[..., Any], *args: Any):
        self.fn, self.args = fn, args

    def build(self) -> Any:
        return self.fn(*self.args)


class _Text:
    """The ``before``/``after`` field of :class:`Change`: a str (or None), or a :class:`Summary`
    replaced by its text on first read (the one place a record changes: from "not made yet" to
    its text, which is what it stood for from the start)."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> str | None:
        if obj is None:
            return None  # the field's default
        d = obj.__dict__
        v = d[self.name]
        if v.__class__ is Summary:
            v = d[self.name] = v.text()
        return v

    def __set__(self, obj: Any, value: str | None) -> None:  # reached by object.__setattr__ only: the dataclass is frozen
        obj.__dict__[self.name] = value


def _text(v: Any) -> Any:
    """orjson's ``default`` for a record's fields: the text of a :class:`Summary`; the digits of a
    ``jsonrpc_id`` beyond 64 bits (:class:`~mcpx_core.framing.json_body.ExactInt`: orjson writes no
    such int), a JSON number of the exact value."""
    if v.__class__ is Summary:
        return v.text()
    if v.__class__ is ExactInt:
        return orjson.Fragment(str(v.value).encode())
    raise TypeError(f"Type is not JSON serializable: {type(v).__name__}")


@dataclass(frozen=True)
class Change:
    """One dropped or rewritten value (or one error passthrough). Units: ``time`` in Unix seconds.

    A plain frozen dataclass, so that the hot path (several records per rewritten message) costs
    no validation; :data:`RECORD` (a pydantic ``TypeAdapter``) validates records read back from
    ``flow.metadata`` or a log file, and its JSON Schema is the log line's schema.

    Built by its own ``__init__``, which sets the instance's ``__dict__`` in one step (a frozen
    dataclass's generated one calls ``object.__setattr__`` once per field: 14 calls, about 3 us a
    record); the ``__dict__`` keeps the fields in declaration order, which orjson writes.
    ``before``/``after`` may be given as a :class:`Summary`: the text is made on first read.
    """

    pointer: str
    action: Action
    rule: str
    before: str | None = _Text()  # type: ignore[assignment]  (default None; see _Text)
    after: str | None = _Text()  # type: ignore[assignment]
    detail: str | None = None
    time: float = 0.0
    flow: str | None = None
    session: str | None = None
    direction: Literal["s2c", "c2s"] | None = None
    jsonrpc_id: int | str | None = None
    method: str | None = None
    from_rev: str | None = None
    to_rev: str | None = None
    #: the host profile whose action this is (None: not a profile's action; then not in ``__dict__``,
    #: so neither orjson nor :meth:`as_dict` writes it)
    profile: str | None = None

    def __init__(self, pointer: str, action: Action, rule: str, before: str | None = None, after: str | None = None,
                 detail: str | None = None, time: float = 0.0, flow: str | None = None, session: str | None = None,
                 direction: Literal["s2c", "c2s"] | None = None, jsonrpc_id: int | str | None = None,
                 method: str | None = None, from_rev: str | None = None, to_rev: str | None = None,
                 profile: str | None = None) -> None:
        d = {"pointer": pointer, "action": action, "rule": rule, "before": before, "after": after,
             "detail": detail, "time": time, "flow": flow, "session": session, "direction": direction,
             "jsonrpc_id": jsonrpc_id, "method": method, "from_rev": from_rev, "to_rev": to_rev}
        if profile is not None:
            d["profile"] = profile
        _set(self, "__dict__", d)

    def stamped(self, time: float, flow: str | None, session: str | None, direction: str | None,
                jsonrpc_id: int | str | None, method: str | None, from_rev: str | None, to_rev: str | None) -> "Change":
        """This record with its context (what :meth:`Rewriter._emit` knows) filled in."""
        new = _new(Change)
        d = self.__dict__.copy()
        d["time"], d["flow"], d["session"], d["direction"] = time, flow, session, direction
        d["jsonrpc_id"], d["method"], d["from_rev"], d["to_rev"] = jsonrpc_id, method, from_rev, to_rev
        _set(new, "__dict__", d)
        return new

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict, fields in declaration order (the log line's keys);
        ``profile`` only when set."""
        d = self.__dict__.copy()
        if d["jsonrpc_id"].__class__ is ExactInt:  # an id beyond 64 bits: its exact int (flow metadata, views)
            d["jsonrpc_id"] = d["jsonrpc_id"].value
        if "profile" in d and d["profile"] is None:  # a record validated back by RECORD has every field
            del d["profile"]
        if d["before"].__class__ is Summary:
            d["before"] = self.before
        if d["after"].__class__ is Summary:
            d["after"] = self.after
        return d

    def key(self) -> tuple[str, str, str]:
        """(pointer, action, rule): what tests compare exactly."""
        return (self.pointer, self.action, self.rule)

    def line(self) -> str:
        arrow = f" {self.before} -> {self.after}" if self.after is not None else (f" {self.before}" if self.before else "")
        who = f" (profile {self.profile})" if self.profile else ""
        return f"{self.action:<12} {self.pointer or '/'}  [{self.rule}]{who}{arrow}"


def maker(flow: str | None, session: str | None, direction: str | None, jsonrpc_id: int | str | None,
          method: str | None, from_rev: str | None, to_rev: str | None) -> Callable[..., Change]:
    """``make(pointer, action, rule, before, after, detail)``: the records of one message, built
    with its context and the time of the call (what ``Change(...)`` gives, from a copy of one dict
    that already holds the context: half the cost of a record)."""
    base = {"pointer": "", "action": "", "rule": "", "before": None, "after": None, "detail": None, "time": 0.0,
            "flow": flow, "session": session, "direction": direction, "jsonrpc_id": jsonrpc_id, "method": method,
            "from_rev": from_rev, "to_rev": to_rev}
    clock = time.time

    def make(pointer: str, action: str, rule: str, before: Any, after: Any, detail: str | None,
             profile: str | None = None) -> Change:
        d = base.copy()
        d["pointer"], d["action"], d["rule"], d["before"], d["after"], d["detail"], d["time"] = \
            pointer, action, rule, before, after, detail, clock()
        if profile is not None:
            d["profile"] = profile
        c = _new(Change)
        _set(c, "__dict__", d)
        return c

    return make


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


def snapshot(value: Any, depth: int = 2) -> Any:
    """A copy of ``value`` as deep as its :func:`summarize` text reads it: containers ``depth``
    levels down, and shallow copies of the ones below (whose sizes the text shows); everything else
    shared. A :class:`Summary` of the copy stays right when the walk later changes ``value``.
    (Plain dicts and lists, as parsed JSON and the rules' replacements are.)"""
    t = value.__class__
    if t is dict:
        out = value.copy()
        if depth > 0:
            for k, x in out.items():
                c = x.__class__
                if c is dict or c is list:
                    out[k] = snapshot(x, depth - 1)  # an existing key: the dict does not grow while iterated
        return out
    if t is list:
        if depth <= 0:
            return value.copy()
        return [snapshot(x, depth - 1) if (x.__class__ is dict or x.__class__ is list) else x for x in value]
    return value


def _plain(s: str) -> bool:
    """Whether orjson writes ``s`` as itself in quotes (nothing to escape: printable, no quote, no
    backslash; orjson does not escape non-ASCII). Not for strings of more than MAX_STR characters."""
    return s.isprintable() and '"' not in s and "\\" not in s


def _summ(v: Any, depth: int) -> str:
    t = v.__class__
    if t is str:
        if len(v) > MAX_STR:
            h = hashlib.sha256(v.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            return f"<str len={len(v)} sha256={h}>"
        return f'"{v}"' if _plain(v) else orjson.dumps(v).decode()
    if t is dict:
        if depth <= 0:
            return f"{{…{len(v)} keys}}"
        d = depth - 1
        items = []
        for k, x in (v.items() if len(v) <= 8 else islice(v.items(), 8)):
            # the commonest values written here, without a call: what _summ(x, d) returns for them
            c = x.__class__
            if c is str and len(x) <= MAX_STR and x.isprintable() and '"' not in x and "\\" not in x:
                s = f'"{x}"'
            elif d <= 0 and c is dict:
                s = f"{{…{len(x)} keys}}"
            elif d <= 0 and c is list:
                s = f"[…{len(x)} items]"
            else:
                s = _summ(x, d)
            items.append(f"{k}: {s}" if len(k) <= MAX_STR else f"{_summ(k, 0)}: {s}")
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
    if t is int and -(1 << 63) <= v < (1 << 64):
        return str(v)  # what orjson writes for an integer it can write
    if v is None or t is bool:
        return "null" if v is None else ("true" if v else "false")
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

    @property
    def active(self) -> bool:
        """Whether records are written anywhere (a path was given and the file is open)."""
        return self._fh is not None

    def write(self, changes: Iterable[Change]) -> None:
        if self._fh is None:
            return
        data = b"".join(orjson.dumps(c, default=_text) + b"\n" for c in changes)  # its __dict__: field order, "profile" only where set
        if b"\xe2\x80" in data or b"\xc2\x85" in data or b"\xe2\x81" in data:
            data = _LINE_BREAKERS.sub(_json_escape, data)  # one record a line, for every reader of lines
        if data:
            with self._lock:
                self._fh.write(data)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


#: characters orjson writes raw that some readers take for a line end (U+0085, U+2028, U+2029) or that
#: reorder what a terminal shows (bidirectional controls), as UTF-8: written as JSON escapes instead
_BREAKERS = (0x85, 0x2028, 0x2029, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
#: the same characters by their UTF-8 bytes, grouped by lead byte: one scan, 40 % faster than an
#: alternation of the 14 sequences on a log of prose with other U+2000-U+206F punctuation (an ellipsis,
#: a dash); ``tests/unit/test_record_lines.py`` checks it matches exactly :data:`_BREAKERS`
_LINE_BREAKERS = re.compile(rb"\xc2\x85|\xe2(?:\x80[\x8e\x8f\xa8-\xae]|\x81[\xa6-\xa9])")


def _json_escape(m: re.Match) -> bytes:
    return b"\\u%04x" % ord(m.group().decode("utf-8"))


def now() -> float:
    return time.time()
