"""What `ingest` reads when no format is named: cuemem's message JSONL, and the chat exports found among it,
recognised by their shape and converted: a ChatGPT or Claude.ai `conversations.json`, named, or in a
folder or zip archive beside `.jsonl` files (the export as downloaded, or unpacked). A JSON file of
another format cuemem converts (LoCoMo, LongMemEval, OpenAI messages) is refused with the format that
reads it, and a JSON document of no known shape is refused as one, never reported line by line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..errors import CuememError
from .converters import convert_part, spooled
from .jsonl import FORMATS_HINT
from .sources import Input, Part, open_input, read_all, rewound

EXPORT_FILE = "conversations.json"  # what ChatGPT and Claude.ai name their exports' chats
MEMBERS = ("*.jsonl", EXPORT_FILE)
# converted without being named: the exports people download of their own chats
RECOGNISED = {"chatgpt": "a ChatGPT export", "claude": "a Claude.ai export"}
# recognised, but converted only when named: benchmark files and API message lists
NAMED_ONLY = {"locomo": "a LoCoMo file", "longmemeval": "a LongMemEval file", "openai": "OpenAI chat messages"}


def shape_of(value: Any) -> str | None:
    """The converter a parsed JSON document is for, told by its first object's keys; None: no known shape."""
    items = value if isinstance(value, list) else [value]
    first = next((item for item in items if isinstance(item, dict)), None)
    if first is None:
        return None
    if "mapping" in first:
        return "chatgpt"
    if "chat_messages" in first:
        return "claude"
    if "sample_id" in first and "conversation" in first:
        return "locomo"
    if "haystack_sessions" in first:
        return "longmemeval"
    if "messages" in first or ("role" in first and "content" in first and "conversation" not in first):
        return "openai"
    return None


def dialogue_input(paths: list[str], empty: list[str] | None = None) -> Input:
    """`paths` as `ingest` reads them without --from: every `.jsonl` part as it is, every ChatGPT or
    Claude.ai export converted (`Input.exports` names them). `empty` collects the exports' conversations
    that had no message to store (converters.Options.empty)."""
    source = open_input(paths, MEMBERS, ".jsonl files or chat exports")
    try:
        source.parts = [_as_export(part, source, empty) or part for part in source.parts]
    except BaseException:
        source.close()
        raise
    return source


def _as_export(part: Part, source: Input, empty: list[str] | None) -> Part | None:
    """A `.json` part converted, when it is an export; None to read it as JSONL (a JSONL file by another name)."""
    if not Path(part.name.removesuffix(".gz")).name.lower().endswith(".json"):
        return None
    data = read_all(part)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    fmt = shape_of(value)
    if fmt in NAMED_ONLY:
        raise CuememError(f"{part.name}: {NAMED_ONLY[fmt]}, not message JSONL", f"read it as the {fmt} format",
                          fields=("from_format",))
    if fmt is None:
        if value == []:
            raise CuememError(f"{part.name}: an empty list: no chats in it", FORMATS_HINT, fields=("from_format",))
        if data.strip().count(b"\n") == 0:
            return None  # one line: a JSONL file of one message, checked as such
        raise CuememError(f"{part.name}: one JSON document of no shape cuemem knows, not message JSONL", FORMATS_HINT,
                          fields=("from_format",))
    spool, _ = spooled(convert_part(fmt, part.name, data, value, empty=empty))
    source.spools.append(spool)
    source.exports[part.name] = fmt
    return Part(f"{part.name} (as {fmt})", rewound(spool))
