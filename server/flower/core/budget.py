"""A wake's spending cap and what it has spent (`max_cost`): the service keeps one, the runtime adds each run's cost."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import FlowerError
from .texts import Said, say


@dataclass
class Budget:
    """What one wake may spend (`cap` in USD, None = no cap) and has spent, from every run's result cost (`max_cost`)."""

    cap: float | None = None
    spent: float = 0.0

    def exhausted(self) -> bool:
        """The next run would start at or over the cap."""
        return self.cap is not None and self.spent >= self.cap

    @property
    def remaining(self) -> float | None:
        """USD left under the cap (None = no cap): the SDK's `max_budget_usd` for the next run."""
        return None if self.cap is None else max(0.0, self.cap - self.spent)

    def said(self) -> Said:
        """What was spent and how to continue, in the reader's language."""
        cap = self.cap or 0.0
        return say("budget_spent", spent=f"{self.spent:.2f}", cap=f"{cap:.2f}", more=f"{max(cap * 2, 1):g}")


class BudgetSpent(FlowerError):
    """The wake's spending cap is reached: it stops cleanly here, and everything stays resumable."""

    def __init__(self, budget: Budget) -> None:
        said = budget.said()
        super().__init__(said.key, **said.fields)
