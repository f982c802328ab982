"""A damaged lineage is rebuilt, not abandoned; read-only commands change no file (issue 31, item 4).

`runs/lineage.json` corrupted while manifest.json and sessions.db still name and hold every session: the next wake
resumes the same sessions (the model's first work request carries the first run's turns), the damaged file is kept
aside by that wake, and `flower status`, `ps`, `changes` and `gc` (without `--yes`) leave every file as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import first_run_done, flower, lineage

from flower.workflow.flower import WAKE_SENTENCE, WORK_PROMPT
from flowerscript import GOALS, goals, judge, work

GARBAGE = b"\x00\x9f{ not a lineage, half written by a dying disk"
MORE = "also subtract"
MORE_GOALS = GOALS + "- [ ] calc.py multiplies\n"


def tree(*roots: Path) -> dict[str, tuple[bool, int, int]]:
    """Every file and directory under `roots`: path → (is a directory, size, mtime_ns)."""
    found = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            st = path.lstat()
            found[str(path)] = (path.is_dir(), 0 if path.is_dir() else st.st_size, st.st_mtime_ns)
    return found


async def test_corrupt_lineage_is_rebuilt_from_the_manifest_and_the_next_wake_resumes_the_same_sessions(
        model, env, workspace, run_dir):
    sid = await first_run_done(model, env, workspace, run_dir)
    first = lineage(run_dir)
    (run_dir / "lineage.json").write_bytes(GARBAGE)
    before = len(model.conversation)
    model.push(*goals(workspace, MORE_GOALS), *work(workspace), *judge())
    done = await flower(MORE, "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert "Traceback" not in done.err + done.out
    woken = model.conversation[before:]
    assert woken[0].session_id == first["steps"]["目标"]  # the goal setter resumed for the re-derivation
    at_work = [r for r in woken if WAKE_SENTENCE.format(sentence=MORE) in r.last_user_text]
    assert at_work, "the work session never received the sentence"
    request = at_work[0]
    assert request.session_id == sid  # the same work session ...
    assert WORK_PROMPT in request.text and "calc.py written" in request.texts("assistant")  # ... with the first run's turns
    kept = list(run_dir.glob("lineage.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == GARBAGE
    assert lineage(run_dir) == {**first, "woke": 2}  # one wake wrote rows before: this is wake 2


@pytest.mark.parametrize("damage", ["corrupt", "missing"])
async def test_read_only_commands_never_move_create_or_rewrite_a_file(model, env, workspace, run_dir, damage):
    sid = await first_run_done(model, env, workspace, run_dir)
    first = lineage(run_dir)
    if damage == "corrupt":
        (run_dir / "lineage.json").write_bytes(GARBAGE)
    else:
        (run_dir / "lineage.json").unlink()
    then = tree(run_dir, workspace)
    for args in (("status", "--json"), ("status",), ("ps",), ("changes",), ("changes", "--json"), ("gc",)):
        done = await flower(*args, *(() if args == ("ps",) else ("-r", str(run_dir))), env=env, cwd=workspace)
        assert done.code == 0, (args, done.err)
        assert "Traceback" not in done.err + done.out
        assert tree(run_dir, workspace) == then, f"`flower {' '.join(args)}` changed a file"
        if args == ("status", "--json"):
            shown = json.loads(done.out)
    assert not list(run_dir.glob("lineage.json.corrupt-*"))
    if damage == "corrupt":  # rebuilt in memory: status tells what the next wake resumes
        assert (run_dir / "lineage.json").read_bytes() == GARBAGE
        assert shown["steps"] == first["steps"] and shown["steps"]["干活"] == sid and shown["woke"] == 1
    else:  # absent means a fresh start (S12): `--new` leaves the manifest behind, so it is not rebuilt
        assert shown["steps"] == {}
