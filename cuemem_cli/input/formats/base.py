"""What every format's converter shares: its `Options`, reading a JSON or JSONL file, the tag that names
conversations a file leaves unnamed, and the shape errors that name the format and the place.

A converter (`Converter`) takes the already-loaded JSON value and `Options` and yields `Message`s in
chronological order; it touches no file and no database. A shape problem raises `CuememError` naming
the format and the place (`shape_error`); input.convert.convert_part adds the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ...errors import CuememError, InputError
from ...records import Message
from ...timeparse import parse_time
from ..sources import display_stem, open_input, read_all
from . import JSON_FILES


@dataclass(frozen=True)
class Options:
    """What a converter may need beyond the data. `tag` names the conversations a source leaves
    unnamed (input.convert.convert_part makes it `source_tag`, so two files never share one);
    `all_branches` is the ChatGPT converter's switch."""

    tag: str = "chat"
    all_branches: bool = False
    source: str = "<input>"  # the file, for errors that name a line of it
    # Where a converter notes each conversation that has no message to store (an export's chat of only
    # system messages, say), by title or else id: ingest reports them rather than drop them unsaid.
    empty: list[str] = field(default_factory=list)


Converter = Callable[[Any, Options], Iterator[Message]]

JSON_HINT = "the file must be one JSON document, or JSONL (one JSON value per line)"


def load_json(path: str | Path) -> Any:
    """Read a JSON file (also gzipped, or the one JSON file in a zip archive). JSONL (one JSON value per
    line) is returned as the list of its values; see `parse_json`."""
    with open_input([str(path)], JSON_FILES, "JSON files") as source:
        if len(source.parts) != 1:
            raise CuememError(f"{source.name}: holds several JSON files", "name the one to read")
        part = source.parts[0]
        return parse_json(part.name, read_all(part))


def parse_json(name: str, data: bytes) -> Any:
    """The JSON value of a file's bytes.

    A `.jsonl` name always means JSONL. Otherwise a file that is not one JSON document
    but whose first line is one is read as JSONL too (chat exports often are, whatever
    their name); if the first line is not JSON either, the error of the whole-document
    parse is reported, since its line number is the useful one.
    """
    if not data.strip():
        raise InputError(name, 1, "the file is empty", hint=JSON_HINT)
    if name.lower().removesuffix(".gz").endswith(".jsonl"):
        return [value for _, value in numbered_lines(name, data)]
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if _first_line_is_json(data):
            return [value for _, value in numbered_lines(name, data)]
        raise InputError(name, exc.lineno, f"invalid JSON at column {exc.colno}: {exc.msg}", hint=JSON_HINT) from None


def _first_line_is_json(data: bytes) -> bool:
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return True


def numbered_lines(name: str, data: bytes) -> list[tuple[int, Any]]:
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


def source_tag(name: str, data: bytes) -> str:
    """`<file stem>-<first 8 hex of sha256(bytes)>` (`stdin-…` for standard input): the name of
    conversations an export leaves unnamed, distinct for distinct files."""
    return f"{display_stem(name)}-{hashlib.sha256(data).hexdigest()[:8]}"


def time_in(fmt: str, where: str, value: Any) -> str:
    """A time the source gives, as ISO 8601; one that cannot be read is a shape error at `where`."""
    try:
        return parse_time(value)
    except ValueError as exc:
        raise shape_error(fmt, where, f"bad time: {exc}") from None


def expect_list(fmt: str, where: str, value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise shape_error(fmt, where, f"expected {what}")
    return value


def shape_error(fmt: str, where: str, problem: str) -> CuememError:
    return CuememError(f"{fmt}: {where}: {problem}", f"check that it is a {fmt} file", fields=("formats",))
