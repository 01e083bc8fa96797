"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`), one event a line.

Kept: `user` and `assistant` events that are neither `isSidechain` (a sub-agent's own
conversation) nor `isMeta` (text Claude Code inserts itself). Conversation = `sessionId`, id =
`uuid`, time = `timestamp`, role and speaker = the message's role. Of the content, text blocks
are kept; a tool call becomes the line `[tool: NAME]` in a message that also has text (a
message of tool calls only is skipped); tool results, thinking and images are left out. Other
event types (summary, system, file-history-snapshot, …) are skipped. `data` is the list of
events, or of (line number, event) pairs so that errors name the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...errors import CuememError, InputError
from ...records import Message
from ...text import is_blank
from .base import Options, expect_list, shape_error, time_in


def convert(data: Any, options: Options) -> Iterator[Message]:
    """The messages of a transcript's events, in their order."""
    events = expect_list("claude-code", "top level", data, "one JSON event per line")
    for position, entry in enumerate(events, 1):
        line, event = entry if isinstance(entry, tuple) else (position, entry)
        where = f"line {line}"
        try:
            yield from _event(event, where)
        except CuememError as exc:
            problem = exc.message.removeprefix(f"claude-code: {where}: ")
            raise InputError(options.source, line, problem, exc.hint, exc.fields) from None


def _event(event: Any, where: str) -> Iterator[Message]:
    """The message of one event, if it is one to keep."""
    if not isinstance(event, dict):
        raise shape_error("claude-code", where, f"expected a JSON object, got {type(event).__name__}")
    if event.get("type") not in ("user", "assistant") or event.get("isSidechain") or event.get("isMeta"):
        return
    message = event.get("message")
    for key in ("uuid", "sessionId"):
        if not isinstance(event.get(key), str) or not event[key]:
            raise shape_error("claude-code", where, f"a {event['type']} event needs '{key}' (a string)")
    if not isinstance(message, dict):
        raise shape_error("claude-code", where, "'message' must be an object with 'role' and 'content'")
    text = _text(message.get("content"), where)
    if is_blank(text):
        return
    role = str(message.get("role") or event["type"])
    raw_time = event.get("timestamp")
    yield Message(
        conversation=event["sessionId"],
        text=text,
        source_id=event["uuid"],
        time=time_in("claude-code", where, raw_time) if raw_time is not None else None,
        speaker=role,
        role=role,
    )


def _text(content: Any, where: str) -> str:
    """Text blocks, tool calls as `[tool: NAME]` lines in their place; "" when no block is text."""
    if content is None or isinstance(content, str):
        return content or ""
    blocks = expect_list("claude-code", where, content, "'content' as a string or a list of blocks")
    lines, has_text = [], False
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str) and not is_blank(block["text"]):
            lines.append(block["text"])
            has_text = True
        elif block.get("type") == "tool_use":
            lines.append(f"[tool: {block.get('name') or 'unknown'}]")
    return "\n".join(lines) if has_text else ""
