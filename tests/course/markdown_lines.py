"""The course tests' view of a Markdown page: its lines outside fenced code blocks."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def outside_fences(text: str) -> list[tuple[int, str]]:
    """A page's lines outside fenced code blocks, numbered from 1."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening[1]
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            lines.append((number, line))
    return lines
