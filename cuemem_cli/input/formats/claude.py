"""Claude.ai data export (`conversations.json`): a list of conversations with `chat_messages`.

Conversation = its `uuid`, `name` kept as the field `title`; a message's id is its `uuid`, its
time `created_at`. `sender` human → role and speaker `user`, assistant → `assistant`. The text is
`text`, or when that is empty the message's `text` content blocks joined with newlines (tool use,
tool results and attachments are left out); empty messages are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...records import Message
from ...text import is_blank
from .base import Options, expect_list, shape_error, time_in


def convert(data: Any, options: Options) -> Iterator[Message]:
    """The messages of a loaded Claude.ai export, conversation by conversation."""
    if isinstance(data, dict):
        data = [data]
    conversations = expect_list("claude", "top level", data, "a list of conversations")
    for index, item in enumerate(conversations):
        if not isinstance(item, dict) or "uuid" not in item:
            raise shape_error("claude", f"conversation {index}", "expected an object with 'uuid' and 'chat_messages'")
        name = str(item["uuid"])
        where = f"conversation {name}"
        title = item.get("name")
        extra = {"title": title} if isinstance(title, str) and title.strip() else {}
        messages = expect_list("claude", where, item.get("chat_messages", []), "'chat_messages' as a list")
        yielded = 0
        for position, message in enumerate(messages):
            message_where = f"{where} message {position}"
            if not isinstance(message, dict) or "sender" not in message:
                raise shape_error("claude", message_where, "expected a message with 'uuid', 'sender' and 'text'")
            text = message.get("text")
            if text is not None and not isinstance(text, str):
                raise shape_error("claude", message_where, "'text' must be a string")
            if not text or is_blank(text):
                blocks = expect_list("claude", message_where, message.get("content") or [], "'content' as a list")
                text = "\n".join(b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                                 and isinstance(b.get("text"), str) and not is_blank(b["text"]))
            if is_blank(text):
                continue
            role = {"human": "user"}.get(str(message["sender"]), str(message["sender"]))
            raw_time = message.get("created_at")
            yield Message(
                conversation=name,
                text=text,
                source_id=str(message.get("uuid") or position),
                time=time_in("claude", message_where, raw_time) if raw_time is not None else None,
                speaker=role,
                role=role,
                extra=extra,
            )
            yielded += 1
        if not yielded:
            options.empty.append(extra.get("title") or name)
