"""The flower path: clarify → goals → work under the judge; every wake adds to it and loses nothing (S14–S19, S26)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core import goals, requirements, taskfiles, texts
from ..core.approvals import DEFAULT_ALLOW
from ..core.banner import banner, header
from ..core.caller import Ask as Ask
from ..core.durable import move_aside, stamp, write_atomic
from ..core.errors import FlowerError
from ..core.events import Banner, Event, Handoff, Header, Notice, Question
from ..core.lineage import Lineage
from ..core.lock import WorkspaceLock
from ..core.manifest import StepResult, handoff_name, round_name
from ..core.records import CLARIFY as CLARIFY
from ..core.records import GOALS as GOALS
from ..core.records import WORK as WORK
from ..core.records import clear_wake, mark_wake
from ..core.sentences import Pending, Sentence
from ..core.text import clip
from ..core.texts import say
from ..runtime import AgentSpec, Runtime
from ..status import Judged
from .base import Context, Step, Workflow, step_of
from .goal import with_goal

log = logging.getLogger(__name__)

SECTIONS = "\n".join(f"## {name}" for name in requirements.SECTIONS)

CLARIFY_PROMPT = (
    "A person asked for this (their words are recorded in `需求.md`):\n\n{task}\n\n"
    "Before any work, pin down what they want. If something important is unclear, ask them short questions "
    "(end your turn with the questions). When it is clear, write `需求.md` in the workspace with exactly these "
    f"four sections, each non-empty:\n{SECTIONS}\nThen say that the requirements are written."
)
LOST_REQUEST = "(the request was recorded in `需求.md`, which is missing from the workspace now)"
"""The task when `需求.md` is gone and no sentence was said: the clarify step then asks or reconstructs it."""
STEP_KEYS = {CLARIFY: "step_clarify", GOALS: "step_goals", WORK: "step_work"}
CLARIFY_RESUME = "Continue the half-finished requirements clarification — do not start over."
"""S16: said to a resumed clarify session instead of the original request."""
NOBODY_TO_ASK = (
    "Nobody can answer questions right now. Make reasonable assumptions, note them under "
    "`## 约束 Constraints`, and write `需求.md` now."
)
GOALS_PROMPT = (
    "Read `需求.md` in the workspace (the requirements, including any additions at the end). "
    "Write `目标.md`: a Markdown checklist (`- [ ] …`), one line per verifiable goal, covering all of it. "
    "Replace the file if it exists; keep goals already met ticked."
)
GOALS_AGAIN = (
    "The person added to the requirements (now recorded at the end of `需求.md`):\n\n{said}\n\n"
    "Any copy of `需求.md` you read earlier is out of date; the current one follows in full, and the current `目标.md` "
    "after it. Write `目标.md`: a Markdown checklist (`- [ ] …`), one line per verifiable goal, covering all of the "
    "current requirements, the addition included. Replace the file; keep goals already met ticked (`- [x]`).\n\n"
    "--- 需求.md (current, in full) ---\n{requirements}\n--- end of 需求.md ---\n\n"
    "--- 目标.md (current) ---\n{goals}\n--- end of 目标.md ---"
)
"""S15 place 3, S18: a re-derivation names what was added and carries the brief again, so it cannot miss it."""
WORK_PROMPT = (
    "Do the work described in `需求.md`, goal by goal as listed in `目标.md`. Tick goals in `目标.md` "
    "as you meet them. An independent judge will check the workspace against `目标.md` when you stop."
)
WORK_RESUME = "Continue the work toward the goals in `目标.md` from where you are — do not start over."
JUDGE_FAILED = "The judge checked the workspace and did not pass it:\n\n{reasons}\n\nFix this, then stop."
WAKE_SENTENCE = "One more thing from the person (recorded in `需求.md`): {sentence}"
HANDOFF_SECTIONS = ("State of the work", "Files changed", "Decisions and why", "What failed", "Next steps")
HANDOFF_ASK = (
    "Your context has grown too large: this work goes on in a new session that has none of this conversation, "
    "only the handoff note you write now. Do not call tools and do not continue the work. Answer with the note "
    "alone, in Markdown, with exactly these sections:\n"
    + "\n".join(f"## {name}" for name in HANDOFF_SECTIONS)
    + "\nBe concrete: paths, commands, error messages, what was tried, what you were about to do and why. "
    "flower appends `需求.md` and `目标.md` to the note itself; do not copy them."
)
"""S26: said to the outgoing work session, which knows what no file records (changes, failures, decisions)."""
HANDOFF_FALLBACK = (
    "flower asked the work session to write this note, but that turn failed ({why}); this document was "
    "assembled by flower from the files and the session's last words instead."
)
HANDOFF_MARK = "handoff.json"
"""`<run_dir>/handoff.json` = `{"session", "path"}`: a note written for `session` whose successor has not started yet."""
HANDOFF_PROMPT = (
    "You take over this work from an earlier session whose context grew too large. Its handoff "
    "document follows (also at `{path}`); continue from there, do not start over.\n\n{document}"
)

WORKER = AgentSpec(
    "worker",
    instructions="You are a careful coding agent working in the user's workspace.",
    allowed_tools=list(DEFAULT_ALLOW),
    permission_mode="acceptEdits",
    follows_settings=True,  # the person's `allow` and `mode` (issue 24); anything else is asked
)
CLARIFIER = AgentSpec("clarifier", instructions="You clarify requirements before work starts.",
                      allowed_tools=["Read", "Write", "Glob"], permission_mode="acceptEdits")
HANDOFF_WRITER = AgentSpec("handoff-writer", instructions=WORKER.instructions, permission_mode="dontAsk", max_turns=1)
"""S26: the work session's own tools and instructions stay offered, so the request is valid (a transcript with tool calls
must define tools) and reuses the cached prefix, as Claude Code's compaction does; but nothing is allowed and `dontAsk`
denies whatever needs permission, and one turn means a tool call ends it unanswered: the note falls back."""
GOAL_SETTER = AgentSpec("goal-setter", instructions="You turn requirements into a checklist of goals.",
                        allowed_tools=["Read", "Write"], permission_mode="acceptEdits")

clarify_step = Step(CLARIFY, CLARIFIER, lambda ctx: CLARIFY_PROMPT.format(task=ctx["_task"]), resume_prompt=CLARIFY_RESUME)
"""S16: a kill inside clarification resumes it with `CLARIFY_RESUME`, not the request as a new task."""
goals_step = Step(GOALS, GOAL_SETTER, GOALS_PROMPT)
"""No resume_prompt: re-derivation needs the full brief again (S18)."""
work_step = Step(WORK, WORKER, WORK_PROMPT, resume_prompt=WORK_RESUME)

class NothingToDo(FlowerError):
    """A first run with no task."""

    def __init__(self) -> None:
        super().__init__("nothing_here")


@dataclass
class FlowerPath:
    """One wake of the flower path in one workspace."""

    rt: Runtime
    locale: str = "en"
    rounds: int = 10
    handoff_at: int = 120_000
    """Context size (tokens) of the work session above which work moves to a new session (S26)."""
    ask: Ask | None = None
    clarify_rounds: int = 6
    inbox: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    """Sentences said while running (each recorded in `said` first); the work session receives them at its next turn."""
    said: Pending | None = None
    """The sentences said at a wake or while running, pending until all three places have them (S15, issue 31)."""
    listening: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once this wake has read what earlier wakes left pending: `hear` before then would save over them (issue 31)."""
    last_words: str = ""
    stopped: bool = False
    """Set when the person stops this wake (cancel, `new`): the cancellation then ends it rather than cutting it off."""
    workflow: Workflow = field(default_factory=lambda: Workflow([clarify_step, goals_step, work_step]))
    lineage: Lineage | None = None
    """This wake's lineage once loaded: while it runs, this process is the task's one writer (D5), so it is the record."""
    carried: frozenset[str] = frozenset()
    """The steps whose sessions this wake found live in the lineage: only their headers say `resumed` (S19)."""

    @property
    def requirements_path(self) -> Path:
        """The workspace's `需求.md`."""
        return self.rt.workspace / requirements.REQUIREMENTS_FILE

    @property
    def goals_path(self) -> Path:
        """The workspace's `目标.md`."""
        return self.rt.workspace / goals.GOALS_FILE

    def emit(self, event: Event) -> None:
        """Hand an event to the runtime's listeners (the service)."""
        self.rt.emit(event)

    async def wake(self, text: str | None = None) -> Context:
        """Run this wake to the end: `text` is the task on a first run and a wake sentence afterwards (S1, S15)."""
        self.rt.check_credentials()  # before anything is counted or written
        with WorkspaceLock(self.rt.run_dir, self.rt.records):
            # A kill before the store mirror's first write leaves a session only in the CLI's own file; the sweep
            # brings it into sessions.db before S10 checks, or the step would start over (chaos --seed 7),
            # and with it the sessions no resume reconciles: killed judge rounds (S14), sessions never named.
            for stray in await self.rt.sweep():  # D5: a dead flower's CLI is ended before anything reads its session
                self.emit(Notice(text=texts.text("ended_stray", self.locale, pid=stray.pid)))
            self.sync_files(restore=True)  # a machine whose workspace lacks the task's files gets them first (D9)
            lineage = self.lineage = Lineage.load(self.rt.run_dir, self.rt.workspace, self.rt.has_session, records=self.rt.records)
            used = bool(lineage.steps) or self.requirements_path.exists()  # = FlowerService.status().started
            if not used and not (text or "").strip():
                raise NothingToDo()
            self.said = Pending.load(self.rt.records)  # what a wake cut off left to do, before anything of this one
            if used and text and text.strip():
                self.said.add(text, self.rt.journal, lineage.steps.get(WORK))  # durable before anything else is done
            self.listening.set()
            mark_wake(self.rt.records)  # removed below when this wake ends; left behind if it is cut off
            try:
                ctx = await self._wake(lineage, used, text)
            except BaseException as exc:
                if not isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)) or self.stopped:
                    self.sync_files(restore=False)
                    clear_wake(self.rt.records)  # it ended (a failure, or the person stopped it): not cut off
                raise
            finally:
                self.rt.changes.end()
            self.sync_files(restore=False)
            clear_wake(self.rt.records)
            return ctx

    async def _wake(self, lineage: Lineage, used: bool, text: str | None) -> Context:
        """The wake's steps, under the lock and the wake marker."""
        if not used:
            requirements.record_request(self.requirements_path, text or "")  # on disk before any model request
        ctx = Context.of(lineage.wake(), lineage.steps)
        self.carried = frozenset(lineage.steps)
        self.rt.changes.begin(ctx.woke)  # before-images of what this wake's agents change (issue 25)
        sentence = text.strip() if used and text and text.strip() else None
        said = self.pending_said()
        if used:
            context = await self.rt.context_size(lineage.steps[WORK]) if WORK in lineage.steps else None
            line = banner(self.locale, self.rt.workspace, len(goals.read(self.goals_path)), context, ctx.woke)
            self.emit(Banner(text=line, woke=ctx.woke, context=context))
        if used:
            self.check_files(lineage)
        self.settle(lineage.steps.get(WORK) or lineage.lost.get(WORK))  # a wake cut off after the work session got a sentence: it is not sent again
        self.record(said.lacking("requirements"))  # S15 place 2
        ctx.task = _read(self.requirements_path, missing=sentence or LOST_REQUEST)
        ok = (await self.clarify(ctx, lineage, [s.text for s in said.lacking("work")])
              and await self.derive_goals(ctx, lineage, said.lacking("goals"))
              and await self.work(ctx, lineage))
        ctx["_ok"] = ok and ctx.ok
        return ctx

    def sync_files(self, *, restore: bool) -> None:
        """With a shared store, the task's files travel with it (core/taskfiles.py); a failure never stops the wake."""
        backend = self.rt.records
        if not isinstance(backend, taskfiles.TaskFiles):
            return
        try:
            lines = taskfiles.sync(backend, self.rt.workspace, restore=restore)
        except Exception as e:  # the files stay as they are here; the next sync tries again
            log.warning("could not sync the task's files with %s (%s)", backend.where, e)
            return
        for said in lines:
            self.emit(Notice(text=said.text(self.locale)))

    def check_files(self, lineage: Lineage) -> None:
        """A used folder whose `需求.md` or `目标.md` is missing or unreadable: say so in one line; the step that makes it
        runs again, resumed when its session lives (S10, S17), as the seed treats any absent frozen artifact.

        An unreadable file is kept aside first (the step would overwrite it), never lost.
        """
        # 需求.md is written before the first request; 目标.md exists once work has started.
        for path, step, expected in ((self.requirements_path, CLARIFY, True), (self.goals_path, GOALS, WORK in lineage.steps)):
            try:
                path.read_text(encoding="utf-8")
                continue
            except FileNotFoundError:
                if not expected:
                    continue
                kept = None
            except (OSError, UnicodeDecodeError):
                kept = move_aside(path, "unreadable")
            shown = texts.text(STEP_KEYS[step], self.locale)
            key = "file_unreadable" if kept is not None else "file_missing"
            resumed = "resumed" if step in lineage.steps else "fresh"
            self.emit(Notice(text=texts.text(f"{key}_{resumed}", self.locale, file=path.name, step=shown,
                                             kept=kept.name if kept else "")))

    def start(self, ctx: Context, lineage: Lineage, step: str, index: int) -> None:
        """The S19 header for a step about to run; `resumed` only for a session an earlier wake left, not for the
        clarify session this wake began and continues after the person's answer."""
        resumed = step_of(step) in self.carried and step_of(step) in lineage.steps
        self.emit(Header(text=header(self.locale, step, index, 3, ctx.woke, resumed), step=step))

    async def run(self, ctx: Context, lineage: Lineage, step: Step, index: int, message: str | None = None,
                  name: str | None = None, given: list[str] | None = None) -> StepResult:
        """Run one step under its header; a failure is recorded in ctx. `given`: the person's sentences its message
        carries, each said in a line under the header (issue 34: a sentence typed while it works is seen to arrive)."""
        self.start(ctx, lineage, name or step.name, index)
        for sentence in given or []:
            self.emit(Notice(text=texts.text("given", self.locale, sentence=sentence)))
        result = await self.workflow.run_step(self.rt, step, ctx, lineage, index, message, name, total=3)
        self.sync_files(restore=False)  # what the step wrote travels with the task now, not at the wake's end
        if not result.ok:
            ctx.fail(say("step_failed", step=name or step.name, error=result.said or result.error))
        return result

    async def clarify(self, ctx: Context, lineage: Lineage, said: list[str]) -> bool:
        """Pin down the requirements, asking the person through the front-end; skipped when frozen (S16, S17)."""
        if requirements.complete(self.requirements_path):
            ctx[CLARIFY] = _read(self.requirements_path)  # frozen, still in ctx
            return True
        # Sentences said while clarification was unfinished go to the clarify session too (S15 place 1).
        message = "\n\n".join([CLARIFY_RESUME, *map(WAKE_SENTENCE.format_map, ({"sentence": s} for s in said))]) \
            if said and CLARIFY in lineage.steps else None
        for _ in range(self.clarify_rounds):
            result = await self.run(ctx, lineage, clarify_step, 1, message)
            if not result.ok:
                return False
            if requirements.complete(self.requirements_path):
                ctx[CLARIFY] = _read(self.requirements_path)
                return True
            self.emit(Question(text=result.text, step=CLARIFY))
            answer = await self.ask(result.text) if self.ask else None
            message = answer.strip() if answer and answer.strip() else NOBODY_TO_ASK
        ctx.fail(say("step_failed", step=CLARIFY, error=say("requirements_incomplete", file=requirements.REQUIREMENTS_FILE)))
        return False

    async def derive_goals(self, ctx: Context, lineage: Lineage, said: list[Sentence]) -> bool:
        """Write `目标.md`; skipped when it exists, re-derived after sentences `said` (S15 place 3, S17).

        A first derivation reads `需求.md` itself; a re-derivation is told what was said and given the current
        `需求.md` and `目标.md` in full, since the resumed goal setter holds an older copy in its context (S18).
        The sentences have place 3 only once it wrote a checklist: until then they stay pending (issue 31).
        """
        if goals.read(self.goals_path) and not said:
            ctx[GOALS] = _read(self.goals_path)
            return True
        message = GOALS_AGAIN.format(said="\n".join(f"- {s.text}" for s in said), requirements=_read(self.requirements_path),
                                     goals=_read(self.goals_path)) if said else GOALS_PROMPT
        result = await self.run(ctx, lineage, goals_step, 2, message)
        if result.ok and not goals.read(self.goals_path):
            ctx.fail(say("step_failed", step=GOALS, error=say("no_goals", file=goals.GOALS_FILE)))
        ctx[GOALS] = result.text
        if ctx.ok:
            self.pending_said().mark(said, "goals")
        return ctx.ok

    async def work(self, ctx: Context, lineage: Lineage) -> bool:
        """Work rounds under the judge (S14); a sentence said at wake is the session's next message (S15 place 1)."""
        lacking = self.pending_said().lacking("work")
        if WORK not in lineage.steps:
            first = WORK_PROMPT
        else:  # the sentences, added to the next message below, are that message (S15 place 1)
            first = "" if lacking else WORK_RESUME
        manifest = self.workflow.manifest_for(self.rt)

        async def one_round(n: int, message: str) -> StepResult:
            message = await self.pending(ctx, lineage, message)
            session = lineage.steps.get(WORK)
            handoff = self.handoff_waiting(session)
            if handoff is not None:
                self.emit(Notice(text=texts.text("handoff_waiting", self.locale, path=handoff)))
            elif session and (await self.rt.context_size(session) or 0) > self.handoff_at:
                handoff = await self.hand_off(ctx, session, n)
            if handoff is not None:
                # Read back from disk: the person may have edited it; it is what the new session starts from (S26).
                document = handoff.read_text(encoding="utf-8", errors="replace")
                # In memory only: lineage.json keeps the old session until the new one's id replaces it (S11), so a
                # wake cut off before that resumes here and seeds from this same file (HANDOFF_MARK), not a new one.
                lineage.hand_over(WORK)
                message = HANDOFF_PROMPT.format(path=handoff, document=document) + "\n\n" + message
            given = [s.text for s in self.pending_said().lacking("work") if WAKE_SENTENCE.format(sentence=s.text) in message]
            result = await self.run(ctx, lineage, work_step, 3, message, WORK if n == 1 else round_name(WORK, n), given)
            self.settle(result.session_id)
            self.last_words = result.text or self.last_words
            if session and handoff is not None:
                if result.session_id and result.session_id != session:
                    self.forget_mark()  # the successor started: the note is history now
                result.retired = [session]
                await manifest.save(result)  # the same StepResult again: its row is replaced, now with retired[]
                self.emit(Handoff(old_session=session, new_session=result.session_id, path=str(handoff), step=WORK))
            return result

        while True:
            gate = await with_goal(self.rt, manifest, WORK, one_round, first, self.rounds,
                                   lambda reasons: JUDGE_FAILED.format(reasons=reasons))
            if not (gate.passed and not self.inbox.empty()):
                break
            first = WORK_RESUME  # something was said during the last round: it gets its own rounds
        ctx.verdict = Judged(passed=gate.passed, rounds=gate.rounds, reasons=gate.reasons)
        if not gate.passed and ctx.ok:
            ctx.fail(say("judge_not_passed", rounds=gate.rounds, reasons=gate.reasons))
        return gate.passed

    async def pending(self, ctx: Context, lineage: Lineage, message: str) -> str:
        """Sentences said at wake or while running (`say`) land in all three places before the next work round (S15).

        The message carries each one the work session has not been given yet; once given (the journal shows it),
        `settle` marks it and no later round or wake sends it again (issue 31).
        """
        while not self.inbox.empty():
            self.inbox.get_nowait()  # each is in `said` already: the queue only wakes the work loop
        said = self.pending_said()
        self.record(said.lacking("requirements"))
        if said.lacking("goals") and not await self.derive_goals(ctx, lineage, said.lacking("goals")):
            return message  # the failed re-derivation ends the wake (ctx failed); its sentences stay pending
        lines = [WAKE_SENTENCE.format(sentence=s.text) for s in said.lacking("work")]
        return "\n\n".join([m for m in [message, *lines] if m])

    def hear(self, sentence: str) -> None:
        """A sentence said while this wake runs: pending (durably) at once, then delivered before the next round."""
        self.pending_said().add(sentence, self.rt.journal, self.lineage.steps.get(WORK) if self.lineage else None)
        self.inbox.put_nowait(sentence)

    def pending_said(self) -> Pending:
        """This wake's pending sentences (read at wake; an empty record before it)."""
        if self.said is None:
            self.said = Pending(self.rt.records, [])
        return self.said

    def record(self, said: list[Sentence]) -> None:
        """S15 place 2: the sentences go into `需求.md` (once each, whatever a cut-off wake wrote) and are marked."""
        for s in said:
            if requirements.add_sentence(self.requirements_path, s.text, at=s.said_at):
                self.emit(Notice(text=texts.text("recorded", self.locale, file=requirements.REQUIREMENTS_FILE, sentence=s.text)))
        self.pending_said().mark(said, "requirements")

    def settle(self, session: str | None) -> None:
        """S15 place 1: mark the sentences the work session `session` was given (its journal says so)."""
        self.pending_said().settle(self.rt.journal, session, WAKE_SENTENCE)

    @property
    def mark_path(self) -> Path:
        """`<run_dir>/handoff.json` (HANDOFF_MARK)."""
        return self.rt.run_dir / HANDOFF_MARK

    def handoff_waiting(self, session: str | None) -> Path | None:
        """The handoff note already written for `session` whose new session never started (cut off in between), if any.

        A mark for another session is stale (the successor started, or `new` began another task) and is removed.
        """
        try:
            raw = self.mark_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("cannot read %s (%s); not using it", self.mark_path, e)
            return None
        try:
            mark = json.loads(raw.decode("utf-8"))
            sid, path = mark["session"], Path(mark["path"])
        except (UnicodeDecodeError, ValueError, TypeError, KeyError):
            move_aside(self.mark_path)  # kept as evidence, never overwritten
            return None
        if session is not None and sid == session and path.is_file():
            return path
        self.forget_mark()
        return None

    def forget_mark(self) -> None:
        """Remove HANDOFF_MARK; a disk that refuses is logged (the stale mark is ignored and retried next round)."""
        try:
            self.mark_path.unlink(missing_ok=True)
        except OSError as e:
            log.warning("could not remove %s (%s)", self.mark_path, e)

    async def hand_off(self, ctx: Context, session: str, n: int) -> Path:
        """Ask the outgoing session for its handoff note (one turn, tools offered but none allowed) and write it under `notes/` (S26).

        Its cost is a manifest row of its own (`干活·交接#n`). A failed or empty answer falls back to a document
        flower assembles itself, and the document says so. Returns the note's path, marked as waiting for its successor.
        """
        asked = await self.rt.run(HANDOFF_WRITER, HANDOFF_ASK, resume=session, step=handoff_name(WORK, n))
        await self.workflow.manifest_for(self.rt).save(asked)
        note = asked.text.strip() if asked.ok else ""
        if not note:
            why = clip(" ".join(asked.error.split()), 300) if asked.error else "it answered nothing"
            self.emit(Notice(text=texts.text("handoff_fallback", self.locale, error=why)))
            last = self.last_words.strip() or "(not recorded in this process)"
            note = f"{HANDOFF_FALLBACK.format(why=why)}\n\n## Where the work stands (the session's last words)\n\n{last}"
        path = _new_note(self.rt.workspace / "notes", (
            f"# Handoff — wake {ctx.woke}, {time.strftime('%Y-%m-%d %H:%M')}\n\n"
            f"The work session {session} grew past {self.handoff_at} tokens of context; work continues in a new "
            "session seeded with this document. Edit it freely: the new session reads it as written.\n\n"
            f"{note}\n\n"
            f"## Requirements ({requirements.REQUIREMENTS_FILE})\n\n{_read(self.requirements_path)}\n\n"
            f"## Goals ({goals.GOALS_FILE})\n\n{_read(self.goals_path)}\n"
        ))
        try:
            write_atomic(self.mark_path, json.dumps({"session": session, "path": str(path)}, ensure_ascii=False).encode())
        except OSError as e:  # without the mark a wake cut off before the new session asks again: costlier, not wrong
            log.warning("could not write %s (%s); the handoff goes on", self.mark_path, e)
        return path


def _read(path: Path, missing: str = "(missing)") -> str:
    """The file's text, or `missing` when it is absent or unreadable: a task file never stops a wake."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return missing


def _new_note(notes: Path, text: str) -> Path:
    """Write `notes/handoff-<stamp>.md` (`-N` added if that name is taken: never overwrite a note) and return it."""
    notes.mkdir(exist_ok=True)
    base = f"handoff-{stamp()}"
    for n in range(1000):
        path = notes / (f"{base}.md" if n == 0 else f"{base}-{n}.md")
        try:
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())  # on disk before HANDOFF_MARK points at it
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free handoff name in {notes}")
