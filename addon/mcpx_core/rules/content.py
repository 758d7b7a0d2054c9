"""Content-block rules: union members a receiver's revision does not define.

Applies wherever a content block can stand (CallToolResult.content, PromptMessage.content,
SamplingMessage.content, ToolResultContent.content, EmbeddedResource inside them), because the
walker calls these rules for every content-block union of the *target* schema whose members lack
the block's ``type`` (REVISIONS.md 7.2). The replacement is walked again, so annotations and
``_meta`` of the new block are trimmed to the target by the generic schema walk.

Rules (ids of revision-delta.json):
- ``CT-resource_link``: ResourceLink (schema/2025-06-18/schema.ts:760) -> EmbeddedResource
  (schema/2025-03-26/schema.ts:654) with TextResourceContents typed ``text/plain`` whose text names
  uri, name, title, description, original mimeType and size (the proxy never fetches the link).
  Where the union has no EmbeddedResource (sampling) -> TextContent.
- ``CT-audio``: AudioContent (schema/2025-03-26/schema.ts:990) -> TextContent
  "[audio content omitted: <mimeType>, <n> bytes]" keeping annotations; with option
  ``audio="embed"`` and an EmbeddedResource member, the bytes are kept as BlobResourceContents.
- ``CT-tool_use`` / ``CT-tool_result`` (schema/2025-11-25/schema.ts:1834, 1868) -> TextContent.
- ``CT-sampling-content-array`` (schema/2025-11-25/schema.ts:1683): an array where the target
  allows one block: one element -> that element; more -> one TextContent joining their texts.
- any other unknown ``type`` -> TextContent naming it (rule ``SCHEMA-undefined``).
- ``MCPX-profile-content``: a block whose type the receiver's revision defines but its host
  profile takes away (:mod:`mcpx_core.profiles`, e.g. an embedded resource in a prompt message for
  langchain-mcp-adapters 0.1): ``rewrite = "text"`` -> TextContent (:func:`describe`: a text
  resource's text, else a note); ``rewrite = "resource"`` -> EmbeddedResource (a resource_link as
  ``CT-resource_link`` makes it, an image or audio block as a blob resource keeping its bytes and
  mimeType), TextContent where the union has no EmbeddedResource or the profile takes that too.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson


from . import ids
from .api import UnionMiss, UnionTaken

if TYPE_CHECKING:
    from ..downgrade import Walk

_KEEP_ON_BLOCK = ("annotations", "_meta")

#: where this module's rewrite is not the one its revision-delta.json record's text gives, what it
#: does instead (``python -m mcpx log`` says this, not the record's text). ``CT-resource_link``: the
#: record says TextContent ("An EmbeddedResource is not possible: the contents are unknown"); the
#: shipped case B01 (cases/01-resource-link-to-older-client.json, from cline/cline#5208) expects an
#: EmbeddedResource whose ``text/plain`` text describes the link, so that the link's ``uri`` stays a
#: field the client can read; the schema allows both (schema/2025-03-26/schema.ts:654, :698). mcpx
#: follows the case, and gives the record's TextContent where the union has no EmbeddedResource.
AS_BUILT = {
    "CT-resource_link": "For 2024-11-05/2025-03-26 clients replace by an EmbeddedResource whose text/plain text "
                        "names the link (TextContent where none may stand)",
}


def base64_len(data: str) -> int:
    """Decoded size in bytes of a base64 string, computed without decoding it."""
    n = len(data)
    pad = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return max(0, n * 3 // 4 - pad)


def _carry(src: dict, dst: dict) -> dict:
    """``annotations`` and ``_meta`` of the replaced block, as the new block's own copies: the walk
    trims the new block's, the replaced one stays as it was logged."""
    for k in _KEEP_ON_BLOCK:
        if k in src:
            v = src[k]
            dst[k] = v.copy() if isinstance(v, (dict, list)) else v
    return dst


def link_text(block: dict) -> str:
    lines = [f"Resource link (content not embedded): {block.get('uri', '')}"]
    for key in ("name", "title", "description", "mimeType", "size"):
        if block.get(key) is not None:  # null for an optional member means absent (mcpx_core/repair.py)
            lines.append(f"{key}: {block[key]}")
    return "\n".join(lines)


def describe(block: Any) -> str:
    """A one-line text standing for a block the receiver cannot parse."""
    if not isinstance(block, dict):
        return f"[content omitted: {orjson.dumps(block).decode()[:200]}]"
    t = block.get("type")
    if t == "text":
        return str(block.get("text", ""))
    if t in ("audio", "image"):
        return f"[{t} content omitted: {block.get('mimeType', 'unknown type')}, {base64_len(str(block.get('data', '')))} bytes]"
    if t == "resource_link":
        return link_text(block)
    if t == "resource":
        res = block.get("resource") or {}
        return res.get("text") if isinstance(res.get("text"), str) else f"[resource {res.get('uri', '')} ({res.get('mimeType', '')}) omitted]"
    if t == "tool_use":
        inp = block.get("input")
        if inp == []:  # ToolUseContent.input is an object (schema/2025-11-25/schema.ts:1834): [] is {} (mcpx_core/repair.py)
            inp = {}
        return f"[tool_use id={block.get('id')} name={block.get('name')} input={orjson.dumps(inp).decode()}]"
    if t == "tool_result":
        inner = block.get("content") if isinstance(block.get("content"), list) else []
        err = ", error" if block.get("isError") else ""
        return f"[tool_result for {block.get('toolUseId')}{err}] " + "\n".join(describe(b) for b in inner)
    return f"[{t} content omitted by mcpx: not defined in this protocol revision]"


def content_miss(walk: Walk, value: Any, ptr: str, members: list, names: list) -> Any:
    """Replace a block (or block array) the target's content union does not accept. ``names``: the
    union's member definitions (None for inline members)."""
    if isinstance(value, list):
        if len(value) == 1:
            walk.log(ptr, "rewrite", "CT-sampling-content-array", value, value[0])
            return value[0]
        text = "\n\n".join(describe(b) for b in value)
        new = {"type": "text", "text": text}
        walk.log(ptr, "rewrite", "CT-sampling-content-array", value, new)
        return new
    new, rule = replacement(value, names, walk.options.get("audio"))
    # the replaced block leaves the message untouched (its annotations/_meta were copied); the new
    # one is walked next, so the record shows it as it is now: built again from the replaced block
    # when the record is first read (no copy per record, issue 16)
    walk.log(ptr, "rewrite", rule, value, walk.again(_replacement_block, value, names, walk.options.get("audio")), detached=True)
    return new


def replacement(value: dict, names: list, audio: Any = None) -> tuple[dict, str]:
    """(the block that stands for ``value`` in a content union of member definitions ``names``,
    the rule id): see the module docstring. ``audio``: the ``audio`` option ("embed" keeps an
    audio block's bytes in an EmbeddedResource). The new block has its own copies of the replaced
    one's ``annotations`` and ``_meta``; the same ``value`` always gives an equal block."""
    t = value.get("type")
    if t == "resource_link":
        if "EmbeddedResource" in names:
            new = {"type": "resource", "resource": {"uri": value.get("uri", ""), "mimeType": "text/plain", "text": link_text(value)}}
        else:
            new = {"type": "text", "text": link_text(value)}
        rule = "CT-resource_link"
    elif t == "audio":
        data = value.get("data")
        if audio == "embed" and "EmbeddedResource" in names and isinstance(data, str):
            digest = hashlib.sha256(data.encode()).hexdigest()[:16]
            new = {"type": "resource", "resource": {"uri": f"urn:mcpx:audio:{digest}", "mimeType": value.get("mimeType", "application/octet-stream"), "blob": data}}
        else:
            new = {"type": "text", "text": describe(value)}
        rule = "CT-audio"
    elif t in ("tool_use", "tool_result"):
        new = {"type": "text", "text": describe(value)}
        rule = f"CT-{t}"
    else:
        new = {"type": "text", "text": describe(value)}
        rule = ids.UNDEFINED
    return _carry(value, new), rule


def _replacement_block(value: dict, names: list, audio: Any) -> dict:
    return replacement(value, names, audio)[0]


#: rule id of a block a host profile takes away
PROFILE_RULE = "MCPX-profile-content"


def profile_taken(walk: Walk, value: dict, ptr: str, members: list, names: list, rewrite: str) -> dict:
    """Replace a block the receiver's revision defines but its host profile takes away (see the
    module docstring); one ``rewrite`` record naming the profile."""
    t = value.get("type")
    exclude = walk.exclude or {}
    embed = rewrite == "resource" and "EmbeddedResource" in names and "resource" not in exclude
    if embed and t == "resource_link":
        new = {"type": "resource", "resource": {"uri": value.get("uri", ""), "mimeType": "text/plain", "text": link_text(value)}}
    elif embed and t in ("audio", "image") and isinstance(value.get("data"), str):
        data = value["data"]
        digest = hashlib.sha256(data.encode()).hexdigest()[:16]
        new = {"type": "resource", "resource": {"uri": f"urn:mcpx:{t}:{digest}",
                                                "mimeType": value.get("mimeType", "application/octet-stream"), "blob": data}}
    else:
        new = {"type": "text", "text": describe(value)}
    _carry(value, new)
    profile = walk.profile.name if walk.profile is not None else None
    walk.log(ptr, "rewrite", PROFILE_RULE, value, new, profile=profile,
             detail=f"profile {profile}: the client does not parse {'an' if str(t)[:1] in 'aeiou' else 'a'} {t} block "
                    f"in a {walk.method} {walk.kind}")
    return new


RULES = [UnionMiss("content", content_miss), UnionTaken("content", profile_taken)]
