"""pytest plugin for scripts/mutation.sh (``-p mutation_fresh``): every pytest run imports mcpx afresh.

mutmut forks each mutant's run from a process that already imported mcpx and ran the tests in it,
so what mcpx computes once (the rule registry built at import, the schema models of
``revisions.model``, union and discriminator tables, ``functools.cache``) would hold the original
code's results in every fork and hide the mutant. Before pytest loads the tests, this drops from
``sys.modules`` every module of the staged tree (mcpx_core, the addon, the tests and their
helpers), so they are imported again, under the mutant. Cost: about 0.7 s per mutant.
"""
from __future__ import annotations

import os
import sys

import pytest

_TREE = os.path.realpath(os.path.dirname(__file__)) + os.sep


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args) -> None:
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name != __name__ and path and os.path.realpath(path).startswith(_TREE):
            del sys.modules[name]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus) -> None:
    """Reap every child process a test left behind (a mitmdump or a peer whose test failed or timed out).

    mutmut runs its stats pass in its own process and later collects each mutant's run with
    ``os.wait()``, which reaps any child: a straggler from the stats pass exiting then is taken for an
    unknown worker and mutmut stops with ``KeyError: <pid>``.
    """
    me = os.getpid()
    for stat in _proc_stats():
        pid, ppid = stat
        if ppid != me:
            continue
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _proc_stats():
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(entry), int(fields[1])
