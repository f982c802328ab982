"""Every sentence flower says to a person, in English and in the seed's Chinese, and the one locale rule (D4).

A front-end picks the language once with `locale_from` and asks for sentences by id with `text`.
The banner and step headers of S19 are assembled from entries here (see core/banner.py).
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field

LOCALES = ("en", "zh")

CATALOG: dict[str, dict[str, str]] = {
    # -- the wake banner and step headers (S19) ---------------------------------------------------
    "banner": {"en": "<- resumed in {where} · {facts}", "zh": "<- 在 {where} 接上上次  {facts}"},
    "banner_confirmed": {"en": "requirements confirmed", "zh": "需求已确认"},
    "banner_goals": {"en": "{count} {count:goal|goals}", "zh": "目标 {count} 条"},
    "banner_context": {"en": "work context {size}", "zh": "干活上下文 {size}"},
    "banner_wake": {"en": "wake #{woke}", "zh": "第 {woke} 次唤醒"},
    "header_resumed": {"en": "<- resumed · wake #{woke}", "zh": "<- 接上次 · 第 {woke} 次唤醒"},
    "step_clarify": {"en": "clarify", "zh": "澄清"},
    "step_goals": {"en": "goals", "zh": "目标"},
    "step_work": {"en": "work", "zh": "干活"},
    # -- a step run's name as every front-end shows it (core/banner.label; the records keep the seed's names, S7) ------
    "step_round": {"en": "{step} · round {n}", "zh": "{step} · 第 {n} 轮"},
    "step_retry": {"en": "{step} · retry {n}", "zh": "{step} · 重试 {n}"},
    "step_judge": {"en": "judge · round {n}", "zh": "判定 · 第 {n} 轮"},
    "step_handoff": {"en": "handoff · round {n}", "zh": "交接 · 第 {n} 轮"},
    # -- what the service and the flower path tell the person (Notice events) ---------------------
    "queued": {"en": "received; queued for the work session: {sentence} (the model gets it at its next round)",
               "zh": "已收到并排队,干活会话下一轮会收到: {sentence}"},
    "given": {"en": "the work session gets it in this round: {sentence}", "zh": "干活会话这一轮收到: {sentence}"},
    "archived": {"en": "archived the previous task to {path}", "zh": "上一件事已归档到 {path}"},
    "recorded": {"en": "recorded in {file}: {sentence}", "zh": "已记入 {file}: {sentence}"},
    "ended_stray": {"en": "ended the agent CLI (pid {pid}) that a killed flower left running on this task",
                    "zh": "已结束被杀掉的 flower 留下、仍在这件事上运行的智能体 CLI(pid {pid})"},
    # -- the last resort (issue #22): an unexpected exception, one line; the traceback is in the log -----------
    "crash": {
        "en": "stopped on an unexpected error ({what}); the full log is in {log}. Nothing was lost: run `flower` here again to continue.",
        "zh": "遇到意外错误而停下({what});完整日志在 {log}。什么都没丢:在这里再运行 `flower` 就接着做。",
    },
    "crash_editor": {
        "en": "flower stopped on an unexpected error ({what}); the full log is in {log}. Nothing was lost: wake this folder again to continue.",
        "zh": "flower 遇到意外错误而停下({what});完整日志在 {log}。什么都没丢:再次唤醒这个文件夹就接着做。",
    },
    # -- the task's files travel with the task through a shared store (issue #22) --------------------------
    "task_file_restored": {
        "en": "restored {file} from the shared store (last written on {host})",
        "zh": "已从共享存储恢复 {file}(最后写于 {host})",
    },
    "task_file_updated": {
        "en": "{file} updated from the shared store (newer, written on {host}); the copy that was here is kept as {kept}",
        "zh": "{file} 已按共享存储更新(较新,写于 {host});这里原来的那份保留为 {kept}",
    },
    "task_file_conflict_local": {
        "en": "{file} was changed here and on {host}: the newer one here wins; the store's copy is kept as {kept}",
        "zh": "{file} 在这里和 {host} 上都改过:以这里较新的为准;共享存储里的那份保留为 {kept}",
    },
    "task_file_conflict_store": {
        "en": "{file} was changed here and on {host}: the newer one from {host} wins; the copy that was here is kept as {kept}",
        "zh": "{file} 在这里和 {host} 上都改过:以 {host} 上较新的为准;这里原来的那份保留为 {kept}",
    },
    # -- a task file missing or unreadable in a used folder (issue #22): the step that makes it runs again --
    "file_missing_resumed": {
        "en": "{file} is missing here; the {step} step continues its session to write it again",
        "zh": "这里缺少 {file};{step}步骤接着它的会话重新写出它",
    },
    "file_missing_fresh": {
        "en": "{file} is missing here; the {step} step runs again to write it",
        "zh": "这里缺少 {file};{step}步骤重新运行来写出它",
    },
    "file_unreadable_resumed": {
        "en": "{file} could not be read; kept aside as {kept}; the {step} step continues its session to write it again",
        "zh": "{file} 无法读取,已另存为 {kept};{step}步骤接着它的会话重新写出它",
    },
    "file_unreadable_fresh": {
        "en": "{file} could not be read; kept aside as {kept}; the {step} step runs again to write it",
        "zh": "{file} 无法读取,已另存为 {kept};{step}步骤重新运行来写出它",
    },
    # -- the command line: prompts and progress ---------------------------------------------------
    "wake_prompt": {
        "en": "Continue? Enter = carry on; or say something new; /new = start something else (Ctrl-C to quit)",
        "zh": "接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)",
    },
    "new_prompt": {
        "en": "What should it do? One sentence is enough; Enter to start (Ctrl-C to quit)",
        "zh": "要做什么? 一句话就够,回车开始(Ctrl-C 退出)",
    },
    "approve_prompt": {"en": "Allow {tool}: {summary}? [y]es/[a]lways/[N]o:", "zh": "允许 {tool}: {summary}? [y]是/[a]总是/[N]否:"},
    "ps_background": {"en": "in the background: {what}", "zh": "后台运行: {what}"},
    "status_background": {"en": "In the background now: {what}", "zh": "正在后台运行: {what}"},
    "approve_by_subagent": {"en": "The subagent \"{agent}\" asks:", "zh": "子代理 \"{agent}\" 请求:"},
    "approval_unattended": {
        "en": "denied {tool}: {summary} (nobody here to approve it; the model was told and carries on). "
              "To let it run unasked, add it to allow in .flower.toml",
        "zh": "已拒绝 {tool}: {summary}(这里没人能批准;已告诉模型,它会继续做能做的)。要不问就运行,把它加到 .flower.toml 的 allow",
    },
    "answer_prompt": {"en": "Your answer (Enter = let it assume)", "zh": "回答(直接回车 = 让它自己假设)"},
    "nobody": {
        "en": "(nobody at a terminal to answer; it will make reasonable assumptions)",
        "zh": "(没人在终端前回答;它会自己做合理假设)",
    },
    "starting": {"en": "-> starting in {where}  (records in {runs})", "zh": "-> 在 {where} 开始  (记录在 {runs})"},
    "interrupted": {
        "en": "Interrupted. Run `flower` here again to continue where it stopped.",
        "zh": "已中断。在这里再运行 `flower` 就接着做。",
    },
    "done": {"en": "done · the judge passed it (round {rounds})", "zh": "完成 · 判定通过(第 {rounds} 轮)"},
    "done_plain": {"en": "done", "zh": "完成"},
    # -- the engine (D11) -------------------------------------------------------------------------
    "engine_attached": {
        "en": "-> attached to the run in the flower engine (type a sentence for the work session; Ctrl-C leaves it running)",
        "zh": "-> 已连上 flower 引擎里的这次运行(输入一句话给干活会话;Ctrl-C 离开,它继续跑)",
    },
    "engine_detached": {
        "en": "detached: the run goes on in the flower engine; `flower` here attaches again, `flower stop` stops it",
        "zh": "已离开:这次运行在 flower 引擎里继续;在这里运行 `flower` 再连上,`flower stop` 停下它",
    },
    "engine_started": {
        "en": "started in the flower engine: `flower` here attaches to it, `flower stop` stops it, `flower ps` lists runs",
        "zh": "已在 flower 引擎里开始:在这里运行 `flower` 连上它,`flower stop` 停下,`flower ps` 列出运行",
    },
    "engine_stopped": {
        "en": "stopped the run in the flower engine (pid {pid}); `flower` here continues where it stopped",
        "zh": "已停下 flower 引擎(pid {pid})里的这次运行;在这里运行 `flower` 就接着做",
    },
    # -- who runs a folder's wake: status, ps and stop agree (issue 31) ---------------------------
    "stopped_pid": {
        "en": "stopped the run in pid {pid}; `flower` here continues where it stopped",
        "zh": "已停下 pid {pid} 里的这次运行;在这里运行 `flower` 就接着做",
    },
    "stop_nothing": {"en": "nothing runs here ({where})", "zh": "这里({where})没有在跑的事"},
    "stop_unknown": {
        "en": "a flower process runs here but has not written its pid yet; try `flower stop` again in a moment",
        "zh": "这里有个 flower 进程在跑,但还没写下它的 pid;稍等再运行 `flower stop`",
    },
    "stop_slow": {
        "en": "pid {pid} has not stopped within {seconds} s; press Ctrl-C in its terminal",
        "zh": "pid {pid} 在 {seconds} 秒内没有停下;在它的终端里按 Ctrl-C",
    },
    "stop_denied": {
        "en": "pid {pid} runs here but is not yours to stop; stop it in its own terminal (Ctrl-C)",
        "zh": "pid {pid} 在这里运行,但不归你停;在它自己的终端里按 Ctrl-C",
    },
    "running_engine": {
        "en": "running now in the flower engine (pid {pid}): `flower` here attaches to it, `flower stop` stops it",
        "zh": "正在 flower 引擎(pid {pid})里运行:在这里运行 `flower` 连上它,`flower stop` 停下它",
    },
    "running_pid": {
        "en": "running now in pid {pid}: `flower stop` stops it",
        "zh": "正在 pid {pid} 里运行:`flower stop` 停下它",
    },
    "waiting_for_you": {
        "en": "waiting for you ({what}) in the flower engine (pid {pid}): `cd {where} && flower` attaches and asks you",
        "zh": "在等你({what}),在 flower 引擎(pid {pid})里:`cd {where} && flower` 连上并问你",
    },
    "waiting_approval": {"en": "a tool question", "zh": "一个工具调用待批准"},
    "waiting_question": {"en": "a question", "zh": "一个问题"},
    "ps_waiting": {"en": "waiting for you: cd {where} && flower", "zh": "在等你: cd {where} && flower"},
    "ps_elsewhere": {"en": "not in the engine", "zh": "不在引擎里"},
    "approval_elsewhere": {"en": "(answered elsewhere: {decision})", "zh": "(已在别处回答: {decision})"},
    "engine_nothing_here": {
        "en": "nothing runs here in the flower engine ({where})",
        "zh": "flower 引擎在这里({where})没有在跑的事",
    },
    "engine_none": {"en": "no flower engine is running", "zh": "没有在运行的 flower 引擎"},
    "say_unconfirmed": {
        "en": "the flower engine did not confirm this sentence ({reason}); if the run does not show it, say it again: {sentence}",
        "zh": "flower 引擎没有确认收到这句话({reason});如果运行里没出现,再说一次: {sentence}",
    },
    "say_engine_left": {"en": "the engine left", "zh": "引擎不在了"},
    "say_no_answer": {"en": "no answer in {seconds} s", "zh": "{seconds} 秒内没有回答"},
    "say_started": {
        "en": "the run had ended, so this sentence started the next wake in the flower engine: {sentence}",
        "zh": "这次运行已结束,这句话在 flower 引擎里开始了下一次唤醒: {sentence}",
    },
    "engine_gone": {
        "en": "the flower engine went away; run `flower` here again to continue where it stopped",
        "zh": "flower 引擎不在了;在这里再运行 `flower` 就接着做",
    },
    "engine_unix_only": {  # issue 33: the engine's one-user wall is a Unix socket (D11); Windows has none
        "en": "the flower engine needs Unix sockets, which Windows does not have; run flower in this terminal "
              "(without --detach), and set flower.engine to \"window\" in the editor",
        "zh": "flower 引擎需要 Unix 套接字,Windows 没有;请在这个终端里直接运行 flower(不加 --detach),"
              "编辑器里把 flower.engine 设为 \"window\"",
    },
    "engine_busy_update": {
        "en": "flower engine {version} is running a task; it will update when the task ends",
        "zh": "flower 引擎 {version} 正在跑一件事;这件事结束后它会更新",
    },
    # -- the run's changes and reverting them (issue #25) -----------------------------------------
    "revert_running": {
        "en": "A wake is running in this folder: revert once it has ended (or stop it first).",
        "zh": "这个目录里有一次唤醒正在运行:等它结束(或先停下)再还原。",
    },
    "revert_what": {"en": "Say what to revert: a file, or --wake N for every file of one wake.",
                    "zh": "说明要还原什么:一个文件,或 --wake N 还原那次唤醒的所有文件。"},
    "revert_nothing": {
        "en": "Nothing to revert: {path} has no change recorded in wake {wake} that still differs (see `flower changes`).",
        "zh": "没有可还原的:{path} 在第 {wake} 次唤醒里没有仍不同的改动记录(见 `flower changes`)。",
    },
    "revert_nothing_any": {
        "en": "Nothing to revert: no wake changed {path}, or the file is already as it was (see `flower changes`).",
        "zh": "没有可还原的:没有哪次唤醒改过 {path},或它已经是原来的样子(见 `flower changes`)。",
    },
    "revert_no_image": {
        "en": "{path} changed during a Bash call but was too large to keep a copy of: restore it from version control.",
        "zh": "{path} 是在 Bash 调用中改的,但太大没有留副本:请从版本控制里恢复。",
    },
    "revert_confirm": {"en": "Restore {count} {count:file|files} as they were before wake {wake}? [y/N] ",
                       "zh": "把 {count} 个文件恢复到第 {wake} 次唤醒之前的样子? [y/N] "},
    "revert_needs_yes": {"en": "Not on a terminal: add --yes to restore without asking.",
                         "zh": "不在终端上:加 --yes 就不再询问直接恢复。"},
    "revert_done": {"en": "restored {path}", "zh": "已恢复 {path}"},
    "revert_kept": {"en": "nothing restored", "zh": "没有恢复任何文件"},
    # -- retention (issue #26): `flower gc`, and what a wake collects or suggests -----------------------
    "gc_header": {"en": "{task}  sessions  entries    on disk  last used", "zh": "{task}  会话数    条目数     磁盘占用  最后使用"},
    "gc_task": {"en": "task", "zh": "任务"},
    "gc_current": {"en": "current (kept)", "zh": "当前任务(保留)"},
    "gc_other": {"en": "other (kept: no task names them)", "zh": "其他(保留:不属于任何任务)"},
    "gc_store": {"en": "the store takes {size} MB on disk ({where})", "zh": "存储在磁盘上占 {size} MB({where})"},
    "gc_would_free": {
        "en": "{which} would free {count} archived {count:task|tasks}: {sessions} {sessions:session|sessions}, {entries} {entries:entry|entries}, {size} MB",
        "zh": "{which}会清理 {count} 个已归档任务:{sessions} 个会话,{entries} 条,{size} MB",
    },
    "gc_every": {"en": "flower gc --yes", "zh": "flower gc --yes "},
    "gc_older": {"en": "flower gc --older-than {age} --yes", "zh": "flower gc --older-than {age} --yes "},
    "gc_nothing": {"en": "nothing to collect: no archived task{older} holds sessions in the store",
                   "zh": "没有可清理的:没有{older}已归档任务在存储里还有会话"},
    "gc_nothing_older": {"en": " last used more than {age} ago", "zh": "超过 {age} 未使用的"},
    "gc_confirm": {
        "en": "Delete these sessions from flower's store? Their 需求.md, 目标.md and notes stay. [y/N] ",
        "zh": "从 flower 的存储里删除这些会话?它们的 需求.md、目标.md 和笔记都保留。[y/N] ",
    },
    "gc_kept": {"en": "nothing deleted", "zh": "什么都没删"},
    "gc_listed_only": {"en": "Not on a terminal: nothing deleted. Add --yes to delete them.",
                       "zh": "不在终端上:什么都没删。加 --yes 才会删除。"},
    "gc_freed": {
        "en": "deleted {sessions} {sessions:session|sessions} ({entries} {entries:entry|entries}) of {count} archived {count:task|tasks}; the store went from {before} MB to {after} MB on disk",
        "zh": "已删除 {count} 个已归档任务的 {sessions} 个会话({entries} 条);存储在磁盘上从 {before} MB 变为 {after} MB",
    },
    "gc_postgres_reuse": {
        "en": "PostgreSQL keeps most of the freed space inside its tables for later sessions (VACUUM FULL by the tables' owner gives it back to the disk)",
        "zh": "PostgreSQL 把大部分释放的空间留在表内供以后的会话使用(由表的所有者执行 VACUUM FULL 才会还给磁盘)",
    },
    "gc_bad_age": {"en": "{value} is not an age: give days or hours, e.g. --older-than 90d or 12h",
                   "zh": "{value} 不是时长:用天或小时,例如 --older-than 90d 或 12h"},
    "retention_freed": {
        "en": "retention ({days} {days:day|days}): deleted {sessions} {sessions:session|sessions} of {count} archived {count:task|tasks} from the store; {before} MB -> {after} MB on disk",
        "zh": "保留期({days} 天):已从存储删除 {count} 个已归档任务的 {sessions} 个会话;磁盘占用 {before} MB -> {after} MB",
    },
    "store_large": {
        "en": "the store takes {size} GB on disk: `flower gc` shows what archived tasks hold and frees them",
        "zh": "存储在磁盘上占 {size} GB:`flower gc` 可查看已归档任务占用的空间并清理",
    },
    "changes_none": {"en": "No changes recorded here yet.", "zh": "这里还没有记录到改动。"},
    "log_empty": {"en": "nothing stored here yet: flower \"task\" starts one", "zh": "这里还没有记录: flower \"任务\" 开始一件事"},
    "log_more_lines": {"en": "(+{n} {n:line|lines})", "zh": "(另有 {n} 行)"},
    "log_result_lines": {"en": "{n} {n:line|lines}", "zh": "{n} 行"},
    "log_denied": {"en": "✕ denied — {reason}", "zh": "✕ 已拒绝 — {reason}"},
    "changes_wake": {"en": "wake #{wake}: {count} {count:file|files}", "zh": "第 {wake} 次唤醒:{count} 个文件"},
    "verdict_pass": {"en": "judge #{round}: passed", "zh": "判定 #{round}: 通过"},
    "verdict_fail": {"en": "judge #{round}: not passed — {reasons}", "zh": "判定 #{round}: 未通过 — {reasons}"},
    "offline": {
        "en": "offline for {down}, waiting for {host} to answer · next probe in {seconds}",
        "zh": "已离线 {down},等 {host} 恢复 · {seconds} 后再探",
    },
    "live_model": {"en": "{step} · waiting for the model · {seconds}", "zh": "{step} · 等模型回复 · {seconds}"},
    "live_approval": {"en": "waiting for your approval · {seconds}", "zh": "等你批准 · {seconds}"},
    "live_answer": {"en": "waiting for your answer · {seconds}", "zh": "等你回答 · {seconds}"},
    "backoff": {
        "en": "retrying in {seconds} (attempt {next}/{max}) after: {error}",
        "zh": "{seconds} 后重试(第 {next}/{max} 次) · {error}",
    },
    "handoff": {
        "en": "handoff: the context grew too large, work goes on in a new session; document {path}",
        "zh": "交接: 上下文太大,换新会话继续;交接文档 {path}",
    },
    # -- the flower path: the handoff note the outgoing work session writes (S26) --
    "handoff_fallback": {
        "en": "the work session could not write its handoff note ({error}); flower wrote it from 需求.md, 目标.md and its last words",
        "zh": "干活会话没能写出交接说明({error});flower 改用 需求.md、目标.md 和它最后的话写成交接文档",
    },
    "handoff_waiting": {
        "en": "a new work session starts from the handoff note {path}, as it is on disk now",
        "zh": "新的干活会话从交接文档 {path} 开始(按它现在在磁盘上的内容)",
    },
    "failed_step": {"en": "x {step}: {error}", "zh": "x {step}: {error}"},
    "session": {"en": "session: {sid}", "zh": "session: {sid}"},
    "resume_hint": {"en": "continue it: flower once --resume {sid} \"…\"", "zh": "接着问: flower once --resume {sid} \"…\""},
    "run_unfinished": {"en": "the run did not finish", "zh": "这次运行没有做完"},
    "agent_unfinished": {"en": "the agent did not finish", "zh": "代理没有做完"},
    # -- the command line: bad input (exit 2) -----------------------------------------------------
    "see_help": {"en": "{problem} (see `{prog} --help`)", "zh": "{problem}(见 `{prog} --help`)"},
    "rounds_not_number": {
        "en": "takes a whole number of work rounds ≥ 1, not {value}",
        "zh": "要一个 ≥ 1 的整数(干活轮数),不是 {value}",
    },
    "rounds_too_small": {
        "en": "must be at least 1 (got {n}): it caps the work rounds of this wake",
        "zh": "至少为 1(收到 {n}):它限制这次唤醒的干活轮数",
    },
    "nothing_here": {
        "en": "nothing to continue here: give the task in one sentence, e.g. flower \"what to build\"",
        "zh": "这里没有可接着做的事: 用一句话说出任务,例如 flower \"要做的事\"",
    },
    "new_needs_task": {
        "en": "say what the new task is: give it in one sentence, e.g. flower --new \"write the docs\"",
        "zh": "说出新任务是什么: 一句话就够,例如 flower --new \"写文档\"",
    },
    "run_dir_unwritable": {
        "en": "cannot write the run dir {path}: {reason}; choose another with -r DIR",
        "zh": "无法写入记录目录 {path}: {reason};用 -r DIR 换一个",
    },
    "no_session": {
        "en": "no session {sid} for this directory in {db}; run `flower once` from the directory (and with the -r DIR) it was started in",
        "zh": "{db} 里没有这个目录的会话 {sid};请在开始它的目录(用同样的 -r DIR)运行 `flower once`",
    },
    # -- failures a person reads: FlowerError messages and step errors (their detail stays untranslated) --
    "missing_credentials": {
        "en": "No Anthropic API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-…), or log in once with "
              "`claude login`; `flower demo` runs offline without one.",
        "zh": "没有 Anthropic API key: 设置 ANTHROPIC_API_KEY(export ANTHROPIC_API_KEY=sk-ant-…),"
              "或先用 `claude login` 登录一次;`flower demo` 不需要 key 就能离线运行。",
    },
    "workspace_busy": {
        "en": "another flower ({who}) is driving this workspace; wait for it to finish or {stop} (lock: {lock})",
        "zh": "另一个 flower({who})正在这个工作区干活;等它做完,或{stop}(锁: {lock})",
    },
    "busy_pid": {"en": "pid {pid}", "zh": "pid {pid}"},
    "busy_pid_since": {"en": "pid {pid}, since {since}", "zh": "pid {pid},自 {since} 起"},
    "busy_unknown": {"en": "pid unknown", "zh": "pid 未知"},
    "busy_stop_pid": {"en": "stop it (kill {pid})", "zh": "停掉它(kill {pid})"},
    "busy_stop": {"en": "stop it", "zh": "停掉它"},
    "db_unreadable": {
        "en": "{db} cannot be read as flower's session database ({reason}); it was left as it is. "
              "Move it aside to start a fresh history (the next wake starts new sessions).",
        "zh": "{db} 无法作为 flower 的会话数据库读取({reason});它保持原样未动。"
              "把它移走即可开始新的历史(下次唤醒会开新会话)。",
    },
    "db_not_sqlite": {
        "en": "{db} is not a usable SQLite database ({reason}). flower keeps its sessions there: move that file aside, "
              "or point run_dir at another folder.",
        "zh": "{db} 不是可用的 SQLite 数据库({reason})。flower 把会话存在这里: 把这个文件移走,或让 run_dir 指向别的目录。",
    },
    "db_too_new": {
        "en": "{db} was written by a newer flower (schema version {version}; this flower knows up to {known}). "
              "Upgrade flower (pip install -U flower) to use it; the file was left as it is.",
        "zh": "{db} 是更新版本的 flower 写的(结构版本 {version};这个 flower 只认到 {known})。"
              "升级 flower(pip install -U flower)后再用;文件保持原样未动。",
    },
    "db_cannot_open": {"en": "cannot open {db}: {reason}", "zh": "无法打开 {db}: {reason}"},
    # -- a full disk or a read-only run_dir under sessions.db (many writers, a full disk) --------------
    "db_full": {
        "en": "cannot write {db} ({reason}): the disk may be full.\n"
              "Free some space, then run flower again: the session is kept and resumes where it stopped.",
        "zh": "无法写入 {db}({reason}):磁盘可能已满。\n腾出一些空间后再运行 flower:会话已保留,会从停下的地方接着做。",
    },
    "db_read_only": {
        "en": "cannot write {db} ({reason}): it or its folder is read-only.\n"
              "Make them writable, then run flower again: the session is kept and resumes where it stopped.",
        "zh": "无法写入 {db}({reason}):它或所在目录是只读的。\n改成可写后再运行 flower:会话已保留,会从停下的地方接着做。",
    },
    "step_failed": {"en": "{step}: {error}", "zh": "{step}: {error}"},
    "not_retried": {"en": "{detail}\nnot retried: {advice}", "zh": "{detail}\n不再重试: {advice}"},
    "gave_up_offline": {
        "en": "offline for more than {seconds} s ({detail}); the session is kept: run again when the network is back to resume it",
        "zh": "离线超过 {seconds} 秒({detail});会话已保留: 网络恢复后再运行即可接着做",
    },
    "cancelled": {"en": "cancelled; wake again to resume", "zh": "已取消;再次唤醒即可接着做"},
    "no_result": {"en": "the agent ended without a result", "zh": "代理结束了,但没有给出结果"},
    "requirements_incomplete": {"en": "{file} is still incomplete", "zh": "{file} 仍不完整"},
    "no_goals": {"en": "no checklist items were written to {file}", "zh": "{file} 里没有写出任何清单条目"},
    "judge_not_passed": {
        "en": "the judge did not pass the work in {rounds} {rounds:round|rounds}: {reasons}",
        "zh": "判定者 {rounds} 轮内没有通过这项工作: {reasons}",
    },
    "fix_auth": {
        "en": "the API key was refused: check ANTHROPIC_API_KEY (or log in again with `claude login`)",
        "zh": "API key 被拒绝: 检查 ANTHROPIC_API_KEY(或用 `claude login` 重新登录)",
    },
    "fix_permission": {
        "en": "this key may not use this model or endpoint: check the key's permissions",
        "zh": "这个 key 无权使用该模型或端点: 检查 key 的权限",
    },
    "fix_billing": {
        "en": "the account is out of credit or quota: check billing, then run again",
        "zh": "账户余额或配额用完了: 检查账单后再运行",
    },
    "fix_too_long": {
        "en": "the conversation no longer fits the model's context: start over with `flower --new`, or trim (no --no-trim)",
        "zh": "对话已超出模型的上下文: 用 `flower --new` 重新开始,或开启裁剪(不要 --no-trim)",
    },
    "fix_model": {
        "en": "the model was not found: check the model name and ANTHROPIC_BASE_URL",
        "zh": "找不到该模型: 检查模型名和 ANTHROPIC_BASE_URL",
    },
    "fix_invalid": {
        "en": "the API rejected the request as malformed: run again; if it repeats, report it",
        "zh": "API 认为请求格式有误而拒绝: 再运行一次;如果重复出现,请报告",
    },
    "fix_cli": {
        "en": "the Claude Code CLI could not be started: reinstall flower (the SDK bundles the CLI)",
        "zh": "无法启动 Claude Code CLI: 重新安装 flower(SDK 自带该 CLI)",
    },
    "fix_other": {
        "en": "this error will not go away by retrying: fix its cause, then run again",
        "zh": "这个错误重试也不会消失: 先解决原因,再运行",
    },
    # -- flower status ------------------------------------------------------------------------------
    "status_workspace": {"en": "workspace {path}", "zh": "工作区   {path}"},
    "status_run_dir": {"en": "run dir   {path}", "zh": "记录     {path}"},
    "status_resumes": {
        "en": "woke {woke} {woke:time|times}; the next run resumes (wake #{next})",
        "zh": "已唤醒 {woke} 次;下次运行接着做(第 {next} 次唤醒)",
    },
    "status_nothing": {"en": "nothing to resume here: flower \"task\" starts one", "zh": "这里还没有可接续的会话:flower \"任务\" 开始"},
    "status_interrupted": {
        "en": "the last wake was cut off before it ended: run `flower` here to continue it",
        "zh": "上次唤醒没做完就被打断了:在这里运行 `flower` 接着做",
    },
    "status_goals": {"en": "goals {done}/{total} done", "zh": "目标 {done}/{total} 条已完成"},
    # -- the Claude Code ecosystem: settings, model and spending cap ------------------------------
    "settings_bad": {
        "en": "{where}: {name} must be {expected} (got {got})",
        "zh": "{where}: {name} 应为 {expected}(现在是 {got})",
    },
    "budget_spent": {
        "en": "stopped at the spending cap: this wake spent ${spent} of ${cap}. Everything is kept; to continue: flower --max-cost {more}",
        "zh": "已到花费上限:本次唤醒花了 ${spent}(上限 ${cap})。一切都已保存;要继续: flower --max-cost {more}",
    },
    "max_cost_bad": {
        "en": "takes a spending cap in US dollars > 0, e.g. --max-cost 20, not {value}",
        "zh": "要一个 > 0 的花费上限(美元),例如 --max-cost 20,不是 {value}",
    },
    "status_model": {"en": "model     {model}", "zh": "模型     {model}"},
    "status_model_unknown": {"en": "model     (the Claude Code default)", "zh": "模型     (Claude Code 默认)"},
    "status_context": {"en": "context   {size} of {window} (the work session) · hands off at {handoff}",
                       "zh": "上下文   {size} / {window}(干活会话)· 到 {handoff} 交接"},
    "status_forecast": {"en": "forecast  {growth}: {left} · {cost}", "zh": "预测     {growth}:{left} · {cost}"},
    "status_forecast_short": {"en": "forecast  {growth} · {cost}", "zh": "预测     {growth} · {cost}"},
    "forecast_growth": {"en": "+{slope} a round", "zh": "每轮 +{slope}"},
    "forecast_flat": {"en": "not growing", "zh": "没有增长"},
    "forecast_left": {"en": "the handoff in {handoff} {handoff:round|rounds}, the window in {window}",
                      "zh": "再 {handoff} 轮交接,{window} 轮到窗口上限"},
    "forecast_unknown": {"en": "too few rounds to tell", "zh": "轮数太少,还说不准"},
    "forecast_cost": {"en": "${wake} a round (the last wake), ${task} (the task)", "zh": "每轮 ${wake}(上次唤醒),${task}(整件事)"},
    "status_cost": {
        "en": "cost      ${wake} the last wake · ${task} this task so far{cap}",
        "zh": "花费     上次唤醒 ${wake} · 这件事至今 ${task}{cap}",
    },
    "status_cap": {"en": " · cap ${cap} per wake", "zh": " · 每次唤醒上限 ${cap}"},
    # -- flower demo ----------------------------------------------------------------------------------
    "demo_task": {"en": "write a script that turns Markdown into HTML", "zh": "写个 md 转 html 的脚本"},
    "demo_title": {
        "en": "flower demo — continuity, offline (built-in scripted model at {url}, no API key needed)",
        "zh": "flower demo — 离线演示连续性(内置脚本模型 {url},不需要 API key)",
    },
    "demo_workspace": {"en": "workspace: {ws}", "zh": "工作区: {ws}"},
    "demo_kill": {
        "en": "   (the work step is mid-reply; the demo now kills flower (pid {pid}) with kill -9 — no cleanup code runs)",
        "zh": "   (干活步骤正说到一半;演示现在用 kill -9 杀掉 flower(pid {pid}),任何清理代码都不会运行)",
    },
    "demo_killed": {"en": "   ✂ killed (kill -9)", "zh": "   ✂ 已杀掉 (kill -9)"},
    "demo_again": {
        "en": "   (run flower again in the same folder; saying nothing = carry on)",
        "zh": "   (再次在同一目录运行 flower,不说任何话 = 接着做)",
    },
    "demo_failed": {"en": "the demo failed: {why}", "zh": "演示失败: {why}"},
    "demo_not_on_disk": {"en": "the work session did not reach sessions.db", "zh": "干活会话没有写进 sessions.db"},
    "demo_exited": {"en": "the second flower exited {code}", "zh": "第二次运行的 flower 退出码为 {code}"},
    "demo_not_carried": {
        "en": "the woken request did not carry the first run's conversation",
        "zh": "醒来后的请求没有带上第一次运行的对话",
    },
    "demo_kept": {
        "en": "the demo folder is kept in {dir} (look at runs/lineage.json, manifest.json, 需求.md, 目标.md)",
        "zh": "演示目录保留在 {dir}(看看 runs/lineage.json、manifest.json、需求.md、目标.md)",
    },
    "demo_explain": {
        "en": """
What happened:
  1. flower "{task}" clarified the task (需求.md), wrote a goal checklist (目标.md) and started work.
  2. Mid-way through the work step, flower was killed with kill -9 — not one line of cleanup ran.
     But the session id had been written to runs/lineage.json the moment it arrived (S11).
  3. flower, run again in the same folder: the banner "wake #2" shows it remembered. The work step
     resumed the same session ({sid});
     the model's first request after waking carried the whole earlier conversation ({seen} messages).
  4. A judge with fresh eyes (a new session every round) checked the work against 目标.md: passed.
The model was flower.testing's scripted model on 127.0.0.1, driving the real Claude Code CLI: no network, no API key.
For real: export ANTHROPIC_API_KEY=…; cd your-project; flower "what to build"
""",
        "zh": """
刚才发生了什么:
  1. flower "{task}" 澄清了需求(需求.md),写出目标清单(目标.md),开始干活。
  2. 干活做到一半,flower 被 kill -9 杀掉 —— finally 一行都没跑。
     但会话 id 在到达的那一刻就写进了 runs/lineage.json(S11)。
  3. 在同一目录再跑 flower:横幅 "第 2 次唤醒" 说明它记得。干活步骤接上的是同一个会话({sid});
     模型醒来后的第一个请求带着之前的全部对话({seen} 条消息)。
  4. 一个每轮都是新会话的判定者对照 目标.md 检查了工作,判定通过。
模型是 flower.testing 的脚本模型,跑在 127.0.0.1 上;真实的 Claude Code CLI,没有网络,没有 API key。
真用的时候: export ANTHROPIC_API_KEY=…; cd 你的项目; flower "要做的事"
""",
    },
    # -- the shared PostgreSQL store (--store postgresql://…, D9) -----------------------------------
    "store_bad_url": {
        "en": "--store {url} is not a usable store ({reason}): give `sqlite` or postgresql://user@host/database",
        "zh": "--store {url} 不是可用的存储({reason}): 请给 `sqlite` 或 postgresql://user@host/database",
    },
    "store_unreachable": {
        "en": "cannot reach the database {url} ({reason}): is PostgreSQL running there? Nothing was written.",
        "zh": "连不上数据库 {url}({reason}): 那里的 PostgreSQL 在运行吗?什么都没写。",
    },
    "store_auth": {
        "en": "the database {url} refused the login ({reason}): check the user and password in the URL. Nothing was written.",
        "zh": "数据库 {url} 拒绝登录({reason}): 请检查 URL 里的用户名和密码。什么都没写。",
    },
    "store_no_database": {
        "en": "the database in {url} does not exist ({reason}): create it (createdb NAME) or fix the URL. Nothing was written.",
        "zh": "{url} 里的数据库不存在({reason}): 请先创建它(createdb 名字)或改正 URL。什么都没写。",
    },
    "store_no_permission": {
        "en": "the user of {url} may not create flower's tables ({reason}): GRANT CREATE ON DATABASE to it, "
              "or let an owner run flower once. Nothing was written.",
        "zh": "{url} 的用户无权创建 flower 的表({reason}): 请 GRANT CREATE ON DATABASE 给它,或让属主先运行一次 flower。什么都没写。",
    },
    "store_too_new": {
        "en": "the database {url} was set up by a newer flower (schema version {version}; this flower knows up to {known}). "
              "Upgrade flower (pip install -U flower) to use it; it was left as it is.",
        "zh": "数据库 {url} 是更新版本的 flower 建的(结构版本 {version};这个 flower 只认到 {known})。"
              "升级 flower(pip install -U flower)后再用;它保持原样未动。",
    },
    "store_offline": {
        "en": "the database {url} did not answer for {seconds} s ({reason}); run again when it is back to continue",
        "zh": "数据库 {url} {seconds} 秒没有响应({reason});它恢复后再运行即可接着做",
    },
    "status_unreachable": {
        "en": "the store {where} is not answering ({reason}); this status is what was read before. It refreshes when the store is back.",
        "zh": "存储 {where} 没有响应({reason});这里显示的是之前读到的状态。存储恢复后会自动刷新。",
    },
    "status_store_size": {"en": "store     {size} MB on disk", "zh": "存储     磁盘上 {size} MB"},
    "status_identity": {"en": "identity  {identity}  · store {store}", "zh": "标识     {identity}  · 存储 {store}"},
    "busy_pid_host": {"en": "pid {pid} on {host}, since {since}", "zh": "{host} 上的 pid {pid},自 {since} 起"},
    "busy_stop_host": {"en": "stop it (kill {pid} on {host})", "zh": "停掉它(在 {host} 上 kill {pid})"},
    # -- trust: a folder's own code runs only once the person trusts it (D10) ------------------------------
    "trust_found": {
        "en": "this folder is not trusted yet: {found}",
        "zh": "这个文件夹还没有被信任:{found}",
    },
    "trust_ask": {
        "en": "Trust this folder and let them run? [y/N]",
        "zh": "信任这个文件夹并让它们运行? [y/N]",
    },
    "trust_skipped": {
        "en": "this folder is not trusted, so its own Claude Code settings and MCP servers were skipped ({found}); "
              "to load them: flower trust {folder}",
        "zh": "这个文件夹未被信任,已跳过它自带的 Claude Code 设置和 MCP 服务器({found});要加载它们: flower trust {folder}",
    },
    "trust_not_a_folder": {"en": "{folder} is not a folder", "zh": "{folder} 不是文件夹"},
    "trust_yes": {"en": "trusted {folder} (recorded in {record})", "zh": "已信任 {folder}(记录在 {record})"},
    "trust_no": {"en": "{folder} is no longer trusted (recorded in {record})", "zh": "{folder} 不再被信任(记录在 {record})"},
    "settings_untrusted": {
        "en": "{where}: {name} cannot be set by an untrusted folder's file ({why}); set it yourself "
              "({how}), or trust the folder: flower trust {folder}",
        "zh": "{where}: 未被信任的文件夹的文件不能设置 {name}({why});请自己设置({how}),或信任这个文件夹: flower trust {folder}",
    },
    "untrusted_mode": {"en": "it says how tools are permitted", "zh": "它决定工具如何被允许"},
    "untrusted_allow": {"en": "it may only narrow the tools allowed ({allowed}), not widen them",
                        "zh": "它只能缩小允许的工具({allowed}),不能扩大"},
    "untrusted_store": {"en": "it names where tasks and their transcripts are stored", "zh": "它指定任务和记录存放的位置"},
    "untrusted_retention": {"en": "it deletes archived tasks' transcripts", "zh": "它会删除已归档任务的记录"},
    "untrusted_run_dir": {"en": "it resolves outside the folder, to {path}", "zh": "它指向文件夹之外: {path}"},
    "status_trusted": {"en": "trusted   {answer} ({why})", "zh": "信任     {answer}({why})"},
    "trust_yes_word": {"en": "yes", "zh": "是"},
    "trust_no_word": {"en": "no", "zh": "否"},
    "trust_why_flower": {"en": "you trusted {where} with flower trust", "zh": "你用 flower trust 信任了 {where}"},
    "trust_why_claude": {"en": "Claude Code's trust dialog was accepted for {where}", "zh": "已在 Claude Code 的信任对话框中接受 {where}"},
    "trust_why_editor": {"en": "the editor's workspace trust", "zh": "编辑器的工作区信任"},
    "trust_why_flower_no": {"en": "you said no for {where}; flower trust to change it", "zh": "你对 {where} 说了不;用 flower trust 改"},
    "trust_why_nobody": {"en": "nobody trusted it yet; its own hooks, env and MCP servers do not run",
                         "zh": "还没有人信任它;它自带的 hooks、env 和 MCP 服务器不会运行"},
}
"""Message id → {locale: template}; every entry has every locale with the same {fields}."""


def locale_from(value: str | None) -> str:
    """The one locale rule (D4): `zh` for any Chinese locale (zh, zh-CN, zh_TW.UTF-8 …), else `en`."""
    return "zh" if (value or "").lower().startswith("zh") else "en"


def env_locale(environ: Mapping[str, str] = os.environ) -> str:
    """The process locale: the first set of LC_ALL, LC_MESSAGES, LANG (POSIX precedence), by `locale_from`."""
    return locale_from(next((environ[name] for name in ("LC_ALL", "LC_MESSAGES", "LANG") if environ.get(name)), None))


class _Plurals(string.Formatter):
    """`{n:file|files}` is the word for a count (issue 34: never `file(s)`); any other spec is format()'s own."""

    def format_field(self, value: object, format_spec: str) -> str:
        if "|" in format_spec and isinstance(value, int):
            one, many = format_spec.split("|", 1)
            return one if value == 1 else many
        return format(value, format_spec)


_PLURALS = _Plurals()


def text(key: str, locale: str | None, **fields: object) -> str:
    """The sentence `key` in `locale` (any spelling `locale_from` accepts), its {fields} filled in."""
    return _PLURALS.format(CATALOG[key][locale_from(locale)], **fields)


@dataclass(frozen=True)
class Said:
    """A sentence not yet put into words: a catalog key and its fields, rendered in the reader's locale.

    A field that is itself a `Said` is rendered in the same locale; any other field (an HTTP status,
    the CLI's own error text, a path) is shown as it is, untranslated. `str()` is the English, for logs.
    """

    key: str
    fields: dict[str, object] = field(default_factory=dict)

    def text(self, locale: str | None) -> str:
        """This sentence in `locale`."""
        return text(self.key, locale, **{k: v.text(locale) if isinstance(v, Said) else v for k, v in self.fields.items()})

    def __str__(self) -> str:
        return self.text("en")


def say(key: str, **fields: object) -> Said:
    """The sentence `key` with its fields, to be rendered later in the reader's locale."""
    return Said(key, fields)


def fields(template: str) -> set[str]:
    """The {field} names a template uses."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}
