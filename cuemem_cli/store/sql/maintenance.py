"""`MaintenanceRows`, forget's, export's and inspect's queries (`Maintenance`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..base import CUE_COLUMNS, KIND_NAME, SEMANTIC, TEMPORAL, TURN_COLUMNS, turn_from_row
from ...records import Cue, Turn
from .core import SQLRows


class MaintenanceRows(SQLRows):
    """Forget's selection and counts, export's stream, statistics and turn-by-turn reads, written once for both
    backends. A backend gives `scrub`."""

    @abstractmethod
    def scrub(self) -> None:
        """After a forget: leave as little of the deleted data in the database's files as the backend can."""

    # ------------------------------------------------------------------ forget
    def forget_selection(self, conversation_id: int | None, session: str | None, source_ids: Sequence[str] | None,
                         before: str | None, decay_cutoff: str | None, lru: int | None) -> list[tuple[int, str]]:
        """(turn id, conversation name) of the turns a forget selects; see manage/forget.py for the policies.

        Selectors (those not None) combine with AND; LRU ranks within what they select, per conversation:
        the `lru` most recently retrieved turns are kept (never-retrieved ones rank last, newer positions first).
        """
        where = ["1 = 1"]
        if conversation_id is not None:
            where.append("t.conversation_id = :cid")
        if session is not None:
            where.append("t.session = :session")
        if source_ids is not None:
            where.append(self.dialect.within("t.source_id", "ids"))
        if before is not None:
            where.append("t.time < :before")
        if decay_cutoff is not None:
            where.append("coalesce(t.time, c.created_at) < :decay"
                         " AND (t.last_retrieved_at IS NULL OR t.last_retrieved_at < :decay)")
        return self._rows(
            f"""
            WITH candidates AS (
              SELECT t.id, t.conversation_id, t.position, t.last_retrieved_at FROM turns t
              JOIN conversations c ON c.id = t.conversation_id
              WHERE {" AND ".join(where)}),
            ranked AS (
              SELECT id, conversation_id, row_number() OVER (
                PARTITION BY conversation_id
                ORDER BY last_retrieved_at IS NULL, last_retrieved_at DESC, position DESC) AS recency
              FROM candidates)
            SELECT r.id, c.name FROM ranked r JOIN conversations c ON c.id = r.conversation_id
            {"" if lru is None else "WHERE r.recency > :lru"} ORDER BY r.conversation_id, r.id
            """,
            cid=conversation_id, session=session, before=before, decay=decay_cutoff, lru=lru,
            ids=self.dialect.array(source_ids) if source_ids is not None else None)

    def forget_counts(self, turn_ids: Sequence[int]) -> dict[str, int]:
        """What deleting these turns would take with it (a dry run)."""
        ids, within = self.dialect.array(turn_ids), self.dialect.within
        vectors = self._has_table("cue_vectors")  # the vector tables come with the embedding model

        def count(query: str) -> int:
            return self._value(query, ids=ids)

        return {
            "cues": count(f"SELECT count(*) FROM cues WHERE {within('turn_id', 'ids')}"),
            "vectors": count("SELECT count(*) FROM cue_vectors WHERE cue_id IN"
                             f" (SELECT id FROM cues WHERE {within('turn_id', 'ids')})") if vectors else 0,
            "edges": count(f"SELECT count(*) FROM edges WHERE {within('src', 'ids')} OR {within('dst', 'ids')}"),
            "extraction_cache": count(
                "SELECT count(*) FROM extraction_cache WHERE turn_hash IN"
                f" (SELECT content_hash FROM turns WHERE {within('id', 'ids')}) AND turn_hash NOT IN"
                f" (SELECT content_hash FROM turns WHERE {self.dialect.not_within('id', 'ids')})"),
        }

    # ------------------------------------------------------------------ export
    def export_turns(self, conversation_id: int | None) -> Iterator[tuple]:
        """(id, conversation, source_id, session, time, speaker, role, text, extra, status) of every turn,
        conversation by conversation, in position order; streamed."""
        for rows in self._stream(
                "SELECT t.id, c.name, t.source_id, t.session, t.time, t.speaker, t.role, t.text, t.extra, t.status"
                " FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                + ("" if conversation_id is None else " WHERE t.conversation_id = :cid")
                + " ORDER BY t.conversation_id, t.position", {"cid": conversation_id}, 512):
            yield from rows

    # ------------------------------------------------------------- statistics
    def conversation_stats(self) -> list[dict[str, Any]]:
        rows = self._rows(
            f"""
            SELECT c.name, c.title,
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id),
                   (SELECT count(*) FROM cues q WHERE q.conversation_id = c.id),
                   (SELECT count(*) FROM edges e JOIN turns t ON t.id = e.src
                      WHERE t.conversation_id = c.id AND e.kind = {TEMPORAL}),
                   (SELECT count(*) FROM edges e JOIN turns t ON t.id = e.src
                      WHERE t.conversation_id = c.id AND e.kind = {SEMANTIC}),
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id
                      AND NOT EXISTS (SELECT 1 FROM cues q WHERE q.turn_id = t.id)),
                   (SELECT count(*) FROM turns t WHERE t.conversation_id = c.id AND t.status = 'pending'),
                   (SELECT min(time) FROM turns t WHERE t.conversation_id = c.id),
                   (SELECT max(time) FROM turns t WHERE t.conversation_id = c.id)
            FROM conversations c ORDER BY c.id
            """)
        keys = ("conversation", "title", "turns", "cues", "temporal_edges", "semantic_edges", "turns_without_cues",
                "pending_turns", "first_time", "last_time")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def degree_stats(self, conversation_id: int | None) -> dict[str, float]:
        """Undirected degree over both edge kinds: min, mean, max per turn (zeros for None: a conversation
        forgotten since it was listed)."""
        low, mean, high = self._rows(
            """
            WITH deg AS (
              SELECT t.id, (SELECT count(*) FROM edges e WHERE e.src = t.id OR e.dst = t.id) AS d
              FROM turns t WHERE t.conversation_id = :cid)
            SELECT coalesce(min(d), 0), coalesce(avg(d), 0.0), coalesce(max(d), 0) FROM deg
            """, cid=conversation_id)[0]  # an aggregate: one row always
        return {"min": low, "mean": round(float(mean), 2), "max": high}

    def meta(self) -> dict[str, str]:
        return dict(self._rows("SELECT key, value FROM meta ORDER BY key"))

    def schema_version(self) -> int:
        return self._value("SELECT count(*) FROM _migrations")

    # ------------------------------------------------------------ turn by turn
    def turns(self, conversation_id: int) -> list[Turn]:
        return [turn_from_row(r) for r in self._rows(
            f"SELECT {TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.conversation_id = :cid ORDER BY t.position", cid=conversation_id)]

    def turns_with_source_id(self, source_id: str, conversation_id: int | None = None) -> list[Turn]:
        """The turns with this source id: one at most in a conversation, one per conversation in the memory
        (source ids are the input's, unique only within their conversation)."""
        scope, params = self._scope("t.conversation_id", None if conversation_id is None else [conversation_id])
        rows = self._rows(f"SELECT {TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                          f" WHERE t.source_id = :source_id AND {scope} ORDER BY t.conversation_id",
                          source_id=source_id, **params)
        return [turn_from_row(row) for row in rows]

    def cues_of_turns(self, turn_ids: Iterable[int]) -> dict[int, list[Cue]]:
        out: dict[int, list[Cue]] = {}
        for r in self._rows(f"SELECT {CUE_COLUMNS} FROM cues WHERE {self.dialect.within('turn_id', 'ids')}"
                            " ORDER BY id", ids=self.dialect.array(turn_ids)):
            out.setdefault(r[1], []).append(Cue(*r))
        return out

    def edges_of(self, turn_id: int) -> list[tuple[int, int, str, float, int]]:
        return self._rows(f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e"
                          " WHERE e.src = :t OR e.dst = :t ORDER BY e.kind, e.weight DESC, e.src, e.dst", t=turn_id)

    def all_edges(self, conversation_id: int | None = None) -> list[tuple[int, int, str, float, int]]:
        """The edges leaving one conversation's turns (they may reach into another's: semantic edges cross
        conversations, ingest/graph.py), or every edge of the memory."""
        if conversation_id is None:
            return self._rows(f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e"
                              " ORDER BY e.src, e.kind, e.dst")
        return self._rows(
            f"SELECT e.src, e.dst, {KIND_NAME}, e.weight, e.rank FROM edges e JOIN turns t ON t.id = e.src"
            " WHERE t.conversation_id = :cid ORDER BY e.src, e.kind, e.dst", cid=conversation_id)
