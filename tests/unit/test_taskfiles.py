"""The task's files between a workspace and the shared store: restore, pick up, update, conflict (issue #22).

The store side here is an in-memory TaskFiles (core/taskfiles.py's protocol); PostgreSQL's own is tested end to end
in tests/e2e/test_postgres_task_files.py.
"""

from __future__ import annotations

import os
import time

from flower.core.taskfiles import Stored, archive, place_of, sha, sync


class Memory:
    """A TaskFiles holding bodies and per-place hashes in dicts."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, str, float]] = {}
        self.seen: dict[tuple[str, str], str] = {}

    def task_files(self, place: str) -> dict[str, Stored]:
        return {n: Stored(b, sha(b), h, t, self.seen.get((place, n))) for n, (b, h, t) in self.files.items()}

    def save_task_files(self, place: str, bodies: dict[str, bytes], seen: dict[str, str]) -> None:
        for name, body in bodies.items():
            self.files[name] = (body, "elsewhere" if place.startswith("b") else "here", time.time())
        for name, h in seen.items():
            self.seen[(place, name)] = h

    def archive_task_files(self, names: list[str], into: str) -> None:
        for name in names:
            self.files[into + name] = self.files.pop(name)


def test_picked_up_then_restored_where_missing(tmp_path):
    store, a, b = Memory(), tmp_path / "a", tmp_path / "b"
    (a / "notes").mkdir(parents=True)
    b.mkdir()
    (a / "需求.md").write_text("req", encoding="utf-8")
    (a / "notes" / "handoff-1.md").write_text("note", encoding="utf-8")
    assert sync(store, a, restore=True) == []
    said = sync(store, b, restore=True)
    assert [s.key for s in said] == ["task_file_restored", "task_file_restored"]
    assert (b / "需求.md").read_text(encoding="utf-8") == "req" and (b / "notes" / "handoff-1.md").exists()
    assert sync(store, b, restore=True) == []  # in step: nothing more to say


def test_a_local_edit_goes_up_and_a_stale_copy_is_updated_with_the_old_one_kept(tmp_path):
    store, a, b = Memory(), tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "需求.md").write_text("v1", encoding="utf-8")
    sync(store, a, restore=True)
    sync(store, b, restore=True)
    (b / "需求.md").write_text("v2", encoding="utf-8")
    assert sync(store, b, restore=False) == []  # only B changed since B saw it: picked up, no conflict
    said = sync(store, a, restore=True)  # A's copy is what A last saw: the store's is newer
    assert [s.key for s in said] == ["task_file_updated"]
    assert (a / "需求.md").read_text(encoding="utf-8") == "v2" and (a / "需求.md.theirs").read_text(encoding="utf-8") == "v1"


def test_both_changed_the_later_write_wins_and_the_other_is_kept_beside(tmp_path):
    store, a, b = Memory(), tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "需求.md").write_text("v1", encoding="utf-8")
    sync(store, a, restore=True)
    sync(store, b, restore=True)
    (b / "需求.md").write_text("b's", encoding="utf-8")
    sync(store, b, restore=False)
    (a / "需求.md").write_text("a's, later", encoding="utf-8")
    future = time.time() + 5
    os.utime(a / "需求.md", (future, future))  # written after B's went up
    said = sync(store, a, restore=True)
    assert [s.key for s in said] == ["task_file_conflict_local"]
    assert (a / "需求.md").read_text(encoding="utf-8") == "a's, later"
    assert (a / "需求.md.theirs").read_text(encoding="utf-8") == "b's"
    assert store.files["需求.md"][0] == b"a's, later"
    # B's copy is now stale: B gets A's, its own kept beside (and a second .theirs never overwrites the first).
    (b / "需求.md.theirs").write_text("older keep", encoding="utf-8")
    said = sync(store, b, restore=True)
    assert [s.key for s in said] == ["task_file_updated"] and (b / "需求.md.theirs-1").read_text(encoding="utf-8") == "b's"


def test_new_archives_the_stored_requirements_and_goals_so_they_are_not_restored(tmp_path):
    store, a, b = Memory(), tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "需求.md").write_text("old task", encoding="utf-8")
    (a / "目标.md").write_text("- [ ] old", encoding="utf-8")
    sync(store, a, restore=True)
    archive(store, "notes/archive/20261201-120000")
    assert set(store.files) == {"notes/archive/20261201-120000/需求.md", "notes/archive/20261201-120000/目标.md"}
    assert sync(store, b, restore=True) == [] and not (b / "需求.md").exists()
    assert place_of(a).endswith(str(a))
