"""A scripted Anthropic Messages API server for tests, the offline demo and users' own tests (D1)."""

from .script import Reply, dropped, error, overloaded, reply, say, server_error, text, tool, tool_use, unauthorized
from .server import Request, ScriptedModel, load_script
from .validate import InvalidRequest, validate

__all__ = [
    "InvalidRequest", "Reply", "Request", "ScriptedModel", "dropped", "error", "load_script", "overloaded",
    "reply", "say", "server_error", "text", "tool", "tool_use", "unauthorized", "validate",
]
