"""A MkDocs hook: the site shows the code around a graded task, never the task's solution.

Chapters include the library's real code with ``pymdownx.snippets``
(``--8<-- "stage1_autodiff/src/stage1_autodiff/autodiff.py:backward_pass"``). A section that
encloses a task's solution region (``# --8<-- [start:task1_1]`` ... ``# --8<-- [end:task1_1]``,
see ``tools/assignments.py``) would show the solution just above the task's exercise. This hook
installs the snippets extension, with the options mkdocs.yml gives it, in a version that reads
every included file with each region replaced by one line at the region's indentation::

    # Task 1.1 (task1_1): your code here

The lines are replaced as the file is read, before a section is taken from it, so a section
include and a whole-file include both show the marker. NB: a line-range include
(``file.py:10:20``) counts the lines as shown, each region being one line.

mkdocs.yml names this file under ``hooks:``; the solutions stay in the source, where
``tools/make_student_repo.py`` finds them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from markdown import Markdown
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from pymdownx.snippets import SnippetExtension, SnippetPreprocessor

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "tools") not in sys.path:
    sys.path.insert(0, str(REPO / "tools"))

from assignments import hide_solutions  # noqa: E402


class HiddenSolutionsPreprocessor(SnippetPreprocessor):
    """The snippets preprocessor, reading each included file with its solutions hidden."""

    def read_lines(self, path: str) -> list[str]:
        lines = super().read_lines(path)
        return hide_solutions(lines, os.path.relpath(path, REPO))


class HiddenSolutionsExtension(SnippetExtension):
    """``pymdownx.snippets`` with ``HiddenSolutionsPreprocessor`` as its preprocessor."""

    def extendMarkdown(self, md: Markdown) -> None:
        super().extendMarkdown(md)
        # The same name and priority: it takes the stock preprocessor's place.
        md.preprocessors.register(HiddenSolutionsPreprocessor(self.getConfigs(), md),
                                  "snippet", 32)


@event_priority(100)  # first, before mkdocstrings takes the list of extensions
def on_config(config: MkDocsConfig) -> None:
    """Put ``HiddenSolutionsExtension`` in the place of ``pymdownx.snippets``, same options."""
    extensions = config.markdown_extensions
    if "pymdownx.snippets" not in extensions:
        raise PluginError("course/extensions/hidden_solutions.py replaces pymdownx.snippets, "
                          "which mkdocs.yml's markdown_extensions does not list: add it.")
    options = config.mdx_configs.pop("pymdownx.snippets", {})
    extensions[extensions.index("pymdownx.snippets")] = HiddenSolutionsExtension(**options)
