"""Record lines in mitmproxy's log (issue 16): debug entries only when asked for, one per message.

Under mitmproxy the root logger is at DEBUG and every log record also reaches every addon's
``add_log`` hook, so a debug entry per change cost tens of microseconds per change whether or not a
handler showed it. mcpx writes the record lines only when ``mcpx_record_lines`` is on or mitmproxy's
own ``termlog_verbosity`` / ``console_eventlog_verbosity`` is ``debug``; then as one entry per
message. Every record still reaches the JSON Lines log and ``flow.metadata``.
"""
from __future__ import annotations

import logging

import orjson
from mitmproxy.test import taddons

import mcpx
from mcpx_core.changes import Change
from mcpx_core.rewrite import Exchange


def _records(n: int) -> list[Change]:
    return [Change(f"/result/content/{i}", "rewrite", "CT-resource_link", '{type: "resource_link"}', '{type: "resource"}',
                   None, 1.0, "f", "s", "s2c", 4, "tools/call", "2025-06-18", "2025-03-26") for i in range(n)]


def _entries(caplog, state, n: int) -> list[logging.LogRecord]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="mcpx"):
        state.on_changes(Exchange(flow_id="f"), _records(n))
    return [r for r in caplog.records if r.name == "mcpx"]


def test_record_lines_only_when_asked_for_and_one_entry_per_message(caplog, tmp_path):
    addon = mcpx.MCPX()
    st = addon.state
    with taddons.context(addon) as tctx:
        tctx.options.add_option("termlog_verbosity", str, "info", "as mitmproxy's TermLog defines it")
        tctx.configure(addon, termlog_verbosity="info")
        assert not st.record_lines and not st.rewriter.summarize_all
        entries = _entries(caplog, st, 50)
        assert [r.levelno for r in entries] == [logging.INFO]  # the summary line only
        assert "50 rewritten" in entries[0].getMessage()

        tctx.configure(addon, termlog_verbosity="debug")
        assert st.record_lines and st.rewriter.summarize_all
        entries = _entries(caplog, st, 50)
        assert [r.levelno for r in entries] == [logging.INFO, logging.DEBUG]
        lines = entries[1].getMessage().split("\n")
        assert len(lines) == 50 and lines[0].startswith("mcpx:   rewrite") and "[CT-resource_link]" in lines[-1]

        tctx.configure(addon, termlog_verbosity="info", mcpx_record_lines=True)
        assert st.record_lines and [r.levelno for r in _entries(caplog, st, 3)] == [logging.INFO, logging.DEBUG]
        tctx.configure(addon, mcpx_record_lines=False)
        assert not st.record_lines and not st.rewriter.summarize_all

        log = tmp_path / "changes.jsonl"
        tctx.configure(addon, mcpx_log=str(log))
        assert st.rewriter.summarize_all and not st.record_lines  # every record is written: every record described
        assert [r.levelno for r in _entries(caplog, st, 5)] == [logging.INFO]
        assert len([orjson.loads(x) for x in log.read_bytes().splitlines()]) == 5
        tctx.configure(addon, mcpx_log="")
        assert not st.rewriter.summarize_all


def test_the_change_log_writes_line_breakers_and_bidi_controls_as_escapes(tmp_path):
    """The JSON Lines file: U+0085, U+2028, U+2029 and the bidirectional controls (raw in orjson's
    output) are written as ``\\uXXXX``, so every reader of lines sees one record a line; other
    characters of the same UTF-8 lead bytes (an ellipsis, a dash) stay as they are. The byte pattern
    matches exactly the UTF-8 of those characters, checked over every code point."""
    from mcpx_core import changes as ch
    wanted = {chr(c).encode("utf-8") for c in ch._BREAKERS}
    found = {chr(c).encode("utf-8") for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF
             and ch._LINE_BREAKERS.fullmatch(chr(c).encode("utf-8"))}
    assert found == wanted and len(wanted) == 14
    path = tmp_path / "changes.jsonl"
    log = ch.ChangeLog(str(path))
    detail = "a\u2028b\u0085c\u202ed\u2066e \u2026 \u2014 \u00e9"
    log.write([Change(pointer="/x", action="drop", rule="R", detail=detail)])
    log.close()
    raw = path.read_bytes()
    assert raw.count(b"\n") == 1 and raw.endswith(b"\n")
    assert b'"detail":"a\\u2028b\\u0085c\\u202ed\\u2066e \xe2\x80\xa6 \xe2\x80\x94 \xc3\xa9"' in raw
    assert orjson.loads(raw)["detail"] == detail
