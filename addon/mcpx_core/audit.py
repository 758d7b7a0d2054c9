"""The dual-result audit, and the dual-result policies of host profiles.

A tool result can carry its data twice: as ``content`` (the text half) and as
``structuredContent`` (the structured half, schema/2025-06-18/schema.ts:828; a tool that returns
structured content SHOULD also return its JSON as text, docs/specification/2025-06-18/server/tools.mdx:301).
Hosts hand their model one half (measured in October 2026, issue 17: Claude Code only
``structuredContent`` when present, OpenCode only the text, Codex both), and servers put different
things in the two halves ("results truncated, use offset=10" only in the text, fields only in the
structured half). So the model silently misses part of the answer.

:func:`audit` compares the two halves of a result as the server sent it and returns a
:class:`Finding` when one half carries information the other lacks:

- **what the text lacks**: every scalar of ``structuredContent`` (JSON Pointer + value) not found
  in the text half: a string not in it (a one-word string as a whole word: ``doc-1`` is not in
  ``doc-10``), a number not in it as a number, a boolean whose key (nor literal) is not mentioned
  (null carries nothing to miss). A text block that is the JSON of the structured half (what the
  SDKs write) carries everything.
- **what structuredContent lacks**: every marker of the text not found in the structured half.
  Markers are the tokens that carry data rather than prose: numbers, ``key=value`` pairs,
  identifiers with digits, capitals after the first letter, ``_``, ``-``, ``/``, ``@``, ``#`` or ``.``
  inside (``MARKER-A``, ``offset=10``, ``doc-3``, URLs). Plain words are prose and not compared. A
  text block found whole in one of the structured half's strings carries nothing more. A number is
  found among the structured half's numbers, array lengths and the numbers in its strings; any
  other marker in its strings and keys (any case); a number with a unit (``5.5°C``, ``80%``) by its number. For a text
  block that is JSON, its values and keys are compared.

Bounds (the audit runs on every such result, so its cost stays near the parse's): at most
:data:`MAX_VALUES` scalars; each searched in the first :data:`MAX_TEXT` characters of the text
(above :data:`MANY_VALUES` values, looked up among its words); markers, and the keys of booleans,
taken from the first and last :data:`MARKER_WINDOW` characters of the text half. What
lies beyond is not compared, and the finding says so. The text half is the ``text`` of text blocks
and of embedded text resources.

The dual-result policies (:func:`make_text_visible`, :func:`make_structured_visible`) apply the
same comparison to the result as delivered, and add to the half the host shows what only the other
half has: the JSON of ``structuredContent`` as a text block, or the text as one key of
``structuredContent`` (only when the tool's declared outputSchema admits that key, :func:`admits`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

import orjson

from .changes import Change, summarize
from .framing import json_body
from .rules.api import escape

AUDIT_RULE = "MCPX-audit-dual"
TEXT_VISIBLE_RULE = "MCPX-dual-text-visible"
STRUCTURED_VISIBLE_RULE = "MCPX-dual-structured-visible"
#: scalars of structuredContent compared per result at most
MAX_VALUES = 10_000
#: characters of the text half searched for the values of structuredContent
MAX_TEXT = 64 << 10
#: above this many values, the text is split into words once (a set lookup per value), else a search per value
MANY_VALUES = 64
#: characters at each end of the text half scanned for markers (a longer text's middle is not)
MARKER_WINDOW = 2048
#: items of each list a finding's detail shows
SHOWN = 5

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w])")
#: a word of text: starts and ends with a letter or digit, may hold - . @ / : # inside (doc-1, MARKER-B, a.b@c)
_WORD = re.compile(r"\w(?:[\w\-.@/:#]*\w)?")
_WITH_UNIT = re.compile(r"(-?\d+(?:\.\d+)?)(?:%|°[CF]?|[A-Za-zµ]{1,3})")
#: a whitespace-separated token with a digit, a capital or one of _ = / @ # in it (found from its start only: linear)
_CANDIDATE = re.compile(r"(?<!\S)\S*?[0-9A-Z_=/@#]\S*")
#: what makes a token a :data:`_CANDIDATE` (:func:`_markers` splits the text, then searches each token:
#: the same tokens in two thirds of the time)
_CANDIDATE_CHAR = re.compile(r"[0-9A-Z_=/@#]")
_DATA_CHARS = re.compile(r"[0-9_=/@#]|[A-Za-z0-9][-.][A-Za-z0-9]")


@dataclass
class Finding:
    """What each half of one tool result lacks. ``text_lacks``: (JSON Pointer inside
    structuredContent, value) pairs, shallowest first; ``structured_lacks``: markers of the text;
    ``partial``: the bounds stopped the comparison early."""

    text_lacks: list[tuple[str, Any]] = field(default_factory=list)
    structured_lacks: list[str] = field(default_factory=list)
    partial: bool = False

    def __bool__(self) -> bool:
        return bool(self.text_lacks or self.structured_lacks)

    def text_lacks_shown(self) -> list[str]:
        return [f"{p or '/'} {summarize(v, 0)}" for p, v in self.text_lacks[:SHOWN]]

    def structured_lacks_shown(self) -> list[str]:
        return [summarize(m, 0) for m in self.structured_lacks[:SHOWN]]

    def detail(self, tool: str | None) -> str:
        """One line, e.g. ``tool search: the text lacks 12 values of structuredContent: /total 42,
        /next_cursor "MARKER-B", …+10; structuredContent lacks 2 markers of the text: "offset=10", "MARKER-A"``."""
        parts = []
        if self.text_lacks:
            parts.append(f"the text lacks {_count(len(self.text_lacks), 'value')} of structuredContent: "
                         + _listed(self.text_lacks_shown(), len(self.text_lacks)))
        if self.structured_lacks:
            parts.append(f"structuredContent lacks {_count(len(self.structured_lacks), 'marker')} of the text: "
                         + _listed(self.structured_lacks_shown(), len(self.structured_lacks)))
        head = f"tool {tool}: " if tool else ""
        tail = " (compared in part: result beyond mcpx's audit bounds)" if self.partial else ""
        return head + "; ".join(parts) + tail

    def summary(self, tool: str | None, jsonrpc_id: Any) -> dict:
        """The finding as the report keeps it (JSON-ready)."""
        return {"id": jsonrpc_id, "tool": tool, "text_lacks": len(self.text_lacks), "text_lacks_shown": self.text_lacks_shown(),
                "structured_lacks": len(self.structured_lacks), "structured_lacks_shown": self.structured_lacks_shown()}


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _listed(items: list[str], total: int) -> str:
    return ", ".join(items) + (f", …+{total - len(items)}" if total > len(items) else "")


# -- the two halves ----------------------------------------------------------------------------
def halves(result: Any) -> tuple[list[str], Any] | None:
    """(texts of the text half, structuredContent) of a result that carries both, else None."""
    if not isinstance(result, dict) or "structuredContent" not in result or result["structuredContent"] is None:
        return None
    content = result.get("content")
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    add = texts.append
    for block in content:  # (once per block of every audited result: kept tight)
        if block.__class__ is not dict and not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                add(text)
        elif kind == "resource":
            res = block.get("resource")
            if isinstance(res, dict) and isinstance(res.get("text"), str):
                add(res["text"])
    if not texts:
        return None
    return texts, result["structuredContent"]


_NOT_JSON = object()


def _as_json(text: str) -> Any:
    """The JSON value a text block holds (it starts with ``{`` or ``[``), else :data:`_NOT_JSON`."""
    first = text[:1]  # a text that may be JSON starts with ``{``, ``[`` or whitespace
    if (first in "{[" or first.isspace()) and text[:64].lstrip()[:1] in ("{", "["):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return _NOT_JSON


def _holds_json_of(parsed: list[Any], structured: Any) -> bool:
    """Whether a text block is the JSON of the structured half (``parsed``: :func:`_as_json` of
    each text). Most texts are not JSON: they are counted in one C call."""
    if parsed.count(_NOT_JSON) == len(parsed):
        return False
    return any(p == structured for p in parsed if p is not _NOT_JSON)


def _leaves(value: Any, ptr: str, out: list, budget: list[int], depth: int = 0) -> None:
    """(pointer, key, scalar) of every scalar under ``value``, and array lengths as ("#len", n)."""
    if budget[0] <= 0 or depth > 64:
        budget[0] = 0
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _leaves(v, f"{ptr}/{escape(str(k))}", out, budget, depth + 1) if isinstance(v, (dict, list)) \
                else _scalar(out, f"{ptr}/{escape(str(k))}", k, v, budget)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _leaves(v, f"{ptr}/{i}", out, budget, depth + 1) if isinstance(v, (dict, list)) \
                else _scalar(out, f"{ptr}/{i}", None, v, budget)
    else:
        _scalar(out, ptr, None, value, budget)


def _scalar(out: list, ptr: str, key: Any, value: Any, budget: list[int]) -> None:
    if budget[0] <= 0:
        return
    budget[0] -= 1
    out.append((ptr, key, value))


def _keys_and_lengths(value: Any, keys: set | dict, numbers: set, budget: list[int], depth: int = 0) -> None:
    """Every key under ``value`` into ``keys`` (a set, or a dict: document order), and each array's length into ``numbers``."""
    if budget[0] <= 0 or depth > 64:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            budget[0] -= 1
            if isinstance(keys, dict):
                keys[str(k)] = None
            else:
                keys.add(str(k))
            _keys_and_lengths(v, keys, numbers, budget, depth + 1)
    elif isinstance(value, list):
        numbers.add(float(len(value)))
        for v in value:
            _keys_and_lengths(v, keys, numbers, budget, depth + 1)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except (OverflowError, ValueError):
        return None


def _numbers_in(text: str) -> set[float]:
    out = set()
    for m in _NUMBER.finditer(text):
        try:
            out.add(float(m.group()))
        except (OverflowError, ValueError):
            continue
    return out


def _depth(ptr: str) -> int:
    return ptr.count("/")


# -- what the text lacks ----------------------------------------------------------------------
def _joined(texts: list[str], limit: int) -> tuple[str, bool]:
    """The texts joined by line breaks, at most ``limit`` characters (and whether it was cut)."""
    parts, size = [], 0
    for t in texts:
        if size + len(t) > limit:
            parts.append(t[:max(0, limit - size)])
            return "\n".join(parts), True
        parts.append(t)
        size += len(t) + 1
    return "\n".join(parts), False


def _connects(corpus: str, i: int, step: int) -> bool:
    """Whether the character at ``i`` continues a word of :data:`_WORD` (a letter or digit, or a
    ``- . @ / : #`` followed in direction ``step`` by one)."""
    if i < 0 or i >= len(corpus):
        return False
    c = corpus[i]
    if c.isalnum() or c == "_":
        return True
    if c in "-.@/:#":
        j = i + step
        return 0 <= j < len(corpus) and (corpus[j].isalnum() or corpus[j] == "_")
    return False


def _has_word(corpus: str, word: str, tries: int = 256) -> bool:
    """Whether ``word`` occurs in ``corpus`` as a whole word (as :data:`_WORD` splits text)."""
    i = corpus.find(word)
    while i != -1 and tries > 0:
        if not _connects(corpus, i - 1, -1) and not _connects(corpus, i + len(word), 1):
            return True
        i = corpus.find(word, i + 1)
        tries -= 1
    return tries <= 0  # too many occurrences to check: counted as found


def _has_number(corpus: str, value: float, text: str) -> bool:
    """Whether the number occurs in ``corpus`` (as ``text`` or, for a whole float, as an integer),
    not inside a longer number or word."""
    forms = {text}
    if value.is_integer() and abs(value) < 1e16:
        forms.add(str(int(value)))
    for form in forms:
        i = corpus.find(form)
        tries = 256
        while i != -1 and tries > 0:
            before = corpus[i - 1] if i > 0 else " "
            after = corpus[i + len(form)] if i + len(form) < len(corpus) else " "
            after2 = corpus[i + len(form) + 1] if i + len(form) + 1 < len(corpus) else " "
            if not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_" or (after == "." and after2.isdigit())):
                return True
            i = corpus.find(form, i + 1)
            tries -= 1
        if tries <= 0:
            return True
    return False


def _key_mentioned(corpus: str, key: Any) -> bool:
    """Whether ``key`` occurs in ``corpus`` as it is, capitalised, or with spaces for ``_``."""
    if not isinstance(key, str) or not key:
        return False
    return any(form in corpus for form in {key, key.capitalize(), key.replace("_", " ")})


#: the last comparison of :func:`text_lacks` in this thread, while :func:`share_comparisons` is on
_shared = threading.local()


def share_comparisons(on: bool) -> None:
    """Between the audit of a tools/call result (before the walk) and the end of its walk, where the
    structuredContent rule asks the same question (rules/tools.py ``_text_lacks``): :func:`text_lacks`
    of the same ``structured`` object and equal texts is computed once. Off (the default) outside that
    window: a value changed in place after the walk (repairs, host profiles) is compared afresh. Per
    thread (large bodies are rewritten in a worker thread, addons/worker.py)."""
    _shared.on = on
    _shared.last = None


def text_lacks(texts: list[str], structured: Any, parsed: list[Any] | None = None,
               leaves: list | None = None) -> tuple[list[tuple[str, Any]], bool]:
    """Scalars of ``structured`` the text half does not carry (pointer, value), shallowest first,
    and whether the bounds cut the comparison. ``parsed`` / ``leaves``: :func:`_as_json` of each
    text and :func:`_leaves` of ``structured``, when the caller has them already."""
    if getattr(_shared, "on", False):
        last = _shared.last
        if last is not None and last[0] is structured and last[1] == texts:
            return last[2]
        got = _text_lacks(texts, structured, parsed, leaves)
        _shared.last = (structured, list(texts), got)  # (holds ``structured``: its id is not reused meanwhile)
        return got
    return _text_lacks(texts, structured, parsed, leaves)


def _text_lacks(texts: list[str], structured: Any, parsed: list[Any] | None,
                leaves: list | None) -> tuple[list[tuple[str, Any]], bool]:
    parsed = parsed if parsed is not None else [_as_json(t) for t in texts]
    if _holds_json_of(parsed, structured):
        return [], False
    if leaves is None:
        leaves = []
        _leaves(structured, "", leaves, [MAX_VALUES])
    partial = len(leaves) >= MAX_VALUES
    many = len(leaves) > MANY_VALUES
    corpus, cut = _joined(texts, MAX_TEXT)
    partial = partial or cut
    if many:  # one pass over the text, then a set lookup per value
        words = set(_WORD.findall(corpus))
        numbers = _numbers_in(corpus)
        has_word = words.__contains__
        def has_number(n: float, text: str) -> bool:  # noqa: E306
            return n in numbers
    else:  # a search per value (C speed), no pass over the whole text in Python
        def has_word(w: str) -> bool:
            return _has_word(corpus, w)
        def has_number(n: float, text: str) -> bool:  # noqa: E306
            return _has_number(corpus, n, text)
    missing = []
    ends: str | None = None  # where a boolean's key is looked for: the text's ends (_window), as markers are
    for ptr, key, v in leaves:
        if isinstance(v, str):
            # a one-word value must stand as a word ("doc-1" is not in "doc-10"); longer ones as a substring
            if v and not (has_word(v) if _WORD.fullmatch(v) else v in corpus):
                missing.append((ptr, v))
        elif (n := _num(v)) is not None:
            if not has_number(n, orjson.dumps(v).decode() if isinstance(v, float) else str(v)):
                missing.append((ptr, v))
        elif v is None:  # null carries nothing to miss
            continue
        else:  # true, false: its key is mentioned, or the literal
            ends = _window(texts)[0] if ends is None else ends
            if not (_key_mentioned(ends, key) or orjson.dumps(v).decode() in ends):
                missing.append((ptr, v))
    missing.sort(key=lambda pv: _depth(pv[0]))  # stable: top-level fields first, in their order
    return missing, partial


# -- what structuredContent lacks -------------------------------------------------------------
def _is_marker(token: str) -> bool:
    if len(token) < 2 and not token.isdigit():
        return False
    if token.isalpha() and (token.islower() or token.istitle()):
        return False  # a plain word (the usual case: decided without a regex)
    if _DATA_CHARS.search(token):
        return True
    return any(c.isupper() for c in token[1:])


def _markers(text: str) -> list[str]:
    out = []
    has = _CANDIDATE_CHAR.search
    for tok in [t for t in text.split() if has(t)]:  # _CANDIDATE.findall(text): tokens with a digit, capital or data character
        tok = tok.strip(".:!?,;()[]{}<>\"'`")
        if tok.startswith("#") and tok[1:].isdigit():
            tok = tok[1:]
        if tok and _is_marker(tok):
            out.append(tok)
    return out


def _window(texts: list[str]) -> tuple[str, bool]:
    """The prose scanned for markers: all of ``texts`` (joined by line breaks), or the first and
    last :data:`MARKER_WINDOW` characters of it (and True: the middle is not compared)."""
    total = sum(map(len, texts)) + len(texts)
    if total <= 2 * MARKER_WINDOW:
        return "\n".join(texts), False
    head, _ = _joined(texts, MARKER_WINDOW)
    parts, size = [], 0
    for t in reversed(texts):  # the last MARKER_WINDOW characters, without copying the rest
        if size + len(t) >= MARKER_WINDOW:
            parts.append(t[len(t) - (MARKER_WINDOW - size):])
            break
        parts.append(t)
        size += len(t) + 1
    tail = "\n".join(reversed(parts))
    # whole words only: a word cut at the window's edge is not a marker of the text
    head = head[:head.rfind(" ")] if " " in head else ""
    tail = tail[tail.find(" ") + 1:] if " " in tail else ""
    return head + "\n" + tail, True


def structured_lacks(texts: list[str], structured: Any, parsed: list[Any] | None = None,
                     leaves: list | None = None) -> tuple[list[str], bool]:
    """Markers of the text half ``structured`` does not carry, in text order (each once), and
    whether the bounds cut the comparison (``parsed`` / ``leaves``: as for :func:`text_lacks`)."""
    parsed = parsed if parsed is not None else [_as_json(t) for t in texts]
    if _holds_json_of(parsed, structured):
        return [], False
    if leaves is None:
        leaves = []
        _leaves(structured, "", leaves, [MAX_VALUES])
    keys: set = set()
    numbers: set = set()
    kbudget = [MAX_VALUES]
    _keys_and_lengths(structured, keys, numbers, kbudget)
    partial = len(leaves) >= MAX_VALUES or kbudget[0] <= 0
    strings = [v for _, _, v in leaves if isinstance(v, str)]
    for _, _, v in leaves:
        n = _num(v)
        if n is not None:
            numbers.add(n)
    joined, cut = _joined(strings, MAX_TEXT)
    partial = partial or cut
    numbers |= _numbers_in(joined)  # "2 + 3 = 5" as a string value carries 2, 3 and 5
    haystack = (joined + "\n" + "\n".join(sorted(keys))).lower()
    exact = set(strings) | keys

    def found(tok: str) -> bool:
        n = _number(tok)
        if n is not None:
            return n in numbers or tok in exact
        unit = _WITH_UNIT.fullmatch(tok)  # 5.5°C, 80%, 120ms: the number is what counts
        if unit is not None and _number(unit.group(1)) in numbers:
            return True
        return tok.lower() in haystack

    missing: list[str] = []
    seen: set = set()

    def check(tok: str) -> None:
        if tok in seen:
            return
        seen.add(tok)
        k, sep, v = tok.partition("=")
        ok = (found(k) and found(v)) if sep and k and v else found(tok)
        if not ok:
            missing.append(tok)

    if parsed.count(_NOT_JSON) != len(parsed):
        for value in parsed:
            if value is _NOT_JSON:
                continue
            # a JSON text: its values and keys (before the markers of the prose, as they come)
            for _, key, v in _json_leaves(value):
                if isinstance(v, str) and v:
                    check(v)
                elif _num(v) is not None:
                    check(orjson.dumps(v).decode())
            jkeys: dict = {}  # keys in document order
            _keys_and_lengths(value, jkeys, set(), [MAX_VALUES])
            for key in jkeys:
                if key not in keys:
                    check(key)
    prose = _prose(texts, parsed, joined)
    window, cut = _window(prose)
    for tok in _markers(window):
        check(tok)
    return missing, partial or cut


def _prose(texts: list[str], parsed: list[Any], joined: str) -> list[str]:
    """The texts that are prose (not JSON, and not found whole in ``joined``, the structured
    half's strings), as much of them as :func:`_window` reads: all when they are short, else
    enough from the start for its head and from the end for its tail (the middle is never
    scanned: O(window), not O(texts), for a result of thousands of blocks)."""
    n_joined = len(joined)

    def prose(text: str) -> bool:
        # the whole text in a string of the structured half carries nothing more. A text longer
        # than those strings whose ends are not whitespace cannot be (no strip needed)
        if len(text) <= n_joined or text[:1].isspace() or text[-1:].isspace():
            stripped = text.strip()
            if stripped and len(stripped) <= n_joined and stripped in joined:
                return False
        return True

    front: list[str] = []
    size, i, n = 0, 0, len(texts)
    while i < n and size <= 2 * MARKER_WINDOW:  # past 2 windows, _window cuts: the head is in front
        t = texts[i]
        i += 1
        if parsed[i - 1] is _NOT_JSON and prose(t):
            front.append(t)
            size += len(t) + 1
    if i == n:
        return front
    back: list[str] = []
    size, j = 0, n
    while j > i:  # until the text where _window's tail starts (its loop from the end breaks there)
        j -= 1
        t = texts[j]
        if parsed[j] is _NOT_JSON and prose(t):
            back.append(t)
            if size + len(t) >= MARKER_WINDOW:
                break
            size += len(t) + 1
    back.reverse()
    return front + back


def _number(tok: str) -> float | None:
    if not _NUMBER.fullmatch(tok):
        return None
    try:
        return float(tok)
    except (OverflowError, ValueError):
        return None


def _json_leaves(value: Any) -> list:
    leaves: list = []
    _leaves(value, "", leaves, [MAX_VALUES])
    return leaves


# -- the audit --------------------------------------------------------------------------------
def audit(result: Any) -> Finding | None:
    """The finding for one tool result (``message["result"]``), or None when it does not carry
    both halves or neither lacks anything."""
    both = halves(result)
    if both is None:
        return None
    texts, structured = both
    parsed = [_as_json(t) for t in texts]
    if _holds_json_of(parsed, structured):
        return None  # a text block is the JSON of the structured half (what the SDKs write)
    leaves: list = []
    _leaves(structured, "", leaves, [MAX_VALUES])
    lacks_t, p1 = text_lacks(texts, structured, parsed, leaves)
    lacks_s, p2 = structured_lacks(texts, structured, parsed, leaves)
    f = Finding(lacks_t, lacks_s, p1 or p2)
    return f if f else None


def audit_change(finding: Finding, tool: str | None) -> Change:
    """The ``audit`` record of a finding (pointer ``/result``; nothing was changed)."""
    return Change(pointer="/result", action="audit", rule=AUDIT_RULE, detail=finding.detail(tool))


# -- dual-result policies (host profiles) -------------------------------------------------------
#: root keywords of an outputSchema that cannot forbid one more string property (any other keyword
#: may: patternProperties, propertyNames, maxProperties, unevaluatedProperties, not, if, ...)
_OPEN_ROOT = frozenset({"type", "properties", "required", "title", "description", "$schema", "$id", "$defs",
                        "definitions", "examples", "default", "$comment", "additionalProperties"})


def admits(output_schema: Any, key: str) -> bool:
    """Whether an object that validates against ``output_schema`` still does with one more
    property ``key`` holding a string: the schema's root uses only :data:`_OPEN_ROOT` keywords,
    is ``type: object`` (or untyped), does not declare ``key``, and its ``additionalProperties``
    is absent, ``true``, ``{}`` or ``{"type": "string"}``. None (no outputSchema) admits any key.
    Conservative: False when unsure."""
    if output_schema is None:
        return True
    if not isinstance(output_schema, dict) or not _OPEN_ROOT.issuperset(output_schema):
        return False
    if output_schema.get("type", "object") != "object":
        return False
    props = output_schema.get("properties", {})
    if not isinstance(props, dict) or key in props:
        return False
    extra = output_schema.get("additionalProperties", True)
    return extra is True or extra == {} or extra == {"type": "string"}


def make_text_visible(result: dict, profile: str) -> list[Change]:
    """``text-visible``: when the delivered text half lacks values of the delivered
    ``structuredContent``, append a text block with its JSON (unless one already carries it).
    Returns the records (``synthesize``, naming ``profile``). Raises ValueError when the JSON
    cannot be written exactly (integers beyond 64 bits: the message then passes through)."""
    both = halves(result)
    if both is None:
        return []
    texts, structured = both
    lacks, _ = text_lacks(texts, structured)
    if not lacks:
        return []
    if json_body.holds_inexact(structured):
        raise ValueError(f"/result/structuredContent {json_body.INEXACT}")
    content = result["content"]
    content.append({"type": "text", "text": orjson.dumps(structured).decode()})
    return [Change(pointer=f"/result/content/{len(content) - 1}", action="synthesize", rule=TEXT_VISIBLE_RULE,
                   after="text block with the JSON of /result/structuredContent", profile=profile,
                   detail=f"profile {profile}: the host shows its model only the text; structuredContent carried "
                          f"{_count(len(lacks), 'value')} the text lacks")]


def make_structured_visible(result: dict, profile: str, key: str, schema_known: bool, output_schema: Any) -> list[Change]:
    """``structured-visible``: when the delivered ``structuredContent`` (an object) lacks markers
    of the text half, add the text half (text blocks joined by a line break) as ``key``, if the
    tool's outputSchema admits it (:func:`admits`; ``schema_known`` False: the tool was not
    listed in this session, so nothing is added). Returns the records: ``synthesize`` when added,
    else one ``keep`` saying why the structured half was left as sent."""
    both = halves(result)
    if both is None:
        return []
    texts, structured = both
    lacks, _ = structured_lacks(texts, structured)
    if not lacks:
        return []
    why = None
    if not isinstance(structured, dict):
        why = "structuredContent is not an object"
    elif key in structured:
        why = f"structuredContent already has a key {key!r}"
    elif not schema_known:
        why = "the tool's outputSchema is unknown (no tools/list listed it in this session)"
    elif not admits(output_schema, key):
        why = f"the tool's outputSchema may not admit a key {key!r}"
    if why is not None:
        return [Change(pointer="/result/structuredContent", action="keep", rule=STRUCTURED_VISIBLE_RULE, profile=profile,
                       detail=f"profile {profile}: left as sent: {why}; the text carried "
                              f"{_count(len(lacks), 'marker')} it lacks")]
    text = "\n".join(texts)
    structured[key] = text
    return [Change(pointer=f"/result/structuredContent/{escape(key)}", action="synthesize", rule=STRUCTURED_VISIBLE_RULE,
                   after=summarize(text), profile=profile,
                   detail=f"profile {profile}: the host shows its model only structuredContent; the text carried "
                          f"{_count(len(lacks), 'marker')} it lacks")]
