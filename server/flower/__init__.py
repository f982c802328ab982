"""flower: continuity for long-running Claude agent workflows."""

from .core.lineage import Lineage
from .core.manifest import StepResult
from .runtime import AgentSpec, Runtime
from .workflow.base import Step, Workflow, wake_state

__all__ = ["AgentSpec", "Lineage", "Runtime", "Step", "StepResult", "Workflow", "wake_state"]
