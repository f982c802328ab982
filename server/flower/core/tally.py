"""The task's manifest rows folded as they come, so that status's refresh costs the rows a change added (issue 35).

Status reads the records again at every change (four or five a round), in a worker thread that holds the GIL its
answers need. Its sums, the rows sorted by their end, the work rounds and the forecast's basis were made from every
row each time: a refresh grew with the task (3.2 ms at 2,000 rows against 0.7 at 100). A Tally keeps them and adds
only the rows appended since it last folded: the usual change, the current wake's writer being the manifest's last.
Anything else (a row written again, the task begun anew by `flower --new`) folds every row again, as before.

The batch functions (`forecast.basis_of`, `verdicts.judged`) stay the definition: a Tally gives what they give.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right

from .forecast import Basis, Round, basis_from, next_round
from .manifest import ManifestRow
from .verdicts import judged


class Tally:
    """One task's rows, folded: sorted by their end, summed per run, its work rounds; `fold` adds what was appended."""

    def __init__(self) -> None:
        self._seen: list[ManifestRow] = []
        """The parsed rows last folded, as given (their cache never modifies a list it handed out)."""
        self._began: float | None = None
        self._n = 0
        """Rows folded: a row's place in the records' order, which breaks ties of time as a stable sort would."""
        self.rows: list[ManifestRow] = []
        """The task's rows (those since it began), oldest end first."""
        self._ends: list[tuple[float, int]] = []
        self._work: list[tuple[float, float, int]] = []
        """The work rounds' rows' keys: by start, then (as `rounds_of` sorts rows already in end order) by end."""
        self._work_rows: list[ManifestRow] = []
        self.rounds: list[Round] = []
        self.task_cost = 0.0
        self._run_cost: dict[str | None, float] = {}
        self._run_rounds: dict[str | None, int] = {}
        self._first: dict[str, float] = {}
        """A session → the earliest start of its rows."""
        self._odd = False
        """A row ended before it started (an unfinished or hand-edited one): `judged` reads every row then."""

    def fold(self, parsed: list[ManifestRow], began: float) -> Tally:
        """The tally of `parsed` (the manifest's rows, in its order) for a task that began at `began`: this one with the
        rows appended since added, or a new one folded from every row."""
        tally = self
        # `map(operator.is_)` checks the rows folded before at C speed: a prefix kept means rows were only appended.
        if began != self._began or len(parsed) < len(self._seen) or not all(map(operator.is_, self._seen, parsed)):
            tally = type(self)()
            tally._began = began
        for row in parsed[len(tally._seen):]:
            if row.started_at >= began:
                tally._add(row)
        tally._seen = parsed
        return tally

    def _add(self, row: ManifestRow) -> None:
        self._n += 1
        key = (row.ended_at, self._n)
        at = bisect_right(self._ends, key)
        self._ends.insert(at, key)
        self.rows.insert(at, row)
        self.task_cost += row.cost_usd
        self._run_cost[row.run] = self._run_cost.get(row.run, 0.0) + row.cost_usd
        if row.session_id is not None and row.started_at < self._first.get(row.session_id, float("inf")):
            self._first[row.session_id] = row.started_at
        self._odd = self._odd or row.ended_at < row.started_at
        if not row.in_work:
            return
        self._run_rounds[row.run] = self._run_rounds.get(row.run, 0) + 1
        work = (row.started_at, row.ended_at, self._n)
        at = bisect_right(self._work, work)
        self._work.insert(at, work)
        self._work_rows.insert(at, row)
        # Usually the newest round, at the end; one that started before the last (rare) numbers the rest again.
        del self.rounds[at:]
        for later in self._work_rows[at:]:
            self.rounds.append(next_round(self.rounds[-1] if self.rounds else None, later))

    @property
    def wake(self) -> str | None:
        """The run mark of the newest row: the wake (or terminal process) that wrote last."""
        return self.rows[-1].run if self.rows else None

    @property
    def wake_cost(self) -> float:
        """USD of the newest run's rows."""
        return self._run_cost.get(self.wake, 0.0) if self.rows else 0.0

    @property
    def model(self) -> str | None:
        """The model the newest row that names one reported."""
        return next((r.model for r in reversed(self.rows) if r.model), None)

    @property
    def window(self) -> int | None:
        """The context window the newest row that knows it reported."""
        return next((r.window for r in reversed(self.rows) if r.window), None)

    def judged(self, step: str, session: str | None) -> tuple[int, bool, str] | None:
        """`verdicts.judged` of the rows, over those that ended since `session` began only (the rest cannot count)."""
        if session is None or session not in self._first:
            return None
        since = 0 if self._odd else bisect_left(self._ends, (self._first[session], 0))
        return judged(self.rows[since:], step, session)

    def basis(self) -> Basis | None:
        """`forecast.basis_of(rows, wake)` of the task's rows; None before any."""
        if not self.rows:
            return None
        return basis_from(self.rounds, self.wake_cost, self._run_rounds.get(self.wake, 0), self.task_cost)
