"""mcpx's options: one table of every ``mcpx_*`` option, and their parsed values.

:class:`Settings` (a pydantic model) lists each option once: the field ``max_body`` is the option
``mcpx_max_body``; its default is written as a user types it (``"64MiB"``), its description is the
help mitmproxy shows (``mitmdump --options``), its first example goes into error messages, and its
kind (size, duration, count, choice, text, list) decides how the value is read. The addon
(:mod:`.addons.options`) registers the options from this table, validates them with
:meth:`Settings.parse` in ``configure`` and prints them with :meth:`Settings.line`.

Every option is a ``str`` (or a list of ``str``) for mitmproxy: mitmproxy converts a ``--set``
value to the option's type when the script adds the option, and a failed conversion there leaves
the script unloaded without a word (``mcpx_max_body=64MB`` on an ``int`` option did). mcpx reads
the text itself:

- **size** (bytes): a whole number of bytes, or a number with a unit, any case, blanks allowed
  between: ``B``; ``KB``, ``MB``, ``GB``, ``TB`` (powers of 1000); ``KiB``, ``MiB``, ``GiB``,
  ``TiB`` (powers of 1024). ``64MiB`` = 67,108,864; ``64MB`` = 64,000,000; ``1.5KiB`` = 1,536.
  One-letter units (``64m``) are refused as ambiguous: mitmproxy's ``stream_large_bodies`` reads
  them as powers of 1024, pydantic's ``ByteSize`` as powers of 1000.
- **duration** (seconds, float): a number of seconds, or number+unit groups with ``ms``, ``s``,
  ``m`` (minutes), ``h``, ``d``: ``90s``, ``1h``, ``1h30m``, ``0.5s``.
- **count**: a whole number, ``10000``.
- **bool**: ``true`` or ``false`` (mitmproxy's own: ``--set mcpx_bridge`` alone is ``true``).

Errors: :meth:`Settings.parse` raises :class:`OptionError`, whose ``line`` is one line naming the
option, the value and an example (``mcpx: invalid value "64XB" for mcpx_max_body: ...``).
"""

from __future__ import annotations

import difflib
import re
from fractions import Fraction
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from . import revisions

PREFIX = "mcpx_"

#: size units (the spellings of pydantic's ``ByteSize``, lower case) -> bytes
SIZE_UNITS: dict[str, int] = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
                              "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
#: duration units -> seconds (``m`` is minutes)
DURATION_UNITS: dict[str, Fraction] = {"ms": Fraction(1, 1000), "s": Fraction(1), "m": Fraction(60),
                                       "h": Fraction(3600), "d": Fraction(86400)}
_SIZE_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")
_NUMBER_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*")
_DURATION_PART_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)")
_COUNT_RE = re.compile(r"\s*([0-9]+)\s*")
#: the least ``mcpx_max_body``: every session starts with an initialize exchange mcpx must read (its
#: request and result; a few KiB even with long ``instructions``), and a body above ``mcpx_max_body``
#: is not read. Below it (0 included: mitmproxy then streamed every body) mcpx announced itself active
#: and passed every session through untouched, with a passthrough record per body.
MIN_MAX_BODY = 64 << 10

WHAT = {
    "size": "not a size (bytes, or a number with a unit: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
    "duration": "not a duration (seconds, or a number with a unit: ms, s, m, h, d)",
    "count": "not a whole number",
    "bool": 'not "true" or "false"',
}


def parse_size(text: str) -> int:
    """Bytes of a size as typed (``"64MiB"`` -> 67108864, ``"64MB"`` -> 64000000, ``"1024"``).
    Raises ValueError for anything else (a negative or fractional number of bytes, ``64m``)."""
    m = _SIZE_RE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in SIZE_UNITS and unit != "":
        raise ValueError(WHAT["size"])
    n = Fraction(m.group(1)) * SIZE_UNITS.get(unit, 1)
    if n.denominator != 1:
        raise ValueError("not a whole number of bytes")
    return int(n)


def parse_duration(text: str) -> float:
    """Seconds of a duration as typed (``"1h"`` -> 3600.0, ``"90s"``, ``"1h30m"``, ``"3600"``).
    Raises ValueError for anything else."""
    if (m := _NUMBER_RE.fullmatch(text)) is not None:
        return float(Fraction(m.group(1)))
    total, pos, text = Fraction(0), 0, text.rstrip()
    while pos < len(text):
        m = _DURATION_PART_RE.match(text, pos)
        if m is None or m.group(2).lower() not in DURATION_UNITS:
            raise ValueError(WHAT["duration"])
        total += Fraction(m.group(1)) * DURATION_UNITS[m.group(2).lower()]
        pos = m.end()
    if pos == 0:
        raise ValueError(WHAT["duration"])
    return float(total)


def parse_count(text: str) -> int:
    """A whole number as typed (``"10000"``). Raises ValueError for anything else."""
    m = _COUNT_RE.fullmatch(text)
    if m is None:
        raise ValueError(WHAT["count"])
    return int(m.group(1))


def parse_pins(specs: Any) -> dict[str, str]:
    """``["CLIENT_NAME=REVISION", ...]`` -> {client name: revision}. Raises ValueError naming the
    first spec that is not one."""
    pins: dict[str, str] = {}
    for spec in ([specs] if isinstance(specs, str) else specs):
        name, sep, rev = str(spec).rpartition("=")
        if not sep or not name or not revisions.is_known(rev):
            raise ValueError(f"not CLIENT_NAME=REVISION with a revision of {', '.join(revisions.REVISIONS)}", spec)
        pins[name] = rev
    return pins


def _path_pairs(specs: Any, form: str) -> tuple[str, ...]:
    """``["A=B", ...]`` (two absolute paths, no query) or ``["off"]`` -> the same, checked. Raises
    ValueError naming the first spec that is not one (``form``: how the option names the two)."""
    items = tuple(str(x) for x in ([specs] if isinstance(specs, str) else specs))
    if items == ("off",):
        return items
    for spec in items:
        a, sep, b = spec.partition("=")
        if not sep or not all(p.startswith("/") and not set("?#= ,") & set(p) for p in (a, b)):
            raise ValueError(f"not {form} (two absolute paths), or off alone", spec)
    return items


def parse_http_sse(specs: Any) -> tuple[str, ...]:
    """``mcpx_http_sse``: ``["SSE_PATH=MCP_PATH", ...]`` or ``["off"]``."""
    return _path_pairs(specs, "SSE_PATH=MCP_PATH")


def parse_upstream_sse(specs: Any) -> tuple[str, ...]:
    """``mcpx_upstream_sse``: ``["MCP_PATH=SSE_PATH", ...]`` or ``["off"]``."""
    return _path_pairs(specs, "MCP_PATH=SSE_PATH")


def format_size(n: int) -> str:
    """A byte count the way a user would type it: the largest unit that gives a whole number
    (``67108864`` -> ``64MiB``, ``64000000`` -> ``64MB``, ``1500`` -> ``1500``)."""
    for unit in ("TiB", "TB", "GiB", "GB", "MiB", "MB", "KiB", "KB"):
        size = SIZE_UNITS[unit.lower()]
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def format_duration(seconds: float) -> str:
    """Seconds the way a user would type them (``3600`` -> ``1h``, ``5400`` -> ``1h30m``, ``2.5`` -> ``2.5s``)."""
    if seconds != int(seconds) or seconds < 60:
        return f"{seconds:g}s"
    out, rest = [], int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            out.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(out)


def _text(kind: str, parse):
    def validate(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(WHAT[kind])
        return parse(str(value))
    return BeforeValidator(validate)


Size = Annotated[int, _text("size", parse_size)]
Duration = Annotated[float, _text("duration", parse_duration)]
Count = Annotated[int, _text("count", parse_count)]
Pins = Annotated[dict[str, str], BeforeValidator(parse_pins)]
HttpSse = Annotated[tuple[str, ...], BeforeValidator(parse_http_sse)]
UpstreamSse = Annotated[tuple[str, ...], BeforeValidator(parse_upstream_sse)]


def parse_address(text: str) -> str:
    """``HOST:PORT`` as typed (``"127.0.0.1:9090"``, ``"[::1]:9090"``, ``""`` for none); the text
    itself. Raises ValueError for anything else."""
    if not text:
        return ""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
        raise ValueError("not HOST:PORT (e.g. 127.0.0.1:9090)")
    return text


Address = Annotated[str, BeforeValidator(lambda v: parse_address(v) if isinstance(v, str) else v)]


def _opt(default: Any, kind: str, example: str, help: str) -> Any:
    return Field(default, description=help, examples=[example], json_schema_extra={"kind": kind})


class Settings(BaseModel):
    """The parsed value of every ``mcpx_*`` option (field ``x`` is option ``mcpx_x``).

    Units: ``max_body`` and ``keep_original`` in bytes, ``session_ttl`` in seconds (float),
    ``max_sessions`` a count, ``pin`` {clientInfo.name: revision}, ``session_keys`` key file paths.
    ``record_lines``, ``bridge``, ``repair``, ``audit``, ``check_references`` and ``auth`` are ``bool`` options for mitmproxy too (``--set mcpx_bridge=false``; its
    ``--set`` text is checked by the addon before mitmproxy converts it).
    Defaults are written as typed; the model validates them (``validate_default``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    policy: Literal["strict", "lenient"] = _opt(
        "strict", "choice", "lenient",
        "strict: deliver only what the receiver's revision defines; lenient: keep fields its schema tolerates.")
    log: str = _opt("", "text", "mcpx-changes.jsonl",
                    "Append change records as JSON Lines to this file (created mode 0600). Default: no file.")
    max_body: Size = _opt(
        "64MiB", "size", "64MiB",
        "Largest body (and SSE event) mcpx parses; larger ones pass through untouched, with a record. "
        "A size: bytes, or with a unit (64MiB, 64MB); at least 64KiB.")
    max_sessions: Count = _opt("10000", "count", "10000",
                               "Sessions kept in memory at most (oldest forgotten first; a sealed session is opened again from its token).")
    session_ttl: Duration = _opt(
        "1h", "duration", "1h",
        "Idle time after which a session leaves memory (a sealed session is opened again from its token). "
        "A duration: seconds, or with a unit (90s, 30m, 1h).")
    session_keys: tuple[str, ...] = _opt(
        (), "list", "~/.mitmproxy/mcpx-session.key",
        "Files with the keys that seal session ids (one base64 32-byte key per line; the first seals, all open). "
        "Default: <confdir>/mcpx-session.key, created on first start. Give every replica the same file.")
    audio: Literal["text", "embed"] = _opt(
        "text", "choice", "embed",
        "Audio blocks for 2024-11-05 clients: 'text' (a note naming type and size) or 'embed' (an embedded blob resource where allowed).")
    keep_original: Size = _opt(
        "1MiB", "size", "1MiB",
        "Keep this much of each original body on the flow for inspection (0: none). A size: bytes, or with a unit (1MiB).")
    record_lines: bool = _opt(
        False, "bool", "true",
        "Also write every change record to mitmproxy's event log (debug level, one entry per message). "
        "On as well when termlog_verbosity (or console_eventlog_verbosity) is debug.")
    bridge: bool = _opt(
        True, "bool", "false",
        "Bridge peers of different revisions and eras: a server that answers initialize with a newer "
        "revision than the client asked for, a 2026-07-28 client in front of a legacy server, legacy "
        "clients in front of a 2026-07-28-only server. Off: only rewrite where both legs agree.")
    server_era: Literal["auto", "legacy", "2026", "dual"] = _opt(
        "auto", "choice", "legacy",
        "Which era the server speaks: auto (learn it: a server/discover probe when the first "
        "2026-07-28 client comes, the answer to the first legacy initialize), legacy, 2026 or dual.")
    sse_resume: Literal["auto", "always", "off"] = _opt(
        "auto", "choice", "always",
        "SSE polling for clients older than 2025-11-25 (2025-11-25 basic/transports.mdx:107): when a 2025-11-25 "
        "server closes a POST's SSE stream after an event id and before its answer, mcpx resumes it upstream with "
        "GET and Last-Event-ID and the client's stream stays open. auto: relay the calls to servers seen priming a "
        "stream; always: relay every such call; off: never (the client's stream ends, with a record).")
    http_sse: HttpSse = _opt(
        (), "list", "/legacy/events=/api/mcp",
        "Serve the 2024-11-05 HTTP+SSE transport for clients of a server that serves only Streamable HTTP: by "
        "default where the server refuses the client's SSE GET, with the MCP endpoint beside it "
        "(.../sse answered 404 -> .../mcp) or the same path (answered 400). SSE_PATH=MCP_PATH (repeatable) names a pair the conventions miss "
        "(served without asking the server); off: never serve it.")
    upstream_sse: UpstreamSse = _opt(
        (), "list", "/api/mcp=/events/stream",
        "Serve Streamable HTTP clients of a server that speaks only the 2024-11-05 HTTP+SSE transport: by default "
        "where the server refuses a client's initialize POST (400, 404, 405, not JSON-RPC), with the server's SSE "
        "stream at the POST's own path or .../sse beside .../mcp. MCP_PATH=SSE_PATH (repeatable): a refused "
        "initialize to MCP_PATH looks for the stream at SSE_PATH instead (the server is still asked first); "
        "off: never serve it.")
    repair: bool = _opt(
        True, "bool", "false",
        "Repair values every revision rejects and that can mean one thing only ([] for an object, null for an "
        "optional member, a required member the specification gives a default), in both directions, and log "
        "each (action repair); off: messages are only downgraded.")
    profiles: str = _opt(
        "", "text", "hosts.toml",
        "A TOML file of host profiles, merged over the shipped ones (its profiles are tried first; one with a "
        "shipped profile's name replaces it).")
    profile: str = _opt(
        "", "text", "none",
        "Give every client this host profile, whatever it sends (for hosts with no distinctive clientInfo); "
        "'none': no profile applies. Default: each client gets the first profile that matches it.")
    audit: bool = _opt(
        True, "bool", "false",
        "Audit tool results that carry both content and structuredContent: record (action 'audit') what one "
        "half carries that the other lacks. Changes nothing.")
    check_references: bool = _opt(
        True, "bool", "false",
        "Do not deliver to a strict client, on the answer to its request, a notifications/progress naming a progress "
        "token it never sent, or a notifications/cancelled naming a request id the server never sent (a drop-message "
        "record each). Off: delivered.")
    auth: bool = _opt(
        True, "bool", "false",
        "Bridge OAuth discovery between revisions at the MCP origin: serve a 2025-03-26 client the metadata of the "
        "authorization server a server's protected resource metadata names, and synthesize protected resource "
        "metadata for a server that publishes only its own (a record each). Off: discovery passes through untouched.")
    drain_grace: Duration = _opt(
        "30s", "duration", "30s",
        "On SIGTERM: stop listening, answer /healthz 503, let the requests in flight (SSE answers included) finish for "
        "at most this long, then exit. 0: exit at once, as mitmproxy does. A duration: seconds, or with a unit (30s, 2m).")
    metrics: Address = _opt(
        "", "text", "127.0.0.1:9090",
        "Serve Prometheus metrics (/metrics) and /healthz on HOST:PORT (200 while serving, 503 while draining). Default: off.")
    pin: Pins = _opt(
        (), "list", "old-client=2025-03-26",
        "Pin clients to an older revision, as CLIENT_NAME=REVISION (clientInfo.name); may be given several times.")

    @field_validator("max_body")
    @classmethod
    def _max_body_minimum(cls, v: int) -> int:
        if v < MIN_MAX_BODY:
            raise ValueError(f"less than {format_size(MIN_MAX_BODY)}, the least that holds a session's initialize exchange "
                             "(mcpx must read it to rewrite anything)")
        return v

    # -- the table -------------------------------------------------------------------------------
    @classmethod
    def option_names(cls) -> list[str]:
        """Every option name, in table order (``mcpx_policy``, ...)."""
        return [PREFIX + f for f in cls.model_fields]

    @classmethod
    def spec(cls, option: str) -> tuple[str, Any, str, str, tuple[str, ...] | None]:
        """(kind, default as typed, example, help, choices) of ``option`` (``mcpx_...``)."""
        info = cls.model_fields[option.removeprefix(PREFIX)]
        kind = (info.json_schema_extra or {})["kind"]  # type: ignore[index]
        choices = getattr(info.annotation, "__args__", None) if kind == "choice" else None
        return kind, info.default, info.examples[0], info.description, choices  # type: ignore[index, return-value]

    @classmethod
    def example(cls, option: str, value: Any = None) -> str:
        """``--set OPTION=EXAMPLE`` for ``option``; for a choice, the one closest to ``value``."""
        kind, _, example, _, choices = cls.spec(option)
        if choices and isinstance(value, str):
            example = next(iter(difflib.get_close_matches(value.lower(), choices, n=1, cutoff=0)), example)
        return f"--set {option}={example}"

    # -- parsing ---------------------------------------------------------------------------------
    @classmethod
    def parse(cls, values: dict[str, Any]) -> "Settings":
        """The settings of raw option values (``{"mcpx_max_body": "64MB", ...}``, as mitmproxy
        holds them; options not given keep their default). Raises :class:`OptionError` for the
        first invalid one, in table order."""
        raw = {k.removeprefix(PREFIX): v for k, v in values.items() if k.startswith(PREFIX)}
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            errors = e.errors()
            order = list(cls.model_fields)
            err = min(errors, key=lambda d: order.index(d["loc"][0]) if d["loc"] and d["loc"][0] in order else len(order))
            field = str(err["loc"][0]) if err["loc"] else "?"
            option = PREFIX + field
            value = raw.get(field)
            if err["type"] == "literal_error":
                _, _, _, _, choices = cls.spec(option)
                problem = f"not one of {', '.join(choices or ())}"
            elif err["type"] == "value_error":
                exc = err["ctx"]["error"]
                problem = str(exc.args[0])
                if len(exc.args) > 1:  # the element of a list option that is wrong
                    value = exc.args[1]
            else:
                problem = err["msg"]
            raise OptionError(option, value, problem) from None

    def describe(self) -> dict[str, str]:
        """Each option's value as a user would type it (``{"mcpx_max_body": "64MiB", ...}``)."""
        out: dict[str, str] = {}
        for field in type(self).model_fields:
            option = PREFIX + field
            kind = type(self).spec(option)[0]
            v = getattr(self, field)
            if kind == "size":
                out[option] = format_size(v)
            elif kind == "duration":
                out[option] = format_duration(v)
            elif field == "pin":
                out[option] = ",".join(f"{k}={r}" for k, r in v.items())
            elif kind == "list":
                out[option] = ",".join(v)
            elif kind == "bool":
                out[option] = "true" if v else "false"
            else:
                out[option] = str(v)
        return out

    def line(self, version: str, overrides: dict[str, str] | None = None) -> str:
        """The start-up line: version, revisions and every option's value (``-``: empty), e.g.
        ``mcpx 0.1.0 active: revisions 2024-11-05, ...; mcpx_policy=strict mcpx_max_body=64MiB ...``.
        ``overrides``: values shown instead (e.g. the key file actually used)."""
        shown = {**self.describe(), **(overrides or {})}
        opts = " ".join(f"{k}={v or '-'}" for k, v in shown.items())
        return f"mcpx {version} active: revisions {', '.join(revisions.REVISIONS)}; {opts}"


class OptionError(ValueError):
    """An invalid option value (or name). ``line`` is the one line mcpx prints:
    ``mcpx: invalid value "64XB" for mcpx_max_body: not a size (...); e.g. --set mcpx_max_body=64MiB``."""

    def __init__(self, option: str, value: Any, problem: str, line: str | None = None):
        self.option, self.value, self.problem = option, value, problem
        if line is None:
            shown = ",".join(value) if isinstance(value, (list, tuple)) else value
            ex = Settings.example(option, value) if option in Settings.option_names() else ""
            line = f'mcpx: invalid value "{shown}" for {option}: {problem}' + (f"; e.g. {ex}" if ex else "")
        self.line = line
        super().__init__(line)


def _edits(a: str, b: str) -> int:
    """Edits from ``a`` to ``b``: insertions, deletions, substitutions and swaps of two neighbours
    (optimal string alignment: ``mpcx`` -> ``mcpx`` is one)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


_HEAD_RE = re.compile(r"([a-z]+)[-_.](.+)")


def _stem(name: str) -> str:
    """The part of an option name after its prefix, when the prefix is ``mcpx`` or one edit from it
    (``mcpx-max_body``, ``mpcx_max_body``, ``mcp_max_body`` -> ``max_body``); else the name."""
    name = name.lower()
    m = _HEAD_RE.fullmatch(name)
    if m and _edits(m.group(1), "mcpx") <= 1:
        return m.group(2).replace("-", "_")
    return re.sub(r"^mcpx[-_.]?", "", name).replace("-", "_")


def _closest(stem: str) -> list[str]:
    stems = [n.removeprefix(PREFIX) for n in Settings.option_names()]
    return difflib.get_close_matches(stem, stems, n=1, cutoff=0.6) or [c for c in stems if stem and stem in c]


def meant_for_mcpx(name: str) -> bool:
    """Whether an option name mcpx does not define was meant for it, and is refused like a misspelt
    one: it starts with ``mcpx`` (``mcpx_polcy``, ``mcpx-policy``), or it is one edit from an mcpx
    option (``mpcx_policy``, ``mcpx_polcy``), or its prefix is one edit from ``mcpx`` and the rest
    is close to an mcpx option's (``mpcx_polcy``, ``mcp_max_body``). Other names (``mcp_timeout``,
    another addon's) are left to mitmproxy."""
    low = name.lower()
    if low.startswith("mcpx"):
        return True
    if any(_edits(low, option) <= 1 for option in Settings.option_names()):
        return True
    m = _HEAD_RE.fullmatch(low)
    return bool(m and _edits(m.group(1), "mcpx") <= 1 and _closest(_stem(low)))


def unknown_option(name: str, value: Any = None) -> OptionError:
    """The error for an option mcpx does not define (``mcpx_polcy``, ``mpcx_policy``), suggesting the closest name."""
    names = Settings.option_names()
    stem = _stem(name)  # compared without the common prefix (or one a typo away from it)
    close = _closest(stem)
    close = [PREFIX + close[0]] if len(close) == 1 else []
    if close:
        v = value if isinstance(value, str) and value else Settings.spec(close[0])[2]
        line = f"mcpx: unknown option {name} (did you mean {close[0]}?); e.g. --set {close[0]}={v}"
    else:
        line = f"mcpx: unknown option {name}; mcpx's options are {', '.join(names)}"
    return OptionError(name, value, "unknown option", line)
