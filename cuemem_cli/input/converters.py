"""Converters from benchmark and chat-export formats to our `Message` records.

Each converter takes the already-loaded JSON value (and `Options`) and yields messages in
chronological order, so `cuemem convert` can write them out as our JSONL and `cuemem ingest
--from` can store them. No database is involved. Shape problems raise `CuememError` naming the
format and the place; `convert_files` adds the file.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from ..errors import CuememError, InputError
from ..records import Message
from ..text import is_blank
from ..timeparse import parse_time
from .sources import STDIN, STDIN_NAME, Input, Skipped, display_stem, open_input, read_all


@dataclass(frozen=True)
class Options:
    """What a converter may need beyond the data. `tag` names the conversations a source leaves
    unnamed (`convert_files` makes it `<file stem>-<first 8 hex of the file's sha256>`, so two files
    never share one); `all_branches` is the ChatGPT importer's switch."""

    tag: str = "chat"
    all_branches: bool = False
    source: str = "<input>"  # the file, for errors that name a line of it
    # Where a converter notes each conversation that has no message to store (an export's chat of only
    # system messages, say), by title or else id: ingest reports them rather than drop them unsaid.
    empty: list[str] = field(default_factory=list)


Converter = Callable[[Any, Options], Iterator[Message]]

_LOCOMO_SESSION = re.compile(r"session_(\d+)")
_OPENAI_SKIPPED_ROLES = frozenset({"system", "developer", "tool", "function"})
_OPENAI_TEXT_PARTS = ("text", "input_text", "output_text")  # a tuple: `in` must not hash odd JSON
_OPENAI_TIME_KEYS = ("timestamp", "created", "time")
_JSON_HINT = "the file must be one JSON document, or JSONL (one JSON value per line)"


def load_json(path: str | Path) -> Any:
    """Read a JSON file (also gzipped, or the one JSON file in a zip archive). JSONL (one JSON value per
    line) is returned as the list of its values.

    A `.jsonl` name always means JSONL. Otherwise a file that is not one JSON document
    but whose first line is one is read as JSONL too (chat exports often are, whatever
    their name); if the first line is not JSON either, the error of the whole-document
    parse is reported, since its line number is the useful one.
    """
    with open_input([str(path)], *_JSON_FILES) as source:
        if len(source.parts) != 1:
            raise CuememError(f"{source.name}: holds several JSON files", "name the one to read")
        part = source.parts[0]
        return _parse_json(part.name, read_all(part))


def _parse_json(name: str, data: bytes) -> Any:
    if not data.strip():
        raise InputError(name, 1, "the file is empty", hint=_JSON_HINT)
    if name.lower().removesuffix(".gz").endswith(".jsonl"):
        return _load_lines(name, data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if _first_line_is_json(data):
            return _load_lines(name, data)
        raise InputError(name, exc.lineno, f"invalid JSON at column {exc.colno}: {exc.msg}", hint=_JSON_HINT) from None


def source_tag(name: str, data: bytes) -> str:
    """`<file stem>-<first 8 hex of sha256(bytes)>` (`stdin-…` for standard input): the name of
    conversations an export leaves unnamed, distinct for distinct files."""
    return f"{display_stem(name)}-{hashlib.sha256(data).hexdigest()[:8]}"


def _first_line_is_json(data: bytes) -> bool:
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return True


def _load_lines(name: str, data: bytes) -> list[Any]:
    return [value for _, value in _numbered_lines(name, data)]


def _numbered_lines(name: str, data: bytes) -> list[tuple[int, Any]]:
    """(line number, value) of each non-blank JSONL line; invalid JSON is an error at its line."""
    values = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            values.append((number, orjson.loads(raw)))
        except orjson.JSONDecodeError as exc:
            message = f"invalid JSON at column {exc.colno}: {exc.msg}"
            raise InputError(name, number, message, hint="each line must be one JSON value") from None
    return values


def locomo(data: Any, options: Options = Options()) -> Iterator[Message]:
    """LoCoMo (`locomo10.json`): one conversation per sample, turns keep their `dia_id`.

    Every turn of a session gets the session's date-time. Image turns have their BLIP
    caption appended as `text + " [shares a photo: CAPTION]"` so the photo stays
    searchable. Sessions are the `session_N` lists in numeric order; `session_N_date_time`
    keys without a session (conv-26 has some) are ignored.
    """
    samples = _expect_list("locomo", "top level", data, "a list of samples")
    for index, sample in enumerate(samples):
        where = f"sample {index}"
        if not isinstance(sample, dict) or "sample_id" not in sample:
            raise _shape_error("locomo", where, "expected an object with 'sample_id' and 'conversation'")
        conversation_id = str(sample["sample_id"])
        conversation = sample.get("conversation")
        if not isinstance(conversation, dict):
            raise _shape_error("locomo", conversation_id, "'conversation' must be an object")
        numbers = sorted(int(m[1]) for key in conversation if (m := _LOCOMO_SESSION.fullmatch(key)))
        for number in numbers:
            session_where = f"{conversation_id} session {number}"
            turns = _expect_list("locomo", session_where, conversation[f"session_{number}"], "a list of turns")
            raw_time = conversation.get(f"session_{number}_date_time")
            time = _parse("locomo", session_where, raw_time) if raw_time is not None else None
            for turn in turns:
                if not isinstance(turn, dict) or "dia_id" not in turn:
                    raise _shape_error("locomo", session_where, "expected turns with 'dia_id', 'speaker' and 'text'")
                text = str(turn.get("text") or "")
                caption = turn.get("blip_caption")
                if caption:
                    text = f"{text} [shares a photo: {caption}]".lstrip()
                if is_blank(text):
                    continue
                yield Message(
                    conversation=conversation_id,
                    text=text,
                    source_id=str(turn["dia_id"]),
                    session=str(number),
                    time=time,
                    speaker=turn.get("speaker"),
                )


def longmemeval(data: Any, options: Options = Options()) -> Iterator[Message]:
    """LongMemEval: one conversation per question, holding that question's haystack.

    Sessions are ordered by (time, original index): the data is sorted by day but not
    always by time within a day. Turn ids are `SESSION_ID:INDEX` (0-based index within
    the session, counted before skipping empty turns so ids match the source).
    `has_answer` is kept in `extra` when present.
    """
    questions = _expect_list("longmemeval", "top level", data, "a list of questions")
    for index, question in enumerate(questions):
        if not isinstance(question, dict) or "question_id" not in question:
            raise _shape_error("longmemeval", f"question {index}", "expected an object with 'question_id'")
        conversation_id = str(question["question_id"])
        ids, dates, sessions = (
            _expect_list("longmemeval", conversation_id, question.get(key), f"a list in {key!r}")
            for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions")
        )
        if not len(ids) == len(dates) == len(sessions):
            problem = "haystack_session_ids, haystack_dates and haystack_sessions differ in length"
            raise _shape_error("longmemeval", conversation_id, problem)
        times = [_parse("longmemeval", f"{conversation_id} session {sid}", date)
                 for sid, date in zip(ids, dates, strict=True)]
        for position in sorted(range(len(ids)), key=lambda i: (times[i], i)):
            session_id = str(ids[position])
            where = f"{conversation_id} session {session_id}"
            turns = _expect_list("longmemeval", where, sessions[position], "a list of messages")
            for turn_index, turn in enumerate(turns):
                if not isinstance(turn, dict) or "role" not in turn:
                    raise _shape_error("longmemeval", where, "expected messages with 'role' and 'content'")
                text = turn.get("content")
                if not isinstance(text, str) or is_blank(text):
                    continue
                extra = {"has_answer": turn["has_answer"]} if "has_answer" in turn else {}
                yield Message(
                    conversation=conversation_id,
                    text=text,
                    source_id=f"{session_id}:{turn_index}",
                    session=session_id,
                    time=times[position],
                    speaker=turn["role"],
                    role=turn["role"],
                    extra=extra,
                )


def openai(data: Any, options: Options = Options()) -> Iterator[Message]:
    """OpenAI chat-completions messages: `{"messages": [...]}`, a list of those, or a bare list.

    A conversation is named by its "conversation" or "id" field, else by the source's tag
    (`Options.tag`: `<file stem>-<sha256 prefix>`), followed by `-1`, `-2`… (its place in the
    file) when the file holds several conversations.
    System, developer, tool and function messages and empty ones are skipped; ids are
    positions in the original list, so they stay stable. Content may be a string or a
    list of parts, of which the text parts are joined. An optional "timestamp",
    "created" or "time" field on a message gives its time.
    """
    for name, messages in _openai_conversations(data, options.tag):
        for position, message in enumerate(messages):
            where = f"{name} message {position}"
            if not isinstance(message, dict) or "role" not in message:
                raise _shape_error("openai", where, "expected an object with 'role' and 'content'")
            role = str(message["role"])
            if role in _OPENAI_SKIPPED_ROLES:
                continue
            text = _openai_text("openai", where, message.get("content"))
            if is_blank(text):
                continue
            raw_time = next((message[key] for key in _OPENAI_TIME_KEYS if message.get(key) is not None), None)
            yield Message(
                conversation=name,
                text=text,
                source_id=str(position),
                time=_parse("openai", where, raw_time) if raw_time is not None else None,
                speaker=role,
                role=role,
            )


def chatgpt(data: Any, options: Options = Options()) -> Iterator[Message]:
    """ChatGPT data export (`conversations.json`): a list of conversations, each a tree of messages.

    Conversation = its `conversation_id` (else `id`, else `Options.tag-N`), `title` kept as a field.
    A conversation's messages are the branch from the root to `current_node`: what the user kept after
    editing or regenerating (`all_branches`: every node once, depth first, children in their order).
    Only text the user saw: system and tool messages, hidden ones
    (`metadata.is_visually_hidden_from_conversation`), messages to a tool (`recipient` other than
    `all`) and content other than text, multimodal text and code (reasoning, browsing results…) are
    skipped. Text parts are joined with newlines; other parts become `[image]`, `[audio]`, `[file]`
    or `[<content type>]`. Time: the message's `create_time`, else the conversation's.
    """
    if isinstance(data, dict):
        data = [data]
    conversations = _expect_list("chatgpt", "top level", data, "a list of conversations")
    for index, item in enumerate(conversations):
        if not isinstance(item, dict):
            raise _shape_error("chatgpt", f"conversation {index}", "expected an object with 'mapping'")
        own = item.get("conversation_id") or item.get("id")
        name = str(own) if own is not None else f"{options.tag}-{index + 1}"
        where = f"conversation {name}"
        mapping = item.get("mapping")
        if not isinstance(mapping, dict) or not all(_chatgpt_node(node) for node in mapping.values()):
            raise _shape_error("chatgpt", where, "'mapping' must be an object of message nodes "
                                                 "({id, message, parent, children})")
        if not isinstance(item.get("current_node"), (str, type(None))):
            raise _shape_error("chatgpt", where, "'current_node' must be a node id")
        fallback = item.get("create_time")
        title = item.get("title")
        extra = {"title": title} if isinstance(title, str) and title.strip() else {}
        nodes = _chatgpt_all_nodes(mapping) if options.all_branches else _chatgpt_branch(mapping, item, where)
        yielded = 0
        for node_id in nodes:
            message = mapping[node_id].get("message")
            if message is None:
                continue
            text, role = _chatgpt_visible(message, f"{where} message {node_id}")
            if is_blank(text):
                continue
            raw_time = message.get("create_time")
            raw_time = raw_time if raw_time is not None else fallback
            yield Message(
                conversation=name,
                text=text,
                source_id=str(message.get("id") or node_id),
                time=_parse("chatgpt", f"{where} message {node_id}", raw_time) if raw_time is not None else None,
                speaker=_author_name(message) or role,
                role=role,
                extra=extra,
            )
            yielded += 1
        if not yielded:
            options.empty.append(extra.get("title") or name)


_CHATGPT_SKIPPED_ROLES = frozenset({"system", "tool"})
_CHATGPT_PLACEHOLDERS = {"image_asset_pointer": "[image]", "audio_asset_pointer": "[audio]",
                         "real_time_user_audio_video_asset_pointer": "[audio]", "file_asset_pointer": "[file]"}


def _chatgpt_node(node: Any) -> bool:
    return (isinstance(node, dict) and isinstance(node.get("parent"), (str, type(None)))
            and isinstance(node.get("children", []), list)
            and all(isinstance(child, str) for child in node.get("children", [])))


def _chatgpt_branch(mapping: dict[str, Any], conversation: dict[str, Any], where: str) -> list[str]:
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
        raise _shape_error("chatgpt", where, f"current_node {current!r} is not in 'mapping'")
    path: list[str] = []
    seen: set[str] = set()
    while current in mapping and current not in seen:
        seen.add(current)
        path.append(current)
        current = mapping[current].get("parent")
    return path[::-1]


def _chatgpt_all_nodes(mapping: dict[str, Any]) -> list[str]:
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


def _chatgpt_visible(message: Any, where: str) -> tuple[str, str]:
    """(text the user saw, role); empty text for what the ChatGPT window does not show."""
    if not isinstance(message, dict) or not isinstance(message.get("author"), dict):
        raise _shape_error("chatgpt", where, "expected a message with 'author' and 'content'")
    role = str(message["author"].get("role") or "")
    metadata = message.get("metadata") or {}
    hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
    if role in _CHATGPT_SKIPPED_ROLES or hidden or message.get("recipient", "all") not in ("all", None):
        return "", role
    content = message.get("content")
    if not isinstance(content, dict):
        raise _shape_error("chatgpt", where, "'content' must be an object")
    kind = content.get("content_type")
    if kind == "code":
        text = content.get("text")
        return (text if isinstance(text, str) else ""), role
    if kind not in ("text", "multimodal_text"):
        return "", role
    parts = _expect_list("chatgpt", where, content.get("parts", []), "'parts' as a list")
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            text = part.get("text")
            part_kind = str(part.get("content_type") or "attachment")
            texts.append(text if isinstance(text, str) else _CHATGPT_PLACEHOLDERS.get(part_kind, f"[{part_kind}]"))
    return "\n".join(t for t in texts if not is_blank(t)), role


def _author_name(message: dict[str, Any]) -> str | None:
    name = message["author"].get("name")
    return name if isinstance(name, str) and name.strip() else None


def claude(data: Any, options: Options = Options()) -> Iterator[Message]:
    """Claude.ai data export (`conversations.json`): a list of conversations with `chat_messages`.

    Conversation = its `uuid`, `name` kept as the field `title`; a message's id is its `uuid`, its
    time `created_at`. `sender` human → role and speaker `user`, assistant → `assistant`. The text is
    `text`, or when that is empty the message's `text` content blocks joined with newlines (tool use,
    tool results and attachments are left out); empty messages are skipped.
    """
    if isinstance(data, dict):
        data = [data]
    conversations = _expect_list("claude", "top level", data, "a list of conversations")
    for index, item in enumerate(conversations):
        if not isinstance(item, dict) or "uuid" not in item:
            raise _shape_error("claude", f"conversation {index}", "expected an object with 'uuid' and 'chat_messages'")
        name = str(item["uuid"])
        where = f"conversation {name}"
        title = item.get("name")
        extra = {"title": title} if isinstance(title, str) and title.strip() else {}
        messages = _expect_list("claude", where, item.get("chat_messages", []), "'chat_messages' as a list")
        yielded = 0
        for position, message in enumerate(messages):
            message_where = f"{where} message {position}"
            if not isinstance(message, dict) or "sender" not in message:
                raise _shape_error("claude", message_where, "expected a message with 'uuid', 'sender' and 'text'")
            text = message.get("text")
            if text is not None and not isinstance(text, str):
                raise _shape_error("claude", message_where, "'text' must be a string")
            if not text or is_blank(text):
                blocks = _expect_list("claude", message_where, message.get("content") or [], "'content' as a list")
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
                time=_parse("claude", message_where, raw_time) if raw_time is not None else None,
                speaker=role,
                role=role,
                extra=extra,
            )
            yielded += 1
        if not yielded:
            options.empty.append(extra.get("title") or name)


def claude_code(data: Any, options: Options = Options()) -> Iterator[Message]:
    """Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`), one event a line.

    Kept: `user` and `assistant` events that are neither `isSidechain` (a sub-agent's own
    conversation) nor `isMeta` (text Claude Code inserts itself). Conversation = `sessionId`, id =
    `uuid`, time = `timestamp`, role and speaker = the message's role. Of the content, text blocks
    are kept; a tool call becomes the line `[tool: NAME]` in a message that also has text (a
    message of tool calls only is skipped); tool results, thinking and images are left out. Other
    event types (summary, system, file-history-snapshot, …) are skipped. `data` is the list of
    events, or of (line number, event) pairs so that errors name the line.
    """
    events = _expect_list("claude-code", "top level", data, "one JSON event per line")
    for position, entry in enumerate(events, 1):
        line, event = entry if isinstance(entry, tuple) else (position, entry)
        where = f"line {line}"
        try:
            yield from _claude_code_event(event, where)
        except CuememError as exc:
            problem = exc.message.removeprefix(f"claude-code: {where}: ")
            raise InputError(options.source, line, problem, exc.hint, exc.fields) from None


def _claude_code_event(event: Any, where: str) -> Iterator[Message]:
    """The message of one event, if it is one to keep."""
    if not isinstance(event, dict):
        raise _shape_error("claude-code", where, f"expected a JSON object, got {type(event).__name__}")
    if event.get("type") not in ("user", "assistant") or event.get("isSidechain") or event.get("isMeta"):
        return
    message = event.get("message")
    for key in ("uuid", "sessionId"):
        if not isinstance(event.get(key), str) or not event[key]:
            raise _shape_error("claude-code", where, f"a {event['type']} event needs '{key}' (a string)")
    if not isinstance(message, dict):
        raise _shape_error("claude-code", where, "'message' must be an object with 'role' and 'content'")
    text = _claude_code_text(message.get("content"), where)
    if is_blank(text):
        return
    role = str(message.get("role") or event["type"])
    raw_time = event.get("timestamp")
    yield Message(
        conversation=event["sessionId"],
        text=text,
        source_id=event["uuid"],
        time=_parse("claude-code", where, raw_time) if raw_time is not None else None,
        speaker=role,
        role=role,
    )


def _claude_code_text(content: Any, where: str) -> str:
    """Text blocks, tool calls as `[tool: NAME]` lines in their place; "" when no block is text."""
    if content is None or isinstance(content, str):
        return content or ""
    blocks = _expect_list("claude-code", where, content, "'content' as a string or a list of blocks")
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


def _openai_conversations(data: Any, tag: str) -> Iterator[tuple[str, list[Any]]]:
    if isinstance(data, dict):
        data = [data]
    what = "an object with 'messages', a list of them, or a list of messages"
    items = _expect_list("openai", "top level", data, what)
    if not items:
        return
    is_conversation = [isinstance(item, dict) and "messages" in item for item in items]
    if not any(is_conversation):
        yield tag, items
        return
    if not all(is_conversation):
        raise _shape_error("openai", "top level", "mixes conversations ({'messages': [...]}) with bare messages")
    for number, item in enumerate(items, 1):
        unnamed = tag if len(items) == 1 else f"{tag}-{number}"
        name = next((item[key] for key in ("conversation", "id") if item.get(key) is not None), unnamed)
        yield str(name), _expect_list("openai", str(name), item["messages"], "'messages' as a list")


def _openai_text(fmt: str, where: str, content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in _OPENAI_TEXT_PARTS:
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(part for part in parts if not is_blank(part))
    raise _shape_error(fmt, where, "'content' must be a string or a list of parts")


def _parse(fmt: str, where: str, value: Any) -> str:
    try:
        return parse_time(value)
    except ValueError as exc:
        raise _shape_error(fmt, where, f"bad time: {exc}") from None


def _expect_list(fmt: str, where: str, value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _shape_error(fmt, where, f"expected {what}")
    return value


def _shape_error(fmt: str, where: str, problem: str) -> CuememError:
    return CuememError(f"{fmt}: {where}: {problem}", f"check that it is a {fmt} file", fields=("formats",))


CONVERTERS: dict[str, Converter] = {
    "locomo": locomo,
    "longmemeval": longmemeval,
    "openai": openai,
    "chatgpt": chatgpt,
    "claude": claude,
    "claude-code": claude_code,
}
_LINE_FORMATS = frozenset({"claude-code"})  # read line by line, so errors name the line
# What a folder or zip archive given to a converter stands for: (member names, what they are called).
_JSON_FILES = (("*.json", "*.jsonl"), "JSON files")
_MEMBERS = {
    "chatgpt": (("conversations.json",), "conversations.json"),  # a ChatGPT or Claude.ai export
    "claude": (("conversations.json",), "conversations.json"),
    "claude-code": (("*.jsonl",), ".jsonl files"),  # ~/.claude/projects: a folder per project
}


def convert_files(fmt: str, paths: list[str], all_branches: bool = False,
                  empty: list[str] | None = None, skipped: list[Skipped] | None = None) -> Iterator[Message]:
    """Messages of every file, in order; `-` is standard input. A shape error names the file. `empty`
    collects the conversations that had no message to store (Options.empty), `skipped` the files of its
    folders and archives that were not read (sources.Input.skipped).

    A folder or a zip archive (the form ChatGPT and Claude.ai deliver their exports in) stands for its
    `conversations.json` (chatgpt, claude), its `*.jsonl` files (claude-code) or its JSON files (the
    others), found at any depth, in path order; gzip is read as it is (sources.open_input)."""
    if fmt not in CONVERTERS:
        raise CuememError(f"unknown format {fmt!r}", f"formats: {', '.join(CONVERTERS)}")
    members, what = _MEMBERS.get(fmt, _JSON_FILES)
    for path in paths:
        with open_input([path], members, what) as source:
            if skipped is not None:
                skipped += source.skipped
            for part in source.parts:
                data = read_all(part)
                value = _numbered_lines(part.name, data) if fmt in _LINE_FORMATS else _parse_json(part.name, data)
                yield from convert_part(fmt, part.name, data, value, all_branches, empty)


def convert_part(fmt: str, name: str, data: bytes, value: Any, all_branches: bool = False,
                 empty: list[str] | None = None) -> Iterator[Message]:
    """The messages of one file in `fmt`: its bytes `data`, parsed as `value`; a shape error names the file."""
    options = Options(tag=source_tag(name, data), all_branches=all_branches, source=name,
                      empty=[] if empty is None else empty)
    try:
        yield from CONVERTERS[fmt](value, options)
    except InputError:
        raise
    except CuememError as exc:
        raise CuememError(f"{name}: {exc.message}", exc.hint, exc.fields) from None


def spooled(messages: Iterable[Message]) -> tuple[IO[bytes], int]:
    """The messages as cuemem's JSONL in a temporary file, and how many; converting everything first means a
    malformed file is refused before anything is written."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it (with its Input)
    count = 0
    try:
        for message in messages:
            spool.write(orjson.dumps(message.to_json()) + b"\n")
            count += 1
    except BaseException:
        spool.close()
        raise
    return spool, count


def converted_input(fmt: str, paths: list[str], all_branches: bool = False,
                    empty: list[str] | None = None) -> Input:
    """The files converted to message JSONL in a temporary file: what `ingest --from` validates and
    stores like any JSONL input. An export without a single message is refused. `empty`: as in
    `convert_files`; the files of its folders and archives not read are the Input's `skipped`."""
    skipped: list[Skipped] = []
    spool, count = spooled(convert_files(fmt, paths, all_branches, empty, skipped))
    name = f"{', '.join(STDIN_NAME if p == STDIN else p for p in paths)} (as {fmt})"
    if count == 0:
        spool.close()
        raise CuememError(f"{name}: no messages: the export holds no message with text",
                          "system, tool and empty messages are skipped; check the file and its format",
                          fields=("from_format",))
    source = Input.of_spool(spool, name)
    source.skipped = skipped
    return source
