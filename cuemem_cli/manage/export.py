"""`cuemem export` and `cuemem import`: a memory as message JSONL with its cues, and back.

An export line is an ingest line (conversation, session, time, speaker, role, text, id, and the
turn's other fields) plus `cues`: the turn's stored cues as `[subject, relation, object, kind]`, or
null for a turn whose extraction is pending. `cuemem ingest` reads it as is (it keeps `cues` as an
extra field and extracts afresh); `cuemem import` re-creates the turns with exactly those cues — no
extraction, no model call — then embeds the cues and links the graph through the same ingest path.
export → import → export gives the same bytes.

Not exported: cue vectors and edges (import rebuilds them), retrieval times (the LRU policy's input),
and the LLM extraction cache. A field named `cues` in the original input is replaced by ours.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from itertools import islice
from typing import IO, Any

import orjson

from ..errors import CuememError, InputError
from ..input.jsonl import read_messages
from ..input.sources import Input
from ..recall.scope import resolve_one
from ..records import Message, Triple, source_id_of
from ..store.base import Store, maintenance

CUES = "cues"


# ------------------------------------------------------------------ export
def export_records(store: Store, conversation: str | None = None) -> Iterator[dict[str, Any]]:
    """Every turn as an export record, conversation by conversation in chronological order.

    Reads one consistent snapshot, so an ingest running meanwhile cannot tear the export. `conversation`
    is a name, or a title naming one conversation; an unknown one is refused here, before anything is
    written.
    """
    cid = None if conversation is None else resolve_one(store, conversation)[0]
    return _records(store, cid)


def _records(store: Store, cid: int | None) -> Iterator[dict[str, Any]]:
    turns = maintenance(store)
    with store.snapshot():
        rows = turns.export_turns(cid)
        while chunk := list(islice(rows, 256)):
            cues = turns.cues_of_turns([row[0] for row in chunk])
            for row in chunk:
                yield _record(row, cues.get(row[0], []))


def _record(row: tuple, cues: list) -> dict[str, Any]:
    _, conversation, source_id, session, time, speaker, role, text, extra, status = row
    message = Message(conversation=conversation, text=text, source_id=source_id, session=session, time=time,
                      speaker=speaker, role=role, extra=orjson.loads(extra) if extra else {})
    record = message.to_json()
    record[CUES] = None if status == "pending" else [[c.subject, c.relation, c.object, c.kind] for c in cues]
    return record


def write_export(records: Iterable[dict[str, Any]], out: IO[bytes]) -> int:
    count = 0
    for record in records:
        out.write(orjson.dumps(record) + b"\n")
        count += 1
    out.flush()
    return count


def open_private_output(path: str) -> IO[bytes]:
    """A new file readable by its owner only (an export holds private conversations); never overwrites."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CuememError(f"{path} exists; cuemem does not overwrite files",
                          "choose another path, or remove the file first", fields=("output",)) from None
    except OSError as exc:
        raise CuememError(f"cannot create {path}: {exc.strerror}") from None
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "wb")


# ------------------------------------------------------------------ import
def parse_cues(value: Any, path: str, line: int) -> list[Triple] | None:
    """An export line's `cues`: a list of [subject, relation, object(, kind)], or null (pending)."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(path, line, "'cues' must be a list of [subject, relation, object, kind] or null")
    triples = []
    for number, cue in enumerate(value, start=1):
        if not (isinstance(cue, list) and len(cue) in (3, 4) and all(isinstance(p, str) for p in cue)
                and (len(cue) == 3 or cue[3].strip())):
            raise InputError(path, line, f"cue {number} must be [subject, relation, object, kind], all strings")
        triples.append(Triple(*cue))
    return triples


def read_export(source: Input, on_cues: Callable[[Message, list[Triple] | None], None] | None = None
                ) -> Iterator[Message]:
    """Messages of an export without their `cues` field, which goes to `on_cues` instead."""
    for part in source.parts:
        for message in read_messages(Input([part], part.name), None):
            if CUES not in message.extra:
                raise InputError(part.name, message.line, "no 'cues' field: this is not a cuemem export",
                                 "import reads what an export writes; plain message JSONL is added as dialogue "
                                 "instead", fields=("add",))
            triples = parse_cues(message.extra[CUES], part.name, message.line)
            stripped = replace(message, extra={k: v for k, v in message.extra.items() if k != CUES})
            if on_cues is not None:
                on_cues(stripped, triples)
            yield stripped


class StoredCues:
    """An extractor that extracts nothing: it hands back the cues an export recorded for each message."""

    name = "import"

    def __init__(self) -> None:
        self._cues: dict[tuple[str, str], list[Triple] | None] = {}

    def remember(self, message: Message, triples: list[Triple] | None) -> None:
        self._cues.setdefault((message.conversation, source_id_of(message)), triples)  # first line wins, as in ingest

    def extract(self, turns: Iterable[Message]) -> list[list[Triple] | None]:
        return [self._cues.pop((m.conversation, source_id_of(m)), None) for m in turns]


def count_turns(source: Input) -> int:
    """How many turns an export holds, every line checked (read_export): a bad line or an export without a
    turn is an error, before anything is written (Memory.import_file then stores it)."""
    count = sum(1 for _ in read_export(source))
    if count == 0:
        raise CuememError(f"{source.name}: no turns: the export is empty",
                          "import reads what an export writes, one turn per line")
    return count
