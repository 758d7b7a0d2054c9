"""The conformance suite's authorization scenarios (npm @modelcontextprotocol/conformance 0.1.16, ``client``
command): the suite starts its mock MCP and authorization servers and runs a client command given the MCP
URL; its checks judge what the servers received. The client is npm ``@modelcontextprotocol/sdk`` 1.25.0's
OAuth (tests/peers/auth_client.mjs), directly and through mitmdump + mcpx in regular mode
(``HTTP_PROXY``; tests/conformance/env_proxy.mjs gives Node 20's fetch the proxy): every check keeps its
status (the set of (check, status) pairs is the same both ways; mcpx's own discovery fetches are
requests the mock servers also count, so a check's count may differ, never its status).

Reverse mode cannot run them: the mock server's PRM names its own URL as ``resource`` (RFC 9728 §3.3), so
a current client in front of mcpx's URL refuses it (``Protected resource http://localhost:P/mcp does not
match expected http://127.0.0.1:Q/mcp``), as docs/authorization.md says of any such deployment.

Scenarios: a representative few of the 18 the suite lists for 2025-03-26 to 2025-11-25 (4-5 s each on 2
cores; each pair runs at once): ``auth/metadata-default`` (PRM, both leave it alone), and the two
2025-03-26 ones, where mcpx is in play: ``auth/2025-03-26-oauth-metadata-backcompat`` (origin metadata
whose issuer has a path: no PRM synthesized) and ``auth/2025-03-26-oauth-endpoint-fallback``.
"""
from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import conformance_lib as cl
import peers_lib as pl
from proxy_lib import Proxy

SUITE = "0.1.16"
SCENARIOS = ("auth/metadata-default", "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback")
HOOK = cl.CONFORMANCE_DIR / "env_proxy.mjs"

pytestmark = pytest.mark.skipif(bool(cl.suites_missing() or pl.peers_missing()), reason="conformance suite or peers not installed")


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    px = Proxy("", tmp_path_factory.mktemp("conformance-auth"), mode="regular")
    yield px
    px.stop()


def run_client(scenario: str, outdir: Path, proxy_port: int | None) -> list[dict]:
    client = f"{pl._node()} {pl.PEERS_DIR / 'auth_client.mjs'} sdk-1.25.0"
    if proxy_port is not None:
        client = f"env HTTP_PROXY=http://127.0.0.1:{proxy_port} NO_PROXY= {pl._node()} --import {HOOK} " \
                 f"{pl.PEERS_DIR / 'auth_client.mjs'} sdk-1.25.0"
    argv = [pl._node(), "--import", str(cl.SHIM), str(cl.entry(SUITE)), "client", "--command", client,
            "--scenario", scenario, "-o", str(outdir)]
    subprocess.run(argv, cwd=cl.SUITE_DIRS[SUITE], capture_output=True, timeout=120, env=pl._minimal_env())
    [checks] = list(outdir.glob("**/checks.json"))
    return json.loads(checks.read_text())


def verdicts(checks: list[dict]) -> set[tuple[str, str]]:
    return {(c["id"], c["status"]) for c in checks if c["status"] != "INFO"}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_auth_scenario_keeps_its_verdicts_through_mcpx(proxy, scenario, tmp_path):
    before = len(proxy.changes())
    with ThreadPoolExecutor(2) as pool:
        direct = pool.submit(run_client, scenario, tmp_path / "direct", None)
        through = pool.submit(run_client, scenario, tmp_path / "mcpx", proxy.port)
        direct, through = direct.result(), through.result()
    assert verdicts(direct) and all(s == "SUCCESS" for _, s in verdicts(direct)), direct
    assert verdicts(through) == verdicts(direct), (through, proxy.output()[-2000:])
    # the client's requests went through mcpx (the 401's OAuth error body: a passthrough record), and
    # no discovery document was served or rewritten for it
    new = proxy.changes()[before:]
    assert "PASSTHROUGH-error" in {r["rule"] for r in new}
    assert not [r for r in new if r["rule"].startswith("AUTH-")]
