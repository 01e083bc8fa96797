"""cuemem's message JSONL, read: one JSON object per line, its field aliases (`content` for `text`, …),
each line checked and turned into a Message, and the first pass that finds every bad line before anything
is stored. Where the bytes come from (files, standard input, gzip, zip, folders) is input/sources.py's
business; other formats are converted to these lines first (input/dialogue.py). ingest/pipeline.py stores
what this module reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import CuememError, InputError
from ..records import Message
from ..text import is_blank, plural
from ..timeparse import parse_time
from .sources import Input, lines_of

SHOWN_INVALID = 10  # bad lines listed in the error that rejects an input
FORMAT_HINT = "each line must be one JSON object with a 'text' (docs/input-formats.md)"
FORMATS_HINT = ("cuemem reads chats as message JSONL (one JSON object per line) and ChatGPT and Claude.ai exports, "
                "and, named, the claude-code, openai, locomo and longmemeval formats (docs/input-formats.md)")

FIELD_ALIASES = {
    "text": ("text", "content", "message", "utterance"),
    "time": ("time", "timestamp", "date", "datetime", "created_at"),
    "speaker": ("speaker", "name", "author", "sender"),
    "conversation": ("conversation", "conversation_id", "conv"),
    "session": ("session", "session_id"),
    "role": ("role",),
    "id": ("id", "turn_id", "dia_id", "message_id"),
}
_KNOWN = {alias for aliases in FIELD_ALIASES.values() for alias in aliases}


def _pick(record: dict[str, Any], key: str) -> tuple[str, Any]:
    """The first alias of `key` the record sets, and its value; (key, None) when none is set."""
    for alias in FIELD_ALIASES[key]:
        value = record.get(alias)
        if value is not None:
            return alias, value
    return key, None


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    return None


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__)


# The longest turn taken, in characters. Up to it, ingest's time grows linearly with a turn's length and
# its memory stays under issue 23's bound (bench/RESULTS.md, "Ingest at scale": a 1 MB turn); a longer
# one, an agent's 5 MB log say, is refused with the file and line rather than swapping the machine. No
# dialogue turn comes near it; a document that long reads better as several turns anyway (one vector per
# turn).
MAX_TURN_CHARS = 1_000_000


def parse_line(raw: bytes | str, path: str, line: int, conversation: str | None) -> Message | None:
    """One JSONL line → Message; None for a blank line; InputError naming FILE:LINE otherwise.

    `conversation` (ingest's --conversation) overrides the line's own: a line that named another
    conversation keeps its id apart as `THAT_CONVERSATION/ID`, so that merging two chats whose ids
    overlap (both count from 0) stores both rather than skipping the second as already stored.
    """
    if not raw.strip():
        return None
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _json_error(raw, exc, path, line) from None
    if not isinstance(record, dict):
        raise InputError(path, line, f"expected a JSON object, got {type(record).__name__}", FORMAT_HINT)
    key, text = _pick(record, "text")
    if text is not None and not isinstance(text, str):
        raise InputError(path, line, f"'{key}' must be a string, not {_type_name(text)}")
    if text is None or is_blank(text):
        problem = ("missing or empty 'text' (or 'content')" if not text or not text.strip()
                   else f"'{key}' is invisible (zero-width characters only): a message needs text")
        raise InputError(path, line, problem, "every message needs its text", fields=("skip_invalid",))
    if len(text) > MAX_TURN_CHARS:
        raise InputError(path, line,
                         f"'{key}' is {len(text):,} characters long; a turn holds at most {MAX_TURN_CHARS:,}",
                         "split it into several messages (one per section or page, say): each gets its own cues,"
                         " vector and place in the graph")
    fields: dict[str, str | None] = {}
    for name in ("conversation", "speaker", "session", "role", "id"):
        key, value = _pick(record, name)
        if value is not None and _as_text(value) is None:
            raise InputError(path, line, f"'{key}' must be a string or a number, not {_type_name(value)}")
        fields[name] = _as_text(value)
    own = fields["conversation"]
    conv = conversation or own
    if not conv:
        raise InputError(path, line, "no conversation: the line has no 'conversation' field",
                         "add one, or name one conversation for every line", fields=("conversation",))
    if conversation and own and own != conversation and fields["id"] is not None:
        fields["id"] = f"{own}/{fields['id']}"
    key, raw_time = _pick(record, "time")
    iso = None
    if raw_time is not None:
        if not isinstance(raw_time, (str, int, float)) or isinstance(raw_time, bool):
            raise InputError(path, line, f"'{key}' must be a string or a number, not {_type_name(raw_time)}")
        try:
            iso = parse_time(raw_time if isinstance(raw_time, str) else str(raw_time))
        except ValueError as exc:
            raise InputError(path, line, f"cannot read time {str(raw_time)[:60]!r}: {exc}",
                             "use ISO 8601 (2023-05-08T13:56:00) or e.g. '1:56 pm on 8 May, 2023'") from None
    extra = {k: v for k, v in record.items() if k not in _KNOWN}
    return Message(
        conversation=conv, text=text, source_id=fields["id"], session=fields["session"], time=iso,
        speaker=fields["speaker"], role=fields["role"], extra=extra, line=line,
    )


def checked_messages(items: Iterable[Mapping[str, Any] | Message], conversation: str | None,
                     source: str = "messages") -> list[Message]:
    """Messages handed over in a call rather than a file (Memory.add, the MCP server's remember tool): each a
    dict as a JSONL line holds it (checked as `parse_line` checks a line) or a Message already. A bad one
    rejects them all: `InvalidMessages` names every bad one by its place in `source` (`messages[3]`)."""
    parsed: list[Message] = []
    problems: list[InputError] = []
    for index, item in enumerate(items):
        if isinstance(item, Message):
            parsed.append(item)
            continue
        try:
            message = parse_line(orjson.dumps(item), source, index, conversation)
        except InputError as exc:
            problems.append(exc)
            continue
        if message is None:  # parse_line's blank line: no dict serialises to one, but say so if it did
            problems.append(InputError(source, index, "missing or empty 'text'"))
        else:
            parsed.append(message)
    if problems:
        raise InvalidMessages(source, problems)
    return parsed


class InvalidMessages(CuememError):
    """Messages of a call of which some are bad (`checked_messages`); nothing of the call was stored. The
    message lists them (the first `SHOWN_INVALID`), the hint says what the problems found need."""

    def __init__(self, source: str, problems: list[InputError]):
        self.problems = problems
        said = [f"{source}[{exc.line}]: {exc.message.removeprefix(f'{source}:{exc.line}: ')}" for exc in problems]
        shown = "; ".join(said[:SHOWN_INVALID])
        more = f"; … and {len(said) - SHOWN_INVALID} more" if len(said) > SHOWN_INVALID else ""
        hints = "; ".join(dict.fromkeys(exc.hint for exc in problems if exc.hint))  # those of the problems found
        super().__init__(f"{plural(len(problems), 'invalid message')}, nothing stored: {shown}{more}",
                         hints or "each message needs a non-empty 'text'")


class NotJSON(InputError):
    """A line that is not JSON at all; `braced`: it starts as a JSON object would (a JSONL line gone wrong).
    A file of such lines, most of them not braced, is not a dialogue (`validate`): a README, notes."""

    braced = False


def _json_error(raw: bytes | str, exc: orjson.JSONDecodeError, path: str, line: int) -> InputError:
    """A line that is not JSON; one that stops inside its object (a file cut short, or one message spread
    over several lines) is said to be cut off, not reported by the parser's last complaint."""
    body = raw.rstrip(b"\r\n") if isinstance(raw, bytes) else raw.rstrip("\r\n")
    try:  # without its line break, a cut line ends the parse at the end of the data, not at the break
        orjson.loads(body)
    except orjson.JSONDecodeError as bare:
        exc = bare
    if exc.msg.startswith("unexpected end of data"):
        error = NotJSON(path, line, "the line is cut off: its JSON object does not end on it",
                        "was the file cut short, or is a message spread over several lines? Each message must"
                        " be one whole JSON object on one line (docs/input-formats.md)")
    else:
        error = NotJSON(path, line, f"not valid JSON ({exc.msg})", FORMAT_HINT)
    error.braced = body.lstrip()[:1] in ("{", b"{")
    return error


def _parsed(source: Input, conversation: str | None) -> Iterator[tuple[str, Message | InputError]]:
    """Each non-blank line's Message, or its InputError, part after part, with the part's name."""
    for part in source.parts:
        for number, raw in lines_of(part):
            try:
                message = parse_line(raw, part.name, number, conversation)
            except InputError as exc:
                yield part.name, exc
                continue
            if message is not None:
                yield part.name, message


def read_messages(source: Input, conversation: str | None, invalid: list[str] | None = None,
                  skip_invalid: bool = False) -> Iterator[Message]:
    """Messages in input order; with `skip_invalid`, bad lines are appended to `invalid` instead."""
    for _, item in _parsed(source, conversation):
        if isinstance(item, InputError):
            if not skip_invalid:
                raise item
            if invalid is not None:
                invalid.append(item.message)
            continue
        yield item


@dataclass
class Checked:
    """What the first pass found: how many messages, and the bad lines (kept under `skip_invalid`)."""

    lines: int = 0
    invalid: list[str] = field(default_factory=list)


def validate(source: Input, conversation: str | None, skip_invalid: bool) -> Checked:
    """First pass over the whole input: every bad line is found, not only the first. Without
    `skip_invalid` any bad line rejects the input with an error listing them (the first
    `SHOWN_INVALID`, and how many more), or, when a file of it has no JSON line at all (a README, notes),
    with one line saying that file is not a dialogue. An input without a single message (empty, blank
    lines only, or, with `skip_invalid`, nothing but bad lines) is refused too: there is nothing to store,
    and a new database file would be left behind empty."""
    report = Checked()
    first: InputError | None = None
    lines: dict[str, list[int]] = {}  # per file: its lines that are JSON (messages or not), braced, in all
    for name, item in _parsed(source, conversation):
        counts = lines.setdefault(name, [0, 0, 0])
        counts[0] += not isinstance(item, NotJSON)
        counts[1] += isinstance(item, NotJSON) and item.braced
        counts[2] += 1
        if isinstance(item, InputError):
            report.invalid.append(item.message)
            first = first or item
        else:
            report.lines += 1
    count = len(report.invalid)
    if first is not None and (not skip_invalid or report.lines == 0):
        not_json = [name for name, (json, braced, total) in lines.items() if json == 0 and 2 * braced < total]
        if not_json:
            said = "not a dialogue: no line of it is JSON" if len(not_json) == 1 else \
                "not dialogues: no line of them is JSON"
            raise CuememError(f"{', '.join(not_json)}: {said}", FORMATS_HINT, fields=("from_format",))
        shown = "; ".join(report.invalid[:SHOWN_INVALID])
        more = f"; … and {count - SHOWN_INVALID} more" if count > SHOWN_INVALID else ""
        hint, fields = (first.hint, first.fields) if count == 1 and first.hint else ("fix them", ("skip_invalid",))
        if report.lines == 0 and skip_invalid:
            hint, fields = f"no line is a message cuemem can store; {FORMAT_HINT}", ()
        raise CuememError(f"{source.name}: {plural(count, 'invalid line')} (nothing stored): {shown}{more}", hint,
                          fields)
    if report.lines == 0:
        raise CuememError(f"{source.name}: no messages: the input is empty or holds only blank lines",
                          'give one JSON object per line, e.g. {"conversation": "notes", "text": "I moved to '
                          'Denver."} (docs/input-formats.md)')
    return report
