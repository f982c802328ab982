"""One place for settings: flag > environment > file > default, sources shown, bad input named."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from flower.core.errors import FlowerError
from flower.core.trust import Trust
from flower.runtime import AgentSpec, Budget, BudgetSpent, Runtime
from flower.settings import ENV, KEYS, OPTION_LABELS, OPTIONS, Settings, SettingsError, load
from flower.settings import options_of as _options
from flower.workflow.goal import JUDGE

WRITES = {"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"}


def test_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    s = load(tmp_path, env={})
    assert (s.rounds, s.trim, s.model, s.max_cost, s.isolated, s.store, s.project) == (10, True, None, None, False, "sqlite", None)
    assert set(s.sources.values()) == {"default"}
    assert s.run_dir_path(tmp_path) == tmp_path / "runs"


def test_flag_beats_environment_beats_file_and_sources_say_where(tmp_path: Path) -> None:
    (tmp_path / ".flower.toml").write_text('rounds = 3\nmodel = "from-file"\nmax_cost = 5\nisolated = true\n')
    s = load(tmp_path, {"model": "from-flag", "rounds": None}, labels={"model": "--model"},
             env={"ANTHROPIC_MODEL": "from-env", "FLOWER_MAX_COST": "7.5", "FLOWER_ROUNDS": ""})
    assert (s.model, s.max_cost, s.rounds, s.isolated) == ("from-flag", 7.5, 3, True)
    assert s.sources["model"] == "--model" and s.sources["max_cost"] == "$FLOWER_MAX_COST"
    assert s.sources["rounds"] == str(tmp_path / ".flower.toml") and s.sources["trim"] == "default"
    assert s.shown()["values"]["model"] == "from-flag"


def test_pyproject_tool_flower_is_read_and_a_flower_toml_wins_whole(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.flower]\nrounds = 4\nrun_dir = "records"\n')
    s = load(tmp_path, env={})
    assert s.rounds == 4 and s.sources["rounds"] == str(tmp_path / "pyproject.toml")
    assert s.run_dir_path("/elsewhere") == tmp_path / "records"  # a file's run_dir is the workspace's, not the cwd's
    (tmp_path / ".flower.toml").write_text("trim = false\n")
    s = load(tmp_path, env={})
    assert (s.rounds, s.trim) == (10, False)


def test_a_pyproject_without_tool_flower_is_no_settings_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert set(load(tmp_path, env={}).sources.values()) == {"default"}


@pytest.mark.parametrize(("content", "named"), [
    ("max_cots = 5\n", "max_cots must be one of rounds"),
    ('rounds = "ten"\n', "rounds must be a whole number >= 1"),
    ("max_cost = -1\n", "max_cost must be US dollars > 0"),
    ("isolated = 1\n", "isolated must be true or false"),
    ("rounds = [\n", "(the file) must be readable TOML"),
])
def test_a_bad_file_is_one_line_naming_the_file_the_key_and_what_is_expected(tmp_path: Path, content: str, named: str) -> None:
    (tmp_path / ".flower.toml").write_text(content)
    with pytest.raises(SettingsError) as caught:
        load(tmp_path, env={})
    line = caught.value.text("en")
    assert line.startswith(str(tmp_path / ".flower.toml") + ": ") and named in line and "\n" not in line
    assert (tmp_path / ".flower.toml").read_text() == content  # never rewritten


def test_a_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^\$FLOWER_MAX_COST: max_cost must be US dollars > 0, e\.g\. max_cost = 20 \(got 'lots'\)$"):
        load(tmp_path, env={"FLOWER_MAX_COST": "lots"})
    assert load(tmp_path, env={"FLOWER_ISOLATED": "yes", "FLOWER_ROUNDS": "2"}).isolated is True


def test_editor_options_override_the_file_and_are_named_as_the_editors_settings(tmp_path: Path) -> None:
    (tmp_path / ".flower.toml").write_text('model = "from-file"\nrounds = 3\n')
    options = _options({"model": "from-editor", "maxCost": 2, "isolated": True, "store": "sqlite", "project": " ",
                        "fallbackModel": "small", "handoffAt": None, "bogus": 1})
    assert options == {"model": "from-editor", "max_cost": 2, "isolated": True, "store": "sqlite", "fallback_model": "small"}
    s = load(tmp_path, options, env={}, labels=OPTION_LABELS)
    assert (s.model, s.max_cost, s.isolated, s.fallback_model, s.rounds, s.project) == ("from-editor", 2.0, True, "small", 3, None)
    assert s.sources["max_cost"] == "flower.maxCost" and s.sources["rounds"] == str(tmp_path / ".flower.toml")


@pytest.mark.parametrize(("raw", "line"), [
    ({"handoffAt": 0}, "flower.handoffAt: handoff_at must be a number of tokens >= 1, e.g. handoff_at = 120000 (got 0)"),
    ({"trim": "no"}, "flower.trim: trim must be true or false, e.g. trim = true (got 'no')"),
    ({"rounds": 2.5}, "flower.rounds: rounds must be a whole number >= 1, e.g. rounds = 10 (got 2.5)"),
    ({"store": "mysql://db"}, "flower.store: store must be sqlite or a postgresql:// URL, "
                              'e.g. store = "postgresql://me@db.example.org/flower" (got \'mysql://db\')'),
])
def test_a_bad_editor_option_is_the_same_one_line_error_as_a_bad_file_not_dropped(
        tmp_path: Path, raw: dict[str, object], line: str) -> None:
    (tmp_path / ".flower.toml").write_text("rounds = 3\n")  # the file does not stand in for the bad option
    with pytest.raises(SettingsError) as caught:
        load(tmp_path, _options(raw), env={}, labels=OPTION_LABELS)
    assert caught.value.text("en") == line
    assert caught.value.file is None and caught.value.where == OPTION_LABELS[caught.value.setting]


def test_a_bad_file_says_which_file_so_a_front_end_can_open_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.flower]\nrounds = "many"\n')
    with pytest.raises(SettingsError) as caught:
        load(tmp_path, env={})
    assert (caught.value.file, caught.value.setting) == (str(tmp_path / "pyproject.toml"), "rounds")
    (tmp_path / ".flower.toml").write_text("rounds = [\n")
    with pytest.raises(SettingsError) as caught:
        load(tmp_path, env={})
    assert caught.value.file == str(tmp_path / ".flower.toml")
    with pytest.raises(SettingsError) as caught:
        load(tmp_path / "elsewhere", env={"FLOWER_ROUNDS": "many"})
    assert caught.value.file is None and caught.value.where == "$FLOWER_ROUNDS"


def test_every_editor_option_is_a_setting_and_every_key_has_a_variable() -> None:
    fields = {f.name for f in dataclasses.fields(Settings)} - {"sources"}
    assert set(KEYS) == fields and set(OPTIONS.values()) == fields - {"run_dir"}
    assert len(set(ENV.values())) == len(KEYS) and set(OPTION_LABELS.values()) == {f"flower.{o}" for o in OPTIONS}


def test_budget_stops_the_next_run_once_spent_reaches_the_cap() -> None:
    budget = Budget(cap=2.0)
    assert not budget.exhausted() and budget.remaining == 2.0
    budget.spent = 2.0
    assert budget.exhausted() and budget.remaining == 0.0
    line = BudgetSpent(budget).text("en")
    assert "$2.00 of $2.00" in line and "flower --max-cost 4" in line
    assert isinstance(BudgetSpent(budget), FlowerError) and not Budget().exhausted() and Budget().remaining is None


def test_runtime_options_load_the_users_setup_unless_isolated(tmp_path: Path) -> None:
    agent = AgentSpec("a")
    rt = Runtime(tmp_path, tmp_path / "runs", model="m1", fallback_model="m2", budget=Budget(cap=3.0, spent=1.0),
                 trust=Trust(True, "flower", tmp_path))
    opts = rt.options(agent, None, print)
    assert opts.setting_sources == ["user", "project", "local"]
    assert (opts.model, opts.fallback_model, opts.max_budget_usd) == ("m1", "m2", 2.0)
    assert rt.options(AgentSpec("b", model="own"), None, print).model == "own"  # an agent's own model wins
    isolated = Runtime(tmp_path, tmp_path / "runs", isolated=True).options(agent, None, print)
    assert isolated.setting_sources == [] and isolated.max_budget_usd is None and isolated.model is None


def test_the_judge_never_gets_write_tools_whatever_the_settings_allow() -> None:
    assert WRITES <= set(JUDGE.disallowed_tools) and not WRITES & set(JUDGE.allowed_tools)


async def test_a_run_that_would_start_over_the_cap_stops_before_any_cli_starts(tmp_path: Path) -> None:
    nowhere = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}  # nothing listens there
    rt = Runtime(tmp_path, tmp_path / "runs", env=nowhere, budget=Budget(cap=1.0, spent=1.0))
    try:
        with pytest.raises(BudgetSpent) as caught:
            await asyncio.wait_for(rt.run(AgentSpec("a"), "hello"), 30)
    finally:
        await rt.close()
    assert caught.value.key == "budget_spent" and rt.budget.spent == 1.0


def test_the_task_cost_is_the_manifests_rows_since_the_task_began_and_follows_new_rows(tmp_path: Path) -> None:
    from flower.core.manifest import Manifest, StepResult
    from flower.status import recorded

    old = Manifest(tmp_path / "runs", run="old")
    old.add(StepResult("干活", ok=True, cost_usd=5.0, started_at=1.0, ended_at=2.0, model="m-old"))
    (tmp_path / "notes" / "archive" / "20260101-000000").mkdir(parents=True)  # `flower --new` here: a new task began
    wake = Manifest(tmp_path / "runs", run="wake")
    wake.add(StepResult("澄清", ok=True, cost_usd=0.25, started_at=time.time(), ended_at=time.time(), model="m-new"))
    found = recorded(tmp_path, tmp_path / "runs")
    assert (found.task, found.last, found.model) == (0.25, 0.25, "m-new")
    wake.add(StepResult("目标", ok=True, cost_usd=0.5, started_at=time.time(), ended_at=time.time() + 1))
    found = recorded(tmp_path, tmp_path / "runs")
    assert (found.task, found.last, found.model) == (0.75, 0.75, "m-new")  # a new row counts at once (no stale cache)


def test_an_environment_number_is_a_number_and_a_switch_a_switch(tmp_path: Path) -> None:
    settings = load(tmp_path, env={"FLOWER_ROUNDS": "1", "FLOWER_TRIM": "0", "FLOWER_MAX_COST": "1", "FLOWER_PROJECT": "1"})
    assert (settings.rounds, settings.trim, settings.max_cost, settings.project) == (1, False, 1.0, "1")
    with pytest.raises(SettingsError) as bad:
        load(tmp_path, env={"FLOWER_ROUNDS": "yes"})
    assert "$FLOWER_ROUNDS" in bad.value.text("en") and "'yes'" in bad.value.text("en")


def test_flags_match_exactly_and_the_flags_messages_name_exist(tmp_path: Path) -> None:
    """Issue 34: `--mode X` was taken as `--model X` (prefix matching); `--mode` and `--allow` exist and set their keys."""
    from flower.cli.args import UsageError, given, main_parser
    from flower.settings import FLAGS

    args = main_parser("en").parse_intermixed_args(["--mode", "plan", "--allow", "Read,Bash(npm test:*)", "go"])
    assert args.model is None
    settings = load(tmp_path, given(args), labels=FLAGS, env={})
    assert settings.mode == "plan" and settings.allow == ["Read", "Bash(npm test:*)"]
    assert settings.sources["mode"] == "--mode"
    with pytest.raises(UsageError, match="unrecognized arguments: --mod"):
        main_parser("en").parse_intermixed_args(["--mod", "x"])
    for key, flag in FLAGS.items():
        assert flag in main_parser("en").format_help(), key
