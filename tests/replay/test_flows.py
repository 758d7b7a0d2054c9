"""Recorded sessions (flows/*.mitm, real clients and servers, recorded without mcpx by
scripts/record_flows.py) replayed through mcpx offline, against their golden files.

Each flow file replays to its golden file byte for byte in both ways: in-process (FlowReader and
the addon's hooks) and through the real ``mitmdump -nr FLOWS -s addon/mcpx.py -w OUT``. After a
deliberate change of behaviour, rewrite the goldens with scripts/update_goldens.py and review
``git diff flows/``.
"""

from __future__ import annotations

import difflib
import pathlib
import re

import orjson
import pytest

import replay_lib as rl

FLOW_FILES = rl.flow_files()
NAMES = [p.name.removesuffix(".mitm") for p in FLOW_FILES]
#: recorded sessions in which both peers speak the same revision and the server sends nothing
#: beyond it: replaying them must change nothing and record nothing
NO_CHANGE = ["sdk-1.25.0_everything", "client-2.4.0-auto_py"]
MAX_FLOW_FILE = 1 << 20


def _path(name: str) -> pathlib.Path:
    return rl.FLOWS_DIR / f"{name}.mitm"


def _diff(expected: str, actual: str, what: str) -> str:
    lines = difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "golden", what, n=2)
    return "".join(list(lines)[:80]) + "\n(rewrite goldens with scripts/update_goldens.py if the change is intended)"


def _log_records(path: pathlib.Path) -> list[dict]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def in_process(tmp_path_factory) -> dict[str, tuple[list, pathlib.Path]]:
    """name -> (flows replayed in-process, their mcpx_log JSONL file)."""
    tmp = tmp_path_factory.mktemp("inproc")
    out = {}
    for name in NAMES:
        log = tmp / f"{name}.jsonl"
        out[name] = (rl.replay_in_process(_path(name), {"mcpx_log": str(log)}), log)
    return out


@pytest.fixture(scope="module")
def via_mitmdump(tmp_path_factory) -> dict[str, tuple[list, pathlib.Path]]:
    """name -> (flows written by mitmdump -nr ... -w, its mcpx_log JSONL file); all files at once."""
    tmp = tmp_path_factory.mktemp("mitmdump")
    flows = rl.replay_mitmdump_many(FLOW_FILES, tmp, lambda p: {"mcpx_log": str(tmp / f"{p.stem}.jsonl")})
    return {p.stem: (flows[p], tmp / f"{p.stem}.jsonl") for p in FLOW_FILES}


def test_every_flow_file_has_a_golden_and_is_small():
    assert len(FLOW_FILES) >= 11, FLOW_FILES
    for p in FLOW_FILES:
        assert p.stat().st_size <= MAX_FLOW_FILE, f"{p.name}: {p.stat().st_size} bytes; generate large payloads in tests"
        assert rl.golden_path(p).exists(), f"{p.name} has no golden file: run scripts/update_goldens.py"
    goldens = {p.name.removesuffix(".golden.json") for p in rl.FLOWS_DIR.glob("*.golden.json")}
    assert goldens == set(NAMES), f"golden files without a flow file: {goldens - set(NAMES)}"


def test_flows_cover_every_client_revision_and_feature():
    """One recorded client per revision at least; tools, prompts, resources, sampling and
    elicitation requests, SSE and JSON responses, and a 2025-03-26 batch."""
    revisions, methods, ctypes, batches = set(), set(), set(), []
    for p in FLOW_FILES:
        for f in rl.load(p):
            body = f.request.raw_content or b""
            if body.startswith(b"["):
                batches.append(p.name)
            methods.update(m.decode() for m in re.findall(rb'"method":\s*"([^"]+)"', body))
            if f.response is not None:
                ctypes.add(f.response.headers.get("content-type", "").split(";")[0])
                methods.update(m.decode() for m in re.findall(rb'"method":\s*"([^"]+)"', f.response.raw_content or b""))
            revisions.update(re.findall(rb'"protocolVersion":\s*"([0-9-]+)"', body))
            revisions.update(v.encode() for v in [f.request.headers.get("mcp-protocol-version")] if v)
    assert {r.decode() for r in revisions} >= {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
    assert methods >= {"tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/read",
                       "resources/templates/list", "sampling/createMessage", "elicitation/create",
                       "notifications/progress", "ping"}
    assert {"text/event-stream", "application/json"} <= ctypes
    assert "batch-2025-03-26_everything.mitm" in batches


@pytest.mark.parametrize("name", NAMES)
def test_in_process_replay_matches_golden(name, in_process):
    flows, log = in_process[name]
    text = rl.golden_text(rl.golden(rl.load(_path(name)), flows))
    expected = rl.golden_path(_path(name)).read_text()
    assert text == expected, _diff(expected, text, "in-process replay")
    # the JSONL change log holds the same records as the flows, in the same order
    logged = [{k: v for k, v in c.items() if k not in rl.VOLATILE} for c in _log_records(log)]
    on_flows = [{k: v for k, v in c.items() if k not in rl.VOLATILE} for c in rl.changes_of(flows)]
    assert logged == on_flows


@pytest.mark.parametrize("name", NAMES)
def test_mitmdump_replay_matches_golden(name, via_mitmdump):
    flows, log = via_mitmdump[name]
    text = rl.golden_text(rl.golden(rl.load(_path(name)), flows))
    expected = rl.golden_path(_path(name)).read_text()
    assert text == expected, _diff(expected, text, "mitmdump -nr replay")
    assert len(_log_records(log)) == len(rl.changes_of(flows))


@pytest.mark.parametrize("name", NO_CHANGE)
def test_session_needing_no_change_replays_unchanged_without_records(name, in_process, via_mitmdump):
    recorded = {f.id: f for f in rl.load(_path(name))}
    for flows, log in (in_process[name], via_mitmdump[name]):
        assert [f.id for f in flows] == list(recorded)
        for f in flows:
            orig = recorded[f.id]
            assert f.request.raw_content == orig.request.raw_content
            assert f.request.headers.fields == orig.request.headers.fields
            assert f.response.status_code == orig.response.status_code
            assert f.response.raw_content == orig.response.raw_content
            meta = f.metadata.get("mcpx") or {}
            assert meta.get("changes", []) == [] and "replies" not in meta
            assert "mcpx:" not in f.comment and not f.marked  # the flow list names its messages, and nothing mcpx did
            if f.request.method == "POST" and meta.get("messages"):
                assert f.comment.split(" · ")[0] != ""
        assert _log_records(log) == []
    golden = orjson.loads(rl.golden_path(_path(name)).read_bytes())
    assert all(not ({"changes", "request_body", "response_body", "replies_not_sent"} & set(e)) for e in golden["flows"])
    # and mcpx did see the MCP messages (it is not a no-op because it missed them)
    assert sum(len(e.get("messages", [])) for e in golden["flows"]) >= 30


@pytest.mark.parametrize(("name", "revision"), [("sdk-1.25.0_everything", "2025-11-25"), ("client-2.4.0-auto_py", "2026-07-28")])
def test_sessions_needing_no_change_really_need_none(name, revision):
    """What the server sent in these sessions validates against the client's revision with
    unknown properties forbidden: there was nothing to downgrade."""
    from schema_check import message_errors

    asked: dict = {}
    checked = 0
    for f in rl.load(_path(name)):
        for m in _messages(f.request):
            if isinstance(m, dict) and "method" in m and "id" in m:
                asked[m["id"]] = m["method"]
        for m in _messages(f.response):
            if not isinstance(m, dict):
                continue
            method = m.get("method") or asked.get(m.get("id"))
            assert message_errors(revision, m, method) == [], (f.id, m)
            checked += 1
    assert checked >= 20


def _messages(message) -> list:
    if message is None or not message.raw_content:
        return []
    body = rl.render_body(message)
    if message.headers.get("content-type", "").startswith("text/event-stream"):
        return [e["data"] for e in body if "data" in e]
    return body if isinstance(body, list) else [body]


def test_mitmdump_w_writes_rewritten_bodies(via_mitmdump):
    """-w (mitmproxy's Save addon) runs after the script: OUT holds what mcpx delivered, here the
    resource_link blocks of a streamed SSE response rewritten for a 2024-11-05 client."""
    name = "sdk-1.10.2_everything"
    recorded = {f.id: f for f in rl.load(_path(name))}
    flows, _ = via_mitmdump[name]
    calls = [f for f in flows if b'"get-resource-links"' in (f.request.raw_content or b"")]
    assert len(calls) == 1
    out, orig = calls[0], recorded[calls[0].id]
    assert orig.response.headers["content-type"] == "text/event-stream"
    assert orig.response.raw_content.count(b'"type":"resource_link"') == 2
    assert b"resource_link" not in out.response.raw_content
    assert out.response.raw_content.count(b'"type":"resource"') == 2
    assert out.metadata["mcpx"]["original_response"] == orig.response.raw_content.decode()


def test_replay_contacts_no_peer(monkeypatch, tmp_path):
    """Offline flows: a batch mcpx would split live is not POSTed upstream (the split record
    stays, the recorded response is rewritten as usual), and an answer to a server request is
    only logged and kept on the flow."""
    import mcpx_core.upstream

    async def no_network(*args, **kwargs):
        raise AssertionError(f"offline replay tried to contact a peer: {args[:1]}")

    monkeypatch.setattr(mcpx_core.upstream.Sender, "send", no_network)
    flows = rl.replay_in_process(_path("batch-2025-03-26_everything"))
    batch = [f for f in flows if (f.request.raw_content or b"").startswith(b"[")]
    assert [f.request.headers.get("mcp-protocol-version") for f in batch] == [None, "2025-06-18"]
    assert [(c["action"], c["rule"]) for c in rl.changes_of(batch[:1]) if c["rule"].startswith("RPC-batch")] == []
    split = [(c["action"], c["rule"], c["before"]) for c in rl.changes_of(batch[1:]) if c["rule"].startswith("RPC-batch")]
    assert split == [("split", "RPC-batch-request", "batch of 3 messages")]
    assert batch[1].response.status_code == 200 and batch[1].response.headers["content-type"] == "text/event-stream"

    flows = rl.replay_in_process(_path("elicitation-2025-03-26_everything"))
    replies = [r for f in flows for r in (f.metadata.get("mcpx") or {}).get("replies", [])]
    assert replies == [{"jsonrpc": "2.0", "id": 0, "error": {
        "code": -32601, "message": "Method not found: elicitation/create (not defined in MCP 2025-03-26; answered by mcpx)"}}]


def test_mitmdump_replay_logs_what_it_did_not_send(tmp_path):
    import subprocess

    lines = []
    for name in ("batch-2025-03-26_everything", "elicitation-2025-03-26_everything"):
        argv = [a for a in rl.mitmdump_argv(_path(name), tmp_path / f"{name}.mitm") if a != "-q"]
        cp = subprocess.run(argv + ["--set", "flow_detail=0", "--set", "termlog_verbosity=info"],
                            capture_output=True, timeout=60, cwd=rl.ROOT)
        assert cp.returncode == 0, cp.stderr
        lines += [ln for ln in cp.stdout.decode().splitlines() if "mcpx: " in ln and ("not" in ln or "answer" in ln)]
    assert any("offline flow: batch of 3 messages not split upstream" in ln for ln in lines), lines
    assert any("not sent (flow is not live): answer to server request id=0 with error -32601" in ln for ln in lines), lines
    assert not any("could not answer" in ln or "answered server request" in ln for ln in lines), lines


def test_a_changed_rule_fails_the_golden(monkeypatch):
    """The goldens pin the rules' output: change how CT-resource_link words a link, and the
    replay of a session with resource links no longer matches."""
    import mcpx_core.rules.content as content

    name = "sdk-1.12.3_everything"
    expected = rl.golden_path(_path(name)).read_text()
    monkeypatch.setattr(content, "link_text", lambda block: f"link: {block.get('uri')}")
    text = rl.golden_text(rl.golden(rl.load(_path(name)), rl.replay_in_process(_path(name))))
    assert text != expected
    changed = [ln for ln in difflib.unified_diff(expected.splitlines(), text.splitlines(), n=0)
               if ln.startswith("+") and not ln.startswith("+++")]
    assert any('"text": "link: demo://resource/dynamic/' in ln for ln in changed), changed


def test_gzip_encoded_sse_response_is_rewritten_offline(in_process, tmp_path):
    """A recorded SSE response with Content-Encoding: gzip (generated from a recorded one) is
    decoded, rewritten whole and encoded again in both replays, as the plain one is."""
    import gzip

    from mitmproxy import io

    name = "sdk-1.10.2_everything"
    flows = rl.load(_path(name))
    target = next(f for f in flows if b'"get-resource-links"' in (f.request.raw_content or b""))
    target.response.headers["content-encoding"] = "gzip"
    target.response.raw_content = gzip.compress(target.response.raw_content, mtime=0)
    src = tmp_path / "gzip.mitm"
    with open(src, "wb") as fh:
        writer = io.FlowWriter(fh)
        for f in flows:
            writer.add(f)
    plain = next(f for f in in_process[name][0] if f.id == target.id)
    for replayed in (rl.replay_in_process(src), rl.replay_mitmdump(src, tmp_path / "out.mitm")):
        out = next(f for f in replayed if f.id == target.id)
        assert out.response.headers["content-encoding"] == "gzip"
        assert gzip.decompress(out.response.raw_content) == plain.response.raw_content
        assert [(c["pointer"], c["rule"]) for c in out.metadata["mcpx"]["changes"]] == [
            ("/result/content/1", "CT-resource_link"), ("/result/content/2", "CT-resource_link")]
