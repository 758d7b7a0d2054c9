"""``python -m mcpx``: with no argument, the path of the addon file (for ``mitmdump -s``); ``check``
and ``log`` read a recording or a change log (:mod:`.check`, :mod:`.changelog`); ``tap`` prints the
path of the recording tap (:mod:`.tap`)."""

from __future__ import annotations

import argparse


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m mcpx", description="mcpx: MCP revisions in mitmproxy. "
                                "Without a command: print the addon file's path, for mitmdump -s.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="what each client revision would lose of a recorded session (exit 1: a message "
                                     "not delivered, or invalid for its revision)")
    c.add_argument("file", help="a flow file (mitmdump -w), recorded with or without mcpx")
    c.add_argument("--client-revision", action="append", metavar="REV",
                   help="replay as this client revision (repeatable; 'recorded' is always replayed; "
                        "default: every older revision its server serves)")
    c.add_argument("--json", action="store_true", help="JSON for machines")
    lg = sub.add_parser("log", help="the change log (mcpx_log) summarised by session, method and rule")
    lg.add_argument("file", help="a JSON Lines file written by mcpx_log")
    lg.add_argument("--follow", action="store_true", help="print the summary again as lines are added")
    sub.add_parser("tap", help="print the path of the recording tap, for mitmdump -s ... -w session.mitm (record without mcpx)")
    args = p.parse_args(argv)
    if args.command == "tap":
        import os

        print(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tap.py"))
        return 0
    if args.command == "check":
        from .check import main as check
        return check(args.file, args.client_revision, args.json)
    from .changelog import main as log
    return log(args.file, args.follow)
