"""The terminal's live line (issue 34): one row at any width, so a redraw in place leaves nothing behind."""

from __future__ import annotations

import pytest

from flower.cli.console import fit


@pytest.mark.parametrize(("text", "columns", "shown"), [
    ("retrying in 4s", 20, "retrying in 4s"),  # fits: as it is
    ("abcdef", 6, "abcdef"),  # exactly the width: as it is
    ("abcdefgh", 6, "abcde…"),  # cut, the mark in the last cell
    ("干活 · 等模型回复", 8, "干活 · …"),  # wide characters take two cells: 2+2+1+1+1 then the mark
    ("干活干活", 5, "干活…"),
])
def test_a_line_is_cut_to_the_cells_of_the_terminal(text: str, columns: int, shown: str) -> None:
    assert fit(text, columns) == shown
