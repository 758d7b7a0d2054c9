// node --import tests/conformance/env_proxy.mjs CLIENT ...: the client's fetch goes through the HTTP proxy
// that HTTP_PROXY names (Node 20's fetch reads no proxy variable). undici is the conformance suite's own
// dependency, installed beside it (tests/conformance/node_modules); tests/e2e/test_conformance_auth.py
// points the suite's client scenarios through mitmdump + mcpx in regular mode with it.
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const { setGlobalDispatcher, EnvHttpProxyAgent } = await import(pathToFileURL(join(here, "node_modules", "undici", "index.js")).href);
setGlobalDispatcher(new EnvHttpProxyAgent());
