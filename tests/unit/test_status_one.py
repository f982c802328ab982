"""One status (issue 33): the domain's Status reaches the wire by one mapping, the manifest is read through one cache,
and the words and rules a client used to re-derive from the seed's step names are the server's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import attrs

from flower.core.banner import label
from flower.core.forecast import ContextPoint, Forecast
from flower.core.manifest import Manifest, StepResult, in_work_session, parsed_rows
from flower.core.records import FileRecords
from flower.history import History
from flower.lsp import protocol as p
from flower.status import Cost, Goal, Status, VerdictState, WaitingFor, WaitState, recorded

EDITOR = {"folder": "file:///w", "name": "w", "settings": None, "trusted": False, "trust": "nobody yet"}


def test_step_names_are_put_into_words_by_the_server_in_the_clients_language() -> None:
    # These were the client's own (vscode-client/test/tools.test.ts) until the client stopped parsing names.
    assert label("en", "干活#round2") == "work · round 2"
    assert label("en", "干活·判定#1") == "judge · round 1"
    assert label("en", "custom") == "custom"
    assert label("en", "澄清#retry1") == "clarify · retry 1"
    assert label("en", "目标") == "goals"
    assert label("en", "干活#round2#retry1") == "work · round 2 · retry 1"
    assert label("en", "干活·交接#3") == "handoff · round 3"
    assert [label("zh", s) for s in ("干活#round2", "干活·判定#2", "澄清")] == ["干活 · 第 2 轮", "判定 · 第 2 轮", "澄清"]


def test_the_work_session_is_work_rounds_and_retries_only() -> None:
    assert all(map(in_work_session, ["干活", "干活#round2", "干活#retry1", "干活#round3#retry2"]))
    assert not any(map(in_work_session, [None, "澄清", "目标", "干活·判定#1", "干活·交接#2", "干活 extra"]))


def test_every_domain_status_field_is_on_the_wire_under_its_own_name() -> None:
    """A new Status field reaches FolderStatus by being declared there; one that is not fails here, not in a client."""
    wire = {a.name for a in attrs.fields(p.FolderStatus)}
    # `started` goes out as `hasTask`; the domain's `settings` (values in effect) is not the wire's (a settings problem).
    assert {f.name for f in dataclasses.fields(Status)} - {"started", "settings"} <= wire


def test_one_mapping_carries_each_field_and_adds_only_what_the_protocol_says_in_words() -> None:
    s = Status(workspace="/w", run_dir="/w/runs", woke=2, started=True, steps={"干活": "s1"}, goals=[Goal(text="a", done=True)],
               context=8000, window=1_000_000, running=True, step="干活#round2", handoff_at=600_000, model="m",
               waiting=WaitState(reason="backoff", seconds=4.0, attempt=1, max_attempts=6, until=110.0),
               waiting_for=WaitingFor(what="outage", since=3.0), verdict=VerdictState(round=1, passed=False, reasons="x"),
               cost=Cost(wake=0.1, task=0.3, max=2.0), settings={"model": {"value": "m"}}, store_bytes=4096, background=["npm run dev"])
    wire = p.to_wire(p.folder_status(s, "zh", 100.0, **EDITOR))
    assert json.loads(json.dumps(wire)) == wire
    assert (wire["woke"], wire["steps"], wire["goals"], wire["context"], wire["window"], wire["handoffAt"]) == (
        2, {"干活": "s1"}, [{"text": "a", "done": True}], 8000, 1_000_000, 600_000)
    assert wire["waiting"] == {"reason": "backoff", "seconds": 4.0, "attempt": 1, "maxAttempts": 6, "until": 110.0, "secondsLeft": 10.0}
    assert wire["waitingFor"] == {"what": "outage", "since": 3.0, "approval": None}
    assert (wire["verdict"], wire["cost"]) == ({"round": 1, "passed": False, "reasons": "x"}, {"wake": 0.1, "task": 0.3, "max": 2.0})
    assert (wire["model"], wire["storeBytes"], wire["background"], wire["settings"]) == ("m", 4096, ["npm run dev"], None)
    assert (wire["hasTask"], wire["workSession"], wire["stepLabel"]) == (True, True, "干活 · 第 2 轮")
    idle = p.to_wire(p.folder_status(Status(workspace="/w", run_dir="/w/runs", woke=0, started=False, steps={}, goals=[]),
                                     "en", 100.0, **EDITOR))
    assert (idle["hasTask"], idle["workSession"], idle["stepLabel"], idle["waiting"]) == (False, False, None, None)


def test_status_and_history_read_the_manifest_through_one_cache(tmp_path: Path) -> None:
    ws, run_dir = tmp_path / "ws", tmp_path / "ws" / "runs"
    ws.mkdir()
    records = FileRecords(run_dir)
    manifest = Manifest(run_dir, run="r1", records=records)
    manifest.add(StepResult("干活", session_id="s1", ok=True, cost_usd=0.5))
    first = parsed_rows(records)
    history = History(ws, run_dir, store=object(), records=records)  # type: ignore[arg-type]  # no store read here
    assert recorded(ws, run_dir, records).rows == first and parsed_rows(records) is first  # parsed once
    assert [r.step for r in history.step_runs()] == ["干活"] and parsed_rows(records) is first
    manifest.add(StepResult("干活#round2", session_id="s1", ok=True, cost_usd=0.25))  # the stamp moves: read again
    assert [r.step for r in parsed_rows(records)] == ["干活", "干活#round2"]
    assert recorded(ws, run_dir, records).task == 0.75 and history.steps()[0] == {"s1": [(0.0, "干活"), (0.0, "干活#round2")]}


def test_the_forecasts_series_reaches_the_wire_nested_by_the_same_mapping() -> None:
    """Issue 34's chart: the points travel inside the forecast, each with its round, context and handoff."""
    f = Forecast(rounds=2, slope=None, to_handoff=None, to_window=None, wake_per_round=None, task_per_round=None,
                 points=[ContextPoint(1, 125_000, False), ContextPoint(2, None, True)])
    s = Status(workspace="/w", run_dir="/w/runs", woke=1, started=True, steps={}, goals=[], forecast=f)
    wire = p.to_wire(p.folder_status(s, "en", 0.0, **EDITOR))
    assert wire["forecast"]["points"] == [{"round": 1, "context": 125_000, "handoff": False},
                                          {"round": 2, "context": None, "handoff": True}]
