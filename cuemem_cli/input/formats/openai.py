"""OpenAI chat-completions messages: `{"messages": [...]}`, a list of those, or a bare list.

A conversation is named by its "conversation" or "id" field, else by the source's tag
(`input.formats.base.Options.tag`: `<file stem>-<sha256 prefix>`), followed by `-1`, `-2`… (its place
in the file) when the file holds several conversations.
System, developer, tool and function messages and empty ones are skipped; ids are
positions in the original list, so they stay stable. Content may be a string or a
list of parts, of which the text parts are joined. An optional "timestamp",
"created" or "time" field on a message gives its time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...records import Message
from ...text import is_blank
from .base import Options, expect_list, shape_error, time_in


_SKIPPED_ROLES = frozenset({"system", "developer", "tool", "function"})
_TEXT_PARTS = ("text", "input_text", "output_text")  # a tuple: `in` must not hash odd JSON
_TIME_KEYS = ("timestamp", "created", "time")


def convert(data: Any, options: Options) -> Iterator[Message]:
    """The messages of loaded chat-completions messages, conversation by conversation."""
    for name, messages in _conversations(data, options.tag):
        for position, message in enumerate(messages):
            where = f"{name} message {position}"
            if not isinstance(message, dict) or "role" not in message:
                raise shape_error("openai", where, "expected an object with 'role' and 'content'")
            role = str(message["role"])
            if role in _SKIPPED_ROLES:
                continue
            text = _text("openai", where, message.get("content"))
            if is_blank(text):
                continue
            raw_time = next((message[key] for key in _TIME_KEYS if message.get(key) is not None), None)
            yield Message(
                conversation=name,
                text=text,
                source_id=str(position),
                time=time_in("openai", where, raw_time) if raw_time is not None else None,
                speaker=role,
                role=role,
            )


def _conversations(data: Any, tag: str) -> Iterator[tuple[str, list[Any]]]:
    if isinstance(data, dict):
        data = [data]
    what = "an object with 'messages', a list of them, or a list of messages"
    items = expect_list("openai", "top level", data, what)
    if not items:
        return
    is_conversation = [isinstance(item, dict) and "messages" in item for item in items]
    if not any(is_conversation):
        yield tag, items
        return
    if not all(is_conversation):
        raise shape_error("openai", "top level", "mixes conversations ({'messages': [...]}) with bare messages")
    for number, item in enumerate(items, 1):
        unnamed = tag if len(items) == 1 else f"{tag}-{number}"
        name = next((item[key] for key in ("conversation", "id") if item.get(key) is not None), unnamed)
        yield str(name), expect_list("openai", str(name), item["messages"], "'messages' as a list")


def _text(fmt: str, where: str, content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(part for part in parts if not is_blank(part))
    raise shape_error(fmt, where, "'content' must be a string or a list of parts")
