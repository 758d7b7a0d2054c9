"""Rewrite the golden files of the recorded flows: flows/NAME.mitm -> flows/NAME.golden.json.

    .venv/bin/python scripts/update_goldens.py            # every flows/*.mitm
    .venv/bin/python scripts/update_goldens.py NAME ...   # only these (NAME or path of a .mitm)
    .venv/bin/python scripts/update_goldens.py --check    # write nothing; exit 1 if a golden is stale

Each flow file is replayed through mcpx offline in both ways the tests use (in-process through
the addon's hooks, and ``mitmdump -nr NAME.mitm -s addon/mcpx.py -w OUT``); the two must agree
byte for byte, else nothing is written for that file and the exit status is 1. Then review the
change with ``git diff flows/``: each changed golden line is a change of mcpx's behaviour.
Offline replay never contacts a server, so no peer needs to run.
"""

from __future__ import annotations

import argparse
import difflib
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "replay"), str(ROOT / "tests"), str(ROOT / "addon")]

import replay_lib as rl  # noqa: E402


def _resolve(name: str) -> pathlib.Path:
    p = pathlib.Path(name)
    if p.suffix != ".mitm":
        p = rl.FLOWS_DIR / f"{name}.mitm"
    if not p.exists():
        raise SystemExit(f"no flow file {p}")
    return p.resolve()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="flow files (NAME or path/NAME.mitm; default: all of flows/)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if any golden file differs")
    args = ap.parse_args(argv)
    paths = [_resolve(n) for n in args.names] if args.names else rl.flow_files()
    if not paths:
        raise SystemExit(f"no flow files in {rl.FLOWS_DIR}")
    status = 0
    with tempfile.TemporaryDirectory(prefix="mcpx-goldens-") as tmp:
        dumped = rl.replay_mitmdump_many(paths, pathlib.Path(tmp))
        for path in paths:
            recorded = rl.load(path)
            text = rl.golden_text(rl.golden(recorded, rl.replay_in_process(path)))
            via_mitmdump = rl.golden_text(rl.golden(recorded, dumped[path]))
            golden = rl.golden_path(path)
            if text != via_mitmdump:
                print(f"{path.name}: in-process and mitmdump -nr replays differ; golden not written:")
                sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), via_mitmdump.splitlines(True),
                                                           "in-process", "mitmdump", n=2))
                status = 1
                continue
            old = golden.read_text() if golden.exists() else None
            if old == text:
                print(f"{golden.name}: unchanged")
            elif args.check:
                print(f"{golden.name}: differs from the replay (run scripts/update_goldens.py)")
                status = 1
            else:
                golden.write_text(text)
                print(f"{golden.name}: {'written' if old is None else 'updated'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
