"""The user documentation (README.md and docs/*.md): links resolve, cited files and tests exist,
the README stays short, no page speaks of the project's internal process, and the sections
generated from shipped data (scripts/gen_docs.py) match the data.

Anchors follow GitHub's rules: a heading's text, lower-cased, with everything but letters, digits,
``_``, ``-`` and spaces removed, spaces turned into ``-``; a repeated slug gets ``-1``, ``-2``, ..."""
from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
README_MAX = 16_000
#: the pages the README's reader is sent to (one per subject)
REQUIRED = ["options", "sessions-and-scaling", "bridging", "inspection", "testing-recorded-flows", "troubleshooting",
            "security", "repairs-and-completeness", "performance", "reliability", "development", "architecture"]
#: words of the project's own process, meaningless to a reader of the docs
PROCESS = [re.compile(p, re.I) for p in (r"\bissues? #?\d+", r"\bround \d", r"\bstop \d+", r"\bthe team\b")]
#: files that are not in the repository
ELSEWHERE = [re.compile(p) for p in (r"\bPEERS\.md\b", r"\bREVISIONS\.md\b", r"\.\./shared\b", r"/work/")]

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def prose(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    text = LINK.sub(lambda m: m.group(1), heading)
    text = CODE_SPAN.sub(lambda m: m.group(2), text)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: pathlib.Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path.read_text()):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
        out |= set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line))
    return out


def links(path: pathlib.Path) -> list[str]:
    out = []
    for line in prose(path.read_text()):
        line = CODE_SPAN.sub("", line)
        out += [m.group(2) for m in LINK.finditer(line)]
    return out


def code_spans(path: pathlib.Path) -> list[str]:
    return [m.group(2).strip() for line in prose(path.read_text()) for m in CODE_SPAN.finditer(line)]


def test_the_pages_are_there():
    assert sorted(p.stem for p in DOCS if p.stem in REQUIRED) == sorted(REQUIRED)


def test_readme_is_short():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX, f"README.md is {size} bytes, more than {README_MAX}: move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_and_anchors_resolve(page):
    bad = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if ROOT not in dest.parents and dest != ROOT:
            bad.append(f"{target}: outside the repository")
        elif not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert bad == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_process_words_and_no_files_from_elsewhere(page):
    text = page.read_text()
    found = [m.group(0) for pat in PROCESS + ELSEWHERE for m in pat.finditer(text)]
    assert found == []


#: cited paths that are made by the setup or stand for the reader's own files
MADE_ELSEWHERE = re.compile(r"(^|/)(\.venvs|node_modules)(/|$)|my-server|NAME")
PACKAGE = ROOT / "addon" / "mcpx_core"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_files_and_tests_exist(page):
    """Every file of the repository a page names in code (``tests/e2e/test_x.py``, ``bridge/stream.py``)
    exists, and every test it names (``test_failover_mid_round_trip``) is defined under tests/."""
    tests_text = "\n".join(p.read_text(errors="replace") for p in (ROOT / "tests").rglob("test_*.py")
                           if "node_modules" not in p.parts)
    bad = []
    for span in code_spans(page):
        for token in re.findall(r"[\w./-]+", span):
            token = token.rstrip(".")
            if "*" in span or MADE_ELSEWHERE.search(token):
                continue
            top = token.split("/")[0]
            if "/" in token and top in ("tests", "scripts", "addon", "bench", "deploy", "flows", "docs", ".ci"):
                if not (ROOT / token).exists():
                    bad.append(token)
            elif "/" in token and top in ("addons", "bridge", "framing", "rules", "data") and token.endswith((".py", ".json", ".toml")):
                if not (PACKAGE / token).exists():
                    bad.append(token)
            elif re.fullmatch(r"test_\w+", token) and not re.search(rf"\bdef {token}\b", tests_text):
                bad.append(token)
    assert bad == []


def test_generated_sections_match_the_data():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    for (page, name), make in gen.SECTIONS.items():
        text = (ROOT / page).read_text()
        assert gen.render(text, name, make()) == text, f"{page} ({name}) differs from the data: run scripts/gen_docs.py"


# -- the checks themselves ------------------------------------------------------------------------

@pytest.mark.parametrize("heading,want", [
    ("Bridging: peers of different revisions and eras", "bridging-peers-of-different-revisions-and-eras"),
    ("Several replicas behind HAProxy (the way to scale)", "several-replicas-behind-haproxy-the-way-to-scale"),
    ("`mcpx_max_body`", "mcpx_max_body"),
    ("A -> B", "a---b"),
    ("Quick start (fresh machine)", "quick-start-fresh-machine"),
    ("[Link](x.md) and **bold**", "link-and-bold"),
])
def test_slug(heading, want):
    assert slug(heading) == want


def test_repeated_headings_and_fences(tmp_path):
    p = tmp_path / "x.md"
    p.write_text("# A\n## A\n```\n# not a heading\n[x](nowhere.md)\n```\n### A\n[y](x.md#a-2) `[z](no.md)`\n")
    assert anchors(p) == {"a", "a-1", "a-2"}
    assert links(p) == ["x.md#a-2"]


def test_options_page_lists_every_option():
    """docs/options.md: a table row with the default as typed, and a section, for every option of
    ``Settings`` (addon/mcpx_core/settings.py), in its order."""
    from mcpx_core.settings import Settings

    text = (ROOT / "docs" / "options.md").read_text()
    rows = re.findall(r"^\| `(mcpx_\w+)` \| ([^|]+) \|", text, re.M)
    want = []
    for name in Settings.option_names():
        default = Settings.spec(name)[1]
        if isinstance(default, bool):
            default = "true" if default else "false"
        want.append((name, f"`{default}`" if default not in ("", ()) else "(none)"))
    assert [(n, d.strip()) for n, d in rows] == want
    assert re.findall(r"^### (mcpx_\w+)$", text, re.M) == Settings.option_names()
