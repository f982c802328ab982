"""Request validation the way the Messages API does it: a bad transcript gets a 400, not a reply."""

from __future__ import annotations

from typing import Any

ROLES = ("user", "assistant", "system")
BLOCK_TYPES = {
    "user": {"text", "image", "document", "tool_result", "search_result"},
    "assistant": {"text", "tool_use", "thinking", "redacted_thinking", "server_tool_use"},
    "system": {"text"},
}


class InvalidRequest(ValueError):
    """The request would get `400 invalid_request_error` from the real API."""


def _blocks(message: dict[str, Any], where: str) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        if not content.strip():
            raise InvalidRequest(f"{where}: text content blocks must contain non-whitespace text")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise InvalidRequest(f"{where}.content: must be a non-empty string or list of content blocks")
    for i, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise InvalidRequest(f"{where}.content.{i}: each content block needs a `type`")
    return content


def _tools_defined(body: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
    """A transcript with tool calls in it needs `tools` offered, even for a turn that should only answer in text."""
    if not body.get("tools") and any(b["type"] in ("tool_use", "tool_result") for b in blocks):
        raise InvalidRequest("Requests which include `tool_use` or `tool_result` blocks must define tools.")


def validate(body: Any) -> None:
    """Raise `InvalidRequest` where the real API would answer 400 (tool pairing, tools defined, roles, content)."""
    if not isinstance(body, dict):
        raise InvalidRequest("request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise InvalidRequest("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        raise InvalidRequest("max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages: at least one message is required")

    # Conversation turns are user/assistant; the CLI also interleaves role "system" notes.
    turns: list[tuple[int, str, list[dict[str, Any]]]] = []
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise InvalidRequest(f"{where}.role: Input should be 'user', 'assistant' or 'system'")
        role = message["role"]
        blocks = _blocks(message, where)
        for j, block in enumerate(blocks):
            if block["type"] not in BLOCK_TYPES[role]:
                raise InvalidRequest(f"{where}.content.{j}: `{block['type']}` blocks are not allowed in {role} messages")
            if block["type"] == "text" and not str(block.get("text", "")).strip():
                raise InvalidRequest(f"{where}.content.{j}: text content blocks must contain non-whitespace text")
        if role != "system":
            turns.append((i, role, blocks))
    if not turns or turns[0][1] != "user":
        raise InvalidRequest("messages: the first message must use the user role")

    seen_ids: set[str] = set()
    for n, (i, role, blocks) in enumerate(turns):
        if role == "assistant":
            uses = [b.get("id") for b in blocks if b["type"] == "tool_use"]
            for uid in uses:
                if not uid or uid in seen_ids:
                    raise InvalidRequest(f"messages.{i}: `tool_use` ids must be unique")
                seen_ids.add(uid)
            if not uses:
                continue
            nxt = turns[n + 1] if n + 1 < len(turns) else None
            results = [b.get("tool_use_id") for b in nxt[2] if b["type"] == "tool_result"] if nxt and nxt[1] == "user" else []
            missing = [str(u) for u in uses if u not in results]
            if missing:
                raise InvalidRequest(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
                )
        else:
            previous = turns[n - 1] if n > 0 else None
            offered = [b.get("id") for b in previous[2] if b["type"] == "tool_use"] if previous and previous[1] == "assistant" else []
            answered: list[str] = []
            seen_other = False
            for j, block in enumerate(blocks):
                if block["type"] != "tool_result":
                    seen_other = True
                    continue
                if seen_other:
                    # The API wants a user turn's tool results before anything else in it.
                    raise InvalidRequest(f"messages.{i}.content.{j}: `tool_result` blocks must come first in the user message, "
                                         "before any other content")
                tid = block.get("tool_use_id")
                if tid not in offered:
                    raise InvalidRequest(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {tid}. "
                        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )
                if tid in answered:
                    raise InvalidRequest(f"messages.{i}.content.{j}: each `tool_use` must have a single result; found multiple for {tid}")
                answered.append(str(tid))
    _tools_defined(body, [b for _, _, blocks in turns for b in blocks])
