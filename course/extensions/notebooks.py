"""A MkDocs hook: every chapter page with code to run is also a notebook, linked from the page.

When the site is built, ``tools/make_notebooks.py`` turns each page of the nav that has a
block to run into a Jupyter notebook, added to the site as ``notebooks/<page>.ipynb``
(``notebooks/stage1/the-tape.ipynb``); nothing is written into ``course/``, and no notebook is
committed. Under the page's title, a button downloads it:

    [Run this page as a notebook](../notebooks/stage1/the-tape.ipynb){ .md-button download=...}

so no page needs editing; the reference pages and each stage's *Reading JAX's source*, with
nothing to run, get neither. mkdocs.yml names this file under ``hooks:``. The link is an ordinary
Markdown link to a file of the site, so ``--strict`` checks that it leads somewhere.
"""

from __future__ import annotations

import posixpath
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

from make_notebooks import nav_pages, notebook_json, notebook_pages, notebook_path  # noqa: E402

FOLDER = "notebooks"  # the notebooks' folder in the site


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds the notebook of each nav page that has code to run."""
    docs = Path(config.docs_dir)
    pages = notebook_pages(nav_pages(config.nav), docs)
    for page in pages:
        content = notebook_json(page, pages, config.site_url, docs)
        files.append(File.generated(config, f"{FOLDER}/{notebook_path(page)}", content=content))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Puts the link to the page's notebook, if it has one, under the page's title."""
    source = page.file.src_uri
    notebook = files.get_file_from_path(f"{FOLDER}/{notebook_path(source)}")
    if notebook is None:
        return markdown
    folder = posixpath.dirname(source) or "."
    target = posixpath.relpath(notebook.src_uri, folder)
    install = posixpath.relpath("index.md", folder) + "#install-and-run"
    link = (f'[Run this page as a notebook]({target}){{ .md-button download="'
            f'{posixpath.basename(target)}" }} in Jupyter, with the course\'s packages '
            f"[installed]({install}) and `pip install jupyterlab`.")
    lines = markdown.split("\n")
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    return "\n".join(lines[:title + 1] + ["", link, ""] + lines[title + 1:])
