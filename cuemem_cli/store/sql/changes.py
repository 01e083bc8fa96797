"""`ChangeRows`, the facts that changed (`ChangeRecords`, m018): pairs of turns of one conversation where the newer
states another value for what the older stated (cues/changes.py), written by ingest and `cuemem reindex`, read by a
question's evidence, the answer line and every view."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from ...records import Change, Triple
from ..migrations import CHANGE_KINDS
from .core import SQLRows

_CHANGE_COLUMNS = ("c.name, o.source_id, n.source_id, o.time, n.time, x.subject, x.relation, x.older_value,"
                   " x.newer_value, x.kind, x.older_turn_id, x.newer_turn_id")
_CHANGES_FROM = ("FROM changes x JOIN turns o ON o.id = x.older_turn_id JOIN turns n ON n.id = x.newer_turn_id"
                 " JOIN conversations c ON c.id = x.conversation_id")


def _change(row: Sequence) -> Change:
    return Change(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8], CHANGE_KINDS[row[9]],
                  row[10], row[11])


class ChangeRows(SQLRows):
    """Changes between turns, written once for both backends."""

    def insert_changes(self, conversation_id: int,
                       rows: Sequence[tuple[int, int, str, str, str, str, str]]) -> int:
        """rows: (older turn id, newer turn id, subject, relation, older value, newer value, kind name); a pair
        already recorded for the same subject and relation is kept as it was."""
        params = [{"cid": conversation_id, "older": older, "newer": newer, "subject": subject, "relation": relation,
                   "was": was, "now": now, "kind": CHANGE_KINDS.index(kind)}
                  for older, newer, subject, relation, was, now, kind in rows]
        self._executemany(
            "INSERT INTO changes (conversation_id, older_turn_id, newer_turn_id, subject, relation, older_value,"
            " newer_value, kind) VALUES (:cid, :older, :newer, :subject, :relation, :was, :now, :kind)"
            " ON CONFLICT (older_turn_id, newer_turn_id, subject, relation) DO NOTHING", params)
        return len(params)

    def changes_of_turns(self, turn_ids: Iterable[int]) -> list[Change]:
        """The changes either end of which is one of these turns, oldest pair first."""
        ids = self.dialect.array(turn_ids)
        return [_change(r) for r in self._rows(
            f"SELECT {_CHANGE_COLUMNS} {_CHANGES_FROM} WHERE {self.dialect.within('x.older_turn_id', 'ids')}"
            f" OR {self.dialect.within('x.newer_turn_id', 'ids')} ORDER BY n.position, o.position, x.id", ids=ids)]

    def changes(self, conversation_id: int | None = None) -> list[Change]:
        """Every change of a conversation (or of the memory), by conversation, then as the newer turns were said."""
        scope, params = self._scope("x.conversation_id", None if conversation_id is None else [conversation_id])
        return [_change(r) for r in self._rows(
            f"SELECT {_CHANGE_COLUMNS} {_CHANGES_FROM} WHERE {scope}"
            " ORDER BY x.conversation_id, n.position, o.position, x.id", **params)]

    def change_sources(self, conversation_id: int) -> Iterator[tuple[int, str, str | None, str | None, list[Triple]]]:
        """A conversation's turns in the order said, each with its triples: (turn id, text, speaker, role,
        triples), what cues/changes.ChangeFinder reads."""
        triples: dict[int, list[Triple]] = {}
        for turn_id, subject, relation, obj in self._rows(
                "SELECT turn_id, subject, relation, object FROM cues WHERE conversation_id = :cid AND kind = 'triple'"
                " ORDER BY id", cid=conversation_id):
            triples.setdefault(turn_id, []).append(Triple(subject, relation, obj))
        for turn_id, text, speaker, role in self._rows(
                "SELECT id, text, speaker, role FROM turns WHERE conversation_id = :cid ORDER BY position",
                cid=conversation_id):
            yield turn_id, text, speaker, role, triples.get(turn_id, [])

    def clear_changes(self, conversation_id: int | None = None) -> int:
        """Delete the changes of a conversation (None: of the memory), before they are found again; call inside
        `transaction()`."""
        scope, params = self._scope("conversation_id", None if conversation_id is None else [conversation_id])
        return self._execute(f"DELETE FROM changes WHERE {scope}", params).rowcount
