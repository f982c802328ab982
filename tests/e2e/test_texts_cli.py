"""texts: the tests that run separate processes (moved from tests/unit/test_texts.py)."""

from __future__ import annotations

import re

from test_cli import flower

import flowerscript as fs
from flower.core.texts import CATALOG, text
from flower.testing import server_error
from flower.testing import text as reply


def english(template: str) -> re.Pattern[str]:
    """A line that is this English sentence, whatever its fields hold."""
    out, at = [], 0
    for field in re.finditer(r"\{[^}:]*(?::([^}]*))?\}", template.strip()):
        out.append(re.escape(template.strip()[at:field.start()]))
        spec = field.group(1) or ""  # `{n:file|files}` is one of its words (core/texts.py), any other field anything
        out.append("(?:" + "|".join(map(re.escape, spec.split("|"))) + ")" if "|" in spec else ".*")
        at = field.end()
    return re.compile("".join(out) + re.escape(template.strip()[at:]), re.S)


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
