// An HTTP+SSE (2024-11-05 transport) client on npm @modelcontextprotocol/sdk 1.15.1 (SSEClientTransport), for mcpx tests.
//
//     node sse_client.mjs URL
//
// URL is the server's SSE endpoint (.../sse). Initializes, lists the tools, calls add(2, 3) and hi;
// prints ONE JSON line: {"server" (its name), "tools": [names], "add": content, "hi": content}.
// Exit 2 when it cannot connect or a call fails (the error on stderr).
import { Client } from "sdk-1.15.1/client/index.js";
import { SSEClientTransport } from "sdk-1.15.1/client/sse.js";

const url = process.argv[2];
const timer = setTimeout(() => { console.error("timeout after 20 s"); process.exit(2); }, 20000);
try {
  const client = new Client({ name: "mcpx-sse-client", version: "1.15.1" });
  await client.connect(new SSEClientTransport(new URL(url)));
  const tools = await client.listTools();
  const add = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  const hi = await client.callTool({ name: "hi", arguments: {} });
  console.log(JSON.stringify({ server: client.getServerVersion()?.name ?? null,
    tools: tools.tools.map((t) => t.name), add: add.content, hi: hi.content }));
  clearTimeout(timer);
  await client.close();
  process.exit(0);
} catch (e) {
  console.error(`${e?.name}: ${e?.message}`);
  process.exit(2);
}
