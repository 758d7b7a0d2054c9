"""OAuth-protected MCP servers, directly and through mcpx (reverse mode), with real SDKs on loopback.

The servers are the released PyPI ``mcp`` SDK's own auth support (tests/peers/auth_server.py):

- *current*: ``mcp`` 1.12.4, an authorization server of the SDK's routes on one port and resource
  servers (``AuthSettings.resource_server_url``, ``TokenVerifier``: Protected Resource Metadata,
  RFC 9728) on others: one whose public URL is its own (run directly), one whose public URL is
  mcpx's (mcpx deployed at the server's public URL: the reverse-mode case that works);
- *legacy*: ``mcp`` 1.8.1, RFC 8414 metadata and the endpoints at the MCP server's origin, no PRM.

The clients are the npm SDKs' own OAuth (tests/peers/auth_client.mjs: ``StreamableHTTPClientTransport``
with an ``authProvider``, a headless redirect handler, ``finishAuth``): ``sdk-1.10.2`` (2025-03-26
discovery: ``client/auth.js`` ``discoverOAuthMetadata`` at the origin, then ``/register`` there),
``sdk-1.25.0`` (PRM first) and ``@modelcontextprotocol/client`` 2.4.0 (PRM, issuer checks), and PyPI
``mcp`` 1.9.4's ``OAuthClientProvider`` (2025-03-26 discovery; tests/peers/auth_py_client.py). Each run logs in, lists the tools and calls ``whoami`` and ``link`` (a
``resource_link`` block, rewritten for the 2025-03-26-era client). The authorization servers log
each request's method, path and parameter names (never values), and list every token, code and
client secret they issued: the last test greps everything mcpx kept for them.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request

import pytest

import peers_lib as pl
from proxy_lib import Proxy, free_port

pytestmark = pytest.mark.skipif(bool(pl.peers_missing()), reason="peers not installed (scripts/setup_peers.sh)")

RUNS: dict[str, dict] = {}  # the client reports, by name, for the secrets test
PROXIES: list[Proxy] = []


def _wait(ports: list[int], proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    for port in ports:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"auth server exited: {proc.stdout.read().decode(errors='replace')[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"auth server did not listen on {port}")
                time.sleep(0.05)


def _server(version: str, *args: str) -> subprocess.Popen:
    py = pl.VENVS_DIR / f"mcp-{version}" / "bin" / "python"
    return subprocess.Popen([str(py), str(pl.PEERS_DIR / "auth_server.py"), *args], cwd=pl.PEERS_DIR,
                            env=pl._minimal_env({"PYTHONUNBUFFERED": "1"}), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def run(name: str, alias: str, url: str) -> dict:
    out = subprocess.run([pl._node(), str(pl.PEERS_DIR / "auth_client.mjs"), alias, url], cwd=pl.PEERS_DIR,
                         env=pl._client_env(None), capture_output=True, timeout=90)
    rep = json.loads(out.stdout.decode().strip().splitlines()[-1])
    RUNS[name] = rep
    return rep


STRICT_PROFILES = ('[profiles."strict-issuer"]\ndescription = "a client that checks the issuer (test)"\n'
                   'source = "tests/e2e/test_authorization.py"\n'
                   'match = { client_name = "mcpx-auth-test", client_version = "1.0.0" }\noauth_issuer_check = true\n')


@pytest.fixture(scope="module")
def deployments(tmp_path_factory):
    """Every server and mcpx of the module, started together (their start-ups overlap; each test reads its own):

    - *current*: the authorization server, a resource server at its own URL, one behind mcpx (public URL =
      mcpx's), and a second mcpx in front of that one with a host profile that checks the issuer;
    - *legacy*: the 2025-03-26-era server (origin metadata, no PRM), and mcpx in front of it;
    - *regular*: the current deployment over TLS (the suite's test CA, tests/tls_lib.py: a TLS front before
      each port), and mitmdump in regular mode; the client uses it as HTTPS proxy and trusts mitmproxy's CA."""
    from concurrent.futures import ThreadPoolExecutor

    from tls_lib import ThrowawayCA, TLSFront
    tmp = tmp_path_factory.mktemp("auth")
    a, b, b2, c, d, ra, rb = (free_port() for _ in range(7))
    ca = ThrowawayCA(tmp)
    fa, fb = TLSFront(ca, ra), TLSFront(ca, rb)
    issuer, public = f"https://127.0.0.1:{fa.port}", f"https://127.0.0.1:{fb.port}"
    procs = {"current": _server("1.12.4", "current", str(a), f"{b}=http://127.0.0.1:{b}/", f"{b2}=http://127.0.0.1:{c}/"),
             "legacy": _server("1.8.1", "legacy", str(d)),
             "regular": _server("1.12.4", "current", f"{ra}={issuer}/", f"{rb}={public}/")}
    profiles = tmp / "strict.toml"
    profiles.write_text(STRICT_PROFILES)
    starts = {"current": lambda: Proxy(f"http://127.0.0.1:{b2}", tmp, port=c, tag="-current"),
              "strict": lambda: Proxy(f"http://127.0.0.1:{b2}", tmp, tag="-strict", options={"mcpx_profiles": profiles}),
              "legacy": lambda: Proxy(f"http://127.0.0.1:{d}", tmp, tag="-legacy"),
              "regular": lambda: Proxy("", tmp, mode="regular", tag="-regular",
                                       options={"ssl_verify_upstream_trusted_ca": ca.ca_pem})}
    try:
        with ThreadPoolExecutor(2) as pool:  # (two at a time: a loaded 2-core machine starts four slowly)
            running = {k: pool.submit(f) for k, f in starts.items()}
        pxs = {k: f.result() for k, f in running.items() if f.exception() is None}
        PROXIES.extend(pxs.values())  # (stopped below even when another failed to start)
        for f in running.values():
            if f.exception() is not None:
                raise f.exception()
        _wait([a, b, b2], procs["current"])
        _wait([d], procs["legacy"])
        _wait([ra, rb], procs["regular"])
        yield {"current": {"as": f"http://127.0.0.1:{a}", "direct": f"http://127.0.0.1:{b}/mcp", "px": pxs["current"],
                           "strict": pxs["strict"]},
               "legacy": {"as": f"http://127.0.0.1:{d}", "direct": f"http://127.0.0.1:{d}/mcp", "px": pxs["legacy"]},
               "regular": {"as": f"http://127.0.0.1:{ra}", "issuer": issuer, "url": f"{public}/mcp", "ca": ca,
                           "px": pxs["regular"]}}
    finally:
        for px in PROXIES:
            px.stop()
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(10)
        fa.stop()
        fb.stop()


@pytest.fixture(scope="module")
def current(deployments):
    return deployments["current"]


@pytest.fixture(scope="module")
def legacy(deployments):
    return deployments["legacy"]


@pytest.fixture(scope="module")
def regular(deployments):
    return deployments["regular"]


def _auth_records(px: Proxy) -> list[dict]:
    return [{k: r[k] for k in ("pointer", "action", "rule", "before", "direction")} for r in px.changes()
            if r["rule"].startswith("AUTH-")]


def _as_log(base: str, since: int) -> list[dict]:
    return [e for e in _get(f"{base}/_log")[since:] if e["path"] != "/mcp" and not e["path"].startswith("/mcp/")]


def test_old_client_fails_directly_and_logs_in_through_mcpx(current):
    direct = current["direct"]
    mcp, asrv, via = direct.rsplit("/", 1)[0], current["as"], current["px"].url.rsplit("/", 1)[0]
    rep = run("1.10.2-direct", "sdk-1.10.2", direct)
    assert rep["ok"] is False and rep["error"] == "Dynamic client registration failed: HTTP 404"
    assert rep["fetches"] == [f"POST {mcp}/mcp", f"GET {mcp}/.well-known/oauth-authorization-server", f"POST {mcp}/register"]
    start = len(_get(f"{asrv}/_log"))
    rep = run("1.10.2-mcpx", "sdk-1.10.2", current["px"].url)
    assert rep["ok"] is True, rep
    assert rep["tools"] == ["link", "whoami"] and rep["whoami"][0]["text"].startswith("client ")
    assert rep["link"] == [{"type": "resource", "resource": {
        "uri": "file:///tmp/auth-link.txt", "mimeType": "text/plain",
        "text": "Resource link (content not embedded): file:///tmp/auth-link.txt\nname: auth-link"}}]
    # the origin metadata mcpx served named the real authorization server: registration, authorization
    # and the token request went there, from the client
    assert rep["fetches"][:6] == [f"POST {via}/mcp", f"GET {via}/.well-known/oauth-authorization-server",
                                  f"POST {asrv}/register", f"GET {asrv}/authorize",
                                  f"GET {via}/.well-known/oauth-authorization-server", f"POST {asrv}/token"]
    assert [(e["method"], e["path"], e["params"]) for e in _as_log(asrv, start)] == [
        ("GET", "/.well-known/oauth-authorization-server", []),  # mcpx's own fetch, once: cached after
        ("POST", "/register", ["json"]),
        ("GET", "/authorize", ["client_id", "code_challenge", "code_challenge_method", "redirect_uri", "response_type"]),
        ("POST", "/token", ["form:client_id", "form:client_secret", "form:code", "form:code_verifier", "form:grant_type",
                            "form:redirect_uri"])]
    recs = _auth_records(current["px"])
    assert recs == [{"pointer": "", "action": "synthesize", "rule": "AUTH-origin-metadata", "before": "HTTP 404",
                     "direction": "s2c"}] * 2
    served = [r for r in current["px"].changes() if r["rule"] == "AUTH-origin-metadata"][0]
    assert served["after"].startswith(f'{{issuer: "{asrv}/", authorization_endpoint: "{asrv}/authorize", ')
    assert any(r["rule"] == "CT-resource_link" and r["action"] == "rewrite" for r in current["px"].changes())


@pytest.mark.parametrize("alias", ["sdk-1.25.0", "client-2.4.0"])
def test_current_client_logs_in_through_mcpx_as_directly(current, alias):
    """npm ``@modelcontextprotocol/sdk`` 1.25.0 (PRM first) and ``@modelcontextprotocol/client`` 2.4.0
    (PRM, then the issuer checks: the metadata's ``issuer`` against the discovery URL, RFC 8414 §3.3, and
    the authorization server bound to the callback leg, SEP-2352) log in through mcpx exactly as
    directly: the same requests to the authorization server, the same fetches, no AUTH- record."""
    asrv = current["as"]
    start = len(_get(f"{asrv}/_log"))
    direct = run(f"{alias}-direct", alias, current["direct"])
    mid = len(_get(f"{asrv}/_log"))
    before = len(current["px"].changes())
    through = run(f"{alias}-mcpx", alias, current["px"].url)
    assert direct["ok"] is True and through["ok"] is True, (direct, through)
    assert direct["link"] == through["link"] == [{"name": "auth-link", "uri": "file:///tmp/auth-link.txt", "type": "resource_link"}]
    log_direct, log_through = _as_log(asrv, start)[: mid - start], _as_log(asrv, mid)
    assert log_direct == log_through  # the same requests to the authorization server
    # 2.4.0 keeps the discovery state it bound to the callback leg: no second metadata fetch before /token
    again = ["/.well-known/oauth-authorization-server"] if alias == "sdk-1.25.0" else []
    assert [e["path"] for e in log_direct] == ["/.well-known/oauth-authorization-server", "/register", "/authorize",
                                               *again, "/token"]
    mcp, via = current["direct"].rsplit("/", 1)[0], current["px"].url.rsplit("/", 1)[0]
    assert through["fetches"] == [f.replace(mcp, via) for f in direct["fetches"]]
    assert not [r for r in current["px"].changes()[before:] if r["rule"].startswith("AUTH-")]  # invisible


def test_a_client_whose_profile_checks_the_issuer_logs_in_by_the_default_endpoints(current):
    """A host profile with ``oauth_issuer_check = true`` for the client (its 401'd initialize's clientInfo;
    :data:`STRICT_PROFILES`, on the module's second mcpx in front of the current server): mcpx serves it
    no other server's metadata at the origin (the server's 404 stands, as directly), and the client's
    2025-03-26 fallback to the default endpoints is redirected to the authorization server: it logs in
    with no document whose issuer it could reject."""
    asrv, px = current["as"], current["strict"]
    via = px.url.rsplit("/", 1)[0]
    rep = run("strict-mcpx", "sdk-1.10.2", px.url)
    assert rep["ok"] is True, rep
    assert rep["fetches"][:7] == [f"POST {via}/mcp", f"GET {via}/.well-known/oauth-authorization-server",
                                  f"POST {via}/register", f"GET {via}/authorize", f"GET {asrv}/authorize",
                                  f"GET {via}/.well-known/oauth-authorization-server", f"POST {via}/token"]
    assert [(r["rule"], r["after"]) for r in px.changes() if r["rule"].startswith("AUTH-")] == [
        ("AUTH-default-endpoint", f"HTTP 307 {asrv}/register"), ("AUTH-default-endpoint", f"HTTP 302 {asrv}/authorize"),
        ("AUTH-default-endpoint", f"HTTP 307 {asrv}/token")]


def test_current_client_in_front_of_legacy_server(legacy):
    origin, via = legacy["as"], legacy["px"].url.rsplit("/", 1)[0]
    direct = run("legacy-direct", "sdk-1.25.0", legacy["direct"])
    assert direct["ok"] is True  # directly only through the 2025-03-26 fallback that newer SDKs remove:
    assert direct["fetches"][1:4] == [f"GET {origin}/.well-known/oauth-protected-resource/mcp",
                                      f"GET {origin}/.well-known/oauth-protected-resource",
                                      f"GET {origin}/.well-known/oauth-authorization-server"]
    rep = run("legacy-mcpx", "sdk-1.25.0", legacy["px"].url)
    assert rep["ok"] is True, rep
    assert rep["whoami"][0]["text"].startswith("client ")
    # the 401 named the PRM mcpx synthesized; it named the server's own issuer: no fallback needed
    assert rep["fetches"][1:5] == [f"GET {via}/.well-known/oauth-protected-resource/mcp",
                                   f"GET {origin}/.well-known/oauth-authorization-server",
                                   f"POST {origin}/register", f"GET {origin}/authorize"]
    # a 2026-07-28-era client (issuer checks: RFC 8414 §3.3 on the metadata, SEP-2352 on the callback leg)
    modern = run("legacy-2026-mcpx", "client-2.4.0", legacy["px"].url)
    assert modern["ok"] is True, modern
    assert modern["fetches"][2:6] == [f"GET {via}/.well-known/oauth-protected-resource/mcp",
                                      f"GET {origin}/.well-known/oauth-authorization-server",
                                      f"POST {origin}/register", f"GET {origin}/authorize"]
    recs = [r for r in legacy["px"].changes() if r["rule"].startswith("AUTH-")]
    assert [(r["rule"], r["pointer"], r["after"]) for r in recs[:3]] == [
        ("AUTH-resource-metadata", "header:WWW-Authenticate", f'resource_metadata="{via}/.well-known/oauth-protected-resource/mcp"'),
        ("AUTH-protected-resource", "", f'{{resource: "{via}/mcp", authorization_servers: ["{origin}/"], '
                                        f'bearer_methods_supported: ["header"]}}'),
        ("AUTH-protected-resource", "", f'{{resource: "{via}/mcp", authorization_servers: ["{origin}/"], '
                                        f'bearer_methods_supported: ["header"]}}')]
    assert [(r["rule"], r["pointer"], r["after"]) for r in recs[3:]] == [
        (r["rule"], r["pointer"], r["after"]) for r in recs[:2]]  # client-2.4.0: the challenge and one PRM (it keeps it)


def run_py(name: str, url: str, env: dict[str, str]) -> dict:
    py = pl.VENVS_DIR / "mcp-1.9.4" / "bin" / "python"
    out = subprocess.run([str(py), str(pl.PEERS_DIR / "auth_py_client.py"), url], cwd=pl.PEERS_DIR,
                         env=pl._client_env(env), capture_output=True, timeout=90)
    rep = json.loads(out.stdout.decode().strip().splitlines()[-1])
    RUNS[name] = rep
    return rep


def test_regular_mode_old_python_client_over_tls(regular):
    """PyPI mcp 1.9.4 (``OAuthClientProvider``: 2025-03-26 discovery at the origin) in front of the current
    server over TLS: directly it cannot log in; through mitmdump as its HTTPS proxy every URL stays the
    server's, mcpx serves the origin metadata there, and the resource_link is rewritten for it."""
    import pathlib
    direct = run_py("regular-direct", regular["url"], {"SSL_CERT_FILE": str(regular["ca"].ca_pem)})
    assert direct["ok"] is False and direct["error"] == "HTTPStatusError: Registration failed: 404", direct
    proxied = {"HTTPS_PROXY": f"http://127.0.0.1:{regular['px'].port}",
               "SSL_CERT_FILE": str(pathlib.Path("~/.mitmproxy/mitmproxy-ca-cert.pem").expanduser())}
    rep = run_py("regular-mcpx", regular["url"], proxied)
    assert rep["ok"] is True, (rep, regular["px"].output()[-3000:])
    assert rep["protocolVersion"] == "2025-03-26" and rep["tools"] == ["link", "whoami"]
    assert rep["link"] == [{"type": "resource", "resource": {
        "uri": "file:///tmp/auth-link.txt", "mimeType": "text/plain",
        "text": "Resource link (content not embedded): file:///tmp/auth-link.txt\nname: auth-link"}}]
    served = [r for r in regular["px"].changes() if r["rule"] == "AUTH-origin-metadata"]
    assert len(served) == 1 and served[0]["after"].startswith(f'{{issuer: "{regular["issuer"]}/", ')
    assert any(r["rule"] == "CT-resource_link" for r in regular["px"].changes())


def test_no_token_code_or_secret_in_anything_mcpx_kept(current, legacy, regular):
    """Every token, code and client secret the authorization servers issued in this module's runs is
    absent from the change logs, mitmdump's output (the terminal lines), the flow metadata and
    comments mcpx wrote, and mcpx's own discovery fetches (no Authorization or Cookie header at all; the
    initialize mcpx forwards on the client's behalf carries the client's, as the client sent it)."""
    assert {"1.10.2-mcpx", "sdk-1.25.0-mcpx", "client-2.4.0-mcpx", "legacy-mcpx", "regular-mcpx"} <= set(RUNS), "run with the module's other tests"
    issued = _get(f"{current['as']}/_secrets") + _get(f"{legacy['as']}/_secrets") + _get(f"{regular['as']}/_secrets")
    assert len(issued) >= 12  # codes, access and refresh tokens, client secrets of six logins
    for px in PROXIES:
        px.stop()
    kept = []
    own = 0
    for px in PROXIES:
        kept += [px.log_path.read_text(), px.output()]
        for f in px.flows():
            meta = f.metadata.get("mcpx")
            kept += [json.dumps(meta, default=str), f.comment or ""]
            if isinstance(meta, dict) and meta.get("purpose") == "authorization discovery":
                own += 1
                assert "authorization" not in f.request.headers and "cookie" not in f.request.headers
    assert own >= 4  # mcpx's own discovery fetches
    text = "\n".join(kept)
    assert "AUTH-origin-metadata" in text and "AUTH-protected-resource" in text  # what was looked at
    leaked = [s[:6] for s in issued if s in text]
    assert leaked == []
    assert "Bearer at-" not in text
