"""The journal (issue #22): records as they arrive, what the store lacks, and the note told to the model."""

from __future__ import annotations

import json

from flower.core.journal import NOTE_END, WHY_LOST, WHY_SHORT, Journal, missed, note, sidechain, with_stored


def test_records_survive_a_torn_last_line_and_keep_no_api_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-journal-secret-123456")
    j = Journal(tmp_path)
    j.prompt("s1", "do it")
    j.call("s1", "msg_1", "toolu_1", "Bash", {"command": "echo sk-ant-journal-secret-123456"})
    j.result("s1", "toolu_1", [{"type": "text", "text": "ok"}], False)
    j.close()
    with open(j.path("s1"), "a", encoding="utf-8") as f:
        f.write('{"k": "said", "te')  # a kill mid-write
    records = j.read("s1")
    assert [r["k"] for r in records] == ["prompt", "call", "result"]
    assert "sk-ant-journal-secret" not in j.path("s1").read_text()
    assert records[2]["text"] == "ok"


def test_the_clis_interruption_filler_is_never_recorded(tmp_path):
    j = Journal(tmp_path)
    j.result("s1", "toolu_1", "[Tool call interrupted: the user stopped it]", True)
    assert j.read("s1") == []


def test_missed_is_what_the_stored_transcript_lacks():
    records = [{"k": "prompt", "text": "go"}, {"k": "call", "id": "msg_1", "tool": "t1", "name": "Write", "input": {}},
               {"k": "result", "tool": "t1", "text": "done", "error": False},
               {"k": "said", "id": "msg_2", "text": "written"}]
    stored = [{"type": "user", "message": {"role": "user", "content": "go"}},
              {"type": "assistant", "message": {"id": "msg_1", "content": []}}]
    assert [r["k"] for r in missed(records, stored)] == ["result", "said"]
    assert missed(records, None) == records


def test_note_tells_each_call_with_its_input_and_result_and_carries_an_earlier_note():
    call = {"k": "call", "id": "m1", "tool": "t1", "name": "Write", "input": {"file_path": "a.py"}}
    first = note([{"k": "prompt", "text": "the step's prompt"}, call,
                  {"k": "result", "tool": "t1", "text": "File created", "error": False},
                  {"k": "call", "id": "m2", "tool": "t2", "name": "Bash", "input": {"command": "make"}},
                  {"k": "said", "id": "m2", "text": "building"}], resumed=False, prompt="the step's prompt")
    assert first.startswith("[flower: " + WHY_LOST) and first.endswith(NOTE_END)
    assert f'You called Write with {json.dumps({"file_path": "a.py"})}' in first
    assert 'It returned: "File created"' in first and "the step's prompt" not in first
    assert "Its result was not recorded" in first  # the Bash call was cut off while it ran
    # Cut off again before the new session was saved: the next note carries the first one whole.
    second = note([{"k": "prompt", "text": f"{first}\n\nthe step's prompt"},
                   {"k": "said", "id": "m3", "text": "checking"}], resumed=True, prompt="resume")
    assert second.count(NOTE_END) == 1 and WHY_SHORT in second
    assert 'You called Bash with {"command": "make"}' in second and 'You said: "checking"' in second
    assert note([], resumed=False) == ""


async def test_recall_reads_back_from_the_newest_entries_and_finds_what_the_store_lacks_anywhere(tmp_path):
    # recall compares the journal with the store from the newest entries back, stopping once every record is
    # matched: a record matched only by the oldest entry, or by none, must be found all the same (issue #22).
    from flower.runtime import Runtime
    from flower.workflow.base import recall

    workspace, run_dir, sid = tmp_path / "ws", tmp_path / "runs", "5e8c235f-c73c-4d8f-9a3e-cb6bf69a0001"
    workspace.mkdir()
    entries = [{"type": "assistant", "uuid": f"u{i}", "message": {"id": f"msg_{i}", "content": []}} for i in range(5000)]
    entries[0] = {"type": "user", "uuid": "u0", "message": {"role": "user", "content": "the first prompt"}}
    async with Runtime(workspace, run_dir) as rt:
        await rt.raw_store.append({"project_key": rt.project_key, "session_id": sid}, entries)
        pages = [page async for page in rt.newest_first(sid)]
        assert [e["uuid"] for page in pages for e in page] == [e["uuid"] for e in reversed(entries)]
        assert len(pages) > 1 and len(pages[0]) < 100  # the newest first, a small page
        assert [page async for page in rt.newest_first("5e8c235f-c73c-4d8f-9a3e-cb6bf69a0002")] == []

        newest = {"k": "said", "id": "msg_4999", "text": "the newest answer"}
        oldest = {"k": "prompt", "text": "the first prompt"}
        lost = {"k": "call", "id": "msg_lost", "tool": "toolu_9", "name": "Write", "input": {"file_path": "a.py"}}
        rt.journal.dir.mkdir(parents=True)
        for records in ([newest], [newest, oldest], [oldest, lost, newest]):
            rt.journal.checked.clear()  # compared once per session and process: here once per journal
            rt.journal.remove(sid)  # a journal of its own each time (one only ever grows)
            rt.journal.path(sid).write_text("".join(json.dumps(r) + "\n" for r in records))
            told = await recall(rt, sid, resumed=True, prompt="go on")
            assert (told != "") == (lost in records), told
            if lost in records:
                assert "Write" in told and "the first prompt" not in told and "the newest answer" not in told


async def test_records_once_found_stored_are_not_compared_again_while_the_store_holds_what_it_held(tmp_path):
    from flower.runtime import Runtime
    from flower.workflow.base import recall

    workspace, run_dir, sid = tmp_path / "ws", tmp_path / "runs", "5e8c235f-c73c-4d8f-9a3e-cb6bf69a0003"
    workspace.mkdir()
    entries = [{"type": "assistant", "uuid": f"u{i}", "message": {"id": f"msg_{i}", "content": []}} for i in range(300)]
    lost = {"k": "call", "id": "msg_lost", "tool": "toolu_9", "name": "Write", "input": {"file_path": "a.py"}}
    async with Runtime(workspace, run_dir) as rt:
        await rt.raw_store.append({"project_key": rt.project_key, "session_id": sid}, entries)
        journal = rt.journal

        async def told() -> str:
            journal.checked.clear()  # once per session and process: here once per call
            return await recall(rt, sid, resumed=True, prompt="go on")

        journal.dir.mkdir(parents=True)
        path = journal.path(sid)
        path.write_text(json.dumps({"k": "said", "id": "msg_0", "text": "the first answer"}) + "\n")
        assert journal.seen(sid) == (0, 0)
        assert await told() == ""
        assert journal.seen(sid) == (path.stat().st_size, 300)  # all found: remembered
        with path.open("a") as f:
            f.write(json.dumps(lost) + "\n")
        assert "Write" in await told()
        assert journal.seen(sid) == (path.stat().st_size - len(json.dumps(lost)) - 1, 300)  # not past what is lacking
        assert "Write" in await told()  # told again at the next wake, as before

        # A mark past the lost record: not compared while the store holds the 300 entries it held then...
        journal.mark_seen(sid, path.stat().st_size, 300)
        assert await told() == ""
        # ...and compared again once the store holds fewer (made anew, say).
        journal.mark_seen(sid, path.stat().st_size, 301)
        assert "Write" in await told()
        journal.remove(sid)
        assert not path.exists() and journal.seen(sid) == (0, 0)


def test_a_torn_last_line_is_read_again_once_whole(tmp_path):
    j = Journal(tmp_path)
    j.prompt("s1", "do it")
    j.close()
    whole = j.path("s1").stat().st_size
    with open(j.path("s1"), "a", encoding="utf-8") as f:
        f.write('{"k": "said", "te')  # a kill mid-write
    assert j.read_from("s1", 0) == ([{"k": "prompt", "text": "do it"}], whole)
    assert j.read_from("s1", whole) == ([], whole)


def test_what_a_stored_note_told_is_not_told_again_after_a_second_kill():
    # Wake 2 told the lost prompt and call in its note; it was cut off before the model answered, and the store holds
    # that note's prompt. Wake 3 must not tell them again (chaos --seed 1 found a sentence told twice so, issue #31).
    records = [{"k": "prompt", "text": "One more thing: also count the words"},
               {"k": "call", "id": "msg_1", "tool": "t1", "name": "Bash", "input": {"command": "wc -w f"}},
               {"k": "result", "tool": "t1", "text": "3 f", "error": False}]
    told = note(records, resumed=True, prompt="Continue the work")
    assert "also count the words" in told and "wc -w f" in told
    stored = [{"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": told + "\n\nContinue the work"}]}}]
    assert missed(records, stored) == []
    # What the note did not tell is still lacking.
    later = [*records, {"k": "said", "id": "msg_2", "text": "words counted"}]
    assert missed(later, stored) == [later[-1]]


def test_a_sidechain_is_told_under_its_agent_call_until_the_store_has_its_hand_back_or_notification():
    # Issue 32: a subagent's records carry its Agent call; a task that never ended is named as ended.
    agent_call = {"k": "call", "id": "m1", "tool": "ag1", "name": "Agent", "input": {"prompt": "write a.py"}}
    records = [agent_call,
               {"k": "task", "id": "a1", "tool": "ag1", "type": "local_agent", "description": "write it",
                "background": False, "status": "running"},
               {"k": "said", "id": "s1", "text": "writing a.py", "parent": "ag1"},
               {"k": "call", "id": "s1", "tool": "w1", "name": "Write", "input": {"file_path": "a.py"}, "parent": "ag1"},
               {"k": "result", "tool": "w1", "text": "File created", "error": False, "parent": "ag1"},
               {"k": "call", "id": "m2", "tool": "sh1", "name": "Bash", "input": {"command": "serve"}},
               {"k": "task", "id": "b1", "tool": "sh1", "type": "local_bash", "description": "serve",
                "background": True, "status": "running"}]
    launched = {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "sh1", "content": "Command running in background with ID: b1."}]}}
    answered = [{"type": "assistant", "message": {"id": "m1", "content": []}},
                {"type": "assistant", "message": {"id": "m2", "content": []}}, launched]
    lacking = missed(records, answered)
    assert [r["k"] for r in lacking] == ["task", "said", "call", "result", "task"]  # the calls are stored, not the work
    told = note(lacking, resumed=True)
    assert '- The subagent "write it" that your Agent call ag1 started was ended by the interruption' in told
    assert '  - It said: "writing a.py"' in told and '  - It called Write with {"file_path": "a.py"}' in told
    assert '    It returned: "File created"' in told
    assert 'Your background shell "serve" (your Bash call sh1, shell id b1) was cut off by the interruption' in told
    # The hand-back (foreground) and the notification (background, even one told mid-turn) are the work told.
    handed = {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "ag1", "content": "done"}]}}
    notified = {"type": "attachment", "attachment": {"type": "queued_command", "prompt":
                "<task-notification>\n<task-id>b1</task-id>\n<tool-use-id>sh1</tool-use-id>\n</task-notification>"}}
    assert missed(records, [*answered, handed, notified]) == []
    # A background agent's "launched" result is not its work: that needs its notification.
    bg = [agent_call, {**records[1], "background": True}, records[2]]
    launch = {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "ag1", "content": [{"type": "text", "text": "Async agent launched successfully."}]}]}}
    assert [r["k"] for r in missed(bg, [answered[0], launch])] == ["task", "said"]
    woke = {"type": "user", "message": {"content": "<task-notification><tool-use-id>ag1</tool-use-id></task-notification>"}}
    assert missed(bg, [answered[0], launch, woke]) == []


def test_a_stored_sidechain_gives_the_words_the_stream_did_not_carry():
    journaled = [{"k": "call", "id": "s1", "tool": "w1", "name": "Write", "input": {}, "parent": "ag1"},
                 {"k": "result", "tool": "w1", "text": "ok", "error": False, "parent": "ag1"},
                 {"k": "call", "id": "s2", "tool": "w2", "name": "Bash", "input": {}, "parent": "ag1"}]
    stored = sidechain([{"type": "user", "message": {"content": "write a.py"}},
                        {"type": "assistant", "message": {"id": "s1", "content": [{"type": "text", "text": "on it"}]}},
                        {"type": "assistant", "message": {"id": "s1", "content": [
                            {"type": "tool_use", "id": "w1", "name": "Write", "input": {}}]}},
                        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "w1", "content": "ok"}]}}],
                       "ag1")
    merged = with_stored([{"k": "prompt", "text": "go"}, *journaled], stored)
    assert [(r["k"], r.get("tool")) for r in merged] == [
        ("prompt", None), ("said", None), ("call", "w1"), ("result", "w1"), ("call", "w2")]  # the newest from the journal


REFUSED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the "
           "new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.")
"""What CLI 2.1.332 stores as an `Agent` call's result when a Ctrl-C cuts its foreground subagent off."""


def test_a_subagent_cut_off_by_ctrl_c_is_told_though_its_agent_call_has_a_stored_result_and_told_once():
    # chaos (test_ten_seeded_kills, once): SIGINT to flower's group 0-500 ms after a subagent's Bash ran. The CLI stored
    # its refusal as the Agent call's result, which counted as the subagent's hand-back: the next wake told nothing of
    # what the subagent had done, and the model's next request did not carry its Bash call.
    records = [{"k": "call", "id": "m1", "tool": "ag1", "name": "Agent", "input": {"prompt": "write sub.txt"}},
               {"k": "task", "id": "a1", "tool": "ag1", "type": "local_agent", "description": "sub-task",
                "background": False, "status": "running"},
               {"k": "call", "id": "s1", "tool": "b1", "name": "Bash", "input": {"command": "echo sub > sub.txt"},
                "parent": "ag1"},
               {"k": "result", "tool": "b1", "text": "", "error": False, "parent": "ag1"},
               {"k": "task", "id": "a1", "tool": "ag1", "type": "local_agent", "description": "sub-task",
                "background": False, "status": "killed"}]
    stored = [{"type": "assistant", "message": {"id": "m1", "content": []}},
              {"type": "user", "message": {"content": [
                  {"type": "tool_result", "tool_use_id": "ag1", "content": REFUSED, "is_error": True}]}}]
    lacking = missed(records, stored)
    assert [r["k"] for r in lacking] == ["task", "call", "result", "task"]
    told = note(lacking, resumed=True)
    assert '- The subagent "sub-task" that your Agent call ag1 started was ended by the interruption' in told
    assert '  - It called Bash with {"command": "echo sub > sub.txt"}' in told
    # The wake that told it was cut off in turn, its note stored: the next one does not tell it again.
    again = [*stored, {"type": "user", "message": {"content": [{"type": "text", "text": told + "\n\nContinue"}]}}]
    assert missed(records, again) == []
    # A hand-back that is not an error is the subagent's report, as before.
    handed = [stored[0], {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "ag1", "content": "done"}]}}]
    assert missed(records, handed) == []


def test_a_background_shell_told_as_cut_off_is_not_told_again_by_the_next_wake():
    # Its "running in background" result never turns into a notification once the kill ended the CLI: only the stored
    # note shows it was told. Told again, every later wake's note grew by the same line.
    records = [{"k": "call", "id": "m2", "tool": "sh1", "name": "Bash", "input": {"command": "serve"}},
               {"k": "task", "id": "b1", "tool": "sh1", "type": "local_bash", "description": "serve",
                "background": True, "status": "running"}]
    stored = [{"type": "assistant", "message": {"id": "m2", "content": []}},
              {"type": "user", "message": {"content": [
                  {"type": "tool_result", "tool_use_id": "sh1", "content": "Command running in background with ID: b1."}]}}]
    told = note(missed(records, stored), resumed=True)
    assert "was cut off by the interruption" in told
    assert missed(records, [*stored, {"type": "user", "message": {"content": told + "\n\nContinue"}}]) == []
