"""Run the official MCP conformance suite's server scenarios (npm @modelcontextprotocol/conformance)
against a URL and read back each check's status. Standard library only.

Install the suites first: scripts/setup_peers.sh (npm ci in tests/conformance and tests/conformance/alpha).

    from conformance_lib import SUITES, run_suite

    for suite, specs in SUITES.items():                 # "0.1.16": (...), "0.2.0-alpha.12": (...)
        for spec in specs:
            r = run_suite(suite, spec, "http://127.0.0.1:PORT/mcp", workdir)
            r.statuses   # {scenario: {check: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED"}}
            r.messages   # {scenario: {check: errorMessage or ""}}
            r.seconds    # wall time of the CLI

Each run is `node --import node20-shim/register.mjs .../conformance/dist/index.js server --url URL
--suite all --spec-version SPEC -o OUTDIR`; every scenario writes OUTDIR/server-<scenario>-<time>/checks.json.

A check is named by its id. Some scenarios emit the same id several times (e.g. the 2026-07-28
`http-header-validation` emits `sep-2243-server-reject-invalid-headers` once per probe, with the
probe in its `name`; `server-stateless` emits `sep-2575-http-server-error-jsonrpc-id` once per
failing probe): the second is named `ID #2`, the third `ID #3`, ... in the order the suite emitted
them (it runs one probe after another). `names` gives each check's `name` field.
A scenario that threw before writing checks.json (the CLI then prints "Failed to run scenario X")
gets the one check the suite itself reports for it: id = the scenario name, status FAILURE.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CONFORMANCE_DIR = Path(__file__).resolve().parent / "conformance"
SHIM = CONFORMANCE_DIR / "node20-shim" / "register.mjs"

#: suite version -> folder holding its package.json / package-lock.json / node_modules
SUITE_DIRS = {
    "0.1.16": CONFORMANCE_DIR,
    "0.2.0-alpha.12": CONFORMANCE_DIR / "alpha",
}

#: suite version -> the spec versions for which it has server scenarios (`conformance list --server
#: --spec-version V`). 0.1.16 also accepts 2025-03-26, draft and extension, but runs no server
#: scenario for them; with --spec-version, neither release runs the "extension" scenarios (tasks-*,
#: sep-2640-*). The alpha takes `draft` as an alias of 2026-07-28.
SUITES: dict[str, tuple[str, ...]] = {
    "0.1.16": ("2025-06-18", "2025-11-25"),
    "0.2.0-alpha.12": ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"),
}

_PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
_DIR_RE = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")
_RUNNING_RE = re.compile(r"^=== Running scenario: (?P<scenario>\S+) ===$", re.M)


class ConformanceError(RuntimeError):
    """The suite could not be run, or gave no usable output."""


def entry(suite: str) -> Path:
    """The suite's CLI (dist/index.js)."""
    return SUITE_DIRS[suite] / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def suites_missing() -> list[str]:
    """What scripts/setup_peers.sh should have made; [] when both suites are installed, in their versions."""
    need = [entry(s) for s in SUITE_DIRS] + [SHIM]
    missing = [str(p) for p in need if not p.exists()]
    for suite in SUITE_DIRS:
        pkg = entry(suite).parents[1] / "package.json"
        if pkg.exists() and json.loads(pkg.read_text()).get("version") != suite:
            missing.append(f"{pkg} (version {json.loads(pkg.read_text()).get('version')}, need {suite})")
    if not shutil.which("node"):
        missing.append("node (on PATH)")
    return missing


@dataclass
class SuiteRun:
    suite: str
    spec: str
    url: str
    seconds: float
    returncode: int
    statuses: dict[str, dict[str, str]] = field(default_factory=dict)
    messages: dict[str, dict[str, str]] = field(default_factory=dict)
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    #: scenarios in the order the CLI ran them
    scenarios: list[str] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    #: CPU seconds (user + system) of the suite's node process
    cpu_seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for checks in self.statuses.values():
            for st in checks.values():
                out[st] = out.get(st, 0) + 1
        return out


def _message(check: dict) -> str:
    msg = check.get("errorMessage") or ""
    return msg if isinstance(msg, str) else json.dumps(msg)


def check_keys(checks: list[dict]) -> list[str]:
    """The name of each check of one scenario: its id; a later check with the same id is `ID #2`,
    `ID #3`, ... in the order the suite emitted them."""
    seen: dict[str, int] = {}
    keys = []
    for c in checks:
        n = seen[c["id"]] = seen.get(c["id"], 0) + 1
        keys.append(c["id"] if n == 1 else f"{c['id']} #{n}")
    return keys


Table = dict[str, dict[str, str]]


def parse_checks(outdir: Path) -> tuple[Table, Table, Table]:
    """{scenario: {check: X}} from OUTDIR/*/checks.json, for X = status, errorMessage ("" if none), name."""
    statuses: Table = {}
    messages: Table = {}
    names: Table = {}
    for path in sorted(outdir.glob("*/checks.json")):
        m = _DIR_RE.match(path.parent.name)
        if not m:
            raise ConformanceError(f"unexpected result folder {path.parent}")
        scenario = m["scenario"]
        if scenario in statuses:
            raise ConformanceError(f"scenario {scenario} ran twice into {outdir}: use a fresh output folder")
        checks = json.loads(path.read_text())
        keys = check_keys(checks)
        statuses[scenario] = {k: c["status"] for k, c in zip(keys, checks)}
        messages[scenario] = {k: _message(c) for k, c in zip(keys, checks)}
        names[scenario] = {k: c.get("name") or "" for k, c in zip(keys, checks)}
    return statuses, messages, names


def _wait(proc: subprocess.Popen, timeout: float) -> tuple[int | None, float]:
    """(exit status or None on timeout, CPU seconds) of `proc`, reaped with os.wait4 for its rusage."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        pid, wstatus, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(wstatus)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            return None, 0.0
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def run_suite(suite: str, spec: str, url: str, workdir: Path | None = None, timeout: float = 600,
              env: dict[str, str] | None = None) -> SuiteRun:
    """Run every server scenario of `suite` for `spec` against `url`; see the module docstring.

    Results go to a fresh folder under `workdir` (a temporary folder, removed afterwards, if None)."""
    if suite not in SUITE_DIRS:
        raise ValueError(f"unknown suite {suite!r}; known: {sorted(SUITE_DIRS)}")
    cli = entry(suite)
    if not cli.exists():
        raise ConformanceError(f"{cli} missing: run scripts/setup_peers.sh")
    node = shutil.which("node")
    if not node:
        raise ConformanceError("node not found on PATH")
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="mcpx-conformance-")
        workdir = Path(tmp.name)
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        outdir = Path(tempfile.mkdtemp(prefix=f"{suite}-{spec}-", dir=workdir))
        argv = [node, "--import", str(SHIM), str(cli), "server", "--url", url,
                "--suite", "all", "--spec-version", spec, "-o", str(outdir)]
        run_env = {k: v for k, v in os.environ.items() if k.lower() not in _PROXY_VARS}
        run_env.update(env or {})
        out_path, err_path = workdir / f"{outdir.name}.stdout", workdir / f"{outdir.name}.stderr"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.monotonic()
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    cwd=SUITE_DIRS[suite], env=run_env)
            status, cpu = _wait(proc, timeout)
            seconds = time.monotonic() - start
        stdout, stderr = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
        if status is None:
            raise ConformanceError(f"conformance {suite} {spec} against {url} timed out after {timeout}s\n"
                                   f"stdout: {stdout[-3000:]}")
        scenarios = _RUNNING_RE.findall(stdout)
        if not scenarios:
            raise ConformanceError(f"conformance {suite} {spec} ran no scenario (rc={status})\n"
                                   f"stdout: {stdout[-2000:]}\nstderr: {stderr[-2000:]}")
        statuses, messages, names = parse_checks(outdir)
        for scenario in scenarios:  # threw before writing checks.json: as the suite reports it
            if scenario not in statuses:
                statuses[scenario] = {scenario: "FAILURE"}
                names[scenario] = {scenario: scenario}
                m = re.search(rf"Failed to run scenario {re.escape(scenario)}:(.*)", stderr)
                messages[scenario] = {scenario: "Failed to run scenario" + (f":{m[1]}" if m else " (no checks.json)")}
        extra = set(statuses) - set(scenarios)
        if extra:
            raise ConformanceError(f"results for scenarios the CLI did not announce: {sorted(extra)}")
        return SuiteRun(suite, spec, url, seconds, status, statuses, messages, names, scenarios, stdout, stderr, cpu)
    finally:
        if tmp is not None:
            tmp.cleanup()


@dataclass
class Difference:
    scenario: str
    check: str
    direct: str
    proxied: str
    message: str  # the proxied run's errorMessage for that check ("" when it has none)
    name: str = ""  # the check's name field
    direct_message: str = ""

    def __str__(self) -> str:
        name = f" ({self.name})" if self.name and self.name != self.check else ""
        out = f"{self.scenario} / {self.check}{name}: direct {self.direct}, through mcpx {self.proxied}"
        if self.message:
            out += f": {self.message}"
        elif self.proxied == ABSENT and self.direct_message:
            out += f" (direct: {self.direct_message})"
        return out


ABSENT = "(absent)"


def differences(direct: SuiteRun, proxied: SuiteRun) -> list[Difference]:
    """Every check whose status differs between two runs (a check missing on one side is ABSENT)."""
    out = []
    for scenario in sorted(set(direct.statuses) | set(proxied.statuses)):
        d, p = direct.statuses.get(scenario, {}), proxied.statuses.get(scenario, {})
        for check in sorted(set(d) | set(p)):
            ds, ps = d.get(check, ABSENT), p.get(check, ABSENT)
            if ds != ps:
                name = proxied.names.get(scenario, {}).get(check) or direct.names.get(scenario, {}).get(check, "")
                out.append(Difference(scenario, check, ds, ps, proxied.messages.get(scenario, {}).get(check, ""),
                                      name, direct.messages.get(scenario, {}).get(check, "")))
    return out


def main(argv: list[str] | None = None) -> int:
    """python tests/conformance_lib.py URL [--suite S] [--spec V] [--json]: run and print every check."""
    import argparse

    ap = argparse.ArgumentParser(description="Run the MCP conformance suite's server scenarios against URL "
                                 "(every suite version and spec version unless --suite / --spec) and print each check.")
    ap.add_argument("url", help="the MCP endpoint, e.g. http://127.0.0.1:8080/mcp")
    ap.add_argument("--suite", action="append", choices=list(SUITES), help="repeatable; default: all")
    ap.add_argument("--spec", action="append", help="repeatable; default: every spec version of the suite")
    ap.add_argument("--json", action="store_true", help="print {suite: {spec: {scenario: {check: status}}}}")
    args = ap.parse_args(argv)
    out: dict = {}
    for suite in args.suite or SUITES:
        for spec in args.spec or SUITES[suite]:
            r = run_suite(suite, spec, args.url)
            out.setdefault(suite, {})[spec] = r.statuses
            if not args.json:
                print(f"== conformance {suite} --spec-version {spec}: {r.seconds:.1f} s, {r.counts()}")
                for scenario in r.scenarios:
                    for check, status in r.statuses[scenario].items():
                        msg = r.messages[scenario][check]
                        print(f"{status:8} {scenario} / {check}" + (f": {msg}" if msg else ""))
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
