"""The manifest: one row per StepResult, appended by every process that runs here (S6–S8)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass
class StepResult:
    """What one agent run produced; every field lands in a manifest row (S6)."""

    step: str
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    attempts: int = 1
    errors: list[str] = field(default_factory=list)
    resumed: bool = False
    retired: list[str] = field(default_factory=list)
    context: int | None = None

    @property
    def duration_s(self) -> float:
        """Wall time of the run in seconds."""
        return max(0.0, self.ended_at - self.started_at)

    def row(self, run: str) -> dict:
        """The manifest row: every field plus `duration_s` (asdict() misses properties) and `run`."""
        return {**dataclasses.asdict(self), "duration_s": round(self.duration_s, 3), "run": run}
