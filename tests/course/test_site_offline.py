"""The course site loads nothing from another host: it reads the same offline as online.

Every script, stylesheet, font, image and frame of the built site (the fixture ``built_site``)
comes from the site itself; links to other sites (``<a href>``) are fine, as a reader follows
them on purpose. The diagrams need Mermaid, which the theme fetches from unpkg.com unless the
global ``mermaid`` is already defined: ``course/overrides/main.html`` loads the site's copy
first, on each page that has a diagram, and these tests check that it does.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

MERMAID = Path("assets/javascripts/mermaid.min.js")
# The <link> relations that make the browser fetch something (canonical, next, ... do not).
_FETCHING_RELS = {"stylesheet", "preload", "modulepreload", "prefetch", "preconnect",
                  "dns-prefetch", "icon", "shortcut", "apple-touch-icon", "mask-icon", "manifest"}
_CSS_URL = re.compile(r"""url\(\s*(?P<quote>['"]?)(?P<url>.*?)(?P=quote)\s*\)""")
_CSS_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?['"]?(?P<url>[^'")\s;]+)""")


class _Loads(HTMLParser):
    """What a page loads: (tag, URL) pairs in document order, and its inline CSS."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[tuple[str, str]] = []
        self.css: list[str] = []
        self.diagrams = 0
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        rels = set(attributes.get("rel", "").lower().split())
        if tag in ("script", "img", "iframe", "source", "embed") and "src" in attributes:
            self.loads.append((tag, attributes["src"]))
        elif tag == "link" and rels & _FETCHING_RELS:
            self.loads.append((f"link rel={attributes['rel']}", attributes.get("href", "")))
        elif tag == "object" and "data" in attributes:
            self.loads.append((tag, attributes["data"]))
        if tag == "img" and "srcset" in attributes:
            for candidate in attributes["srcset"].split(","):
                self.loads.append(("img srcset", candidate.split()[0] if candidate else ""))
        if "style" in attributes:
            self.css.append(attributes["style"])
        if tag == "pre" and "mermaid" in attributes.get("class", "").split():
            self.diagrams += 1
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.css.append(data)


def _is_remote(url: str) -> bool:
    """A URL on another host: with a host (``https://x``, ``//x``), not ``data:`` or a path."""
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or parts.scheme not in ("", "data")


def _css_urls(css: str) -> list[str]:
    return [m["url"] for m in _CSS_URL.finditer(css)] + [m["url"] for m in
                                                         _CSS_IMPORT.finditer(css)]


def _read(path: Path) -> _Loads:
    parser = _Loads()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def pages(built_site: Path) -> dict[str, _Loads]:
    """Every HTML page of the site, by its path in the site, read once."""
    found = {str(path.relative_to(built_site)): _read(path)
             for path in sorted(built_site.rglob("*.html"))}
    assert "index.html" in found and len(found) > 20, f"too few pages: {sorted(found)}"
    return found


def test_pages_load_nothing_from_another_host(pages: dict[str, _Loads]) -> None:
    remote = [f"{page}: <{tag}> loads {url}"
              for page, loads in pages.items() for tag, url in loads.loads if _is_remote(url)]
    remote += [f"{page}: inline CSS loads {url}"
               for page, loads in pages.items() for css in loads.css
               for url in _css_urls(css) if _is_remote(url)]
    assert not remote, "the site fetches from another host:\n" + "\n".join(remote)


def test_stylesheets_load_nothing_from_another_host(built_site: Path) -> None:
    stylesheets = sorted(built_site.rglob("*.css"))
    assert stylesheets, "the site has no CSS file"
    remote = [f"{path.relative_to(built_site)}: {url}"
              for path in stylesheets for url in _css_urls(path.read_text(encoding="utf-8"))
              if _is_remote(url)]
    assert not remote, "a stylesheet fetches from another host:\n" + "\n".join(remote)


def test_pages_with_diagrams_load_the_sites_mermaid_before_the_theme(
        built_site: Path, pages: dict[str, _Loads]) -> None:
    with_diagrams = {page: loads for page, loads in pages.items() if loads.diagrams}
    assert len(with_diagrams) >= 10, f"only these pages have diagrams: {sorted(with_diagrams)}"
    wrong = []
    for page, loads in with_diagrams.items():
        scripts = [(built_site / page).parent / urlsplit(url).path
                   for tag, url in loads.loads if tag == "script"]
        order = [path.resolve() for path in scripts]
        local = (built_site / MERMAID).resolve()
        themes = [n for n, path in enumerate(order) if re.fullmatch(r"bundle\.\w+\.min\.js",
                                                                    path.name)]
        if local not in order:
            wrong.append(f"{page}: has {loads.diagrams} diagram(s) but no <script> of {MERMAID}")
        elif not themes or order.index(local) > themes[0]:
            wrong.append(f"{page}: {MERMAID} is not loaded before the theme's bundle.*.min.js, "
                         "which then fetches Mermaid from unpkg.com")
    assert not wrong, "\n".join(wrong)


def test_the_sites_mermaid_defines_the_global_the_theme_checks(built_site: Path) -> None:
    """The facts the override relies on: the theme's bundle fetches Mermaid only when the
    global ``mermaid`` is undefined, and the site's copy defines that global."""
    (bundle,) = (built_site / "assets" / "javascripts").glob("bundle.*.min.js")
    code = bundle.read_text(encoding="utf-8")
    fetch = code.find("unpkg.com/mermaid")
    assert fetch != -1, f"{bundle.name} no longer names unpkg.com/mermaid: read how it loads now"
    guard = code.rfind('typeof mermaid=="undefined"', 0, fetch)
    assert guard != -1 and fetch - guard < 200, (
        f"{bundle.name} does not check `typeof mermaid` just before fetching Mermaid from "
        "unpkg.com: a Mermaid loaded first may no longer stop that fetch")
    mermaid = (built_site / MERMAID).read_text(encoding="utf-8")
    assert mermaid.rstrip().endswith('globalThis["mermaid"] = '
                                     'globalThis.__esbuild_esm_mermaid_nm["mermaid"].default;'), (
        f"{MERMAID} does not end by defining the global `mermaid`: is it Mermaid's "
        "dist/mermaid.min.js?")
    assert (built_site / MERMAID.with_name("mermaid.LICENSE.txt")).is_file()
