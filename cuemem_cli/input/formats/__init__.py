"""The formats cuemem converts to its messages, a module each, and `FORMATS`, the one index of them. The
`cuemem convert NAME` commands, `cuemem ingest --from NAME`, its help and its check, and the exports `ingest`
recognises without a name are all made from this index: a new format is its module and its entry here.

- `base.py`: what the converters share: `Options`, reading JSON and JSONL files, the source tag, shape errors.
- `chatgpt.py`: ChatGPT data exports (`conversations.json`, a tree of messages per conversation).
- `claude.py`: Claude.ai data exports (`conversations.json`).
- `claude_code.py`: Claude Code session transcripts (JSONL, one event a line).
- `openai.py`: OpenAI chat-completions messages.
- `locomo.py`: the LoCoMo benchmark.
- `longmemeval.py`: the LongMemEval benchmark.

Each module's `convert(data, options)` turns the file's loaded JSON into messages (`input.formats.base.Converter`). This
index imports none of them: `cuemem --help` lists the formats without loading a converter, and a format's
module is imported when it first converts (`input.formats.Format.convert`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...records import Message
    from .base import Options

JSON_FILES = ("*.json", "*.jsonl")


@dataclass(frozen=True)
class Format:
    """One input format: what reads it and what the CLI says of it."""

    name: str  # the `cuemem convert` command and the `ingest --from` value
    summary: str  # the `cuemem convert NAME` command's help
    files: str  # the help of that command's FILE argument
    called: str  # what a file of it is called where ingest says how it read one ("a ChatGPT export")
    # What a folder or zip archive given in this format stands for: its files of these names, at any depth.
    members: tuple[str, ...] = JSON_FILES
    members_called: str = "JSON files"  # those files, in the error for a folder or archive without one
    by_line: bool = False  # read a JSON value a line (an error names the line), not one JSON document
    branches: bool = False  # conversations are trees: `--all-branches` keeps every branch, not the one kept
    recognised: bool = False  # ingest converts it unnamed, found among message JSONL (input.dialogue)

    @property
    def module(self) -> str:
        """The module that converts it: `claude-code` is input/formats/claude_code.py."""
        return f"{__name__}.{self.name.replace('-', '_')}"

    def convert(self, data: Any, options: Options | None = None) -> Iterator[Message]:
        """`data`, a file of this format as loaded JSON, as messages in order (the module's `convert`)."""
        from .base import Options

        convert = import_module(self.module).convert
        return convert(data, options if options is not None else Options())


# In the order `cuemem convert` lists them: people's own chats first, then the benchmarks.
FORMATS: dict[str, Format] = {fmt.name: fmt for fmt in (
    Format("chatgpt", "ChatGPT data export → JSONL (conversation = its id, title kept; ids = message ids).",
           "ChatGPT export: the .zip, its conversations.json or its unpacked folder; - for stdin.",
           "a ChatGPT export", ("conversations.json",), "conversations.json", branches=True, recognised=True),
    Format("claude", "Claude.ai data export → JSONL (conversation = its uuid, title kept; human → user).",
           "Claude.ai export: the .zip, its conversations.json or its unpacked folder; - for stdin.",
           "a Claude.ai export", ("conversations.json",), "conversations.json", recognised=True),
    Format("claude-code", "Claude Code session transcripts → JSONL (conversation = sessionId; user and assistant "
                          "text only).",
           "Session .jsonl files, or folders of them (~/.claude/projects).",
           "Claude Code transcripts", ("*.jsonl",), ".jsonl files", by_line=True),
    Format("openai", "OpenAI chat-completions `messages` → JSONL (unnamed conversations: FILE_STEM-SHA256PREFIX).",
           "Chat-completions messages JSON or JSONL; - for stdin.", "OpenAI chat messages"),
    Format("locomo", "LoCoMo → JSONL (ids are LoCoMo dia_ids such as D1:3; image turns keep their caption).",
           "LoCoMo JSON, e.g. locomo10.json.", "a LoCoMo file"),
    Format("longmemeval", "LongMemEval → JSONL (one conversation per question id; ids are SESSION:INDEX).",
           "LongMemEval JSON (e.g. longmemeval_s.json).", "a LongMemEval file"),
)}
