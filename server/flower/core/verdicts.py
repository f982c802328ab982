"""The judge's verdicts: read from its answer, and its last one on a work session as the manifest recorded it (S14, S27).

Here, not in workflow/goal.py where the judge runs: `flower status` shows the verdict without importing the runtime
(and the SDK behind it, issue 34).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .manifest import ManifestRow, parse_name

_VERDICT = re.compile(r"VERDICT:\s*(PASS|FAIL)\b(.*)", re.IGNORECASE | re.DOTALL)


def verdict_of(text: str) -> tuple[bool, str]:
    """(passed, reasons) from the judge's answer; no verdict line counts as a failure."""
    found = _VERDICT.search(text or "")
    if not found:
        return False, "the judge gave no VERDICT line"
    return found.group(1).upper() == "PASS", found.group(2).strip(" :\n") or text.strip()


def judged(rows: Sequence[ManifestRow], step: str, session: str | None) -> tuple[int, bool, str] | None:
    """The judge's last verdict on `step`'s current work `session` as the manifest recorded it: (round, passed, reasons)."""
    if session is None:
        return None
    # A judge round before the current work session began judged another task (flower/new, S28).
    since = min((r.started_at for r in rows if r.session_id == session), default=float("inf"))
    found: tuple[float, int, bool, str] | None = None
    for row in rows:
        # Times first, the name only then: parsing every row's name made each status refresh cost the whole task's
        # rows (3.3 of 8.4 ms at 2,080 rows, in a worker thread holding the GIL the loop needs; issue 35).
        if row.started_at < since or (found is not None and row.started_at < found[0]):
            continue
        base, kind, n = parse_name(row.step)
        if kind != "judge" or base != step:
            continue
        passed, reasons = verdict_of(row.text) if row.ok else (False, f"the judge could not run: {row.error}")
        found = (row.started_at, n, passed, reasons)
    return found[1:] if found is not None else None
