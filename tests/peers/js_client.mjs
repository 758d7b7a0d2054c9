#!/usr/bin/env node
// Generic MCP client over Streamable HTTP, for any installed TypeScript SDK.
//
//   node js_client.mjs <alias> <url> <ops.json> [options.json]
//
// <alias>: sdk-1.10.2 | sdk-1.12.3 | sdk-1.13.0 | sdk-1.25.0 (npm aliases of
//   @modelcontextprotocol/sdk) or client-2.4.0 (@modelcontextprotocol/client).
// <ops.json>: path to a JSON list of operations ("-" = read it from stdin):
//   {"op":"listTools"} {"op":"callTool","name":"x","arguments":{},"progress":true} ("cancelAfterMs":N: cancel it after N ms)
//   {"op":"listPrompts"} {"op":"getPrompt","name":"x","arguments":{}}
//   {"op":"listResources"} {"op":"readResource","uri":"..."}
//   {"op":"listResourceTemplates"} {"op":"ping"}
//   {"op":"listen","filter":{"toolsListChanged":true,"resourceSubscriptions":["uri"]},"key":"k"}
//     (client-2.4.0 on a 2026-07-28 connection: opens subscriptions/listen; result =
//     the honoredFilter; "key" names the subscription, default "default")
//   {"op":"waitNotification","method":"notifications/tools/list_changed","count":1,"timeoutMs":5000}
//     (waits until that many such notifications arrived; result = those notifications)
//   {"op":"unlisten","key":"k"} (closes the subscription: client-2.4.0 aborts the stream AND
//     POSTs notifications/cancelled for the listen id)
//   {"op":"discover"} (client-2.4.0: server/discover)
//   {"op":"sleep","ms":200}
//   {"op":"subscribeResource","uri":"..."} {"op":"unsubscribeResource","uri":"..."}
//   {"op":"setLoggingLevel","level":"info"} (legacy sessions)
//   {"op":"signal","path":"/tmp/x"} {"op":"waitFor","path":"/tmp/y","timeoutMs":60000}  (control ops for tests)
// [options.json]: optional JSON text, e.g. {"elicitation":"decline"} (default
//   "accept"), {"versionNegotiation":"auto"} or {"versionNegotiation":"pin:2026-07-28"}
//   (client-2.4.0 only), {"roots":[{"uri":"file:///x","name":"x"}]} (declare the roots
//   capability and answer roots/list with these), {"sampling":false} / {"elicitationCapability":false}
//   (do not declare that capability), {"autoFulfill":false} (client-2.4.0: an input_required
//   result surfaces as an error instead of being fulfilled), {"elicitationDelayMs":2000} (answer
//   each elicitation that much later, as a user would), {"handlerTag":"x"} (the sampling reply's text and
//   an elicitation's "name" value: a value only the client's own handlers give), {"transport":"sse"} (the
//   SDK's SSEClientTransport: HTTP+SSE, the 2024-11-05 transport; with {"lastEventId":true} its
//   EventSource reconnects with Last-Event-ID, sdk 1.10.2 only), {"transport":"mcp-remote",
//   "mcpRemote":"sse-only"|"http-only"} (the SDK's StdioClientTransport to mcp-remote 0.1.16, a released
//   stdio <-> remote proxy, started as `mcp-remote <url> --transport <mcpRemote>`; it talks to <url>).
//
// Every op goes through the SDK's own high-level call, so its own schema
// validation runs. Prints ONE JSON line on stdout:
//   {"sdk":..., "protocolVersion":..., "results":[{"op","ok":true,"result"} |
//    {"op","ok":false,"error","code"}], "serverRequests":[...]}
// Exit 0 once connected (op failures are reported, not fatal); 2 on usage or
// connection failure (a JSON line with "error" is still printed).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
// Keep stdout for the single result line: SDK chatter goes to stderr.
console.log = console.error;
console.info = console.error;

const [alias, url, opsPath, optionsText] = process.argv.slice(2);
if (!alias || !url || !opsPath) {
  console.error("usage: node js_client.mjs <alias> <url> <ops.json|-> [options-json]");
  process.exit(2);
}
const options = optionsText ? JSON.parse(optionsText) : {};
const ops = JSON.parse(readFileSync(opsPath === "-" ? 0 : opsPath, "utf8"));

const modern = alias.startsWith("client-");
const nm = join(here, "node_modules");
const esm = (p) => import(pathToFileURL(join(nm, p)).href);
const sdkVersion = JSON.parse(
  readFileSync(join(nm, modern ? "@modelcontextprotocol/client" : alias, "package.json"), "utf8"),
).version;

let Client, StreamableHTTPClientTransport, types = {};
if (modern) {
  const req = createRequire(join(nm, "@modelcontextprotocol/client/package.json"));
  const mod = await import(pathToFileURL(req.resolve("@modelcontextprotocol/client")).href);
  ({ Client, StreamableHTTPClientTransport } = mod);
} else {
  ({ Client } = await esm(`${alias}/dist/esm/client/index.js`));
  ({ StreamableHTTPClientTransport } = await esm(`${alias}/dist/esm/client/streamableHttp.js`));
  types = await esm(`${alias}/dist/esm/types.js`);
}

const canElicit = modern || Boolean(types.ElicitRequestSchema);
const serverRequests = []; // server->client requests seen by our handlers
const notifications = []; // change notifications seen by our handlers (listen streams, GET stream)

// A plausible value for one property of a (2025-06-18 / 2025-11-25) elicitation schema.
function sampleValue(name, prop) {
  if (prop.default !== undefined) return prop.default;
  if (Array.isArray(prop.enum) && prop.enum.length) return prop.enum[0];
  if (Array.isArray(prop.oneOf) && prop.oneOf.length) return prop.oneOf[0].const;
  switch (prop.type) {
    case "boolean":
      return true;
    case "integer":
    case "number":
      return prop.minimum ?? 1;
    case "array": {
      const items = prop.items || {};
      const opts = items.enum || (items.anyOf || items.oneOf || []).map((o) => o.const);
      return opts.length ? [opts[0]] : [];
    }
    default:
      switch (prop.format) {
        case "email":
          return "test@example.com";
        case "uri":
          return "https://example.com/";
        case "date":
          return "2000-01-01";
        case "date-time":
          return "2000-01-01T00:00:00Z";
        default:
          return name === "name" ? (options.handlerTag || "Test User") : "test";
      }
  }
}

async function elicitAnswer(params) {
  serverRequests.push({ method: "elicitation/create", params });
  if (options.elicitationDelayMs) await new Promise((r) => setTimeout(r, options.elicitationDelayMs));
  const mode = options.elicitation || "accept";
  if (mode !== "accept") return { action: mode };
  if (params.mode === "url") return { action: "accept" };
  const props = params.requestedSchema?.properties || {};
  const content = {};
  for (const [k, v] of Object.entries(props)) content[k] = sampleValue(k, v);
  return { action: "accept", content };
}

function samplingAnswer(params) {
  serverRequests.push({ method: "sampling/createMessage", params });
  return {
    role: "assistant",
    content: { type: "text", text: options.handlerTag || "mcpx test sampling reply" },
    model: "mcpx-test-model",
    stopReason: "endTurn",
  };
}

function rootsAnswer(params) {
  serverRequests.push({ method: "roots/list", params });
  return { roots: options.roots };
}

const canSample = options.sampling !== false;
const useElicit = canElicit && options.elicitationCapability !== false;
const capabilities = {};
if (canSample) capabilities.sampling = {};
if (useElicit) capabilities.elicitation = {};
if (Array.isArray(options.roots)) capabilities.roots = {};
const clientOpts = { capabilities };
if (modern && options.versionNegotiation) {
  const m = options.versionNegotiation;
  clientOpts.versionNegotiation = { mode: typeof m === "string" && m.startsWith("pin:") ? { pin: m.slice(4) } : m };
}
if (modern && options.autoFulfill === false) clientOpts.inputRequired = { autoFulfill: false };
const client = new Client({ name: "mcpx-js-client", version: sdkVersion }, clientOpts);
const NOTIFICATION_METHODS = [
  "notifications/tools/list_changed",
  "notifications/prompts/list_changed",
  "notifications/resources/list_changed",
  "notifications/resources/updated",
  "notifications/message",
];
const onNotification = async (n) => {
  notifications.push({ method: n.method, ...(n.params === undefined ? {} : { params: n.params }) });
};
if (modern) {
  if (useElicit) client.setRequestHandler("elicitation/create", async (req) => elicitAnswer(req.params));
  if (canSample) client.setRequestHandler("sampling/createMessage", async (req) => samplingAnswer(req.params));
  if (Array.isArray(options.roots)) client.setRequestHandler("roots/list", async (req) => rootsAnswer(req.params));
  for (const m of NOTIFICATION_METHODS) client.setNotificationHandler(m, onNotification);
} else {
  if (useElicit) client.setRequestHandler(types.ElicitRequestSchema, async (req) => elicitAnswer(req.params));
  if (canSample) client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => samplingAnswer(req.params));
  if (Array.isArray(options.roots)) client.setRequestHandler(types.ListRootsRequestSchema, async (req) => rootsAnswer(req.params));
  const schemas = {
    "notifications/tools/list_changed": types.ToolListChangedNotificationSchema,
    "notifications/prompts/list_changed": types.PromptListChangedNotificationSchema,
    "notifications/resources/list_changed": types.ResourceListChangedNotificationSchema,
    "notifications/resources/updated": types.ResourceUpdatedNotificationSchema,
    "notifications/message": types.LoggingMessageNotificationSchema,
  };
  for (const m of NOTIFICATION_METHODS) if (schemas[m]) client.setNotificationHandler(schemas[m], onNotification);
}

// options.transport "sse": the 2024-11-05 HTTP+SSE transport (SSEClientTransport of the same SDK)
let transport;
if (options.transport === "sse") {
  const { SSEClientTransport } = modern ? await import(pathToFileURL(createRequire(join(nm, "@modelcontextprotocol/client/package.json")).resolve("@modelcontextprotocol/client")).href)
    : await esm(`${alias}/dist/esm/client/sse.js`);
  // {"lastEventId":true}: the SDK's eventSourceInit with a fetch that keeps the EventSource's own headers
  // (Accept, and Last-Event-ID when it reconnects): the SDK's default fetch replaces them (sse.js of 1.10.2)
  transport = new SSEClientTransport(new URL(url), options.lastEventId ? { eventSourceInit: { fetch: (u, init) => fetch(u, init) } } : undefined);
} else if (options.transport === "mcp-remote") {
  // (mcp-remote passes every message through as it is, but for a suffix to the initialize's clientInfo.name)
  const { StdioClientTransport } = await esm(`${alias}/dist/esm/client/stdio.js`);
  transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(nm, "mcp-remote", "dist", "proxy.js"), url, "--transport", options.mcpRemote || "sse-only"],
    env: { PATH: process.env.PATH || "", HOME: process.env.HOME || "", MCP_REMOTE_CONFIG_DIR: process.env.MCP_REMOTE_CONFIG_DIR || "" },
    stderr: "inherit",
  });
} else {
  transport = new StreamableHTTPClientTransport(new URL(url));
}
// Record the negotiated revision from the initialize result, whatever the SDK.
let negotiated = null;
let onmessage;
Object.defineProperty(transport, "onmessage", {
  configurable: true,
  get: () => onmessage,
  set: (h) => {
    onmessage = h && ((msg, ...rest) => {
      if (negotiated === null && msg && msg.result && typeof msg.result.protocolVersion === "string") {
        negotiated = msg.result.protocolVersion;
      }
      return h(msg, ...rest);
    });
  },
});

const errInfo = (e) => {
  const r = { error: e && e.message ? e.message : String(e) };
  if (e && e.code !== undefined) r.code = e.code;
  return r;
};

try {
  await client.connect(transport);
} catch (e) {
  out({ sdk: alias, version: sdkVersion, protocolVersion: negotiated, results: [], ...errInfo(e) });
  process.exit(2);
}
if (typeof client.getNegotiatedProtocolVersion === "function") {
  negotiated = client.getNegotiatedProtocolVersion() ?? negotiated;
}

const subscriptions = new Map(); // listen key -> McpSubscription

async function waitNotification(op) {
  const count = op.count ?? 1;
  const deadline = Date.now() + (op.timeoutMs ?? 5000);
  for (;;) {
    const seen = notifications.filter((n) => !op.method || n.method === op.method);
    if (seen.length >= count) return { notifications: seen };
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} x ${op.method ?? "any notification"}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function runOp(op) {
  const reqOpts = op.timeoutMs ? { timeout: op.timeoutMs } : {};
  switch (op.op) {
    case "listen": {
      const sub = await client.listen(op.filter || { toolsListChanged: true }, reqOpts);
      subscriptions.set(op.key ?? "default", sub);
      sub.closed.then((cause) => notifications.push({ method: "(listen closed)", key: op.key ?? "default", cause }));
      return { honoredFilter: sub.honoredFilter };
    }
    case "unlisten": {
      const sub = subscriptions.get(op.key ?? "default");
      if (!sub) throw new Error(`no subscription ${op.key ?? "default"}`);
      await sub.close();
      subscriptions.delete(op.key ?? "default");
      return {};
    }
    case "waitNotification":
      return waitNotification(op);
    case "discover":
      return client.discover(reqOpts);
    case "sleep":
      await new Promise((r) => setTimeout(r, op.ms ?? 100));
      return {};
    case "signal": // control op: create the file op.path (a test waits for it)
      writeFileSync(op.path, "");
      return {};
    case "waitFor": { // control op: wait until the file op.path exists (a test creates it)
      const deadline = Date.now() + (op.timeoutMs ?? 60000);
      while (!existsSync(op.path)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${op.path}`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return {};
    }
    case "listTools":
      return client.listTools(op.params, reqOpts);
    case "callTool": {
      const progress = [];
      if (op.progress) reqOpts.onprogress = (p) => progress.push(p);
      if (op.cancelAfterMs) {  // cancel the call (the SDK sends notifications/cancelled and rejects it)
        const ac = new AbortController();
        setTimeout(() => ac.abort("cancelled by the test"), op.cancelAfterMs);
        reqOpts.signal = ac.signal;
      }
      const params = { name: op.name, arguments: op.arguments || {} };
      const r = modern ? await client.callTool(params, reqOpts) : await client.callTool(params, undefined, reqOpts);
      return op.progress ? { ...r, __progress: progress } : r;
    }
    case "listPrompts":
      return client.listPrompts(op.params, reqOpts);
    case "getPrompt":
      return client.getPrompt({ name: op.name, arguments: op.arguments || {} }, reqOpts);
    case "listResources":
      return client.listResources(op.params, reqOpts);
    case "readResource":
      return client.readResource({ uri: op.uri }, reqOpts);
    case "listResourceTemplates":
      return client.listResourceTemplates(op.params, reqOpts);
    case "ping":
      return client.ping(reqOpts);
    case "subscribeResource":
      return client.subscribeResource({ uri: op.uri }, reqOpts);
    case "unsubscribeResource":
      return client.unsubscribeResource({ uri: op.uri }, reqOpts);
    case "setLoggingLevel":
      return client.setLoggingLevel(op.level || "info", reqOpts);
    default:
      throw new Error(`unknown op ${JSON.stringify(op.op)}`);
  }
}

const results = [];
for (const op of ops) {
  const entry = { op: op.op };
  for (const k of ["id", "name", "uri"]) if (op[k] !== undefined) entry[k] = op[k];
  try {
    entry.result = await runOp(op);
    entry.ok = true;
  } catch (e) {
    entry.ok = false;
    Object.assign(entry, errInfo(e));
  }
  results.push(entry);
}

for (const sub of subscriptions.values()) {
  try {
    await sub.close();
  } catch {
    /* ignore */
  }
}
try {
  if (typeof transport.terminateSession === "function") await transport.terminateSession();
} catch {
  /* server may not support DELETE */
}
try {
  await client.close();
} catch {
  /* ignore */
}
out({ sdk: alias, version: sdkVersion, protocolVersion: negotiated, results, serverRequests, notifications });
process.exit(0);
