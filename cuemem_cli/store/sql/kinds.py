"""`KindRows`, the kinds of things each turn names (`KindIndex`): written by ingest and `cuemem reindex`
(cues/kinds.py tags them), read by a question that asks for a kind (recall/kinds.py) and by what shows them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .core import SQLRows


class KindRows(SQLRows):
    """The `turn_kinds` table (m019), written once for both backends."""

    def insert_turn_kinds(self, rows: Sequence[tuple[int, str]]) -> None:
        """(turn id, kind) rows; a row already there stays as it is."""
        self._executemany("INSERT INTO turn_kinds(turn_id, kind) VALUES (:turn, :kind) ON CONFLICT DO NOTHING",
                          [{"turn": int(turn), "kind": kind} for turn, kind in rows])

    def turn_kinds(self, turn_ids: Iterable[int]) -> dict[int, tuple[str, ...]]:
        """Each of these turns' kinds, sorted (a turn naming none is left out)."""
        out: dict[int, list[str]] = {}
        for turn, kind in self._rows("SELECT turn_id, kind FROM turn_kinds"
                                     f" WHERE {self.dialect.within('turn_id', 'ids')} ORDER BY turn_id, kind",
                                     ids=self.dialect.array(turn_ids)):
            out.setdefault(turn, []).append(kind)
        return {turn: tuple(kinds) for turn, kinds in out.items()}

    def turns_of_kinds(self, kinds: Sequence[str], conversation_ids: Sequence[int] | None = None,
                       speakers: Sequence[str] | None = None, limit: int = 1000) -> list[int]:
        """The turns that name a thing of any of `kinds`, in the given conversations (None: the whole memory),
        said by one of `speakers` (None: by anyone); at most `limit`, the newest first."""
        if not kinds or limit <= 0:
            return []
        scope, params = self._scope("t.conversation_id", conversation_ids)
        who = ""
        if speakers is not None:
            who = f" AND {self.dialect.within('t.speaker', 'speakers')}"
            params["speakers"] = self.dialect.array(speakers)
        return [r[0] for r in self._rows(
            "SELECT DISTINCT k.turn_id FROM turn_kinds k JOIN turns t ON t.id = k.turn_id"
            f" WHERE {self.dialect.within('k.kind', 'kinds')} AND {scope}{who} ORDER BY k.turn_id DESC LIMIT :limit",
            kinds=self.dialect.array(kinds), limit=int(limit), **params)]

    def delete_turn_kinds(self, conversation_ids: Sequence[int]) -> int:
        """Remove the kinds of these conversations' turns (before they are tagged again); how many rows went."""
        return self._execute("DELETE FROM turn_kinds WHERE turn_id IN (SELECT id FROM turns"
                             f" WHERE {self.dialect.within('conversation_id', 'ids')})",
                             {"ids": self.dialect.array(conversation_ids)}).rowcount

    def kind_counts(self, conversation_id: int | None = None) -> dict[str, int]:
        """How many turns name a thing of each kind, in one conversation or the whole memory; most first."""
        where = "" if conversation_id is None else " JOIN turns t ON t.id = k.turn_id WHERE t.conversation_id = :cid"
        return dict(self._rows(f"SELECT k.kind, count(*) FROM turn_kinds k{where} GROUP BY k.kind"
                               " ORDER BY count(*) DESC, k.kind", cid=conversation_id))
