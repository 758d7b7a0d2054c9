#!/usr/bin/env node
// Start @modelcontextprotocol/server-everything in Streamable HTTP mode, bound
// to 127.0.0.1 only.
//
//   node everything_server.cjs PORT [sse]
//
// Serves http://127.0.0.1:PORT/mcp (Streamable HTTP); with `sse`, the HTTP+SSE
// (2024-11-05) transport only: GET /sse, POST /message?sessionId=...  The package's transport calls
// `app.listen(PORT)` (express -> http.Server#listen(port, cb)), which binds
// every interface; we patch net.Server.prototype.listen *before* loading the
// (ESM) package so that any port-only listen call gets host 127.0.0.1.
//
// Run it with a minimal environment: the server's `get-env` tool returns
// process.env verbatim.  tests/peers_lib.py does that.
"use strict";
const net = require("node:net");
const path = require("node:path");
const { pathToFileURL } = require("node:url");

const HOST = "127.0.0.1";
const port = process.argv[2] || process.env.PORT;
if (!port || !/^\d+$/.test(String(port))) {
  console.error("usage: node everything_server.cjs PORT");
  process.exit(2);
}
process.env.PORT = String(port);
// The gzip-file-as-resource tool fetches URLs: only allow loopback hosts
// (data: URIs are always allowed and are what the scenarios use).
process.env.GZIP_ALLOWED_DOMAINS = process.env.GZIP_ALLOWED_DOMAINS || "127.0.0.1,localhost";

const origListen = net.Server.prototype.listen;
net.Server.prototype.listen = function patchedListen(...args) {
  // Forms: listen(port[, host][, backlog][, cb]), listen(options[, cb]),
  // listen(path[, cb]) (pipes: left alone).
  const first = args[0];
  if (first !== null && typeof first === "object" && !Array.isArray(first)) {
    args[0] = { ...first, host: HOST };
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] === "string") {
      args[1] = HOST;
    } else {
      args.splice(1, 0, HOST);
    }
  }
  return origListen.apply(this, args);
};

const entry = path.join(
  __dirname, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js",
);
// dist/index.js reads its transport from process.argv[2].
const transport = process.argv[3] === "sse" ? "sse" : "streamableHttp";
process.argv = [process.argv[0], entry, transport];

const shutdown = () => process.exit(0);
process.on("SIGTERM", shutdown);

import(pathToFileURL(entry).href).catch((err) => {
  console.error("failed to start server-everything:", err);
  process.exit(1);
});
