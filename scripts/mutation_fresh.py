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
