"""The authorization stage (addon/mcpx_core/auth) on plain values: exact answers, records and fetches.

A scripted ``fetch`` (a dict of URL -> answer) stands for the origin and the authorization
server; it records every URL mcpx asks for, so the cache and the order of discovery are asserted.
Sources: 2025-03-26 ``basic/authorization`` §2.3.2-2.3.3 (origin metadata, default endpoints),
2025-06-18 ``basic/authorization`` "Authorization Server Discovery", RFC 8414 §3.1, RFC 9728 §3.1 and
§5.1, RFC 9111 §5.2.2.
"""

from __future__ import annotations

import asyncio

import orjson
import pytest

from mcpx_core.auth import Challenge, Discovery, FetchError, Fetched, Keep, Redirect, Seen, Serve
from mcpx_core.auth import wellknown as wk

MCP = "http://127.0.0.1:9000"  # the MCP server's origin
AS = "http://127.0.0.1:9100"  # the authorization server its PRM names
MCPX = "http://127.0.0.1:8080"  # the origin the client used (reverse mode)
AS_DOC = {"issuer": f"{AS}/", "authorization_endpoint": f"{AS}/authorize", "token_endpoint": f"{AS}/token",
          "registration_endpoint": f"{AS}/register", "response_types_supported": ["code"]}
PRM_DOC = {"resource": f"{MCPX}/", "authorization_servers": [f"{AS}/"]}
OWN_DOC = {"issuer": f"{MCP}/", "authorization_endpoint": f"{MCP}/authorize", "token_endpoint": f"{MCP}/token"}


class Origin:
    """A scripted fetch: ``docs`` URL -> (status, headers, document); anything else 404."""

    def __init__(self, docs: dict[str, tuple[int, dict, object]]):
        self.docs, self.asked = docs, []

    async def __call__(self, url: str) -> Fetched:
        self.asked.append(url)
        status, headers, doc = self.docs.get(url, (404, {}, {"detail": "Not Found"}))
        if status == 0:
            raise FetchError("connection refused")
        return Fetched(status, headers, orjson.dumps(doc))


def seen(method: str, path: str, status: int, challenge: str | None = None, client: str = "127.0.0.1",
         mcp: bool = True) -> Seen:
    return Seen(method=method, path=path, status=status, server_origin=f"{MCP}", client_origin=MCPX,
                challenge=challenge, client=client, mcp=mcp)


def ask(d: Discovery, s: Seen, fetch) -> object:
    return asyncio.run(d.answer(s, fetch))


NEW_SERVER = {f"{MCP}/.well-known/oauth-protected-resource": (200, {}, PRM_DOC),
              f"{AS}/.well-known/oauth-authorization-server": (200, {"cache-control": "max-age=600"}, AS_DOC)}
OLD_SERVER = {f"{MCP}/.well-known/oauth-authorization-server": (200, {}, OWN_DOC)}


def test_old_client_gets_the_prm_authorization_servers_metadata_at_the_origin():
    d, origin = Discovery(), Origin(NEW_SERVER)
    out = ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), origin)
    assert isinstance(out, Serve) and out.status == 200
    assert orjson.loads(out.body) == AS_DOC  # as published: issuer unchanged
    assert dict(out.headers) == {"content-type": "application/json", "cache-control": "no-store"}
    assert origin.asked == [f"{MCP}/.well-known/oauth-protected-resource", f"{AS}/.well-known/oauth-authorization-server"]
    [c] = out.changes
    assert (c.pointer, c.action, c.rule, c.before) == ("", "synthesize", "AUTH-origin-metadata", "HTTP 404")
    assert c.after == ('{issuer: "http://127.0.0.1:9100/", authorization_endpoint: "http://127.0.0.1:9100/authorize", '
                       'token_endpoint: "http://127.0.0.1:9100/token", registration_endpoint: "http://127.0.0.1:9100/register", '
                       'response_types_supported: ["code"]}')
    assert c.detail == ("the origin publishes no RFC 8414 metadata; its protected resource metadata "
                        "(http://127.0.0.1:9000/.well-known/oauth-protected-resource) names the authorization server "
                        "http://127.0.0.1:9100/: its metadata (http://127.0.0.1:9100/.well-known/oauth-authorization-server) "
                        "served as published, issuer unchanged")


def test_documents_are_cached_for_their_lifetime_and_fetched_again_after():
    now = [1000.0]
    d, origin = Discovery(clock=lambda: now[0]), Origin(NEW_SERVER)
    ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), origin)
    ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404, client="10.0.0.2"), origin)
    assert len(origin.asked) == 2  # the second client: from the cache (no credentials were ever sent)
    now[0] += 301  # the PRM had no caching headers: 300 s; the AS metadata max-age=600
    ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), origin)
    assert origin.asked[2:] == [f"{MCP}/.well-known/oauth-protected-resource"]
    now[0] += 299.5  # 1600.5: the PRM (fetched again at 1301) still fresh, the AS metadata (until 1600) not
    ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), origin)
    assert origin.asked[3:] == [f"{AS}/.well-known/oauth-authorization-server"]


def test_no_store_and_failed_fetches_are_not_kept():
    docs = dict(NEW_SERVER)
    docs[f"{AS}/.well-known/oauth-authorization-server"] = (200, {"cache-control": "no-store"}, AS_DOC)
    d, origin = Discovery(), Origin(docs)
    for _ in range(2):
        assert isinstance(ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), origin), Serve)
    assert origin.asked.count(f"{AS}/.well-known/oauth-authorization-server") == 2
    d, down = Discovery(), Origin({f"{MCP}/.well-known/oauth-protected-resource": (0, {}, None)})
    for _ in range(2):
        assert ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), down) == Keep()
    assert down.asked == [f"{MCP}/.well-known/oauth-protected-resource"] * 2


def test_the_prm_a_401_named_is_the_one_read():
    docs = {f"{MCP}/.well-known/oauth-protected-resource/mcp": (200, {}, PRM_DOC),
            f"{AS}/.well-known/oauth-authorization-server": (200, {}, AS_DOC)}
    d, origin = Discovery(), Origin(docs)
    # the server names its public URL (mcpx's, in reverse mode): its path is read at the server's origin
    challenge = f'Bearer error="invalid_token", resource_metadata="{MCPX}/.well-known/oauth-protected-resource/mcp"'
    assert ask(d, seen("POST", "/mcp", 401, challenge), origin) == Keep()
    assert origin.asked == []
    assert isinstance(ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), origin), Serve)
    assert origin.asked[0] == f"{MCP}/.well-known/oauth-protected-resource/mcp"


def test_nothing_to_bridge_keeps_the_servers_answer():
    d = Discovery()
    same = Origin({f"{MCP}/.well-known/oauth-protected-resource": (200, {}, {"resource": f"{MCP}/",
                                                                             "authorization_servers": [f"{MCP}/"]})})
    assert ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), same) == Keep()  # its own AS: its 404 stands
    nothing = Origin({})
    assert ask(Discovery(), seen("GET", "/.well-known/oauth-authorization-server", 404), nothing) == Keep()
    assert ask(Discovery(), seen("GET", "/.well-known/oauth-protected-resource", 404), nothing) == Keep()
    assert ask(Discovery(), seen("POST", "/mcp", 401, "Bearer"), nothing) == Keep()
    untouched = Origin(NEW_SERVER)
    for s in (seen("POST", "/mcp", 200), seen("GET", "/.well-known/oauth-authorization-server", 200),
              seen("GET", "/.well-known/other", 404), seen("GET", "/mcp", 404)):
        assert ask(Discovery(), s, untouched) == Keep()
    assert untouched.asked == []  # no fetch for a response the stage has nothing to say about


def test_traffic_that_is_not_mcp_is_left_alone():
    """A request with neither a JSON-RPC body nor MCP-Protocol-Version, at an origin that never answered
    an MCP request with 401 (regular mode carries every site's traffic): no fetch, no answer."""
    d, origin = Discovery(), Origin({**NEW_SERVER, **OLD_SERVER})
    assert ask(d, seen("POST", "/oauth/token", 401, 'Basic realm="as"', mcp=False), origin) == Keep()
    assert ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404, mcp=False), origin) == Keep()
    assert ask(d, seen("GET", "/.well-known/oauth-protected-resource", 404, mcp=False), origin) == Keep()
    assert origin.asked == []
    ask(d, seen("POST", "/mcp", 401, 'Bearer error="invalid_token"'), Origin(NEW_SERVER))  # an MCP origin now
    assert isinstance(ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404, mcp=False), origin), Serve)


def test_a_client_whose_profile_checks_the_issuer_is_served_none():
    d, origin = Discovery(), Origin(NEW_SERVER)
    strict = Seen(method="POST", path="/mcp", status=401, server_origin=MCP, client_origin=MCPX, challenge="Bearer",
                  client="strict-host", mcp=True, initialize=True, issuer_check="some-profile")
    assert ask(d, strict, origin) == Keep()  # its server has PRM: the challenge is its own
    assert dict(d.strict_issuer) == {"strict-host": "some-profile"}
    assert ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404, client="strict-host"), origin) == Keep()
    assert isinstance(ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404, client="other"), origin), Serve)
    ask(d, Seen(method="POST", path="/mcp", status=401, server_origin=MCP, client_origin=MCPX, client="strict-host", mcp=True,
                initialize=True), origin)  # the same host, now a client of no such profile
    assert dict(d.strict_issuer) == {}


def test_default_endpoints_redirect_to_the_authorization_server():
    d, origin = Discovery(), Origin(NEW_SERVER)
    out = ask(d, seen("POST", "/token", 404), origin)
    assert isinstance(out, Redirect) and (out.status, out.location) == (307, f"{AS}/token")
    [c] = out.changes
    assert (c.pointer, c.action, c.rule, c.before, c.after) == ("header:Location", "synthesize", "AUTH-default-endpoint",
                                                                "HTTP 404", "HTTP 307 http://127.0.0.1:9100/token")
    assert ask(d, seen("POST", "/register", 404), origin) == Redirect(307, f"{AS}/register", ask(d, seen("POST", "/register", 404), origin).changes)
    out = ask(d, seen("GET", "/authorize", 404), origin)
    assert (out.status, out.location) == (302, f"{AS}/authorize")
    assert ask(d, seen("POST", "/authorize", 404), origin) == Keep()
    assert ask(d, seen("GET", "/token", 404), origin) == Keep()


def test_new_client_gets_a_prm_synthesized_for_an_old_server():
    d, origin = Discovery(), Origin(OLD_SERVER)
    out = ask(d, seen("GET", "/.well-known/oauth-protected-resource/mcp", 404), origin)
    assert isinstance(out, Serve)
    assert orjson.loads(out.body) == {"resource": f"{MCPX}/mcp", "authorization_servers": [f"{MCP}/"],
                                      "bearer_methods_supported": ["header"]}
    assert origin.asked == [f"{MCP}/.well-known/oauth-protected-resource", f"{MCP}/.well-known/oauth-authorization-server"]
    [c] = out.changes
    assert (c.rule, c.action, c.before) == ("AUTH-protected-resource", "synthesize", "HTTP 404")
    assert c.detail == ("the origin publishes no protected resource metadata but RFC 8414 metadata of its own "
                        "(issuer http://127.0.0.1:9000/): RFC 9728 metadata for http://127.0.0.1:8080/mcp")
    root = ask(d, seen("GET", "/.well-known/oauth-protected-resource", 404), origin)
    assert orjson.loads(root.body)["resource"] == f"{MCPX}/"


def test_an_old_servers_401_gets_resource_metadata():
    d, origin = Discovery(), Origin(OLD_SERVER)
    out = ask(d, seen("POST", "/mcp/", 401, 'Bearer error="invalid_token"'), origin)
    assert out == Challenge(f'Bearer resource_metadata="{MCPX}/.well-known/oauth-protected-resource/mcp", error="invalid_token"',
                            out.changes)
    [c] = out.changes
    assert (c.pointer, c.rule, c.before, c.after) == ("header:WWW-Authenticate", "AUTH-resource-metadata", None,
                                                      f'resource_metadata="{MCPX}/.well-known/oauth-protected-resource/mcp"')
    none = ask(d, seen("POST", "/mcp", 401, None), origin)
    assert none.value == f'Bearer resource_metadata="{MCPX}/.well-known/oauth-protected-resource/mcp"'
    # a server with PRM of its own: its challenge is its own
    assert ask(Discovery(), seen("POST", "/mcp", 401, "Bearer"), Origin(NEW_SERVER)) == Keep()


@pytest.mark.parametrize("value,url,expected", [
    (None, "u", 'Bearer resource_metadata="u"'),
    ("Bearer", "u", 'Bearer resource_metadata="u"'),
    ('Bearer realm="mcp", error="invalid_token"', "u", 'Bearer resource_metadata="u", realm="mcp", error="invalid_token"'),
    ('Basic realm="x"', "u", 'Bearer resource_metadata="u", Basic realm="x"'),
    ('Basic realm="x", Bearer scope="a"', "u", 'Basic realm="x", Bearer resource_metadata="u", scope="a"'),
])
def test_with_resource_metadata(value, url, expected):
    assert wk.with_resource_metadata(value, url) == expected


def test_challenge_parameter_and_lifetimes_and_metadata_urls():
    assert wk.resource_metadata_param('Bearer error="x", resource_metadata="http://a/b"') == "http://a/b"
    assert wk.resource_metadata_param("Bearer resource_metadata=http://a/b, scope=x") == "http://a/b"
    assert wk.resource_metadata_param('Bearer realm="resource_metadata"') is None
    assert wk.lifetime({"cache-control": "public, max-age=3600", "age": "100"}, True) == 3500
    assert wk.lifetime({"cache-control": "max-age=10, s-maxage=20"}, True) == 20
    assert wk.lifetime({"cache-control": "no-store"}, True) == 0
    assert wk.lifetime({"expires": "Thu, 01 Jan 2026 00:10:00 GMT", "date": "Thu, 01 Jan 2026 00:00:00 GMT"}, True) == 600
    assert wk.lifetime({"expires": "0"}, True) == 0
    assert (wk.lifetime({}, True), wk.lifetime({}, False)) == (300, 60)
    assert wk.lifetime({"cache-control": "max-age=99999999"}, True) == wk.MAX_LIFETIME
    assert wk.as_metadata_urls("https://as.example/") == ["https://as.example/.well-known/oauth-authorization-server",
                                                         "https://as.example/.well-known/openid-configuration"]
    assert wk.as_metadata_urls("https://as.example/tenant1") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant1",
        "https://as.example/.well-known/openid-configuration/tenant1",
        "https://as.example/tenant1/.well-known/openid-configuration"]
    assert [wk.resource_metadata_suffix(p) for p in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                                                     "/.well-known/oauth-protected-resourcex", "/mcp")] == ["", "/mcp", None, None]


# -- hostile WWW-Authenticate values (RFC 9110 §11.6.1: a quoted-string is a value, never a scheme or a parameter)
@pytest.mark.parametrize("value,expected", [
    # a quoted comma and a quoted "Bearer" inside another scheme's realm: no Bearer challenge to add to
    ('Basic realm="a, Bearer b"', 'Bearer resource_metadata="u", Basic realm="a, Bearer b"'),
    # escaped quotes inside a value: the parameter goes before the first auth-param, the rest as sent
    ('Bearer realm="a\\"b, c=\\"d\\"", scope="s"', 'Bearer resource_metadata="u", realm="a\\"b, c=\\"d\\"", scope="s"'),
    ("bearer   scope=x", 'bearer resource_metadata="u",   scope=x'),  # scheme case-insensitive (RFC 9110 §11.1)
    ('Bearer realm="unterminated', None),  # does not parse: left as sent
    ("Bearer abc123==", None),  # a token68 challenge can take no auth-param
    ('Bearer realm="x" junk', None),
    ('Bearer realm=', None),
    ("@@@", None),
])
def test_with_resource_metadata_hostile_quoting(value, expected):
    assert wk.with_resource_metadata(value, "u") == expected


def test_with_resource_metadata_quotes_the_url():
    assert wk.with_resource_metadata(None, 'http://a/"b\\c') == 'Bearer resource_metadata="http://a/\\"b\\\\c"'
    assert wk.with_resource_metadata("Bearer", "http://a/\r\nSet-Cookie: x") is None  # never a header split


@pytest.mark.parametrize("value,expected", [
    ('Bearer error_description="bad, resource_metadata=http://evil/x"', None),  # a value, not the parameter
    ('Bearer error_description="a\\", resource_metadata=http://evil/"', None),
    ('Bearer error="x", resource_metadata="http://a/\\"b"', 'http://a/"b'),
    ('Basic realm="r", bearer RESOURCE_METADATA="http://a/m"', "http://a/m"),
    ('Bearer resource_metadata="http://a/m', None),  # unterminated: nothing read from it
    ('DPoP algs="ES256", Bearer resource_metadata=http://a/m', "http://a/m"),
])
def test_resource_metadata_param_hostile_quoting(value, expected):
    assert wk.resource_metadata_param(value) == expected


def test_an_unparsable_challenge_is_left_as_the_server_sent_it():
    d = Discovery()
    assert ask(d, seen("POST", "/mcp", 401, 'Bearer realm="x'), Origin(OLD_SERVER)) == Keep()
    assert ask(d, seen("POST", "/mcp", 401, "Bearer dG9rZW4="), Origin(OLD_SERVER)) == Keep()


@pytest.mark.parametrize("stated", ["http://127.0.0.1:6666/", f"{AS}/tenant", None, 7])
def test_metadata_stating_another_issuer_is_never_served_or_followed(stated):
    """RFC 8414 §3.3: metadata whose ``issuer`` is not the one its URL was built from MUST NOT be used:
    the origin's 404 stands, and the default endpoints are not redirected by it."""
    doc = {**AS_DOC, "issuer": stated}
    origin = Origin({**NEW_SERVER, f"{AS}/.well-known/oauth-authorization-server": (200, {}, doc)})
    d = Discovery()
    assert ask(d, seen("GET", "/.well-known/oauth-authorization-server", 404), origin) == Keep()
    assert ask(d, seen("POST", "/register", 404), origin) == Keep()


def test_metadata_issuer_differing_by_a_trailing_slash_is_served():
    doc = {**AS_DOC, "issuer": AS}  # the PRM names f"{AS}/"
    origin = Origin({**NEW_SERVER, f"{AS}/.well-known/oauth-authorization-server": (200, {}, doc)})
    out = ask(Discovery(), seen("GET", "/.well-known/oauth-authorization-server", 404), origin)
    assert isinstance(out, Serve) and orjson.loads(out.body) == doc


def test_one_origins_documents_are_never_served_for_another():
    """The cache is keyed by the URL fetched (scheme, host, port, path): origin B, whose PRM names another
    authorization server, gets that server's metadata, never the one cached for origin A."""
    b, as_b = "http://127.0.0.1:9001", "http://127.0.0.1:9101"
    b_doc = {**AS_DOC, "issuer": f"{as_b}/", "authorization_endpoint": f"{as_b}/authorize"}
    origin = Origin({**NEW_SERVER, f"{b}/.well-known/oauth-protected-resource": (200, {}, {"resource": f"{b}/", "authorization_servers": [f"{as_b}/"]}),
                     f"{as_b}/.well-known/oauth-authorization-server": (200, {}, b_doc)})
    d = Discovery()
    at = lambda server: Seen(method="GET", path="/.well-known/oauth-authorization-server", status=404,  # noqa: E731
                             server_origin=server, client_origin=server, client="127.0.0.1", mcp=True)
    a_out, b_out = ask(d, at(MCP), origin), ask(d, at(b), origin)
    assert orjson.loads(a_out.body) == AS_DOC and orjson.loads(b_out.body) == b_doc
    # origin C publishes nothing: it gets nothing cached for A or B
    assert ask(d, at("http://127.0.0.1:9002"), origin) == Keep()
    assert origin.asked[-1] == "http://127.0.0.1:9002/.well-known/oauth-protected-resource"


def test_mcpx_fetches_carry_no_credentials_of_the_client():
    """The hook's own discovery GET: exactly Host (of the URL fetched, not the client's) and Accept,
    whatever the client's request carried (Authorization, Cookie, a forged Host or X-Forwarded-Host)."""
    from types import SimpleNamespace

    from mitmproxy.test import tflow

    from mcpx_core.addons.authorization import Authorization
    sent = []

    class Sender:
        async def send(self, flow, method, body, headers, purpose, **kw):
            sent.append((method, body, headers, purpose, kw["url"]))
            return SimpleNamespace(status=200, headers={}, body=b"{}")
    f = tflow.tflow()
    f.request.headers.update({"authorization": "Bearer secret-token", "cookie": "s=1", "host": "evil.example",
                              "x-forwarded-host": "evil.example"})
    hook = Authorization(SimpleNamespace(sender=Sender()))
    got = asyncio.run(hook._fetch(f, f"{AS}/.well-known/oauth-authorization-server"))
    assert got == Fetched(200, {}, b"{}")
    assert sent == [("GET", None, {"host": "127.0.0.1:9100", "accept": "application/json"}, "authorization discovery",
                     f"{AS}/.well-known/oauth-authorization-server")]


@pytest.mark.parametrize("mode,expected", [("reverse:http://127.0.0.1:9000", "http://127.0.0.1:8080"),
                                           ("regular", "http://127.0.0.1:9000")])
def test_a_forged_host_or_x_forwarded_host_never_names_the_origin(mode, expected):
    """The origin a synthesized PRM and ``resource_metadata`` name (:func:`client_origin`) comes from the
    connection (reverse mode: the address the client reached mcpx at) or the request target mitmproxy
    connects to (regular mode), never from ``Host`` or ``X-Forwarded-Host``: a client cannot make mcpx name
    another origin in a document."""
    from mitmproxy.proxy.mode_specs import ProxyMode
    from mitmproxy.test import taddons, tflow

    from mcpx_core.addons.authorization import client_origin
    f = tflow.tflow()
    f.request.scheme, f.request.host, f.request.port = "http", "127.0.0.1", 9000
    f.request.headers["host"] = "evil.example"
    f.request.headers["x-forwarded-host"] = "evil.example:443"
    f.client_conn.proxy_mode = ProxyMode.parse(mode)
    f.client_conn.sockname = ("127.0.0.1", 8080)
    f.client_conn.sni, f.client_conn.timestamp_tls_setup = None, None  # plain HTTP
    with taddons.context():
        assert client_origin(f) == expected


@pytest.mark.parametrize("issuer", [f"{MCP}/oauth", "http://127.0.0.1:6666/"])
def test_no_prm_is_synthesized_for_an_issuer_whose_metadata_is_not_the_one_read(issuer):
    """A 2025-03-26 server whose origin metadata names an issuer with a path (the conformance suite's
    ``auth/2025-03-26-oauth-metadata-backcompat``: ``http://localhost:PORT/oauth``) or on another origin:
    a PRM naming it would send a current client to ``/.well-known/oauth-authorization-server/oauth``
    (RFC 8414 §3.1), which the server does not publish, and break the fallback that logs it in directly:
    the 404 and the challenge stay as the server sent them."""
    origin = Origin({f"{MCP}/.well-known/oauth-authorization-server": (200, {}, {**OWN_DOC, "issuer": issuer})})
    d = Discovery()
    assert ask(d, seen("GET", "/.well-known/oauth-protected-resource/mcp", 404), origin) == Keep()
    assert ask(d, seen("POST", "/mcp", 401, "Bearer"), origin) == Keep()
    # the origin the client used (reverse mode) is as good as the server's
    own = Origin({f"{MCP}/.well-known/oauth-authorization-server": (200, {}, {**OWN_DOC, "issuer": f"{MCPX}/"})})
    assert isinstance(ask(Discovery(), seen("GET", "/.well-known/oauth-protected-resource/mcp", 404), own), Serve)


@pytest.mark.parametrize("endpoint", [f"{AS}/authorize\r\nSet-Cookie: sid=attacker", f"{AS}/authorize\nX: y",
                                      f"{AS}/author ize", "https://", "http:///authorize", f"{AS}/authorize\x00"])
def test_an_endpoint_that_is_no_uri_is_never_a_location(endpoint):
    """RFC 3986 §2: a URI holds no space or control character, and (§3.2) an http(s) URI names a host.
    The authorization server's metadata is not the client's to trust blindly through mcpx: an endpoint
    with CR/LF would split the redirect's header block (mitmproxy writes header values as given) and
    set a header, a cookie, on the origin the client reached mcpx at; the 404 stands instead."""
    doc = {**AS_DOC, "authorization_endpoint": endpoint, "token_endpoint": endpoint}
    d = Discovery()
    origin = Origin({**NEW_SERVER, f"{AS}/.well-known/oauth-authorization-server": (200, {}, doc)})
    assert ask(d, seen("GET", "/authorize", 404), origin) == Keep()
    assert ask(d, seen("POST", "/token", 404), origin) == Keep()
