"""flower: continuity for long-running Claude agent workflows."""

from .core.manifest import StepResult
from .runtime import AgentSpec, Runtime

__all__ = ["AgentSpec", "Runtime", "StepResult"]
