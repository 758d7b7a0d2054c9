"""Framing and record details the fast paths of issue 7 rely on.

- :func:`json_body.dumps_exact` skips the value walk when the output has no ``e+``: that is sound
  only because orjson writes every float of magnitude >= 1e16 with an exponent ``e+``;
- an SSE event keeps its data as the bytes that came, decoded only on demand;
- :class:`Change` is a plain dataclass; :data:`RECORD` (pydantic) validates records read back.
"""
from __future__ import annotations

import json

import orjson
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpx_core.changes import FIELDS, RECORD, Change, ChangeLog
from mcpx_core.framing import json_body
from mcpx_core.framing.sse import SSEParser, events_of, field_lines, json_values


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e16, allow_infinity=False, allow_nan=False) | st.floats(max_value=-1e16, allow_infinity=False, allow_nan=False))
def test_large_floats_serialise_with_an_exponent(x):
    assert b"e+" in orjson.dumps(x)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=2**64, max_value=2**200) | st.integers(max_value=-(2**63) - 1, min_value=-(2**200)))
def test_dumps_exact_refuses_an_integer_orjson_reads_as_float(n):
    source = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"n": n, "text": "x"}}).encode()
    value = orjson.loads(source)
    with pytest.raises(json_body.Unwritable) as e:
        json_body.dumps_exact(value, source)
    assert e.value.reason == json_body.INEXACT
    del value["result"]["n"]  # dropped by a rule: what remains is exact
    assert json_body.dumps_exact(value, source) == b'{"jsonrpc":"2.0","id":1,"result":{"text":"x"}}'


def test_dumps_exact_keeps_floats_and_texts_with_e_plus():
    source = b'{"a":1e+300,"b":"C++ e+1","c":9223372036854775807,"d":18446744073709551615}'
    value = orjson.loads(source)
    assert json_body.dumps_exact(value, source) == b'{"a":1e+300,"b":"C++ e+1","c":9223372036854775807,"d":18446744073709551615}'


def test_sse_event_payload_is_bytes_decoded_on_demand():
    parser = SSEParser()
    ok, bad = parser.feed(b'event: message\r\ndata: {"t":"caf\xc3\xa9"}\r\n\r\ndata: \xff\n\n')
    assert parser.close() == ([], b"")
    assert ok.payload == '{"t":"café"}'.encode() and ok.data == '{"t":"café"}' and not ok.decode_error
    assert ok.lines == [(b"event: message", b"\r\n"), (b'data: {"t":"caf\xc3\xa9"}', b"\r\n")]
    assert bad.payload == b"\xff" and bad.data is None and bad.decode_error and not bad.blank()
    blank = SSEParser().feed(b"id: 1\ndata:  \t \n\n")[0]
    assert blank.blank() and blank.last_id == "1"
    for odd in (b"\xc2\xa0", b"\x1c"):  # NO-BREAK SPACE, FILE SEPARATOR: str.strip() removes them, but they are data
        assert not SSEParser().feed(b"data: " + odd + b"\n\n")[0].blank()


def test_change_record_validation_and_log_line(tmp_path):
    c = Change(pointer="/result/x", action="drop", rule="SCHEMA-undefined", before="1")
    s = c.stamped(time=1.5, flow="f", session="s", direction="s2c", jsonrpc_id=3, method="tools/call",
                  from_rev="2025-06-18", to_rev="2025-03-26")
    assert list(s.as_dict()) == list(FIELDS) and s.as_dict()["jsonrpc_id"] == 3 and c.time == 0.0
    assert RECORD.validate_python(s.as_dict()) == s
    with pytest.raises(pydantic.ValidationError):
        RECORD.validate_python({**s.as_dict(), "action": "deleted"})
    log = ChangeLog(str(tmp_path / "c.jsonl"))
    log.write([s])
    log.close()
    assert orjson.loads((tmp_path / "c.jsonl").read_bytes()) == s.as_dict()


def _exchange(frm="2025-06-18", to="2025-03-26", method="tools/call"):
    from mcpx_core.rewrite import Exchange, Rewriter
    from mcpx_core.session import SessionTracker
    store = SessionTracker()
    s = store.create("k")
    s.server_rev, s.client_rev = frm, to
    exch = Exchange(flow_id="f", session=s, is_mcp=True, single_request_id=1)
    exch.request_ids[1] = method
    return Rewriter(store), exch


def test_nesting_orjson_cannot_write_passes_through():
    """orjson reads 1,024 levels but writes 255: a rewritten message nested deeper is forwarded
    untouched with a record, never an exception (found by an adversarial review)."""
    deep = "[" * 300 + "]" * 300
    body = ('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}],'
            '"_meta":{"deep":%s}}}' % deep).encode()
    rw, exch = _exchange()
    assert rw.response_json(exch, body) is None
    assert [(c.action, c.rule) for c in exch.changes][-1] == ("passthrough", "PASSTHROUGH-error")
    assert exch.changes[-1].detail.startswith("re-serialised it cannot be written (")


def test_structured_content_with_an_integer_beyond_64_bits_passes_through():
    """SC-structuredContent would copy the value into a text block, where the integer would read
    as another number: the message is forwarded untouched instead."""
    body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":123456789012345678901234567890}}}'
    rw, exch = _exchange()
    assert rw.response_json(exch, body) is None
    assert [(c.action, c.rule) for c in exch.changes] == [("passthrough", "PASSTHROUGH-error")]
    assert "structuredContent holds an integer outside" in exch.changes[0].detail


def test_rewritten_event_keeps_its_end_after_a_line_ending_in_a_lone_cr():
    """A comment ending in a lone CR, written before the event's closing LF, used to read as one
    CRLF line end: the blank line that ends the event was lost, and the message with it (found by
    a new-user run of the fuzz tests). Every line of a rewritten event now ends as its blank line."""
    parser = SSEParser()
    (ev,) = parser.feed(b'data\n:\rdata: {"a":1}\n\n')
    out = ev.with_data([b'{"b":2}'])
    assert out == b'data: {"b":2}\n:\n\n'
    again = SSEParser()
    assert [(e.payload, e.lines) for e in again.feed(out)] == [(b'{"b":2}', [(b'data: {"b":2}', b"\n"), (b":", b"\n")])]
    assert again.close() == ([], b"")


def test_json_values_skips_events_without_json_data_and_goes_on():
    """framing.sse.json_values (the bridge's stream readers): events without data, blank ones and
    data that is not JSON are skipped, and the events after them still read."""
    events = SSEParser().feed(b": keep-alive\n\nid: 1\n\ndata:\n\ndata: not json\n\ndata: {\"a\":1}\n\nid: 2\n\ndata: [1,2]\n\n")
    assert [e.payload for e in events] == [None, None, b"", b"not json", b'{"a":1}', None, b"[1,2]"]
    assert list(json_values(events)) == [{"a": 1}, [1, 2]]


BIG = b"data: " + b"x" * 30  # above the parser's max_event (16): passed on in parts, unbuffered


@pytest.mark.parametrize("chunks,parts", [
    # the blank line of an oversize event ends in CR at a chunk end: the LF that opens the next chunk is its own
    ([BIG + b"\r\n\r", b"\ndata: {}\n\n"], [(BIG + b"\r\n\r", 1), (b"\n", 2), (b"data: {}\n\n", 0)]),
    ([BIG + b"\r", b"\n\r", b"\n", b"data: {}\n\n"], [(BIG + b"\r", 1), (b"\n\r", 2), (b"\n", 2), (b"data: {}\n\n", 0)]),
    ([BIG + b"\n\n", b"\ndata: {}\n\n"], [(BIG + b"\n\n", 1), (b"\n", 0), (b"data: {}\n\n", 0)]),
])
def test_an_oversize_event_passes_in_parts_and_the_next_event_is_read(chunks, parts):
    """SSEParser(max_event): an event above the bound is not buffered (oversize 1, then 2 for its
    later parts); its line ends (CR, LF, CRLF: html.spec.whatwg.org, server-sent events) may be cut
    anywhere by the chunks, and the event after it is parsed as usual."""
    parser = SSEParser(16)
    events = [e for c in chunks for e in parser.feed(c)] + parser.close()[0]
    assert [(e.raw, e.oversize) for e in events] == parts
    assert events[-1].payload == b"{}" and parser.close() == ([], b"")


def test_an_event_id_that_is_not_utf8_is_read_with_replacement_characters():
    """The event stream is UTF-8 (html.spec.whatwg.org, server-sent events): an id's invalid bytes
    are read as U+FFFD; the event's raw bytes stay as they came."""
    ev = SSEParser().feed(b"id: a\xffb\ndata: {}\n\n")[0]
    assert (ev.last_id, ev.raw, ev.payload) == ("a\ufffdb", b"id: a\xffb\ndata: {}\n\n", b"{}")


@pytest.mark.parametrize("chunks,events", [
    # the blank line's CR ends the last chunk: the event is out at once; an LF that follows is the rest of that CRLF
    ([b"data: 1\r\r"], [(b"data: 1\r\r", True, False)]),
    ([b"data: 1\r\n\r", b"\ndata: 2\n\n"], [(b"data: 1\r\n\r", True, False), (b"\n", False, True), (b"data: 2\n\n", False, False)]),
    ([b"data: 1\r\r", b"data: 2\r\r"], [(b"data: 1\r\r", True, False), (b"data: 2\r\r", True, False)]),
    # a CR that ends a data line at a chunk end: an LF after it ends that line, it is no blank line
    ([b"data: 1\r", b"\ndata: 2\r\n\r\n"], [(b"data: 1\r\ndata: 2\r\n\r\n", False, False)]),
    ([b"data: 1\r", b"\n", b"\r\n"], [(b"data: 1\r\n\r\n", False, False)]),
])
def test_an_event_whose_blank_line_ends_in_cr_at_a_chunk_end_is_not_held(chunks, events):
    """WHATWG HTML 9.2.6: a CR ends a line; an SSE client dispatches the event on its blank line's CR.
    SSEParser gives the event at once (``open_cr``) and an LF that opens the next chunk by itself
    (``crlf_rest``), instead of holding the event until the next bytes come."""
    parser = SSEParser()
    got = [e for c in chunks for e in parser.feed(c)]
    assert [(e.raw, e.open_cr, e.crlf_rest) for e in got] == events
    assert parser.close() == ([], b"")
    assert [e.data for e in got if not e.crlf_rest] == [e.data for e in SSEParser().feed(b"".join(chunks))]


def test_events_of_a_whole_body_keep_an_unterminated_last_event_and_drop_empty_ones():
    """events_of (what the golden rendering and the trace capture read bodies with): the events in
    order, a blank line with no line before it gives none, the bytes after the last blank line one
    more event; a BOM is stripped only at the body's start."""
    body = b"\xef\xbb\xbfid: 1\r\ndata: a\r\n\r\n\n\n: hi\rdata: b\rdata:c\r\rretry: 5\ndata"
    assert [(e.raw, e.payload, e.last_id) for e in events_of(body)] == [
        (b"\xef\xbb\xbfid: 1\r\ndata: a\r\n\r\n", b"a", "1"), (b": hi\rdata: b\rdata:c\r\r", b"b\nc", None),
        (b"retry: 5\ndata\n\n", b"", None)]
    assert events_of(b"") == [] and events_of(b"\n\r\n") == []
    assert [e.raw for e in events_of(b"data: x\n")] == [b"data: x\n\n"]
    assert [e.raw for e in events_of(b"\n\xef\xbb\xbfdata: x")] == [b"\xef\xbb\xbfdata: x\n\n"]  # (a field named BOM + data)
    assert [e.payload for e in events_of(b"\n\xef\xbb\xbfdata: x")] == [None]


def test_field_lines_name_and_value_each_line_of_an_event():
    [ev] = events_of(b":  two spaces\nevent:  message\ndata\ndata: \xff\nid:1\nodd\n\n")
    assert list(field_lines(ev)) == [("", "  two spaces"), ("event", " message"), ("data", ""), ("data", "\ufffd"),
                                     ("id", "1"), ("odd", "")]
    assert list(field_lines(ev, "surrogateescape"))[3] == ("data", "\udcff")
