"""What `ingest` reads: `open_dialogue`, the paths a user names as one input of message JSONL, whatever they
hold. In a named format (`--from`), every file is converted (input.convert.convert). Without one, cuemem's
message JSONL is read as it is, and the chat exports found among it are recognised by their shape and
converted: a ChatGPT or Claude.ai `conversations.json`, named, or in a folder or zip archive beside `.jsonl`
files (the export as downloaded, or unpacked). A JSON file of another format cuemem converts (LoCoMo,
LongMemEval, OpenAI messages) is refused with the format that reads it, and a JSON document of no known shape
is refused as one, never reported line by line.

What is converted is written to a temporary file as message JSONL first, so a malformed file is refused before
anything is stored and ingest's two passes (input.jsonl.validate, then input.jsonl.read_messages) read it like
any JSONL.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from ..errors import CuememError
from ..records import Message
from .convert import convert, convert_part
from .formats import FORMATS
from .jsonl import FORMATS_HINT
from .sources import STDIN, STDIN_NAME, Input, Part, Skipped, open_input, read_all, rewound

EXPORT_FILE = "conversations.json"  # what ChatGPT and Claude.ai name their exports' chats
MEMBERS = ("*.jsonl", EXPORT_FILE)


def open_dialogue(paths: Sequence[str], fmt: str | None = None, all_branches: bool = False) -> Input:
    """`paths` as one input of message JSONL: in format `fmt` (a name of input.formats.FORMATS), converted;
    without one, every `.jsonl` part as it is and every ChatGPT or Claude.ai export converted (the input's
    `exports` name them). The input's `empty` lists the conversations converted that had no message to store; its
    `skipped`, the files of its folders and archives not read. Close it (or use it as a context manager)."""
    return _opened_as(fmt, paths, all_branches) if fmt is not None else _recognised(paths)


def _recognised(paths: Sequence[str]) -> Input:
    source = open_input(paths, MEMBERS, ".jsonl files or chat exports")
    try:
        source.parts = [_as_export(part, source) or part for part in source.parts]
    except BaseException:
        source.close()
        raise
    return source


def shape_of(value: Any) -> str | None:
    """The format (of input.formats.FORMATS) a parsed JSON document is in, told by its first object's keys; None:
    no known shape."""
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


def _as_export(part: Part, source: Input) -> Part | None:
    """A `.json` part converted, when it is an export; None to read it as JSONL (a JSONL file by another name)."""
    if not Path(part.name.removesuffix(".gz")).name.lower().endswith(".json"):
        return None
    data = read_all(part)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    fmt = shape_of(value)
    if fmt is not None and not FORMATS[fmt].recognised:
        raise CuememError(f"{part.name}: {FORMATS[fmt].called}, not message JSONL", f"read it as the {fmt} format",
                          fields=("from_format",))
    if fmt is None:
        if value == []:
            raise CuememError(f"{part.name}: an empty list: no chats in it", FORMATS_HINT, fields=("from_format",))
        if data.strip().count(b"\n") == 0:
            return None  # one line: a JSONL file of one message, checked as such
        raise CuememError(f"{part.name}: one JSON document of no shape cuemem knows, not message JSONL", FORMATS_HINT,
                          fields=("from_format",))
    spool, _ = spooled(convert_part(fmt, part.name, data, value, empty=source.empty))
    source.spools.append(spool)
    source.exports[part.name] = fmt
    return Part(f"{part.name} (as {fmt})", rewound(spool))


def _opened_as(fmt: str, paths: Sequence[str], all_branches: bool) -> Input:
    """Every file converted from `fmt`; an input without a single message is refused."""
    empty: list[str] = []
    skipped: list[Skipped] = []
    spool, count = spooled(convert(fmt, paths, all_branches, empty, skipped))
    name = f"{', '.join(STDIN_NAME if p == STDIN else p for p in paths)} (as {fmt})"
    if count == 0:
        spool.close()
        raise CuememError(f"{name}: no messages: the export holds no message with text",
                          "system, tool and empty messages are skipped; check the file and its format",
                          fields=("from_format",))
    source = Input.of_spool(spool, name)
    source.skipped = skipped
    source.empty = empty
    return source


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
