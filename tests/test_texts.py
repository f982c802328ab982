"""One message catalog, one locale rule (D4): every sentence in both languages, and a zh run speaks no English."""

from __future__ import annotations

import re

import pytest

import flowerscript as fs
from flower.core.banner import header, label
from flower.core.texts import CATALOG, LOCALES, env_locale, fields, locale_from, text
from flower.testing import server_error
from flower.testing import text as reply
from test_cli import flower


def test_every_entry_has_every_language_with_the_same_fields():
    for key, entry in CATALOG.items():
        assert set(entry) == set(LOCALES), key
        assert all(entry[locale].strip() for locale in LOCALES), key
        assert fields(entry["en"]) == fields(entry["zh"]), key


@pytest.mark.parametrize("value, locale", [
    ("zh", "zh"), ("zh-CN", "zh"), ("zh_TW.UTF-8", "zh"), ("ZH_cn", "zh"),
    ("en_US.UTF-8", "en"), ("C.UTF-8", "en"), ("ja", "en"), ("", "en"), (None, "en"),
])
def test_one_locale_rule_for_terminals_and_editors(value, locale):
    assert locale_from(value) == locale


def test_the_process_locale_follows_posix_precedence():
    assert env_locale({"LANG": "zh_CN.UTF-8"}) == "zh"
    assert env_locale({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}) == "en"  # LC_ALL wins
    assert env_locale({"LC_ALL": "", "LC_MESSAGES": "zh_TW", "LANG": "C"}) == "zh"  # an empty one is unset
    assert env_locale({}) == "en"


def test_step_labels_keep_the_suffix_of_their_manifest_name():
    assert label("en", "干活#round2") == "work#round2" and label("zh", "干活#round2") == "干活#round2"
    assert label("en", "干活·判定#1") == "work·判定#1" and label("en", "once") == "once"
    assert header("en", "干活#round3", 3, 3, 2, True) == "== work#round3 ==============================  3/3  <- resumed · wake #2"


def english(template: str) -> re.Pattern[str]:
    """A line that is this English sentence, whatever its fields hold."""
    parts = re.split(r"\{[^}]*\}", template.strip())
    return re.compile(".*".join(re.escape(p) for p in parts), re.S)


def chinese_words() -> str:
    return "\n".join(entry["zh"] for entry in CATALOG.values())


async def test_a_chinese_run_speaks_no_english_catalog_sentence(model, env, workspace, run_dir):
    shown: list[str] = []

    async def run(*args: str, code: int = 0, cwd=workspace) -> None:
        done = await flower(*args, env=env, cwd=cwd, lang="zh")
        assert done.code == code, done.out + done.err
        shown.extend(done.out.splitlines() + done.err.splitlines())

    # A first run whose judge fails once, a wake sentence with a retried 500, status, once, bad input.
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge(False, "adds is missing"),
               *fs.work(workspace), *fs.judge())
    await run("build a calculator", "-r", str(run_dir))
    model.push(*fs.goals(workspace), server_error(), *fs.work(workspace), *fs.judge())
    await run("also multiply", "-r", str(run_dir))
    await run("status", "-r", str(run_dir))
    model.push(reply("hello"))
    await run("once", "hi", "-r", str(run_dir))
    await run("--rounds", "0", "x", code=2)
    (workspace / "empty").mkdir()
    await run(code=2, cwd=workspace / "empty")

    # Every line checked against every English sentence that differs from its Chinese one.
    sentences = [(key, english(e["en"])) for key, e in CATALOG.items() if e["en"] != e["zh"]]
    for line in shown:
        bare = line.strip().removeprefix("flower: ").removeprefix("· ").strip()
        spoken = [key for key, pattern in sentences if pattern.fullmatch(bare)]
        assert not spoken, f"{line!r} is the English of {spoken}"
    # …and no English piece of a sentence (longer than a word) appears anywhere.
    everything, zh = "\n".join(shown), chinese_words()
    pieces = {p.strip() for e in CATALOG.values() for p in re.split(r"\{[^}]*\}", e["en"]) if len(p.strip()) >= 8}
    assert not [p for p in pieces if p not in zh and p in everything]
    # The Chinese ones are there.
    for expected in (
        text("verdict_fail", "zh", round=1, reasons="adds is missing"), text("verdict_pass", "zh", round=2),
        text("recorded", "zh", file="需求.md", sentence="also multiply"), text("banner_wake", "zh", woke=2),
        text("header_resumed", "zh", woke=2), text("status_goals", "zh", done=0, total=2), "工作区",
        text("done", "zh", rounds=2), "后重试", "接着问: flower once --resume", "至少为 1", "这里没有可接着做的事",
    ):
        assert expected in everything, expected
