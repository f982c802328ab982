"""core/wire.py: a folder's `file:` URI reads back to the same folder, and the protocol's names are the wire's (issue 34)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower.core import wire
from flower.lsp import protocol as p
from flower.task import folder_of


@pytest.mark.parametrize("name", ["plain", "with space", "100% done", "a#b?c", "花 園", "%20 literal"])
def test_a_folders_uri_reads_back_to_the_same_folder(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    uri = wire.file_uri(folder)
    assert uri.startswith("file:///") and " " not in uri and "#" not in uri[8:] and "?" not in uri
    assert folder_of(uri) == folder


def test_the_servers_names_are_the_wires() -> None:
    assert (p.WAKE, p.CANCEL, p.RUNS, p.WORKSPACE_BUSY) == (wire.WAKE, wire.CANCEL, wire.RUNS, wire.WORKSPACE_BUSY)
