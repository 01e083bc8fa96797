"""Converters from benchmark and chat-export formats to our `Message` records.

Each converter takes the already-loaded JSON value (and `Options`) and yields messages in
chronological order, so `cuemem convert` can write them out as our JSONL and `cuemem ingest
--from` can store them. No database is involved. Shape problems raise `CuememError` naming the
format and the place; `convert_files` adds the file.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from .errors import CuememError, InputError
from .records import Message
from .timeparse import parse_time



@dataclass(frozen=True)
class Options:
    """What a converter may need beyond the data. `tag` names the conversations a source leaves
    unnamed (`convert_files` makes it `<file stem>-<first 8 hex of the file's sha256>`, so two files
    never share one); `all_branches` is the ChatGPT importer's switch."""

    tag: str = "chat"
    all_branches: bool = False


Converter = Callable[[Any, Options], Iterator[Message]]

_BOM = b"\xef\xbb\xbf"
_LOCOMO_SESSION = re.compile(r"session_(\d+)")
_OPENAI_SKIPPED_ROLES = frozenset({"system", "developer", "tool", "function"})
_OPENAI_TEXT_PARTS = ("text", "input_text", "output_text")  # a tuple: `in` must not hash odd JSON
_OPENAI_TIME_KEYS = ("timestamp", "created", "time")
_JSON_HINT = "the file must be one JSON document, or JSONL (one JSON value per line)"


def load_json(path: str | Path) -> Any:
    """Read a JSON file. JSONL (one JSON value per line) is returned as the list of its values.

    A `.jsonl` name always means JSONL. Otherwise a file that is not one JSON document
    but whose first line is one is read as JSONL too (chat exports often are, whatever
    their name); if the first line is not JSON either, the error of the whole-document
    parse is reported, since its line number is the useful one.
    """
    return _parse_json(Path(path), _read(Path(path)))


def _read(path: Path) -> bytes:
    """The file's bytes (standard input for `-`), without a UTF-8 byte order mark."""
    if str(path) == "-":
        stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
        data = stdin.read() if stdin is not None else sys.stdin.read().encode()
        return data.removeprefix(_BOM)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CuememError(f"{path}: no such file", hint="check the path") from None
    except IsADirectoryError:
        raise CuememError(f"{path}: is a directory, expected a JSON file") from None
    except OSError as exc:
        raise CuememError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return data.removeprefix(_BOM)


def _parse_json(path: Path, data: bytes) -> Any:
    if path.suffix.lower() == ".jsonl":
        return _load_lines(path, data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if _first_line_is_json(data):
            return _load_lines(path, data)
        raise InputError(
            _display(path), exc.lineno, f"invalid JSON at column {exc.colno}: {exc.msg}", hint=_JSON_HINT
        ) from None


def _display(path: Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def source_tag(path: str | Path, data: bytes) -> str:
    """`<file stem>-<first 8 hex of sha256(bytes)>` (`stdin-…` for standard input): the name of
    conversations an export leaves unnamed, distinct for distinct files."""
    stem = "stdin" if str(path) == "-" else Path(path).stem
    return f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}"


def _first_line_is_json(data: bytes) -> bool:
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return True


def _load_lines(path: Path, data: bytes) -> list[Any]:
    return [value for _, value in _numbered_lines(path, data)]


def _numbered_lines(path: Path, data: bytes) -> list[tuple[int, Any]]:
    """(line number, value) of each non-blank JSONL line; invalid JSON is an error at its line."""
    values = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            values.append((number, orjson.loads(raw)))
        except orjson.JSONDecodeError as exc:
            message = f"invalid JSON at column {exc.colno}: {exc.msg}"
            raise InputError(_display(path), number, message, hint="each line must be one JSON value") from None
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
                if not text.strip():
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
        times = [_parse("longmemeval", f"{conversation_id} session {sid}", date) for sid, date in zip(ids, dates)]
        for position in sorted(range(len(ids)), key=lambda i: (times[i], i)):
            session_id = str(ids[position])
            where = f"{conversation_id} session {session_id}"
            turns = _expect_list("longmemeval", where, sessions[position], "a list of messages")
            for turn_index, turn in enumerate(turns):
                if not isinstance(turn, dict) or "role" not in turn:
                    raise _shape_error("longmemeval", where, "expected messages with 'role' and 'content'")
                text = turn.get("content")
                if not isinstance(text, str) or not text.strip():
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
            if not text.strip():
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
        return "\n".join(part for part in parts if part.strip())
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
    hint = f"is this really a {fmt} file? `cuemem convert --help` lists the formats"
    return CuememError(f"{fmt}: {where}: {problem}", hint=hint)


CONVERTERS: dict[str, Converter] = {
    "locomo": locomo,
    "longmemeval": longmemeval,
    "openai": openai,
}


def convert_files(fmt: str, paths: list[str], all_branches: bool = False) -> Iterator[Message]:
    """Messages of every file, in order; `-` is standard input. A shape error names the file."""
    if fmt not in CONVERTERS:
        raise CuememError(f"unknown format {fmt!r}", f"formats: {', '.join(CONVERTERS)}")
    for path in paths:
        data = _read(Path(path))
        options = Options(tag=source_tag(path, data), all_branches=all_branches)
        try:
            yield from CONVERTERS[fmt](_parse_json(Path(path), data), options)
        except InputError:
            raise
        except CuememError as exc:
            raise CuememError(f"{_display(Path(path))}: {exc.message}", exc.hint) from None


def converted_input(fmt: str, paths: list[str], all_branches: bool = False) -> tuple[IO[bytes], str]:
    """The files converted to message JSONL in a temporary file, and a name for messages: what
    `ingest --from` validates and stores like any JSONL input. Converting everything first means a
    malformed file is refused before anything is written."""
    spool = tempfile.TemporaryFile()
    try:
        for message in convert_files(fmt, paths, all_branches):
            spool.write(orjson.dumps(message.to_json()) + b"\n")
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool, f"{', '.join(_display(Path(p)) for p in paths)} (as {fmt})"
