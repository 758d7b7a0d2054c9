"""Print the rule-coverage table: every record of revision-delta.json, and whether a test asserts
the exact message and change record it produces.

    .venv/bin/python scripts/rule_coverage.py            # table + summary
    .venv/bin/python scripts/rule_coverage.py --summary  # summary only

"tested" means some test under tests/ asserts a change record (pointer, action, rule) with that
id, next to the exact delivered message; the test files are scanned for such record tuples (also
(direction, pointer, action, rule)). Cross-era records (a legacy peer on one leg, a 2026-07-28 peer on
the other: bridge/) that no test asserts are listed with the direction that applies them and why
they are untested, or why they cannot apply; informational records (rule "none", or no target) as such.
"""
from __future__ import annotations

import pathlib
import re
import sys
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "addon"))

from mcpx_core.revisions import load_json  # noqa: E402

ACTIONS = "drop|rewrite|keep|drop-message|split|answer-locally|passthrough|synthesize|bridge|repair|audit"
RECORD = re.compile(r"""\(\s*(?:(['"])(?:c2s|s2c)\1\s*,\s*)?(['"])[^'"]*\2\s*,\s*(['"])(?:%s)\3\s*,\s*(['"])([A-Za-z][\w$-]+)\4\s*\)""" % ACTIONS)

#: records whose target is reachable only when one leg is 2026-07-28 and the other legacy
BRIDGING = {
    "LC-initialize", "LC-initialized", "LC-ping", "DISC-request", "META-protocolVersion", "META-clientCapabilities",
    "META-clientInfo", "META-logLevel", "TR-session-id", "TR-session-delete", "TR-get-stream", "TR-sse-resumability",
    "TR-unknown-method-404", "TR-modern-400-errors", "TR-cancel-by-stream-close", "CAP-client-roots-listChanged",
    "CAP-server-resources-subscribe", "ROOTS-list-changed", "LOG-setLevel", "LOG-message-scope", "PROG-direction",
    "CANCEL-direction", "PAGE-params-required", "ERR-resource-not-found", "ELIC-elicitationId", "MRTR-input-required-result",
    "MRTR-input-responses", "MRTR-embedded-requests", "MRTR-bridge-legacy-client", "MRTR-bridge-legacy-server",
    "MRTR-server-requests-removed", "SUB-listen", "SUB-acknowledged", "SUB-listen-result", "SUB-resources-subscribe",
    "SUB-list-changed-delivery", "META-model-immediate-response", "TR-http-sse-2024",
}
#: applicable records mcpx does not apply, with the reason
NOT_DONE = {
    "SAMP-includeContext": "needs the client's sampling.context capability threaded into the rule; values are valid enum members, so no client breaks",
}
#: cross-era records no test asserts: why (the bridge that applies them, or why they cannot apply)
CROSS_ERA_WHY = {
    "TR-cancel-by-stream-close": "2026 client -> legacy server: a client closing its request stream is not visible to an addon hook "
                                 "still preparing the answer (mitmproxy awaits the hook); the held upstream call runs to its end",
    "LC-ping": "2026 client -> legacy server: bridge/client2026.py answers a server's ping during a call with {}; no real legacy "
               "server sends one during a call, so no test meets it",
    "MRTR-server-requests-removed": "2026 client -> legacy server: other server requests during a call are answered -32601 "
                                    "(bridge/client2026.py); no real peer sends one",
    "TR-get-stream": "2026 client -> legacy server: applied as SUB-listen (the listen is served from the GET stream)",
    "META-model-immediate-response": "removed with CreateTaskResult (TASK-create-result): no separate record",
    "TR-http-sse-2024": "the 2024-11-05 HTTP+SSE transport is out of scope for a Streamable HTTP proxy",
}
#: cross-era records of the other direction (legacy client -> 2026-07-28 server)
LEGACY_CLIENT = "legacy client -> 2026-07-28 server (bridge/legacy_client.py)"


#: records applied under another record's id (one change, one record), with the id that logs it
SAME_AS = {
    "TR-post-body": "RPC-batch-request",  # the only POST-body rewrite is the batch split
    "LC-unsupported-version": "ERR-unsupported-protocol-version",  # -32022 -> -32602 is one rewrite
    "TASK-extension-2026": "CAP-extensions",  # the extensions object is dropped whole
}


def tested_ids() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in (ROOT / "tests").rglob("*.py"):
        if "node_modules" in path.parts or ".venvs" in path.parts:
            continue
        for m in RECORD.finditer(path.read_text(errors="replace")):
            found[m.group(5)].add(str(path.relative_to(ROOT)))
    return found


def main() -> int:
    delta = load_json("revision-delta.json")
    tested = tested_ids()
    rows, counts = [], defaultdict(int)
    for r in delta["records"]:
        rid = r["id"]
        if rid in tested:
            status = "tested: " + ", ".join(sorted(tested[rid]))
            counts["tested"] += 1
        elif rid in SAME_AS and SAME_AS[rid] in tested:
            status = f"tested as {SAME_AS[rid]}: " + ", ".join(sorted(tested[SAME_AS[rid]]))
            counts["tested"] += 1
        elif rid in CROSS_ERA_WHY:
            status = "cross-era, untested: " + CROSS_ERA_WHY[rid]
            counts["bridging"] += 1
        elif rid in BRIDGING:
            status = "cross-era, not applied yet: " + LEGACY_CLIENT
            counts["bridging"] += 1
        elif r["rule"] == "none" or not r["targets"]:
            status = "informational (nothing to rewrite)"
            counts["informational"] += 1
        elif rid in NOT_DONE:
            status = "not applied: " + NOT_DONE[rid]
            counts["not applied"] += 1
        else:
            status = "NOT TESTED"
            counts["untested"] += 1
        rows.append((rid, r["rule"], ",".join(t[2:7] for t in r["targets"]) or "-", status))
    applicable = len(rows) - counts["bridging"] - counts["informational"]
    if "--summary" not in sys.argv:
        w = max(len(x[0]) for x in rows)
        print(f"{'record':<{w}}  {'rule':<14} {'targets':<30} status")
        for rid, rule, targets, status in rows:
            print(f"{rid:<{w}}  {rule:<14} {targets:<30} {status}")
        print()
    print(f"{len(rows)} records: {counts['tested']} of {applicable} applicable records tested "
          f"({counts['not applied']} not applied, {counts['untested']} untested); "
          f"{counts['bridging']} cross-era records untested or not applied (listed with why), {counts['informational']} informational")
    return 1 if counts["untested"] else 0


if __name__ == "__main__":
    sys.exit(main())
