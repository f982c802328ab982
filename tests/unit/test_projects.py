"""flower's project key (core/projects.py) is the SDK's `project_key_for_directory` on every kind of path (issue 34).

flower rebuilt the rule so that `flower status`, `changes` and `gc` import no SDK; sessions already stored are keyed
by the SDK's rule, so any drift between the two would orphan them. Real folders where the rule reads the disk
(symlinks, `..`), names where it reads only the string (unicode, spaces, Windows-like names, long paths).
"""

from __future__ import annotations

import os
import random
import unicodedata
from pathlib import Path

import pytest
from claude_agent_sdk import project_key_for_directory

from flower.core.projects import MAX_KEY, project_key
from flower.runtime import project_key as runtime_key


def sdk_key(path: str | os.PathLike[str]) -> str:
    """What flower's runtime computed before issue 34: the SDK's key of the absolute path."""
    return project_key_for_directory(Path(os.path.abspath(path)))


NAMES = [
    "ws", "my project", "  spaced  ", "a.b_c-d", "UPPER lower 123",
    "需求 目标", "日本語のフォルダ", "Ünïcödé", "café", unicodedata.normalize("NFD", "café"),  # macOS spells it decomposed
    "emoji 🌸 flower", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ab\u200bcd", "tab\there", "new\nline", "quote'\"`$(x)",
    "C:\\Users\\Jane Doe\\proj", "\\\\server\\share\\dir", "D:", "con", "NUL.txt", "trailing dot.", "x" * 250,
]


@pytest.mark.parametrize("name", NAMES)
def test_a_real_folder_of_any_name_has_the_sdks_key(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    folder.mkdir()
    assert project_key(folder) == sdk_key(folder)
    assert project_key(str(folder) + os.sep) == sdk_key(str(folder) + os.sep)  # a trailing separator changes nothing


def test_a_symlinked_folder_is_its_targets_project_as_the_sdk_says(tmp_path: Path) -> None:
    target = tmp_path / "real place" / "ws"
    target.mkdir(parents=True)
    link = tmp_path / "link 🌸"
    link.symlink_to(target, target_is_directory=True)
    chain = tmp_path / "chain"
    chain.symlink_to(link, target_is_directory=True)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "gone")
    for path in (link, chain, link / ".." / "ws", chain / "sub-not-there", dangling):
        assert project_key(path) == sdk_key(path), path
    assert project_key(link) == project_key(target) != _sanitized(link)  # the link's own name is not the key


def test_relative_paths_and_dots_resolve_as_the_sdk_resolves_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    for path in (".", "b", "./b/", "b/..", "../a/b", "not/there", Path("b")):
        assert project_key(path) == sdk_key(path), path


@pytest.mark.parametrize("length", [MAX_KEY - 2, MAX_KEY - 1, MAX_KEY, MAX_KEY + 1, MAX_KEY + 2, 300, 1000, 4000])
def test_long_paths_are_cut_and_hashed_as_the_sdk_does(length: int) -> None:
    # Not on disk: the rule reads the string. Around the cut, and far past it (the hash tells apart what the cut joins).
    base = "/flower-not-there/" + "deep/" * 800  # no part of it exists: nothing resolves
    path = (base + "é" * length)[:length]
    key = project_key(path)
    assert key == sdk_key(path)
    assert (len(key) > MAX_KEY) == (len(path) > MAX_KEY)  # nothing here resolves: one key character per code point
    if len(key) > MAX_KEY:
        assert key[MAX_KEY] == "-" and key[MAX_KEY + 1:].isalnum()


def test_thousands_of_random_paths_have_the_sdks_key() -> None:
    # Seeded: code points from ASCII, Latin, CJK, combining marks and astral planes (what JavaScript counts twice).
    rng = random.Random(34)
    pools = [range(0x20, 0x7F), range(0xA0, 0x250), range(0x300, 0x370), range(0x4E00, 0x4F00), range(0x1F300, 0x1F400),
             range(0x10000, 0x10100)]
    for _ in range(3000):
        parts = []
        for _ in range(rng.randint(1, 12)):
            pool = rng.choice(pools)
            parts.append("".join(chr(rng.choice(pool)) for _ in range(rng.randint(1, 30))).replace("/", "_"))
        path = "/" + "/".join(parts)
        assert project_key(path) == sdk_key(path), ascii(path)


def test_the_runtime_names_the_same_function() -> None:
    assert runtime_key is project_key


def _sanitized(path: Path) -> str:
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in unicodedata.normalize("NFC", str(path)))
