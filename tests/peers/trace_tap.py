"""mitmproxy addon: log every HTTP exchange as JSON lines, SSE events as they pass.

    mitmdump --mode reverse:http://127.0.0.1:PORT -s tests/peers/trace_tap.py --set trace_out=FILE

Used by capture_traces.py. Changes nothing on the wire: event-stream responses are streamed
through chunk by chunk (a buffering proxy would hold a listen stream forever), and each
complete SSE event is logged when it passes, with a sequence number shared by all flows, so
the order of events across concurrent streams (a listen stream and the POST that triggers
its notification) is kept. One line per fact:

    {"kind": "request",  "flow", "seq", "method", "path", "headers": [[k, v]...], "body"}
    {"kind": "response", "flow", "seq", "status", "headers", "body"}      (body only if not SSE)
    {"kind": "sse",      "flow", "seq", "raw"}                            (one complete event)
    {"kind": "end",      "flow", "seq", "how"}                            ("complete" or the error)
"""

from __future__ import annotations

import itertools
import json
import re
import threading

from mitmproxy import ctx, http

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class TraceTap:
    def __init__(self) -> None:
        self.seq = itertools.count(1)
        self.lock = threading.Lock()
        self.fh = None

    def load(self, loader) -> None:
        loader.add_option("trace_out", str, "", "JSON-lines file for the trace")

    def _write(self, record: dict) -> None:
        with self.lock:
            record["seq"] = next(self.seq)
            if self.fh is None:
                self.fh = open(ctx.options.trace_out, "a", encoding="utf-8")
            self.fh.write(json.dumps(record) + "\n")
            self.fh.flush()

    def request(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        self._write(
            {
                "kind": "request",
                "flow": flow.id,
                "method": req.method,
                "path": req.path,
                "headers": [[k, v] for k, v in req.headers.items(multi=True)],
                "body": req.get_text(strict=False) or "",
            }
        )

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        resp = flow.response
        assert resp is not None
        sse = resp.headers.get("content-type", "").lower().startswith("text/event-stream")
        record = {
            "kind": "response",
            "flow": flow.id,
            "status": resp.status_code,
            "headers": [[k, v] for k, v in resp.headers.items(multi=True)],
        }
        if not sse:
            flow.metadata["trace_response"] = record  # logged with its body in response()
            return
        self._write(record)
        buf = bytearray()

        def tap(chunk: bytes) -> bytes:
            buf.extend(chunk)
            while True:
                m = _EVENT_END.search(buf)
                if m is None:
                    break
                raw = bytes(buf[: m.end()])
                del buf[: m.end()]
                self._write({"kind": "sse", "flow": flow.id, "raw": raw.decode("utf-8", "replace")})
            if not chunk and buf:  # end of stream with an unterminated event
                self._write({"kind": "sse", "flow": flow.id, "raw": buf.decode("utf-8", "replace"), "unterminated": True})
                buf.clear()
            return chunk

        resp.stream = tap

    def response(self, flow: http.HTTPFlow) -> None:
        record = flow.metadata.pop("trace_response", None)
        if record is not None and flow.response is not None:
            record["body"] = flow.response.get_text(strict=False) or ""
            self._write(record)
        self._write({"kind": "end", "flow": flow.id, "how": "complete"})

    def error(self, flow: http.HTTPFlow) -> None:
        record = flow.metadata.pop("trace_response", None)
        if record is not None:
            self._write(record)
        self._write({"kind": "end", "flow": flow.id, "how": f"error: {flow.error.msg if flow.error else '?'}"})

    def done(self) -> None:
        if self.fh is not None:
            self.fh.close()


addons = [TraceTap()]
