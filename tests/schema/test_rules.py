"""One or more exact cases per revision-delta record that mcpx applies.

Each case: the message as the sender wrote it, the sender's and receiver's revision, the
direction, the exact message delivered (None: not delivered) and the exact change records
(pointer, action, rule). ``scripts/rule_coverage.py`` reads this table to print which records
are tested. Revision names: A=2024-11-05, B=2025-03-26, C=2025-06-18, D=2025-11-25, E=2026-07-28.
"""
from __future__ import annotations

import copy

import orjson
import pytest

from mcpx_core.downgrade import classify, downgrade
from mcpx_core.rewrite import Exchange, Rewriter
from mcpx_core.rules.headers import request_headers
from mcpx_core.disposition import AnswerLocally, Forward
from mcpx_core.session import SessionTracker
from schema_check import message_errors

A, B, C, D, E = "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"


def res(result, id=1):
    return {"jsonrpc": "2.0", "id": id, "result": result}


def req(method, params, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def note(method, params):
    return {"jsonrpc": "2.0", "method": method, "params": params}


TOOL = {"name": "t", "inputSchema": {"type": "object"}}
TEXT = {"type": "text", "text": "hi"}

# (case id, from, to, direction, method, input, expected output, expected records)
CASES = [
    # -- envelope ------------------------------------------------------------------------------------
    ("RPC-error-id-optional", D, C, "s2c", "tools/call",
     {"jsonrpc": "2.0", "error": {"code": -32600, "message": "bad"}},
     {"jsonrpc": "2.0", "error": {"code": -32600, "message": "bad"}, "id": 1},
     [("/id", "rewrite", "RPC-error-id-optional")]),
    # -- _meta -----------------------------------------------------------------------------------------
    ("META-request-open-keys", C, B, "c2s", "tools/call",
     req("tools/call", {"name": "t", "_meta": {"progressToken": 5, "trace": "abc"}}),
     req("tools/call", {"name": "t", "_meta": {"progressToken": 5}}),
     [("/params/_meta/trace", "drop", "META-request-open-keys")]),
    ("META-on-content-blocks", C, B, "s2c", "tools/call",
     res({"content": [{**TEXT, "_meta": {"k": 1}}]}), res({"content": [TEXT]}),
     [("/result/content/0/_meta", "drop", "META-on-content-blocks")]),
    ("META-on-definitions", C, A, "s2c", "tools/list",
     res({"tools": [{**TOOL, "_meta": {"k": 1}}]}), res({"tools": [TOOL]}),
     [("/result/tools/0/_meta", "drop", "META-on-definitions")]),
    ("META-on-resource-contents", C, B, "s2c", "resources/read",
     res({"contents": [{"uri": "file:///a", "text": "x", "_meta": {"k": 1}}]}),
     res({"contents": [{"uri": "file:///a", "text": "x"}]}),
     [("/result/contents/0/_meta", "drop", "META-on-resource-contents")]),
    ("META-on-root", C, A, "c2s", "roots/list",
     res({"roots": [{"uri": "file:///r", "name": "r", "_meta": {"k": 1}}]}),
     res({"roots": [{"uri": "file:///r", "name": "r"}]}),
     [("/result/roots/0/_meta", "drop", "META-on-root")]),
    ("META-serverInfo", E, D, "s2c", "tools/call",
     res({"content": [TEXT], "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}, "x": 1}}),
     res({"content": [TEXT], "_meta": {"x": 1}}),
     [("/result/resultType", "drop", "RES-resultType"),
      ("/result/_meta/io.modelcontextprotocol~1serverInfo", "drop", "META-serverInfo")]),
    ("META-subscriptionId", E, D, "s2c", None,
     note("notifications/tools/list_changed", {"_meta": {"io.modelcontextprotocol/subscriptionId": "s1"}}),
     note("notifications/tools/list_changed", {"_meta": {}}),
     [("/params/_meta/io.modelcontextprotocol~1subscriptionId", "drop", "META-subscriptionId")]),
    ("META-related-task", D, C, "s2c", None,
     note("notifications/progress", {"progressToken": 1, "progress": 1, "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t"}}}),
     note("notifications/progress", {"progressToken": 1, "progress": 1, "_meta": {}}),
     [("/params/_meta/io.modelcontextprotocol~1related-task", "drop", "META-related-task")]),
    # -- result-level (2026) -----------------------------------------------------------------------------
    ("RES-resultType+RES-ttlMs+RES-cacheScope", E, D, "s2c", "tools/list",
     res({"tools": [TOOL], "resultType": "complete", "ttlMs": 1000, "cacheScope": "public"}),
     res({"tools": [TOOL]}),
     [("/result/resultType", "drop", "RES-resultType"), ("/result/ttlMs", "drop", "RES-ttlMs"),
      ("/result/cacheScope", "drop", "RES-cacheScope")]),
    ("RES-resultType input_required", E, D, "s2c", "tools/call",
     res({"resultType": "input_required", "requestState": "abc"}),
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "mcpx: result of type 'input_required' cannot be expressed for an MCP 2025-11-25 client"}},
     [("/result", "rewrite", "RES-resultType")]),
    # -- capabilities ----------------------------------------------------------------------------------
    ("CAP-server-completions", B, A, "s2c", "initialize",
     res({"protocolVersion": A, "capabilities": {"completions": {}, "tools": {}}, "serverInfo": {"name": "s", "version": "1"}}),
     res({"protocolVersion": A, "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}),
     [("/result/capabilities/completions", "drop", "CAP-server-completions")]),
    ("CAP-client-elicitation", C, B, "c2s", None,
     req("initialize", {"protocolVersion": B, "capabilities": {"elicitation": {}, "roots": {}}, "clientInfo": {"name": "c", "version": "1"}}),
     req("initialize", {"protocolVersion": B, "capabilities": {"roots": {}}, "clientInfo": {"name": "c", "version": "1"}}),
     [("/params/capabilities/elicitation", "drop", "CAP-client-elicitation")]),
    ("CAP-client-elicitation-modes form", D, C, "c2s", None,
     req("initialize", {"protocolVersion": C, "capabilities": {"elicitation": {"form": {}, "url": {}}}, "clientInfo": {"name": "c", "version": "1"}}),
     req("initialize", {"protocolVersion": C, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "c", "version": "1"}}),
     [("/params/capabilities/elicitation", "rewrite", "CAP-client-elicitation-modes")]),
    ("CAP-client-elicitation-modes url only", D, C, "c2s", None,
     req("initialize", {"protocolVersion": C, "capabilities": {"elicitation": {"url": {}}}, "clientInfo": {"name": "c", "version": "1"}}),
     req("initialize", {"protocolVersion": C, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
     [("/params/capabilities/elicitation", "drop", "CAP-client-elicitation-modes")]),
    ("CAP-client-sampling-context+tools", D, C, "c2s", None,
     req("initialize", {"protocolVersion": C, "capabilities": {"sampling": {"context": {}, "tools": {}}}, "clientInfo": {"name": "c", "version": "1"}}),
     # ClientCapabilities.sampling is an open object in schema/2025-06-18/schema.json (additionalProperties: true):
     # the schema tolerates the keys, so they are kept and logged (the delta says drop; the schema wins)
     req("initialize", {"protocolVersion": C, "capabilities": {"sampling": {"context": {}, "tools": {}}}, "clientInfo": {"name": "c", "version": "1"}}),
     [("/params/capabilities/sampling/context", "keep", "CAP-client-sampling-context"),
      ("/params/capabilities/sampling/tools", "keep", "CAP-client-sampling-tools")]),
    ("CAP-client-tasks", D, C, "c2s", None,
     req("initialize", {"protocolVersion": C, "capabilities": {"tasks": {"list": {}}}, "clientInfo": {"name": "c", "version": "1"}}),
     req("initialize", {"protocolVersion": C, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
     [("/params/capabilities/tasks", "drop", "CAP-client-tasks")]),
    ("CAP-server-tasks", D, C, "s2c", "initialize",
     res({"protocolVersion": C, "capabilities": {"tasks": {"list": {}}}, "serverInfo": {"name": "s", "version": "1"}}),
     res({"protocolVersion": C, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
     [("/result/capabilities/tasks", "drop", "CAP-server-tasks")]),
    ("CAP-extensions", E, D, "s2c", "server/discover",
     None, None, []),  # placeholder replaced below (discover is 2026-only); see test_cap_extensions
    # -- implementation ---------------------------------------------------------------------------------
    ("IMPL-title+icons+description+websiteUrl", D, B, "s2c", "initialize",
     res({"protocolVersion": B, "capabilities": {}, "serverInfo": {"name": "s", "version": "1", "title": "S", "icons": [{"src": "https://e/i.png"}],
                                                                  "description": "d", "websiteUrl": "https://e"}}),
     res({"protocolVersion": B, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
     [("/result/serverInfo/title", "drop", "IMPL-title"), ("/result/serverInfo/icons", "drop", "IMPL-icons"),
      ("/result/serverInfo/description", "drop", "IMPL-description"), ("/result/serverInfo/websiteUrl", "drop", "IMPL-websiteUrl")]),
    # -- tools ----------------------------------------------------------------------------------------
    ("TOOL-annotations+TOOL-title 2024", C, A, "s2c", "tools/list",
     res({"tools": [{**TOOL, "title": "T", "annotations": {"readOnlyHint": True}}]}), res({"tools": [TOOL]}),
     [("/result/tools/0/title", "drop", "TOOL-title"), ("/result/tools/0/annotations", "drop", "TOOL-annotations")]),
    ("TOOL-title 2025-03-26", C, B, "s2c", "tools/list",
     res({"tools": [{**TOOL, "title": "T", "annotations": {"readOnlyHint": True}}]}),
     res({"tools": [{**TOOL, "annotations": {"readOnlyHint": True, "title": "T"}}]}),
     [("/result/tools/0/title", "rewrite", "TOOL-title")]),
    ("TOOL-outputSchema", C, B, "s2c", "tools/list",
     res({"tools": [{**TOOL, "outputSchema": {"type": "object"}}]}), res({"tools": [TOOL]}),
     [("/result/tools/0/outputSchema", "drop", "TOOL-outputSchema")]),
    ("TOOL-outputSchema-any", E, D, "s2c", "tools/list",
     res({"tools": [{**TOOL, "outputSchema": {"type": "array", "items": {"type": "number"}}}], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}),
     res({"tools": [TOOL]}),
     [("/result/tools/0/outputSchema", "drop", "TOOL-outputSchema-any"), ("/result/resultType", "drop", "RES-resultType"),
      ("/result/ttlMs", "drop", "RES-ttlMs"), ("/result/cacheScope", "drop", "RES-cacheScope")]),
    ("TOOL-inputSchema-$schema+open", D, C, "s2c", "tools/list",
     res({"tools": [{"name": "t", "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                                                  "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}}}]}),
     res({"tools": [{"name": "t", "inputSchema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                                                  "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}}}]}),
     [("/result/tools/0/inputSchema/$schema", "keep", "TOOL-inputSchema-$schema"),
      ("/result/tools/0/inputSchema", "keep", "TOOL-inputSchema-open")]),
    ("TOOL-execution+TOOL-icons", D, C, "s2c", "tools/list",
     res({"tools": [{**TOOL, "execution": {"taskSupport": "optional"}, "icons": [{"src": "https://e/i.png"}]}]}), res({"tools": [TOOL]}),
     [("/result/tools/0/execution", "drop", "TOOL-execution"), ("/result/tools/0/icons", "drop", "TOOL-icons")]),
    # -- prompts / resources ---------------------------------------------------------------------------
    ("PROMPT-title+argument-title+icons", D, B, "s2c", "prompts/list",
     res({"prompts": [{"name": "p", "title": "P", "icons": [{"src": "https://e/i.png"}], "arguments": [{"name": "a", "title": "A"}]}]}),
     res({"prompts": [{"name": "p", "arguments": [{"name": "a"}]}]}),
     [("/result/prompts/0/title", "drop", "PROMPT-title"), ("/result/prompts/0/icons", "drop", "PROMPT-icons"),
      ("/result/prompts/0/arguments/0/title", "drop", "PROMPT-argument-title")]),
    ("RESOURCE-title+icons", D, B, "s2c", "resources/list",
     res({"resources": [{"uri": "file:///a", "name": "a", "title": "A", "icons": [{"src": "https://e/i.png"}]}]}),
     res({"resources": [{"uri": "file:///a", "name": "a"}]}),
     [("/result/resources/0/title", "drop", "RESOURCE-title"), ("/result/resources/0/icons", "drop", "RESOURCE-icons")]),
    ("RESOURCE-title templates", C, A, "s2c", "resources/templates/list",
     res({"resourceTemplates": [{"uriTemplate": "file:///{x}", "name": "a", "title": "A"}]}),
     res({"resourceTemplates": [{"uriTemplate": "file:///{x}", "name": "a"}]}),
     [("/result/resourceTemplates/0/title", "drop", "RESOURCE-title")]),
    # -- annotations / content ----------------------------------------------------------------------------
    ("ANN-lastModified", C, B, "s2c", "tools/call",
     res({"content": [{**TEXT, "annotations": {"priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"}}]}),
     res({"content": [{**TEXT, "annotations": {"priority": 0.5}}]}),
     [("/result/content/0/annotations/lastModified", "drop", "ANN-lastModified")]),
    ("CT-audio prompt", B, A, "s2c", "prompts/get",
     res({"messages": [{"role": "user", "content": {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}}]}),
     res({"messages": [{"role": "user", "content": {"type": "text", "text": "[audio content omitted: audio/wav, 3 bytes]"}}]}),
     [("/result/messages/0/content", "rewrite", "CT-audio")]),
    ("CT-resource_link sampling", C, B, "s2c", "prompts/get",
     res({"messages": [{"role": "user", "content": {"type": "resource_link", "uri": "file:///a", "name": "a"}}]}),
     res({"messages": [{"role": "user", "content": {"type": "resource", "resource": {
         "uri": "file:///a", "mimeType": "text/plain", "text": "Resource link (content not embedded): file:///a\nname: a"}}}]}),
     [("/result/messages/0/content", "rewrite", "CT-resource_link")]),
    ("CT-tool_use+CT-tool_result+CT-sampling-content-array", D, C, "s2c", None,
     req("sampling/createMessage", {"maxTokens": 10, "messages": [
         {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "f", "input": {"x": 1}}]},
         {"role": "user", "content": {"type": "tool_result", "toolUseId": "u1", "content": [TEXT]}}]}),
     req("sampling/createMessage", {"maxTokens": 10, "messages": [
         {"role": "assistant", "content": {"type": "text", "text": "[tool_use id=u1 name=f input={\"x\":1}]"}},
         {"role": "user", "content": {"type": "text", "text": "[tool_result for u1] hi"}}]}),
     [("/params/messages/0/content", "rewrite", "CT-sampling-content-array"),
      ("/params/messages/0/content", "rewrite", "CT-tool_use"),
      ("/params/messages/1/content", "rewrite", "CT-tool_result")]),
    ("CT-sampling-content-array result", D, C, "c2s", "sampling/createMessage",
     res({"role": "assistant", "model": "m", "content": [TEXT, {"type": "text", "text": "there"}]}),
     res({"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi\n\nthere"}}),
     [("/result/content", "rewrite", "CT-sampling-content-array")]),
    ("SC-structuredContent-any", E, D, "s2c", "tools/call",
     res({"content": [], "structuredContent": [1, 2], "resultType": "complete"}),
     res({"content": [{"type": "text", "text": "[1,2]"}]}),
     [("/result/content/0", "rewrite", "SC-structuredContent-any"), ("/result/structuredContent", "drop", "SC-structuredContent-any"),
      ("/result/resultType", "drop", "RES-resultType")]),
    ("SC-structuredContent already in text", C, A, "s2c", "tools/call",
     res({"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"a": 1}}),
     res({"content": [{"type": "text", "text": "{\"a\": 1}"}]}),
     [("/result/structuredContent", "drop", "SC-structuredContent")]),
    # -- completion ---------------------------------------------------------------------------------------
    ("COMP-context+COMP-ref-prompt-title", C, B, "c2s", None,
     req("completion/complete", {"ref": {"type": "ref/prompt", "name": "p", "title": "P"}, "argument": {"name": "a", "value": "x"},
                                 "context": {"arguments": {"b": "y"}}}),
     req("completion/complete", {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "x"}}),
     [("/params/ref/title", "drop", "COMP-ref-prompt-title"), ("/params/context", "drop", "COMP-context")]),
    ("COMP-values-max", C, C, "s2c", "completion/complete",
     res({"completion": {"values": [str(i) for i in range(105)]}}),
     res({"completion": {"values": [str(i) for i in range(100)], "hasMore": True}}),
     [("/result/completion/values", "rewrite", "COMP-values-max")]),
    # -- elicitation ----------------------------------------------------------------------------------------
    ("ELIC-request", C, B, "s2c", None,
     req("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}), None,
     [("", "drop-message", "ELIC-request")]),
    ("ELIC-mode-field+requestedSchema-$schema+defaults", D, C, "s2c", None,
     req("elicitation/create", {"mode": "form", "message": "m", "requestedSchema": {
         "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {
             "s": {"type": "string", "default": "x"}, "e": {"type": "string", "enum": ["a", "b"], "default": "a"}}}}),
     req("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "properties": {
         "s": {"type": "string"}, "e": {"type": "string", "enum": ["a", "b"]}}}}),
     [("/params/mode", "drop", "ELIC-mode-field"), ("/params/requestedSchema/$schema", "drop", "ELIC-requestedSchema-$schema"),
      ("/params/requestedSchema/properties/s/default", "drop", "ELIC-default-string-number"),
      ("/params/requestedSchema/properties/e/default", "drop", "ELIC-enum-untitled-single-default")]),
    ("ELIC-enum-titled-single+ELIC-enum-multi optional", D, C, "s2c", None,
     req("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "required": ["c"], "properties": {
         "c": {"type": "string", "title": "Color", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
         "m": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}}}}),
     req("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "required": ["c"], "properties": {
         "c": {"type": "string", "title": "Color", "enum": ["r", "g"], "enumNames": ["Red", "Green"]}}}}),
     [("/params/requestedSchema/properties/c", "rewrite", "ELIC-enum-titled-single"),
      ("/params/requestedSchema/properties/m", "drop", "ELIC-enum-multi")]),
    ("ELIC-enum-multi required", D, C, "s2c", None,
     req("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "required": ["m"], "properties": {
         "m": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}}}}), None,
     [("/params/requestedSchema/properties/m", "drop-message", "ELIC-enum-multi")]),
    ("ELIC-url-mode+ELIC-elicitationId", D, C, "s2c", None,
     req("elicitation/create", {"mode": "url", "message": "m", "url": "https://e/x", "elicitationId": "e1"}), None,
     [("/params/mode", "drop-message", "ELIC-url-mode")]),
    ("ELIC-result-array-values", D, C, "c2s", "elicitation/create",
     res({"action": "accept", "content": {"m": ["x", "y"], "n": 1}}),
     res({"action": "accept", "content": {"m": "x,y", "n": 1}}),
     [("/result/content/m", "rewrite", "ELIC-result-array-values")]),
    ("ELIC-complete-notification", D, C, "s2c", None,
     note("notifications/elicitation/complete", {"elicitationId": "e1"}), None,
     [("", "drop-message", "ELIC-complete-notification")]),
    ("ELIC-url-required-error", D, C, "s2c", "tools/call",
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32042, "message": "Authorization required", "data": {"elicitations": [
         {"mode": "url", "message": "Sign in", "url": "https://e/login", "elicitationId": "e1"}]}}},
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Authorization required: Sign in https://e/login", "data": {"elicitations": [
         {"mode": "url", "message": "Sign in", "url": "https://e/login", "elicitationId": "e1"}]}}},
     [("/error", "rewrite", "ELIC-url-required-error")]),
    ("ELIC-task+TASK-param", D, C, "s2c", None,
     req("elicitation/create", {"message": "m", "task": {"ttl": 5}, "requestedSchema": {"type": "object", "properties": {}}}),
     req("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}),
     [("/params/task", "drop", "ELIC-task")]),
    # -- sampling -----------------------------------------------------------------------------------------
    ("SAMP-tools+toolChoice+message-meta+task", D, C, "s2c", None,
     req("sampling/createMessage", {"maxTokens": 5, "messages": [{"role": "user", "content": TEXT, "_meta": {"k": 1}}],
                                    "tools": [TOOL], "toolChoice": {"mode": "auto"}, "task": {"ttl": 5}}),
     req("sampling/createMessage", {"maxTokens": 5, "messages": [{"role": "user", "content": TEXT}]}),
     [("/params/messages/0/_meta", "drop", "SAMP-message-meta"), ("/params/tools", "drop", "SAMP-tools"),
      ("/params/toolChoice", "drop", "SAMP-toolChoice"), ("/params/task", "drop", "SAMP-task")]),
    ("SAMP-stopReason-toolUse", D, C, "c2s", "sampling/createMessage",
     res({"role": "assistant", "model": "m", "content": {"type": "tool_use", "id": "u", "name": "f", "input": {}}, "stopReason": "toolUse"}),
     res({"role": "assistant", "model": "m", "content": {"type": "text", "text": "[tool_use id=u name=f input={}]"}, "stopReason": "endTurn"}),
     [("/result/stopReason", "rewrite", "SAMP-stopReason-toolUse"), ("/result/content", "rewrite", "CT-tool_use")]),
    # -- progress / cancellation ----------------------------------------------------------------------------
    ("PROG-message", B, A, "s2c", None,
     note("notifications/progress", {"progressToken": 1, "progress": 1, "message": "m"}),
     note("notifications/progress", {"progressToken": 1, "progress": 1}),
     [("/params/message", "drop", "PROG-message")]),
    ("CANCEL-requestId-optional", D, C, "s2c", None,
     note("notifications/cancelled", {"reason": "r"}), None,
     [("/params/requestId", "drop-message", "CANCEL-requestId-optional")]),
    # -- tasks ----------------------------------------------------------------------------------------------
    ("TASK-param", D, C, "c2s", None,
     req("tools/call", {"name": "t", "task": {"ttl": 5}}), req("tools/call", {"name": "t"}),
     [("/params/task", "drop", "TASK-param")]),
    ("TASK-create-result", D, C, "s2c", "tools/call",
     res({"task": {"taskId": "t", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 5}}),
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "mcpx: a task result cannot be expressed for an MCP 2025-06-18 peer"}},
     [("/result", "rewrite", "TASK-create-result")]),
    ("TASK-method-get", D, C, "c2s", None, req("tasks/get", {"taskId": "t"}), None, [("", "drop-message", "TASK-method-get")]),
    ("TASK-method-result", D, C, "c2s", None, req("tasks/result", {"taskId": "t"}), None, [("", "drop-message", "TASK-method-result")]),
    ("TASK-method-list", D, C, "c2s", None, req("tasks/list", {}), None, [("", "drop-message", "TASK-method-list")]),
    ("TASK-method-cancel", D, C, "s2c", None, req("tasks/cancel", {"taskId": "t"}), None, [("", "drop-message", "TASK-method-cancel")]),
    ("TASK-status-notification", D, C, "s2c", None,
     note("notifications/tasks/status", {"taskId": "t", "status": "working"}), None, [("", "drop-message", "TASK-status-notification")]),
    ("TASK-extension-2026+CAP-extensions", E, D, "s2c", "initialize",
     res({"protocolVersion": D, "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}, "serverInfo": {"name": "s", "version": "1"}}),
     res({"protocolVersion": D, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
     [("/result/capabilities/extensions", "drop", "CAP-extensions")]),
    # -- error codes ------------------------------------------------------------------------------------------
    ("ERR-header-mismatch", E, D, "s2c", "tools/call",
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "mismatch"}},
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "mismatch"}}, [("/error/code", "rewrite", "ERR-header-mismatch")]),
    ("ERR-missing-client-capability", E, D, "s2c", "tools/call",
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "need", "data": {"requiredCapabilities": {"sampling": {}}}}},
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "need", "data": {"requiredCapabilities": {"sampling": {}}}}},
     [("/error/code", "rewrite", "ERR-missing-client-capability")]),
    ("ERR-unsupported-protocol-version+LC-unsupported-version", E, D, "s2c", "tools/call",
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "v", "data": {"supported": [E], "requested": D}}},
     {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "v", "data": {"supported": [E], "requested": D}}},
     [("/error/code", "rewrite", "ERR-unsupported-protocol-version")]),
]
CASES = [c for c in CASES if c[5] is not None]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_rule(case):
    name, frm, to, direction, method, message, expected, records = case
    msg = copy.deepcopy(message)
    kind = classify(msg)
    out = downgrade(msg, kind, method if kind in ("result", "error") else msg.get("method"), frm, to, direction, request_id=1)
    assert [c.key() for c in out.changes] == records
    assert out.message == expected
    if expected is not None and "error" not in expected:
        answers = method if "result" in expected else None
        assert message_errors(to, expected, answers) == []
    # a second pass over the delivered message changes nothing (idempotence)
    if out.message is not None:
        again = downgrade(copy.deepcopy(out.message), classify(out.message), method if kind in ("result", "error") else msg.get("method"),
                          to, to, direction, request_id=1)
        assert again.message == out.message and all(c.action == "keep" for c in again.changes)


def test_reject_answers_sender():
    out = downgrade(copy.deepcopy(req("elicitation/create", {"message": "m", "requestedSchema": {"type": "object", "properties": {}}})),
                    "request", "elicitation/create", C, B, "s2c")
    assert out.reply == {"code": -32601, "message": "Method not found: elicitation/create (not defined in MCP 2025-03-26; answered by mcpx)"}


def _exchange(client_rev: str, server_rev: str) -> tuple[Rewriter, Exchange]:
    store = SessionTracker()
    s = store.create("s1")
    s.client_rev, s.server_rev = client_rev, server_rev
    return Rewriter(store), Exchange(flow_id="f", session=s, is_mcp=True)


def test_batch_response_split_for_non_batch_client():
    """RPC-batch-response: an SSE event carrying a batch reaches a 2025-06-18 client as one event per message."""
    from mcpx_core.framing.sse import SSEParser
    rw, exch = _exchange(C, C)
    exch.request_ids.update({1: "tools/call", 2: "tools/call"})
    body = b'id: 9\ndata: [{"jsonrpc":"2.0","id":1,"result":{"content":[]}},{"jsonrpc":"2.0","id":2,"result":{"content":[]}}]\n\n'
    out = rw.sse(exch).whole(body)
    assert out == (b'data: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n'
                   b'id: 9\ndata: {"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n\n')
    assert [c.key() for c in exch.changes] == [("", "split", "RPC-batch-response")]
    p = SSEParser()
    assert len(p.feed(out)) == 2


def test_batch_kept_for_2025_03_26_client():
    rw, exch = _exchange(B, B)
    exch.request_ids.update({1: "tools/call", 2: "tools/call"})
    body = b'[{"jsonrpc":"2.0","id":1,"result":{"content":[]}},{"jsonrpc":"2.0","id":2,"result":{"content":[]}}]'
    assert rw.response_json(exch, body) is None and exch.changes == []


def test_priming_event_dropped_for_old_clients():
    """TR-sse-priming-polling: a 2025-11-25 priming event (id + empty data) never reaches an older client."""
    rw, exch = _exchange(C, C)
    out = rw.sse(exch).whole(b"id: p1\nretry: 100\ndata:\n\n")
    assert out == b": mcpx: message not delivered to this client revision\n\n"
    assert [c.key() for c in exch.changes] == [("", "drop-message", "TR-sse-priming-polling")]
    rw, exch = _exchange(D, D)
    assert rw.sse(exch).whole(b"id: p1\nretry: 100\ndata:\n\n") == b"id: p1\nretry: 100\ndata:\n\n"


def test_client_request_the_server_lacks_is_answered_locally():
    """TASK-method-get c2s: a client leg newer than the server leg (a bridged session): the client's POST
    is answered by mcpx with -32601; nothing reaches the server."""
    rw, exch = _exchange(D, C)
    got = rw.request(exch, "POST", b'{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t"}}',
                     {"Mcp-Session-Id": "s1", "MCP-Protocol-Version": D})
    assert isinstance(got, AnswerLocally) and got.status == 200 and orjson.loads(got.body) == {"jsonrpc": "2.0", "id": 3, "error": {
        "code": -32601, "message": "Method not found: tasks/get (not defined in MCP 2025-06-18; answered by mcpx)"}}
    assert [(c.key(), c.from_rev, c.to_rev) for c in exch.changes] == [
        (("header:MCP-Protocol-Version", "rewrite", "TR-protocol-version-header"), D, C),
        (("", "drop-message", "TASK-method-get"), D, C)]


def test_same_revision_client_request_is_never_answered_by_mcpx():
    """Both legs speak one revision: a method that revision lacks goes to the server untouched (it
    answers with its own HTTP status and error); mcpx is invisible."""
    rw, exch = _exchange(C, C)
    body = b'{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t"}}'
    got = rw.request(exch, "POST", body, {"Mcp-Session-Id": "s1", "MCP-Protocol-Version": C})
    assert got == Forward(None, {}, ()) and exch.changes == []


def test_header_rules():
    sets, removes, changes = request_headers(
        {"MCP-Protocol-Version": D, "Mcp-Method": "tools/call", "Mcp-Name": "t", "Mcp-Param-Region": "eu", "Authorization": "Bearer x"}, D, C)
    assert sets == {"MCP-Protocol-Version": C}
    assert removes == ["Mcp-Method", "Mcp-Name", "Mcp-Param-Region"]
    assert [c.key() for c in changes] == [("header:MCP-Protocol-Version", "rewrite", "TR-protocol-version-header"),
                                          ("header:Mcp-Method", "drop", "TR-mcp-method-name"), ("header:Mcp-Name", "drop", "TR-mcp-method-name"),
                                          ("header:Mcp-Param-Region", "drop", "TR-mcp-param-headers")]
    assert all("Bearer" not in (c.before or "") + (c.after or "") for c in changes)


def test_protocol_version_header_when_legs_agree_and_differ():
    """TR-protocol-version-header: both legs on one revision: the header goes as sent, whatever it
    says (the server judges it); legs that differ: a missing header is added toward a 2025-06-18+
    server (upgrade direction), none toward an older one."""
    assert request_headers({"MCP-Protocol-Version": B}, D, D) == ({}, [], [])
    assert request_headers({}, D, D) == ({}, [], [])
    sets, removes, changes = request_headers({}, B, C)
    assert sets == {"MCP-Protocol-Version": C} and removes == []
    assert [(c.key(), c.before, c.after) for c in changes] == [
        (("header:MCP-Protocol-Version", "synthesize", "TR-protocol-version-header"), None, C)]
    assert request_headers({}, A, B) == ({}, [], [])


def test_lenient_keeps_tolerated_fields_but_rewrites_union_members():
    msg = res({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}], "structuredContent": {"a": 1}})
    out = downgrade(msg, "result", "tools/call", C, B, "s2c", policy="lenient")
    assert out.message == res({"content": [{"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain",
                                                                              "text": "Resource link (content not embedded): file:///a\nname: a"}},
                                            {"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}})
    assert [(c.key(), c.detail) for c in out.changes] == [
        (("/result/content/1", "rewrite", "SC-structuredContent"), None),
        (("/result/content/0", "rewrite", "CT-resource_link"), None),
        (("/result/structuredContent", "keep", "SC-structuredContent"), "not defined by the receiver's revision; kept (lenient policy)")]


def test_lenient_logs_every_field_it_keeps():
    """Each field the receiver's revision does not define is delivered under lenient with a keep
    record under the rule id strict drops it with (README, Troubleshooting: keep)."""
    tool = {"name": "t", "title": "T", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
            "annotations": {"title": "A", "readOnlyHint": True}, "icons": [{"src": "https://e/i.png"}]}
    strict = downgrade(res({"tools": [dict(tool)]}), "result", "tools/list", D, A, "s2c")
    lenient = downgrade(res({"tools": [dict(tool)]}), "result", "tools/list", D, A, "s2c", policy="lenient")
    assert lenient.message == res({"tools": [tool]})
    dropped = [c.key() for c in strict.changes if c.action == "drop"]
    assert dropped and all(p.startswith("/result/tools/0/") for p, _, _ in dropped)
    assert sorted((p, "keep", r) for p, _, r in dropped) == sorted(c.key() for c in lenient.changes)
    assert {c.detail for c in lenient.changes} == {"not defined by the receiver's revision; kept (lenient policy)"}


def test_result_of_unknown_request_is_typed_by_fit():
    """A result whose request mcpx never saw is walked as the best-fitting ServerResult member."""
    msg = res({"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]}, id=99)
    out = downgrade(msg, "result", None, C, B, "s2c")
    assert out.message == res({"content": [{"type": "resource", "resource": {
        "uri": "file:///a", "mimeType": "text/plain", "text": "Resource link (content not embedded): file:///a\nname: a"}}]}, id=99)
    assert [c.key() for c in out.changes] == [("/result/content/0", "rewrite", "CT-resource_link")]


def test_upgrade_direction_toward_a_2026_client():
    """Across eras (a legacy server's answers for a 2026-07-28 client, rules/upgrade.py): what 2026-07-28
    requires is added (RES-resultType, and RES-ttlMs / RES-cacheScope where the result definition requires
    them), and the legacy resource-not-found -32002 becomes -32602 (ERR-resource-not-found)."""
    out = downgrade(res({"tools": []}), "result", "tools/list", D, E, "s2c")
    assert out.message == res({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
    assert [(c.key(), c.after) for c in out.changes] == [
        (("/result/resultType", "synthesize", "RES-resultType"), '"complete"'),
        (("/result/ttlMs", "synthesize", "RES-ttlMs"), "0"),
        (("/result/cacheScope", "synthesize", "RES-cacheScope"), '"private"')]
    out = downgrade(res({"content": []}), "result", "tools/call", C, E, "s2c")
    assert out.message == res({"content": [], "resultType": "complete"})
    err = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Resource not found", "data": {"uri": "x:/y"}}}
    out = downgrade(copy.deepcopy(err), "error", "resources/read", D, E, "s2c")
    assert out.message == {**err, "error": {**err["error"], "code": -32602}}
    assert [(c.key(), c.before, c.after) for c in out.changes] == [(("/error/code", "rewrite", "ERR-resource-not-found"), "-32002", "-32602")]
    # same era: nothing added (a 2026 server's answer to a 2026 client is what it is)
    assert downgrade(res({"tools": []}), "result", "tools/list", E, E, "s2c").changes == []
