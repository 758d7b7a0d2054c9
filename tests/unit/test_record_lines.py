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
