"""Markdown for the reporting tables: a table of a frame, a section after a table, a
mean ± std cell."""

from __future__ import annotations

import math

import pandas as pd


def section(title: str, text: str, df: pd.DataFrame) -> list[str]:
    """Markdown lines of a section after a table: its title, a paragraph and a table of ``df``
    (none when ``df`` is empty)."""
    return [] if df.empty else ["", f"## {title}", "", text, "", *markdown_lines(df)]


def _cell(value: object) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.0f}" if value.is_integer() else f"{value:.4g}"
    return str(value)


def markdown_lines(df: pd.DataFrame) -> list[str]:
    """A Markdown table of ``df`` (a ``below floor`` verdict in bold capitals)."""
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    for _, row in df.iterrows():
        cells = [_cell(v) for v in row]
        if row.get("verdict") == "below floor":
            cells[df.columns.get_loc("verdict")] = "**BELOW FLOOR**"
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def format_spread(mean: float, std: float, n: int, decimals: int) -> str:
    """``mean ± std`` (``± n/a`` for one run; empty for none)."""
    if n == 0:
        return ""
    spread = "n/a" if n == 1 else f"{std:.{decimals}f}"
    return f"{mean:.{decimals}f} ± {spread}"
