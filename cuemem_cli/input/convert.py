"""Files in a named format, as messages: `convert` is the one way from paths in one of `FORMATS` to
`Message`s. `cuemem convert` prints what it yields, `ingest --from` stores it (input.dialogue.open_dialogue,
which Memory.ingest_file opens), and the benchmarks' loaders (evaluate/datasets.py) ask their questions
about it, so an evaluation stores what a user's ingest would. No database is involved.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import CuememError, InputError
from ..records import Message
from .formats import FORMATS, Format
from .formats.base import Options, numbered_lines, parse_json, source_tag
from .sources import Skipped, open_input, read_all


def convert(fmt: str, paths: Sequence[str], all_branches: bool = False, empty: list[str] | None = None,
            skipped: list[Skipped] | None = None) -> Iterator[Message]:
    """The messages of every file in format `fmt`, in order; `-` is standard input. A shape error names the
    file. `empty` collects the conversations that had no message to store (input.formats.base.Options),
    `skipped` the files of its folders and archives that were not read (input.sources.Input).

    A folder or a zip archive (the form ChatGPT and Claude.ai deliver their exports in) stands for the files
    its format names (`input.formats.Format.members`: `conversations.json`, `*.jsonl` …), found at any depth, in path
    order; gzip is read as it is (input.sources.open_input)."""
    format_ = format_named(fmt)
    for path in paths:
        with open_input([path], format_.members, format_.members_called) as source:
            if skipped is not None:
                skipped += source.skipped
            for part in source.parts:
                data = read_all(part)
                value = numbered_lines(part.name, data) if format_.by_line else parse_json(part.name, data)
                yield from convert_part(fmt, part.name, data, value, all_branches, empty)


def convert_part(fmt: str, name: str, data: bytes, value: Any, all_branches: bool = False,
                 empty: list[str] | None = None) -> Iterator[Message]:
    """The messages of one file in `fmt`: its bytes `data`, parsed as `value`; a shape error names the file.
    Conversations the file leaves unnamed are named by its tag (input.formats.base.source_tag)."""
    options = Options(tag=source_tag(name, data), all_branches=all_branches, source=name,
                      empty=[] if empty is None else empty)
    try:
        yield from format_named(fmt).convert(value, options)
    except InputError:
        raise
    except CuememError as exc:
        raise CuememError(f"{name}: {exc.message}", exc.hint, exc.fields) from None


def format_named(fmt: str) -> Format:
    """The format of that name; an unknown name is an error listing the formats there are."""
    if fmt not in FORMATS:
        raise CuememError(f"unknown format {fmt!r}", f"formats: {', '.join(FORMATS)}")
    return FORMATS[fmt]
