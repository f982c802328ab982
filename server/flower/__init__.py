"""flower: continuity for long-running Claude agent workflows."""

from .core.lineage import Lineage
from .core.manifest import StepResult
from .runtime import AgentSpec, Runtime, Sessions
from .service import FlowerService
from .workflow.base import Step, Workflow, wake_state
from .workflow.flower import CLARIFY_RESUME, clarify_step
from .workflow.goal import with_goal

__all__ = [
    "CLARIFY_RESUME", "AgentSpec", "FlowerService", "Lineage", "Runtime", "Sessions", "Step", "StepResult", "Workflow",
    "clarify_step", "wake_state", "with_goal",
]
