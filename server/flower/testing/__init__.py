"""A scripted Anthropic Messages API server for tests, the offline demo and users' own tests (D1)."""

from .agents import MAIN, SUBAGENT, agent_prompt, is_subagent
from .script import (
    Reply,
    agent_call,
    background_bash,
    delegate,
    dropped,
    error,
    for_main,
    for_subagent,
    overloaded,
    reply,
    say,
    server_error,
    text,
    tool,
    tool_use,
    unauthorized,
)
from .server import Request, ScriptedModel, load_script
from .validate import InvalidRequest, validate

__all__ = [
    "MAIN", "SUBAGENT", "InvalidRequest", "Reply", "Request", "ScriptedModel", "agent_call", "agent_prompt",
    "background_bash", "delegate", "dropped", "error", "for_main", "for_subagent", "is_subagent", "load_script",
    "overloaded", "reply", "say", "server_error", "text", "tool", "tool_use", "unauthorized", "validate",
]
