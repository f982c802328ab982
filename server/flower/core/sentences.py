"""The sentences said at wake, pending until all three places have them (S15, issue 31).

A sentence said to a used folder must reach (1) the working session, as its next message, (2) `需求.md`, with the
requirements, and (3) `目标.md`, re-derived. A wake can be cut off between any two (a kill, Ctrl-C in an outage), so
the sentence is recorded as pending the moment it is said, each place is marked as it is reached, and it is removed
only once all three are: the next wake finishes what is left, and nothing is done twice.

Place 1 is known from the journal (core/journal.py), not from flower's own mark: the CLI writes the prompt there the
moment its session starts, so a kill after the session got the sentence but before the mark leaves it delivered,
and it is never sent again (the resumed transcript, or the journal's note, carries it).

Kept in `<run_dir>/sentences.json` (or the task's row of a shared store, D9), a JSON list, absent when none is
pending (benchmarks count what is left there):

    [{"id": "<hex>", "text": "…", "said_at": <unix time>, "requirements": false, "goals": false, "work": false,
      "session": "<the work session when it was said>" | null, "offset": <its journal's size then>}]
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

from .journal import Journal
from .records import Records

log = logging.getLogger(__name__)

Place = Literal["requirements", "goals", "work"]


@dataclass
class Sentence:
    """One sentence said at wake and the places it has reached."""

    id: str
    text: str
    said_at: float
    requirements: bool = False
    goals: bool = False
    work: bool = False
    session: str | None = None
    """The work session when it was said: its journal before `offset` holds earlier prompts, not this one."""
    offset: int = 0

    @property
    def landed(self) -> bool:
        """All three places have it."""
        return self.requirements and self.goals and self.work

    @classmethod
    def of(cls, row: dict[str, Any]) -> Sentence | None:
        """A stored row, or None when it is not one (a hand-edited or foreign file)."""
        text, sid, said_at = row.get("text"), row.get("id"), row.get("said_at")
        if not (isinstance(text, str) and text.strip() and isinstance(sid, str) and isinstance(said_at, (int, float))):
            return None
        session, offset = row.get("session"), row.get("offset")
        return cls(sid, text, float(said_at), requirements=row.get("requirements") is True, goals=row.get("goals") is True,
                   work=row.get("work") is True, session=session if isinstance(session, str) else None,
                   offset=offset if type(offset) is int and offset >= 0 else 0)


class Pending:
    """The task's pending sentences, read once per wake and written at each change; a failing write is logged, and the
    sentences then go on in memory (the person's wake never stops for it, S12)."""

    def __init__(self, records: Records, sentences: list[Sentence]) -> None:
        self.records = records
        self.sentences = sentences

    @classmethod
    def load(cls, records: Records) -> Pending:
        """What an earlier wake left pending (raises only when a shared store does not answer, as the lineage does)."""
        return cls(records, [s for s in map(Sentence.of, records.pending_sentences()) if s is not None])

    def add(self, text: str, journal: Journal, session: str | None) -> Sentence:
        """Record `text` as said now, before any place has it; `session` is the work session it will go to, if any."""
        import secrets  # here, not at import: the light commands never need it (issue 34)

        sentence = Sentence(secrets.token_hex(6), text.strip(), time.time(), session=session,
                            offset=_size(journal, session) if session else 0)
        self.sentences.append(sentence)
        self.save()
        return sentence

    def lacking(self, place: Place) -> list[Sentence]:
        """The pending sentences `place` does not have yet, oldest first."""
        return [s for s in self.sentences if not getattr(s, place)]

    def mark(self, sentences: list[Sentence], place: Place) -> None:
        """`place` has `sentences` now; those in all three places are removed."""
        if not sentences:
            return
        for s in sentences:
            setattr(s, place, True)
        self.sentences = [s for s in self.sentences if not s.landed]
        self.save()

    def settle(self, journal: Journal, session: str | None, line: str) -> None:
        """Mark as delivered each sentence whose message (`line` formatted with it) the work session was given, as its
        journal recorded it: delivered once, never again (place 1)."""
        if session is None:
            return
        given = [s for s in self.lacking("work")
                 if _given(journal, session, line.format(sentence=s.text), s.offset if s.session == session else 0)]
        self.mark(given, "work")

    def save(self) -> None:
        """Write them; logged, never raised."""
        try:
            self.records.save_pending_sentences([asdict(s) for s in self.sentences])
        except Exception as e:  # noqa: BLE001 - the wake goes on with them in memory
            log.warning("could not record the pending sentences in %s (%s); going on", self.records.where, e)


def _size(journal: Journal, session: str) -> int:
    try:
        return journal.path(session).stat().st_size
    except OSError:
        return 0


def _given(journal: Journal, session: str, message: str, offset: int) -> bool:
    """Whether the session's journal, from `offset` on, records a prompt that carried `message`."""
    records, _ = journal.read_from(session, offset)
    return any(r["k"] == "prompt" and message in str(r.get("text", "")) for r in records)
