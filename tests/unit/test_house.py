"""The house rules of ``addon/``, measured statically (AST, nothing imported): no class over
300 lines, no module over 700 lines, no import circle at load time among ``addon/`` modules.

Load time: the imports a module runs when it is imported (its top level, and the bodies of
top-level ``if``/``try``/``with`` blocks), not those inside functions or under
``if TYPE_CHECKING:``. ``from . import x`` where ``x`` is a module is an import of ``x``, not of
the package it is in.

``test_house_rules`` fails naming the offenders, if any. The measures themselves are tested on
small sources below."""
from __future__ import annotations

import ast
import pathlib

ADDON = pathlib.Path(__file__).resolve().parents[2] / "addon"
MAX_CLASS, MAX_MODULE = 300, 700


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(root: pathlib.Path) -> dict[str, tuple[pathlib.Path, str]]:
    """{module name: (path, text)} of every ``.py`` under ``root``."""
    return {module_name(p, root): (p, p.read_text()) for p in sorted(root.rglob("*.py"))}


def big_classes(mods: dict[str, tuple[pathlib.Path, str]], limit: int = MAX_CLASS) -> list[tuple[str, int]]:
    """[("module.Class", lines)] of every class (nested ones too) longer than ``limit`` lines, longest first."""
    out = []
    for name, (_, text) in mods.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                n = node.end_lineno - start + 1
                if n > limit:
                    out.append((f"{name}.{node.name}", n))
    return sorted(out, key=lambda x: -x[1])


def big_modules(mods: dict[str, tuple[pathlib.Path, str]], limit: int = MAX_MODULE) -> list[tuple[str, int]]:
    out = [(name, len(text.splitlines())) for name, (_, text) in mods.items()]
    return sorted([m for m in out if m[1] > limit], key=lambda x: -x[1])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _load_time(body: list[ast.stmt]):
    """The import statements run when a module loads."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _load_time(node.body)
            yield from _load_time(node.orelse)
        elif isinstance(node, ast.Try):
            for part in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _load_time(part)
        elif isinstance(node, ast.With):
            yield from _load_time(node.body)


def import_graph(mods: dict[str, tuple[pathlib.Path, str]]) -> dict[str, set[str]]:
    """{module: the ``addon/`` modules it imports at load time}."""
    graph: dict[str, set[str]] = {}
    for name, (path, text) in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in _load_time(ast.parse(text).body):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".") if package else []
                    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                subs = [f"{prefix}.{a.name}" if prefix else a.name for a in node.names]
                targets = [s for s in subs if s in mods]
                if len(targets) < len(subs):  # names that are not modules come from the module itself
                    targets.append(prefix)
            deps |= {t for t in targets if t in mods and t != name}
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def offenders(root: pathlib.Path = ADDON) -> list[str]:
    mods = sources(root)
    out = [f"class {n} {lines} lines" for n, lines in big_classes(mods)]
    out += [f"module {n} {lines} lines" for n, lines in big_modules(mods)]
    out += ["import circle " + " <-> ".join(c) for c in cycles(import_graph(mods))]
    return out


OFFENDERS = offenders()


def test_house_rules():
    assert OFFENDERS == [], "; ".join(OFFENDERS)


# -- the measures, on small sources --------------------------------------------------------------

def _tree(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_a_circle_is_found_and_late_imports_are_not(tmp_path):
    root = _tree(tmp_path, {
        "pkg/__init__.py": "from . import a\n",
        "pkg/a.py": "from .b import f\n",
        "pkg/b.py": "from . import c\ndef f():\n    from .a import g\n",
        "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import f\ntry:\n    import pkg.d\nexcept ImportError:\n    pass\n",
        "pkg/d.py": "from .sub.e import x\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/e.py": "from .. import d\nx = 1\n",
    })
    graph = import_graph(sources(root))
    assert graph["pkg"] == {"pkg.a"} and graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.c"}
    assert graph["pkg.c"] == {"pkg.d"} and graph["pkg.d"] == {"pkg.sub.e"} and graph["pkg.sub.e"] == {"pkg.d"}
    assert cycles(graph) == [["pkg.d", "pkg.sub.e"]]


def test_sizes_are_measured(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(300))
    root = _tree(tmp_path, {"m.py": f"@dataclass\nclass Big:\n{body}\n\nclass Small:\n    pass\n",
                            "n.py": "x = 1\n" * 701, "o.py": "x = 1\n" * 700})
    mods = sources(root)
    assert big_classes(mods) == [("m.Big", 302)]
    assert big_modules(mods) == [("n", 701)]
    assert offenders(root) == ["class m.Big 302 lines", "module n 701 lines"]
