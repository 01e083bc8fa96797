"""ChatGPT data export (`conversations.json`): a list of conversations, each a tree of messages.

Conversation = its `conversation_id` (else `id`, else the source's tag and `-N`:
`input.formats.base.Options.tag`), `title` kept as a field. A conversation's messages are the branch from the
root to `current_node`: what the user kept after editing or regenerating (`all_branches`: every node once,
depth first, children in their order). Only text the user saw: system and tool messages, hidden ones
(`is_visually_hidden_from_conversation` in `metadata`), messages to a tool (`recipient` other than
`all`) and content other than text, multimodal text and code (reasoning, browsing results…) are
skipped. Text parts are joined with newlines; other parts become `[image]`, `[audio]`, `[file]`
or `[<content type>]`. Time: the message's `create_time`, else the conversation's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...records import Message
from ...text import is_blank
from .base import Options, expect_list, shape_error, time_in


def convert(data: Any, options: Options) -> Iterator[Message]:
    """The messages of a loaded ChatGPT export, conversation by conversation."""
    if isinstance(data, dict):
        data = [data]
    conversations = expect_list("chatgpt", "top level", data, "a list of conversations")
    for index, item in enumerate(conversations):
        if not isinstance(item, dict):
            raise shape_error("chatgpt", f"conversation {index}", "expected an object with 'mapping'")
        own = item.get("conversation_id") or item.get("id")
        name = str(own) if own is not None else f"{options.tag}-{index + 1}"
        where = f"conversation {name}"
        mapping = item.get("mapping")
        if not isinstance(mapping, dict) or not all(_node(node) for node in mapping.values()):
            raise shape_error("chatgpt", where, "'mapping' must be an object of message nodes "
                                                 "({id, message, parent, children})")
        if not isinstance(item.get("current_node"), (str, type(None))):
            raise shape_error("chatgpt", where, "'current_node' must be a node id")
        fallback = item.get("create_time")
        title = item.get("title")
        extra = {"title": title} if isinstance(title, str) and title.strip() else {}
        nodes = _all_nodes(mapping) if options.all_branches else _branch(mapping, item, where)
        yielded = 0
        for node_id in nodes:
            message = mapping[node_id].get("message")
            if message is None:
                continue
            text, role = _visible(message, f"{where} message {node_id}")
            if is_blank(text):
                continue
            raw_time = message.get("create_time")
            raw_time = raw_time if raw_time is not None else fallback
            yield Message(
                conversation=name,
                text=text,
                source_id=str(message.get("id") or node_id),
                time=time_in("chatgpt", f"{where} message {node_id}", raw_time) if raw_time is not None else None,
                speaker=_author_name(message) or role,
                role=role,
                extra=extra,
            )
            yielded += 1
        if not yielded:
            options.empty.append(extra.get("title") or name)


_SKIPPED_ROLES = frozenset({"system", "tool"})
_PLACEHOLDERS = {"image_asset_pointer": "[image]", "audio_asset_pointer": "[audio]",
                         "real_time_user_audio_video_asset_pointer": "[audio]", "file_asset_pointer": "[file]"}


def _node(node: Any) -> bool:
    return (isinstance(node, dict) and isinstance(node.get("parent"), (str, type(None)))
            and isinstance(node.get("children", []), list)
            and all(isinstance(child, str) for child in node.get("children", [])))


def _branch(mapping: dict[str, Any], conversation: dict[str, Any], where: str) -> list[str]:
    """Node ids from the root down to `current_node` (without one: the last child at every step,
    the latest regeneration)."""
    current = conversation.get("current_node")
    if current is None:
        roots = [key for key, node in mapping.items() if node.get("parent") not in mapping]
        current = roots[0] if roots else None
        while current is not None and (children := mapping[current].get("children") or []):
            current = children[-1] if children[-1] in mapping else None
        if current is None:
            return []
    if current not in mapping:
        raise shape_error("chatgpt", where, f"current_node {current!r} is not in 'mapping'")
    path: list[str] = []
    seen: set[str] = set()
    while current in mapping and current not in seen:
        seen.add(current)
        path.append(current)
        current = mapping[current].get("parent")
    return path[::-1]


def _all_nodes(mapping: dict[str, Any]) -> list[str]:
    """Every node once: depth first from each root, children in their listed order."""
    order: list[str] = []
    seen: set[str] = set()
    roots = [key for key, node in mapping.items() if node.get("parent") not in mapping]
    stack = list(reversed(roots + list(mapping)))  # nodes no root reaches still come, after the rest
    while stack:
        key = stack.pop()
        if key in seen or key not in mapping:
            continue
        seen.add(key)
        order.append(key)
        children = mapping[key].get("children") or []
        stack.extend(reversed(children))
    return order


def _visible(message: Any, where: str) -> tuple[str, str]:
    """(text the user saw, role); empty text for what the ChatGPT window does not show."""
    if not isinstance(message, dict) or not isinstance(message.get("author"), dict):
        raise shape_error("chatgpt", where, "expected a message with 'author' and 'content'")
    role = str(message["author"].get("role") or "")
    metadata = message.get("metadata") or {}
    hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
    if role in _SKIPPED_ROLES or hidden or message.get("recipient", "all") not in ("all", None):
        return "", role
    content = message.get("content")
    if not isinstance(content, dict):
        raise shape_error("chatgpt", where, "'content' must be an object")
    kind = content.get("content_type")
    if kind == "code":
        text = content.get("text")
        return (text if isinstance(text, str) else ""), role
    if kind not in ("text", "multimodal_text"):
        return "", role
    parts = expect_list("chatgpt", where, content.get("parts", []), "'parts' as a list")
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            text = part.get("text")
            part_kind = str(part.get("content_type") or "attachment")
            texts.append(text if isinstance(text, str) else _PLACEHOLDERS.get(part_kind, f"[{part_kind}]"))
    return "\n".join(t for t in texts if not is_blank(t)), role


def _author_name(message: dict[str, Any]) -> str | None:
    name = message["author"].get("name")
    return name if isinstance(name, str) and name.strip() else None
