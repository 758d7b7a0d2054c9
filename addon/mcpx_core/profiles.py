"""Host profiles: what a given client can really parse, whatever revision it declared.

A negotiated revision says what a client should parse, not what it does (issue 17). A profile
matches clients by what they send in their ``initialize`` request (``clientInfo`` name and version
range, the declared ``protocolVersion``, the top-level capability keys, request headers) and sets:

- ``revision``: the revision to spell for that client (the ``InitializeResult.protocolVersion`` it
  is told, and what its messages are downgraded to), when older than the server's;
- ``content``: content block types it cannot take at any revision, per method, with the rewrite to
  use instead (``text``, or ``resource``: an embedded resource, as the revision downgrade makes one,
  rules/content.py);
- ``dual_result``: what its model sees of a tool result that carries both ``content`` and
  ``structuredContent`` (:mod:`mcpx_core.audit`): ``keep`` (default), ``text-visible`` (the text
  half must carry what the structured half has) or ``structured-visible`` (the structured half must
  carry what the text has; a declared outputSchema is never broken).

- ``oauth_issuer_check``: the client rejects OAuth authorization server metadata whose ``issuer``
  is not the URL it fetched it from (RFC 8414 §3.3); mcpx then serves it no authorization
  server's metadata at the MCP origin (:mod:`mcpx_core.auth`). Default false: no 2025-03-26-era
  SDK measured checks it (docs/authorization.md).

Every action of a profile is a change record with ``profile`` set to the profile's name.

File format (TOML, read with :mod:`tomllib`, validated with pydantic; the shipped set is
``mcpx_core/data/profiles.toml``)::

    [profiles."pydantic-ai-0.4"]                 # the name records and options use
    description = "PyPI pydantic-ai-slim 0.4.x"  # what client or host
    source = "pydantic_ai/mcp.py:261 ..."        # the behaviour it corrects, and where it was seen
    match = { client_name = "mcp", client_version = "==0.1.0", revisions = ["2025-06-18"],
              capabilities = ["sampling"], headers = { "accept-encoding" = "*zstd*" } }
    revision = "2025-03-26"                      # optional
    dual_result = "keep"                         # optional
    structured_key = "content_text"              # key structured-visible adds (default)
    [[profiles."pydantic-ai-0.4".content]]
    types = ["resource_link"]                    # content block "type" values
    methods = ["tools/call"]                     # default: all three methods below
    rewrite = "resource"                         # "text" | "resource"

Matching: every ``match`` field given must hold (AND); ``client_version`` is a range of
comma-separated clauses (``>=1.2,<2``, ``==0.1.0``, ``0.1.0``, ``!=1.0.3``, ``*``) over dotted
versions; ``capabilities`` is the exact set of top-level keys of the client's capabilities;
``headers`` maps a header name (any case) to a glob (:func:`fnmatch.fnmatchcase`, any case) its
value on the initialize request must match. A profile without ``match`` only applies when the
option ``mcpx_profile`` names it. Profiles are tried in order, the first that matches wins: the
user's file (``mcpx_profiles``) first, in its order, then the shipped ones; a user profile with a
shipped profile's name replaces it (``enabled = false`` switches one off). A match with
``identifies = false`` (what it reads is sent by other libraries too) never applies its profile:
it only makes the ``MCPX-profile`` record name it (:meth:`ProfileSet.decide`).

Errors: :func:`load_file` raises :class:`ProfileError` whose message is one line naming the file,
the field (dotted path) and the reason.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import revisions

Revision = Literal["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
#: content block types a profile may take away (``text`` is every revision's fallback: never)
ContentType = Literal["image", "audio", "resource", "resource_link", "tool_use", "tool_result"]
#: the methods whose messages carry content blocks toward the client
Method = Literal["tools/call", "prompts/get", "sampling/createMessage"]
METHODS: tuple[str, ...] = ("tools/call", "prompts/get", "sampling/createMessage")
DualResult = Literal["keep", "text-visible", "structured-visible"]
#: the shipped profile file (package data)
DEFAULT_FILE = "profiles.toml"


class ProfileError(ValueError):
    """A profile file that cannot be used; the message is one line: file, field, reason."""


# -- versions -------------------------------------------------------------------------------------
_CLAUSE = re.compile(r"^\s*(==|!=|>=|<=|>|<)?\s*([0-9A-Za-z][0-9A-Za-z.\-+]*|\*)\s*$")


def version_key(version: str) -> tuple:
    """A sort key for a dotted version (``1.9.4``, ``2.0.0-beta.1``): numeric parts as numbers,
    others as text after every number (so ``1.0.0`` < ``1.0.0-rc1`` is not claimed: pre-release
    order is not modelled; ranges over release versions are what profiles use)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-+]", version.strip()) if p != "")


def _pad(a: tuple, b: tuple) -> tuple[tuple, tuple]:
    n = max(len(a), len(b))
    zero = (0, 0, "")
    return a + (zero,) * (n - len(a)), b + (zero,) * (n - len(b))


@dataclass(frozen=True)
class VersionRange:
    """Comma-separated clauses, all of which must hold (``>=1.2,<2``; a bare version means ``==``)."""

    text: str
    clauses: tuple[tuple[str, tuple], ...]

    @classmethod
    def parse(cls, text: str) -> "VersionRange":
        """Raises ValueError naming the clause that is not ``[op]version``."""
        clauses = []
        for part in text.split(","):
            m = _CLAUSE.match(part)
            if not m:
                raise ValueError(f"not a version clause: {part.strip()!r} (expected e.g. '>=1.2', '<2', '==0.1.0', '*')")
            op, ver = m.group(1) or "==", m.group(2)
            if ver == "*":
                continue
            clauses.append((op, version_key(ver)))
        return cls(text, tuple(clauses))

    def contains(self, version: str | None) -> bool:
        if not self.clauses:
            return True
        if not isinstance(version, str) or not version.strip():
            return False
        have = version_key(version)
        for op, want in self.clauses:
            a, b = _pad(have, want)
            ok = {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b}[op]
            if not ok:
                return False
        return True


# -- the file model -------------------------------------------------------------------------------
class Match(BaseModel):
    """What a client's initialize request must show for the profile to apply (all given fields)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    client_name: str | None = Field(None, description="clientInfo.name, exactly")
    client_version: str | None = Field(None, description="a range of clientInfo.version, e.g. '>=1.2,<2'")
    revisions: list[Revision] | None = Field(None, description="the protocolVersion the client declared, one of these")
    capabilities: list[str] | None = Field(None, description="exactly these top-level capability keys")
    headers: dict[str, str] = Field(default_factory=dict, description="header name -> glob of its value (any case)")
    identifies: bool = Field(True, description="false: other libraries send what this matches on too (the SDK's "
                                               "default clientInfo and a header, say): never applied on it alone")

    @field_validator("client_version")
    @classmethod
    def _range(cls, v: str | None) -> str | None:
        if v is not None:
            VersionRange.parse(v)
        return v

    @field_validator("headers")
    @classmethod
    def _headers(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not name or not re.fullmatch(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", name):
                raise ValueError(f"not an HTTP header name: {name!r}")
        return {k.lower(): p for k, p in v.items()}

    def empty(self) -> bool:
        return (self.client_name is None and self.client_version is None and self.revisions is None
                and self.capabilities is None and not self.headers)

    def evidence(self) -> str:
        """What a client must send to match, in one line (``clientInfo mcp ==0.1.0, protocolVersion
        2025-03-26, header accept-encoding *zstd*``): the evidence records and ``mcpx.sessions`` name."""
        parts = []
        if self.client_name is not None or self.client_version is not None:
            parts.append("clientInfo " + " ".join(x for x in (self.client_name, self.client_version) if x is not None))
        if self.revisions is not None:
            parts.append("protocolVersion " + "/".join(self.revisions))
        if self.capabilities is not None:
            parts.append("capabilities {" + ", ".join(sorted(self.capabilities)) + "}")
        parts += [f"header {k} {v}" for k, v in self.headers.items()]
        return ", ".join(parts)


class ContentRule(BaseModel):
    """Content block ``types`` the client cannot take in the results/requests of ``methods``,
    and what they become: ``text`` (a text block: the block's text, or a note naming it) or
    ``resource`` (an embedded resource: a resource_link as a text resource naming the link, an
    image or audio block as a blob resource keeping its bytes; text where the union has none)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    types: list[ContentType] = Field(min_length=1)
    methods: list[Method] = Field(default_factory=lambda: list(METHODS), min_length=1)
    rewrite: Literal["text", "resource"] = "text"

    @model_validator(mode="after")
    def _rewritable(self) -> "ContentRule":
        if self.rewrite == "resource":
            bad = [t for t in self.types if t not in ("resource_link", "image", "audio")]
            if bad:
                raise ValueError(f"rewrite 'resource' applies to resource_link, image and audio blocks, not {', '.join(bad)}")
        return self


class Profile(BaseModel):
    """One host profile (see the module docstring); ``name`` is its key in the file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = Field(min_length=1)
    source: str = Field(min_length=1, description="the behaviour it corrects and where it was seen")
    enabled: bool = True
    match: Match | None = None
    revision: Revision | None = None
    content: list[ContentRule] = Field(default_factory=list)
    dual_result: DualResult = "keep"
    structured_key: str = Field("content_text", min_length=1)
    oauth_issuer_check: bool = Field(False, description="rejects RFC 8414 metadata whose issuer is not the URL it fetched")

    def matches(self, client_info: Any, declared: Any, capabilities: Any, header: Callable[[str], str | None]) -> bool:
        """Whether an initialize request with these values matches (``header(name)``: the value of
        a request header, or None)."""
        m = self.match
        if m is None or m.empty():
            return False
        info = client_info if isinstance(client_info, dict) else {}
        if m.client_name is not None and info.get("name") != m.client_name:
            return False
        if m.client_version is not None and not _range(m.client_version).contains(info.get("version")):
            return False
        if m.revisions is not None and declared not in m.revisions:
            return False
        if m.capabilities is not None:
            caps = capabilities if isinstance(capabilities, dict) else {}
            if set(caps) != set(m.capabilities):
                return False
        for name, pattern in m.headers.items():
            value = header(name)
            if value is None or not fnmatch.fnmatchcase(value.lower(), pattern.lower()):
                return False
        return True

    def content_for(self, method: str | None) -> dict[str, str] | None:
        """``type -> rewrite`` of the content rules for ``method`` (None when there are none)."""
        return _content_table(self, method)


_RANGES: dict[str, VersionRange] = {}


def _range(text: str) -> VersionRange:
    r = _RANGES.get(text)
    if r is None:
        r = _RANGES[text] = VersionRange.parse(text)
    return r


_TABLES: dict[tuple[int, str | None], tuple[Profile, dict[str, str] | None]] = {}


def _content_table(p: Profile, method: str | None) -> dict[str, str] | None:
    hit = _TABLES.get((id(p), method))
    if hit is not None and hit[0] is p:
        return hit[1]
    table: dict[str, str] = {}
    for rule in p.content:
        if method in rule.methods:
            for t in rule.types:
                table.setdefault(t, rule.rewrite)
    out = table or None
    if len(_TABLES) > 256:
        _TABLES.clear()
    _TABLES[(id(p), method)] = (p, out)
    return out


class ProfileFile(BaseModel):
    """A profile file: ``[profiles.NAME]`` tables, in order."""

    model_config = ConfigDict(extra="forbid")

    profiles: dict[str, Profile] = Field(default_factory=dict)

    @field_validator("profiles", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        if isinstance(v, dict):
            for name, body in v.items():
                if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,63}", name):
                    raise ValueError(f"profile name {name!r}: letters, digits, '.', '_' and '-' only (at most 64)")
                if isinstance(body, dict) and "name" in body:
                    raise ValueError(f"profile {name!r}: 'name' is the table's key, not a field")
            return {name: {**body, "name": name} if isinstance(body, dict) else body for name, body in v.items()}
        return v


def _loc(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if p not in ("function-after", "function-before")) or "(file)"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def parse(data: bytes | str, path: str) -> ProfileFile:
    """The validated profiles of a TOML document read from ``path``. Raises :class:`ProfileError`."""
    try:
        doc = tomllib.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not UTF-8 text: {e.reason} at byte {e.start}") from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path}: not valid TOML: {_one_line(str(e))}") from None
    try:
        return ProfileFile.model_validate(doc)
    except ValidationError as e:
        errors = e.errors(include_url=False)
        first = errors[0]
        msg = _one_line(first["msg"]).removeprefix("Value error, ")
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ProfileError(f"{path}: {_loc(first['loc'])}: {msg}{more}") from None


def load_file(path: str) -> ProfileFile:
    """Read and validate the profile file at ``path``. Raises :class:`ProfileError`."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise ProfileError(f"{path}: cannot read: {e.strerror or e}") from None
    return parse(data, path)


def load_defaults() -> ProfileFile:
    """The shipped profiles (``mcpx_core/data/profiles.toml``)."""
    node = revisions.data_path(DEFAULT_FILE)
    return parse(node.read_bytes(), f"mcpx_core/data/{DEFAULT_FILE}")


class ProfileSet:
    """The profiles in force, in matching order, and the one forced on every client, if any.

    ``forced``: a profile name (``mcpx_profile=NAME``: every client gets it, whatever it sends),
    or None (match each client). ``disabled``: no profile applies (``mcpx_profile=none``).
    """

    def __init__(self, profiles: list[Profile] | None = None, forced: str | None = None, disabled: bool = False):
        self.profiles: dict[str, Profile] = {p.name: p for p in (profiles or []) if p.enabled}
        if forced is not None and forced not in self.profiles:
            raise ProfileError(f"no profile named {forced!r}; known: {', '.join(self.profiles) or '(none)'}")
        self.forced = forced
        self.disabled = disabled
        #: header names (lower case) some profile's match reads
        self.header_names: frozenset[str] = frozenset(h for p in self.profiles.values() if p.match for h in p.match.headers)

    @classmethod
    def build(cls, user: ProfileFile | None = None, defaults: ProfileFile | None = None, forced: str | None = None,
              disabled: bool = False) -> "ProfileSet":
        """The user's profiles (in their order) over the shipped ones (``defaults``, by default
        :func:`load_defaults`): a user profile replaces a shipped one of the same name."""
        shipped = (defaults if defaults is not None else load_defaults()).profiles
        mine = user.profiles if user is not None else {}
        ordered = list(mine.values()) + [p for n, p in shipped.items() if n not in mine]
        return cls(ordered, forced, disabled)

    def get(self, name: str | None) -> Profile | None:
        """The profile called ``name`` (a session's sealed choice), or None."""
        if name is None or self.disabled:
            return None
        return self.profiles.get(name)

    def choose(self, client_info: Any, declared: Any, capabilities: Any,
               headers: Mapping[str, str] | None = None) -> Profile | None:
        """The profile for a client's initialize request (:meth:`decide`)."""
        return self.decide(client_info, declared, capabilities, headers).profile

    def evidence(self, name: str | None) -> str | None:
        """What the profile ``name`` applies on (``mcpx_profile`` when forced), for ``mcpx.sessions``."""
        if name is not None and name == self.forced:
            return "mcpx_profile"
        p = self.profiles.get(name) if name is not None else None
        return p.match.evidence() if p is not None and p.match is not None else None

    def decide(self, client_info: Any, declared: Any, capabilities: Any,
               headers: Mapping[str, str] | None = None) -> "Choice":
        """The profile for a client's initialize request, and the record's detail that says on what
        evidence (None when no profile matched at all). The forced one (``mcpx_profile``); else the
        first of the profiles that match on evidence identifying the client (``identifies``; in
        order: the user's file first); one that matches only on what other libraries send too
        (``identifies = false``: mcp-use sends langchain's ``zstd``) is never applied, and the
        detail names it. ``headers``: the request's headers (a case-insensitive mapping, such as
        mitmproxy's ``Headers``; only the names some profile reads are looked up)."""
        if self.disabled:
            return Choice(None, None)
        if self.forced is not None:
            return Choice(self.profiles[self.forced], f"profile {self.forced}: forced by mcpx_profile")
        if isinstance(headers, dict):  # a plain dict: looked up in lower case, as a Headers object is
            headers = {k.lower(): v for k, v in headers.items()}

        def header(name: str) -> str | None:
            if headers is None:
                return None
            v = headers.get(name)
            return v if isinstance(v, str) else None
        matched = [p for p in self.profiles.values() if p.matches(client_info, declared, capabilities, header)]
        if not matched:
            return Choice(None, None)
        sure = [p for p in matched if p.match.identifies]
        shared = [p for p in matched if not p.match.identifies]
        chosen = sure[0] if sure else None
        parts = [f"profile {chosen.name} on {chosen.match.evidence()}" if chosen else "no profile"]
        if len(sure) > 1:
            parts.append("also matched " + ", ".join(f"{p.name} (on {p.match.evidence()})" for p in sure[1:])
                         + f": the first in order applies")
        if shared:
            parts.append(", ".join(f"{p.name} matched on {p.match.evidence()}" for p in shared)
                         + ", which other libraries send too: not applied (mcpx_profile=NAME applies it)")
        return Choice(chosen, "; ".join(parts))

    def __len__(self) -> int:
        return len(self.profiles)


@dataclass(frozen=True)
class Choice:
    """:meth:`ProfileSet.decide`'s answer: the profile (or None) and the detail of its record."""

    profile: Profile | None
    detail: str | None


#: an empty set (no profile applies): the default of a bare Rewriter (tests, tools)
NONE = ProfileSet()
