#!/usr/bin/env node
// An OAuth-logging-in MCP client on an installed TypeScript SDK's own auth support.
//
//   node auth_client.mjs <alias> <url>
//
// <alias>: sdk-1.10.2 (2025-03-26 discovery: RFC 8414 metadata at the MCP server's origin, else
//   /authorize, /token, /register there), sdk-1.25.0 (RFC 9728 Protected Resource Metadata first) or
//   client-2.4.0 (@modelcontextprotocol/client: PRM, and the issuer checks of RFC 8414 §3.3 and RFC 9207).
// The SDK's StreamableHTTPClientTransport with an in-memory OAuthClientProvider: the first request
// gets 401, the SDK discovers, registers (RFC 7591) and asks to redirect; the headless redirect
// handler follows the authorize URL with HTTP GETs (redirect: manual, as a browser would, until the
// redirect to redirect_uri) and takes the code from that Location; transport.finishAuth(code) exchanges it; then a new connection lists the tools and
// calls "whoami" and "link".
// Prints ONE JSON line: {"sdk", "ok", "error"?, "tools"?, "whoami"?, "link"?, "fetches": [...]}.
// "fetches": every URL the SDK fetched (method and URL without the query), in order. No token,
// code or secret is ever printed.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
console.log = console.error;
const [alias, url] = process.argv.slice(2);
let Client, StreamableHTTPClientTransport;
if (alias === "client-2.4.0") {  // @modelcontextprotocol/client (2026-07-28 era)
  const req = createRequire(join(here, "node_modules", "@modelcontextprotocol/client/package.json"));
  ({ Client, StreamableHTTPClientTransport } = await import(pathToFileURL(req.resolve("@modelcontextprotocol/client")).href));
} else {
  const esm = (p) => import(pathToFileURL(join(here, "node_modules", alias, "dist/esm", p)).href);
  ({ Client } = await esm("client/index.js"));
  ({ StreamableHTTPClientTransport } = await esm("client/streamableHttp.js"));
}

const fetches = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const u = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  fetches.push(`${(init && init.method) || "GET"} ${u.origin}${u.pathname}`);
  return realFetch(input, init);
};

const redirectUrl = "http://127.0.0.1:9/callback";
let pending = null;
const store = {};
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: `mcpx-auth-test ${alias}`, redirect_uris: [redirectUrl], grant_types: ["authorization_code", "refresh_token"],
             response_types: ["code"], token_endpoint_auth_method: "client_secret_post" };
  },
  clientInformation() { return store.client; },
  saveClientInformation(c) { store.client = c; },
  tokens() { return store.tokens; },
  saveTokens(t) { store.tokens = t; },
  redirectToAuthorization(u) { pending = u; },
  saveCodeVerifier(v) { store.verifier = v; },
  codeVerifier() { return store.verifier; },
  // client-2.4.0 (SEP-2352): the authorization server bound to the callback leg, checked on finishAuth
  saveDiscoveryState(d) { store.discovery = d; },
  discoveryState() { return store.discovery; },
};

const out = { sdk: alias, ok: false };
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: "mcpx-auth-test", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return { client, transport };
};
try {
  let conn;
  try {
    conn = await connect();
  } catch (e) {
    if (!pending) throw e;
    // the user agent: follow the authorization server's redirects until the one to redirect_uri
    let at = String(pending), loc = null;
    for (let hops = 0; hops < 5 && !loc; hops++) {
      const r = await realFetch(at, { redirect: "manual" });
      fetches.push(`GET ${new URL(at).origin}${new URL(at).pathname}`);
      const next = r.headers.get("location");
      if (!next) throw new Error(`authorize answered HTTP ${r.status} without a redirect`);
      if (next.startsWith(redirectUrl)) loc = next;
      else at = new URL(next, at).href;
    }
    if (!loc) throw new Error("authorize never redirected to redirect_uri");
    const code = new URL(loc).searchParams.get("code");
    if (!code) throw new Error(`authorize redirected without a code: ${new URL(loc).searchParams.get("error")}`);
    const t = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    await t.finishAuth(code);
    conn = await connect();
  }
  const { client } = conn;
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.whoami = (await client.callTool({ name: "whoami", arguments: {} })).content;
  try {
    out.link = (await client.callTool({ name: "link", arguments: {} })).content;
  } catch (e) {
    out.link = { error: String(e && e.message ? e.message : e).slice(0, 200) };
  }
  out.ok = true;
  await client.close();
} catch (e) {
  out.error = String(e && e.message ? e.message : e).slice(0, 300);
}
out.fetches = fetches;
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
