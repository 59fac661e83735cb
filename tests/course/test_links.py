"""Internal links of the course lead somewhere: to a page that exists, and to a heading that
exists on it.

Two checks. The first reads every page's Markdown links itself (no mkdocs needed) and resolves
them the way mkdocs does: relative to the page, the anchor against the target's headings. The
second proves that the site build catches the same mistakes: a tiny site with the course's
`validation` settings and one broken link fails `mkdocs build --strict`. Besides, every
glossary entry links to the chapter page that teaches it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from markdown_lines import outside_fences

REPO = Path(__file__).resolve().parents[2]
COURSE = REPO / "course"

_CODE_SPAN = re.compile(r"(`+).+?\1")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, with code spans blanked out."""
    return [(number, _CODE_SPAN.sub("``", line)) for number, line in outside_fences(text)]


def slugify(title: str) -> str:
    """The anchor mkdocs gives a heading (Python-Markdown's ``toc`` slugify, on the text
    without Markdown markup)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link: its text
    text = text.replace("`", "").replace("*", "")  # code spans and emphasis: their text
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The ids of a page's headings, with mkdocs' ``_1``, ``_2`` suffixes for repeats."""
    found: set[str] = set()
    lines = page.read_text(encoding="utf-8").splitlines()
    prose = {number for number, _ in _prose_lines("\n".join(lines))}
    for number, line in enumerate(lines, start=1):
        heading = _HEADING.match(line)
        if number not in prose or not heading:
            continue
        slug, count = slugify(heading["title"]), 1
        candidate = slug
        while candidate in found:
            candidate, count = f"{slug}_{count}", count + 1
        found.add(candidate)
    return found


def internal_links(page: Path) -> list[tuple[int, str]]:
    links = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        links += [(number, m["target"]) for m in _LINK.finditer(line)
                  if not _EXTERNAL.match(m["target"])]
    return links


def broken_links(pages: list[Path], root: Path) -> list[str]:
    problems = []
    for page in pages:
        for number, target in internal_links(page):
            path_text, _, anchor = target.partition("#")
            linked = (page.parent / path_text).resolve() if path_text else page
            where = f"{page.relative_to(root)}:{number}: {target}"
            if not linked.is_file():
                problems.append(f"{where}: no file {linked.relative_to(root.resolve())}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{where}: no heading with the anchor #{anchor}")
    return problems


def test_course_links_lead_to_pages_and_headings() -> None:
    pages = sorted(COURSE.rglob("*.md"))
    assert sum(len(internal_links(p)) for p in pages) > 100  # the parser does find links
    problems = broken_links(pages, COURSE)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_every_glossary_entry_links_to_the_page_that_teaches_it() -> None:
    glossary = COURSE / "reference" / "glossary.md"
    entries = re.split(r"(?m)^## ", glossary.read_text(encoding="utf-8"))[1:]
    assert len(entries) >= 40, len(entries)
    unlinked = [entry.splitlines()[0] for entry in entries
                if not re.search(r"\]\(\.\./stage\d/[\w-]+\.md(#[\w-]+)?\)", entry)]
    assert not unlinked, f"glossary entries without a link to a chapter page: {unlinked}"


def test_the_checker_catches_a_missing_page_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(
        "# A\n\n## The `bind` rule\n\n[ok](b.md#b-too) [ok](#the-bind-rule) "
        "[gone](missing.md) [bad anchor](b.md#nope)\n\n```python\nx = y[0](1)\n```\n")
    (tmp_path / "b.md").write_text("# B\n\n## B, too\n")
    problems = broken_links([tmp_path / "a.md"], tmp_path)
    assert len(problems) == 2, problems
    assert "no file missing.md" in problems[0] and "#nope" in problems[1]


def _site_tools_missing() -> bool:
    return any(importlib.util.find_spec(name) is None for name in ("mkdocs", "yaml"))


def _course_validation() -> str:
    """The `validation:` block of the course's mkdocs.yml, as written there."""
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    block = re.search(r"^validation:.*\n(?:[ \t]+.*\n)+", text, re.MULTILINE)
    assert block, "mkdocs.yml has no validation: block"
    return block[0]


@pytest.mark.skipif(_site_tools_missing(), reason="needs mkdocs (pip install -e '.[dev]')")
@pytest.mark.parametrize("link, fails", [
    ("[fine](b.md#a-heading)", False),
    ("[no such page](missing.md)", True),
    ("[no such heading](b.md#nowhere)", True),
])
def test_strict_build_fails_on_a_broken_internal_link(tmp_path: Path, link: str,
                                                      fails: bool) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Home\n\n{link}\n")
    (docs / "b.md").write_text("# B\n\n## A heading\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: link check\nstrict: true\n" + _course_validation())
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
         str(tmp_path / "site")],
        cwd=tmp_path, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        capture_output=True, text=True, timeout=120)
    assert (result.returncode != 0) == fails, result.stdout + result.stderr
