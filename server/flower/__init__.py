"""flower: continuity for long-running Claude agent workflows.

The public names are imported on first use (PEP 562): `import flower.cli` and `flower --help` stay free of the SDK,
which only a run needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core.lineage import Lineage
    from .core.manifest import StepResult
    from .runtime import AgentSpec, Runtime
    from .service import FlowerService
    from .sessions import Sessions
    from .workflow.base import Step, Workflow, wake_state
    from .workflow.flower import CLARIFY_RESUME, clarify_step
    from .workflow.goal import with_goal

_EXPORTS = {
    "Lineage": ".core.lineage", "StepResult": ".core.manifest",
    "AgentSpec": ".runtime", "Runtime": ".runtime", "Sessions": ".sessions",
    "FlowerService": ".service",
    "Step": ".workflow.base", "Workflow": ".workflow.base", "wake_state": ".workflow.base",
    "CLARIFY_RESUME": ".workflow.flower", "clarify_step": ".workflow.flower",
    "with_goal": ".workflow.goal",
}

__all__ = [
    "CLARIFY_RESUME", "AgentSpec", "FlowerService", "Lineage", "Runtime", "Sessions", "Step", "StepResult", "Workflow",
    "clarify_step", "wake_state", "with_goal",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flower' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})  # a name imported already is in both
