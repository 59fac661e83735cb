"""Bar charts of speed-ups for the course (course/assets/), shared by the benchmark scripts.

A plot is drawn with matplotlib when it is installed, otherwise by a small PNG writer with a
5x7 pixel font, so that no benchmark needs a plotting dependency. Each panel is one table of a
benchmark: its title, and one bar per row, the row's speed-up over the table's baseline row.
"""

from __future__ import annotations

import importlib.util
import struct
import textwrap
import zlib
from pathlib import Path

import numpy as np
from common import Timing, machine_summary  # benchmarks/common.py

ASSETS = Path(__file__).resolve().parent.parent / "course" / "assets"
PlotPanel = tuple[str, list[tuple[str, float]]]  # (title, [(bar label, speed-up)])
ORANGE, BLUE = (221, 132, 82), (76, 114, 176)  # ours, everyone else


def speedups(title: str, timed: list[tuple[str, Timing | str]], baseline: str,
             skip: tuple[str, ...] = ("  ",)) -> PlotPanel:
    """Each timed row's speed-up over the baseline row (baseline best / row best): the first
    row whose name starts with ``baseline``. Rows whose name starts with one of ``skip``
    (indented diagnostic rows, by default) and rows with a note instead of a time are left
    out."""
    base = next(t.best for name, t in timed if name.startswith(baseline) and isinstance(t, Timing))
    bars = [(name.strip(), base / timing.best) for name, timing in timed
            if isinstance(timing, Timing) and not name.startswith(skip)]
    return title, bars


def write_plot(panels: list[PlotPanel], path: Path, subtitle: str, ours: str) -> str:
    """Draws the panels to ``path`` (a PNG); bars whose label starts with ``ours`` are orange.
    Returns what drew it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if importlib.util.find_spec("matplotlib") is not None:
        _matplotlib_plot(panels, path, subtitle, ours)
        return "matplotlib"
    _write_png(path, *_draw_bars(panels, subtitle, ours))
    return "the built-in PNG writer (matplotlib is not installed)"


def _matplotlib_plot(panels: list[PlotPanel], path: Path, subtitle: str, ours: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heights = [len(bars) + 1.5 for _, bars in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 0.35 * sum(heights) + 1),
                             gridspec_kw={"height_ratios": heights})
    for ax, (title, bars) in zip(np.atleast_1d(axes), panels):
        labels, values = zip(*bars)
        colors = [ORANGE if label.startswith(ours) else BLUE for label in labels]
        ax.barh(range(len(bars)), values, color=[tuple(c / 255 for c in rgb) for rgb in colors])
        ax.set_yticks(range(len(bars)), labels)
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:.2f}x", va="center")
        ax.set_title(title, loc="left", fontsize=10)
    fig.suptitle(subtitle, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# 5x7 glyphs: seven rows of five bits, as hex bytes.
_FONT = {
    "0": "0E11131519110E", "1": "040C040404040E", "2": "0E11010204081F", "3": "1F02040201110E",
    "4": "02060A121F0202", "5": "1F101E0101110E", "6": "0608101E11110E", "7": "1F010204080808",
    "8": "0E11110E11110E", "9": "0E11110F01020C", "A": "0E11111F111111", "B": "1E11111E11111E",
    "C": "0E11101010110E", "D": "1C12111111121C", "E": "1F10101E10101F", "F": "1F10101E101010",
    "G": "0E11101711110F", "H": "1111111F111111", "I": "0E04040404040E", "J": "0702020202120C",
    "K": "11121418141211", "L": "1010101010101F", "M": "111B1515111111", "N": "11111915131111",
    "O": "0E11111111110E", "P": "1E11111E101010", "Q": "0E11111115120D", "R": "1E11111E141211",
    "S": "0F10100E01011E", "T": "1F040404040404", "U": "1111111111110E", "V": "11111111110A04",
    "W": "1111111515150A", "X": "11110A040A1111", "Y": "1111110A040404", "Z": "1F01020408101F",
    " ": "00000000000000", ".": "00000000000C0C", ",": "000000000C0408", "-": "0000001F000000",
    "(": "02040808080402", ")": "08040202020408", "/": "00010204081000", ":": "000C0C000C0C00",
    "=": "00001F001F0000", "+": "0004041F040400", "*": "0004150E150400", "_": "0000000000001F",
    ">": "08040201020408", "<": "02040810080402", "%": "18190204081303", "?": "0E110102040004",
    ";": "000C0C000C0408", '"': "0A0A0000000000", "'": "04040000000000",
}
_GLYPHS = {ch: [int(code[2 * r:2 * r + 2], 16) for r in range(7)]
           for ch, code in _FONT.items()}
SCALE, CHAR_W, LINE_H = 2, 12, 20  # pixels per font pixel; advance per character; line height


def _draw_bars(panels: list[PlotPanel], subtitle: str, ours: str) -> tuple[int, int, bytearray]:
    """Horizontal bars, one panel per benchmark: label, bar, value; a line at 1x."""
    label_w = CHAR_W * (max(len(label) for _, bars in panels for label, _ in bars) + 1)
    bar_w, margin = 420, 10
    width = margin + label_w + bar_w + CHAR_W * 8 + margin
    header = textwrap.wrap(subtitle, (width - 2 * margin) // CHAR_W)
    height = margin + LINE_H * (len(header) + 1 + sum(len(bars) + 2 for _, bars in panels))
    height += margin
    pixels = bytearray(b"\xff" * (width * height * 3))

    def rect(x0: int, y0: int, w: int, h: int, rgb: tuple[int, int, int]) -> None:
        for y in range(max(y0, 0), min(y0 + h, height)):
            start = (y * width + max(x0, 0)) * 3
            pixels[start:start + 3 * max(0, min(w, width - x0))] = bytes(rgb) * max(
                0, min(w, width - x0))

    def text(x: int, y: int, s: str, rgb=(0, 0, 0)) -> None:
        for ch in s.upper():
            for r, bits in enumerate(_GLYPHS.get(ch, _GLYPHS["?"])):
                for c in range(5):
                    if bits >> (4 - c) & 1:
                        rect(x + c * SCALE, y + r * SCALE, SCALE, SCALE, rgb)
            x += CHAR_W

    y = margin
    for line in header:
        text(margin, y, line, (90, 90, 90))
        y += LINE_H
    y += LINE_H
    for title, bars in panels:
        text(margin, y, title[: (width - 2 * margin) // CHAR_W])
        y += LINE_H
        per_unit = bar_w / max(1.0, *(value for _, value in bars))
        x0 = margin + label_w
        rect(x0 + round(per_unit), y, 1, LINE_H * len(bars), (150, 150, 150))  # 1x
        for label, value in bars:
            text(margin, y + 2, label)
            rect(x0, y + 1, max(1, round(value * per_unit)), LINE_H - 4,
                 ORANGE if label.startswith(ours) else BLUE)
            value_text, x_text = f"{value:.2f}x", x0 + max(1, round(value * per_unit)) + 4
            rect(x_text - 2, y, CHAR_W * len(value_text) + 2, LINE_H - 2, (255, 255, 255))
            text(x_text, y + 2, value_text)
            y += LINE_H
        y += LINE_H
    return width, height, pixels


def _write_png(path: Path, width: int, height: int, pixels: bytearray) -> None:
    """An 8-bit RGB PNG: signature, IHDR, one zlib-compressed IDAT, IEND."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    stride = width * 3
    raw = b"".join(b"\x00" + bytes(pixels[y * stride:(y + 1) * stride]) for y in range(height))
    path.write_bytes(b"\x89PNG\r\n\x1a\n"
                     + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def write_course_plot(panels: list[PlotPanel], name: str, title: str, ours: str,
                      load_at_start: float) -> None:
    """Draws a benchmark's panels to course/assets/NAME.png, under a subtitle with the
    benchmark's title, the machine and its load, and prints where it went."""
    path = ASSETS / f"{name}.png"
    subtitle = (f"{title} (higher is faster; orange: ours): "
                f"{machine_summary().split(';')[0]}; load average {load_at_start:.2f} at the start")
    how = write_plot(panels, path, subtitle, ours)
    print(f"\nplot: {path}, drawn with {how}")
