"""Every chapter of the course as a Jupyter notebook, made from the chapter's own Markdown.

    python tools/make_notebooks.py --out notebooks

writes one notebook per page of mkdocs.yml's nav that has code to run, in the course's folder
layout (``notebooks/stage1/the-tape.ipynb``), and names the pages it skips. The site's build
makes the same notebooks (``course/extensions/notebooks.py``) and links each page to its own;
``tests/course/test_notebooks.py`` runs them all. Nothing generated is committed.

A page becomes cells in order:

- a ```python block that the tests run becomes a **code cell**. The rules of which blocks run
  live here (``Block.skip_reason``): not a snippet include (``--8<--``, library code), not a
  titled listing (```python title="..."), not a block whose first line is ``# skip-test``;
- everything else becomes **Markdown**, simplified where Jupyter cannot show the site's
  syntax: a snippet include shows the included source as a listing (graded tasks' solutions
  hidden, as on the site); an admonition (``!!! note "Title"``) becomes a blockquote with its
  title in bold; a content tab (``=== "Title"``) becomes its bold title over its content; a
  listing's title becomes an italic caption; an image becomes a cell attachment, so the
  notebook stands alone; a link to another page leads to that page's notebook, or, for a page
  without one, to the site (``--site-url``) or names the page's file.

The Markdown goes through jupytext's Markdown reader (each stretch of Markdown a ``#region``,
each code cell a ```python fence), and the notebook is written with fixed cell ids and
metadata, so the same page gives the same file byte for byte.
"""

from __future__ import annotations

import argparse
import base64
import mimetypes
import posixpath
import re
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import nbformat
import yaml

REPO = Path(__file__).resolve().parent.parent
COURSE = REPO / "course"
MKDOCS_YML = REPO / "mkdocs.yml"
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

from assignments import hide_solutions  # noqa: E402

# --- The blocks of a page, and which of them run --------------------------------------------

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
_SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<target>[^"]+)"\s*$')


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, fence info, body and first body line (1-based);
    ``indent`` is the opening fence's, ``end`` the line of the closing fence (1-based)."""

    language: str
    info: str
    body: str
    line: int
    indent: str = ""
    end: int = 0

    @property
    def is_snippet_include(self) -> bool:
        lines = [line for line in self.body.splitlines() if line.strip()]
        return bool(lines) and all(_SNIPPET.match(line) for line in lines)

    @property
    def skip_reason(self) -> str | None:
        if self.is_snippet_include:
            return "snippet include"
        if "title=" in self.info:
            return "titled listing"
        if self.body.lstrip().startswith("# skip-test"):
            return "marked # skip-test"
        return None

    @property
    def runs(self) -> bool:
        """Whether the block is an example to run: a code cell of the page's notebook."""
        return self.language == "python" and self.skip_reason is None


def _dedent(line: str, indent: str) -> str:
    return line[len(indent):] if line.startswith(indent) else line.lstrip()


def parse_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown page, including ones indented in admonitions."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        closing = re.compile(rf"^{re.escape(indent)}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body, j = [], i + 1
        while j < len(lines) and not closing.match(lines[j]):
            body.append(_dedent(lines[j], indent))
            j += 1
        language = info.split()[0].lstrip(".").lower() if info else ""
        blocks.append(Block(language, info, "\n".join(body) + "\n", i + 2, indent, j + 1))
        i = j + 1
    return blocks


def runnable_blocks(text: str) -> list[Block]:
    """The blocks of a page that run, in order: its notebook's code cells."""
    return [block for block in parse_blocks(text) if block.runs]


# --- Which pages -----------------------------------------------------------------------------


class _ConfigLoader(yaml.SafeLoader):
    """Reads mkdocs.yml, whose ``!!python/name:`` tags (Python objects) are not needed here."""


_ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


def nav_pages(nav: object) -> list[str]:
    """The Markdown pages of a nav (mkdocs.yml's ``nav``, nested lists and titles), in order.

    Example:
        >>> nav_pages(["index.md", {"Stage 1": ["stage1/index.md", {"Tape": "stage1/t.md"}]}])
        ['index.md', 'stage1/index.md', 'stage1/t.md']
    """
    if isinstance(nav, str):
        return [nav] if nav.endswith(".md") else []
    children = nav.values() if isinstance(nav, dict) else nav if isinstance(nav, list) else []
    return [page for child in children for page in nav_pages(child)]


def read_nav(config: Path = MKDOCS_YML) -> list[str]:
    """The pages of mkdocs.yml's nav, relative to the course folder."""
    return nav_pages(yaml.load(config.read_text(encoding="utf-8"), Loader=_ConfigLoader)["nav"])


def notebook_pages(pages: Iterable[str], docs: Path = COURSE) -> list[str]:
    """The pages that become notebooks: those with a block to run. The others (the reference
    pages, each stage's *Reading JAX's source*) are prose and listings, better read on the
    site."""
    return [page for page in pages
            if runnable_blocks((docs / page).read_text(encoding="utf-8"))]


def notebook_path(page: str) -> str:
    """Where a page's notebook lies, in the notebooks' folder: the page's own path."""
    return page[:-len(".md")] + ".ipynb"


def page_url(page: str) -> str:
    """The site's address of a page, relative to the site's root (mkdocs' directory URLs)."""
    stem = page[:-len(".md")]
    if stem == "index" or stem.endswith("/index"):
        return stem[:-len("index")]
    return stem + "/"


# --- Snippet includes, with graded solutions hidden -------------------------------------------

_SECTION_MARKER = re.compile(r"--8<--\s*\[\s*(?:start|end)\s*:\s*[^\]]+\]")


def _shown_lines(path: Path, where: str) -> list[str]:
    """A source file's lines as the site shows them: each solution region one marker line."""
    return hide_solutions(path.read_text(encoding="utf-8").splitlines(), where)


def included_source(target: str, root: Path = REPO) -> str:
    """What a snippet include (``file``, ``file:section`` or ``file:first:last``, relative to
    ``root``) shows, as pymdownx.snippets does with the course's options: a section's marker
    lines left out, and the section dedented."""
    path_text, _, selector = target.partition(":")
    lines = _shown_lines(root / path_text, path_text)
    if selector.replace(":", "").isdigit():
        first, _, last = selector.partition(":")
        lines = lines[int(first) - 1:int(last or len(lines))]
    elif selector:
        start = re.compile(rf"--8<--\s*\[\s*start\s*:\s*{re.escape(selector)}\s*\]")
        end = re.compile(rf"--8<--\s*\[\s*end\s*:\s*{re.escape(selector)}\s*\]")
        first = next(i for i, line in enumerate(lines) if start.search(line)) + 1
        last = next(i for i, line in enumerate(lines) if end.search(line) and i >= first)
        lines = lines[first:last]
    kept = [line for line in lines if not _SECTION_MARKER.search(line)]
    return textwrap.dedent("\n".join(kept)).strip("\n")


# --- Markdown for Jupyter --------------------------------------------------------------------

_CONTAINER = re.compile(r'^(?P<marker>!!!|\?\?\?\+?|===[+!]?)[ \t]+(?P<rest>.*)$')
_QUOTED = re.compile(r'"(?P<title>[^"]*)"')
_TITLE = re.compile(r'title="(?P<title>[^"]*)"')
_ATTR = r'(?:[.#][\w-]+|[\w-]+=(?:"[^"]*"|[^\s"}]+))'  # .class, #id or key=value
# An attribute list (attr_list) right after a link or an image, or at the end of a line.
_ATTR_LIST = re.compile(rf"(?:(?<=\))|[ \t]+){{:?[ \t]*{_ATTR}(?:[ \t]+{_ATTR})*[ \t]*}}"
                        rf"(?=[)\s]|$)")
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s#:]+\.md)(?P<anchor>#[^)\s]*)?\)")
_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s:]+)\)")


@dataclass
class _Container:
    """An admonition or a content tab being read: its content's indentation, and whether it
    shows as a blockquote."""

    indent: int
    quoted: bool


@dataclass
class _Converter:
    """Reads one page's lines in order and writes jupytext Markdown (see the module's
    docstring); ``notebooks`` are the pages that have one, for links."""

    page: str
    notebooks: Sequence[str]
    site_url: str | None
    docs: Path
    parts: list[str] = field(default_factory=list)  # regions and code fences, in order
    lines: list[str] = field(default_factory=list)  # the Markdown of the region being read
    stack: list[_Container] = field(default_factory=list)
    blanks: int = 0  # blank lines read but not yet written: their prefix is the next line's
    attachments: dict[str, Path] = field(default_factory=dict)

    def convert(self, text: str) -> str:
        source = text.splitlines()
        blocks = {block.line - 2: block for block in parse_blocks(text)}
        i = 0
        while i < len(source):
            line = source[i].expandtabs(4)
            if not line.strip():
                self.blanks += 1
            elif i in blocks:
                self._enter(line)
                self._fence(blocks[i])
                i = blocks[i].end  # the line after the closing fence (0-based)
                continue
            else:
                self._enter(line)
                self._text(line)
            i += 1
        self._flush()
        return "\n\n".join(self.parts) + "\n"

    @property
    def prefix(self) -> str:
        return "> " * sum(container.quoted for container in self.stack)

    def _enter(self, line: str) -> None:
        """Leaves the containers that ``line`` is not indented into, and writes a blank line
        for the blank lines before it, with the prefix of where ``line`` stands."""
        indent = len(line) - len(line.lstrip())
        while self.stack and indent < self.stack[-1].indent:
            self.stack.pop()
        if self.blanks and self.lines and self.lines[-1].strip("> "):
            self.lines.append(self.prefix.rstrip())  # one blank line stands for several
        self.blanks = 0

    def _content(self, line: str) -> str:
        return line[self.stack[-1].indent:] if self.stack else line

    def _text(self, line: str) -> None:
        content = self._content(line)
        container = _CONTAINER.match(content.lstrip())
        if container is None:
            self.lines.append(self.prefix + _ATTR_LIST.sub("", content).rstrip())
            if content.startswith("# ") and len(self.parts) + len(self.lines) == 1:  # the title
                self.lines.extend(["", self._introduction()])
            return
        is_tab = container["marker"].startswith("===")
        quoted = _QUOTED.search(container["rest"])
        if quoted:
            title = quoted["title"]
        else:  # `!!! note` is titled "Note"; a tab always has a title
            title = "" if is_tab else container["rest"].split()[0].capitalize()
        if self.lines and self.lines[-1].strip("> "):
            self.lines.append(self.prefix.rstrip())
        indent = len(line) - len(content.lstrip()) + 4
        self.stack.append(_Container(indent, quoted=not is_tab))
        if title:
            self.lines.extend([f"{self.prefix}**{title}**", self.prefix.rstrip()])

    def _fence(self, block: Block) -> None:
        if block.runs:
            self._flush()
            self.parts.append(f"```python\n{block.body.rstrip()}\n```")
            return
        depth = self.stack[-1].indent if self.stack else 0
        indent = self.prefix + block.indent.expandtabs(4)[depth:]
        title = _TITLE.search(block.info)
        if title:
            self.lines.append(f"{indent}*{title['title']}*")
        body = block.body.rstrip("\n")
        if block.is_snippet_include:
            body = "\n\n".join(included_source(_SNIPPET.match(line)["target"])
                               for line in body.splitlines() if line.strip())
        fence = "`" * max(3, 1 + max(map(len, re.findall(r"`+", body)), default=0))
        self.lines.append(f"{indent}{fence}{block.language}")
        self.lines.extend((indent + line).rstrip() for line in body.splitlines())
        self.lines.append(f"{indent}{fence}")

    def _flush(self) -> None:
        while self.lines and not self.lines[-1].strip("> "):
            self.lines.pop()
        while self.lines and not self.lines[0].strip("> "):
            self.lines.pop(0)
        if self.lines:
            markdown = self._links("\n".join(self.lines))
            self.parts.append(f"<!-- #region -->\n{markdown}\n<!-- #endregion -->")
        self.lines = []

    def _introduction(self) -> str:
        where = f"`course/{self.page}`"
        if self.site_url:
            where = f"[{where}]({self.site_url.rstrip('/')}/{page_url(self.page)})"
        return (f"*This notebook is made from the course page {where}. It runs with the "
                "course's packages installed (see the repository's README); run its cells in "
                "order. A `# prints` comment shows a line that the cell prints.*")

    def _links(self, markdown: str) -> str:
        """Links to other pages lead to their notebooks; images become attachments."""
        folder = posixpath.dirname(self.page)

        def link(match: re.Match) -> str:
            target = posixpath.normpath(posixpath.join(folder, match["target"]))
            anchor = match["anchor"] or ""
            if target in self.notebooks:
                relative = posixpath.relpath(notebook_path(target), folder or ".")
                return f"[{match['text']}]({relative}{anchor})"
            if self.site_url:
                return f"[{match['text']}]({self.site_url.rstrip('/')}/{page_url(target)}{anchor})"
            return f"{match['text']} (`course/{target}`)"

        def image(match: re.Match) -> str:
            path = (self.docs / folder / match["src"]).resolve()
            if not path.is_file():
                return match[0]
            self.attachments[path.name] = path
            return f"![{match['alt']}](attachment:{path.name})"

        return _IMAGE.sub(image, _LINK.sub(link, markdown))


def notebook(page: str, notebooks: Sequence[str], site_url: str | None = None,
             docs: Path = COURSE) -> nbformat.NotebookNode:
    """The notebook of one page (relative to the course folder); ``notebooks``, the pages that
    have one, decide where its links lead."""
    converter = _Converter(page, notebooks, site_url, docs)
    text = converter.convert((docs / page).read_text(encoding="utf-8"))
    nb = jupytext.reads(text, fmt="md")
    for number, cell in enumerate(nb.cells, start=1):
        cell.id = f"cell-{number}"
        cell.metadata = {}
        if cell.cell_type == "markdown":
            _attach_images(cell, converter.attachments)
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    return nb


def _attach_images(cell: nbformat.NotebookNode, files: dict[str, Path]) -> None:
    for name in re.findall(r"\(attachment:([^)]+)\)", cell.source):
        mime = mimetypes.guess_type(name)[0] or "application/octet-stream"
        data = base64.b64encode(files[name].read_bytes()).decode("ascii")
        cell.setdefault("attachments", {})[name] = {mime: data}


def notebook_json(page: str, notebooks: Sequence[str], site_url: str | None = None,
                  docs: Path = COURSE) -> str:
    """A page's notebook as the text of its .ipynb file."""
    return jupytext.writes(notebook(page, notebooks, site_url, docs), fmt="ipynb")


def write_notebooks(out: Path, site_url: str | None = None) -> tuple[list[Path], list[str]]:
    """Writes the notebooks of the nav's pages under ``out``; returns the files written and the
    pages skipped (nothing to run)."""
    pages = read_nav()
    notebooks = notebook_pages(pages)
    written = []
    for page in notebooks:
        path = out / notebook_path(page)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(notebook_json(page, notebooks, site_url), encoding="utf-8")
        written.append(path)
    return written, [page for page in pages if page not in notebooks]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder to write into")
    parser.add_argument("--site-url", help="the course site's address, for links to pages "
                        "without a notebook (without it, such a link names the page's file)")
    args = parser.parse_args(argv)
    written, skipped = write_notebooks(args.out, args.site_url)
    print(f"wrote {len(written)} notebooks under {args.out}")
    print(f"skipped {len(skipped)} pages with no code to run: {', '.join(skipped)}")


if __name__ == "__main__":
    main()
