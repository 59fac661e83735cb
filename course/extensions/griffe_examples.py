"""A Griffe extension for the API reference: the library's docstrings in Griffe's terms.

The docstrings follow the Google style with an ``Example:`` section, which Griffe's parser reads
as an admonition titled "Example" whose ``>>>`` lines are plain Markdown text (their printed
output then looks like Markdown links). Griffe reads ``Examples:`` as a section of doctest
blocks, rendered as code. This extension renames the section before a docstring is parsed, and
turns Sphinx roles (``:func:`tree_map```) into plain code spans, which Markdown renders.

mkdocs.yml loads it in the mkdocstrings handler's ``extensions``; the source stays as it is.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE_HEADING = re.compile(r"^(?P<indent>[ \t]*)Example:[ \t]*$", re.MULTILINE)
_SPHINX_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):`~?(?P<name>[^`]+)`")


def docstring_for_griffe(text: str) -> str:
    """The docstring with ``Example:`` headings renamed and Sphinx roles made code spans.

    Example:
        >>> docstring_for_griffe("Like :func:`tree_map`.\\n\\nExample:\\n    >>> 1\\n")
        'Like `tree_map`.\\n\\nExamples:\\n    >>> 1\\n'
    """
    text = _EXAMPLE_HEADING.sub(r"\g<indent>Examples:", text)
    return _SPHINX_ROLE.sub(r"`\g<name>`", text)


class ExamplesSection(griffe.Extension):
    """Rewrites each docstring once the object tree is built, before it is parsed."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = docstring_for_griffe(obj.docstring.value)
