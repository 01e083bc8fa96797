"""`TurnRows`, the engine's conversations and turns (`Store`), and deleting a turn with all that is its."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, Literal, overload

import orjson

from ..base import CUE_DELETIONS, TURN_COLUMNS, NewTurn, now_iso, turn_from_row
from ...records import Turn
from .core import SQLRows


class TurnRows(SQLRows):
    """Conversations and turns, written once for both backends. A backend gives the full-text index that
    follows the turns (`_index_turns`, `_unindex_turns`) and its search (`search_turns_fts`)."""

    @abstractmethod
    def search_turns_fts(self, query: str, limit: int,
                         conversation_ids: Sequence[int] | None = None) -> list[tuple[int, float]]:
        """Lexical turn search over the memory (or the given conversations): (turn id, BM25 score, higher is
        better), best first. `query` is what recall/question.py's fts_query writes: quoted words OR-ed."""

    @abstractmethod
    def _index_turns(self, rows: Sequence[tuple[int, str]]) -> None:
        """Add new turns (id, text) to the full-text index (where the backend does not do it itself)."""

    @abstractmethod
    def _unindex_turns(self, ids: Any) -> None:
        """Remove turns (an `array` of ids) from the full-text index, leaving none of their terms in it."""

    # ----------------------------------------------------------- conversations
    @overload
    def conversation_id(self, name: str, create: Literal[True]) -> int: ...
    @overload
    def conversation_id(self, name: str, create: bool = False) -> int | None: ...

    def conversation_id(self, name: str, create: bool = False) -> int | None:
        row = self._one("SELECT id FROM conversations WHERE name = :name", name=name)
        if row:
            return row[0]
        if not create:
            return None
        return self._value("INSERT INTO conversations(name, created_at) VALUES (:name, :at) RETURNING id",
                           name=name, at=now_iso())

    def conversations(self) -> list[tuple[int, str, str | None]]:
        """(id, name, title) of every conversation, oldest first."""
        return self._rows("SELECT id, name, title FROM conversations ORDER BY id")

    def set_title(self, conversation_id: int, title: str) -> None:
        """Give a conversation its title, unless it has one: the first message that carries one names it."""
        self._execute("UPDATE conversations SET title = :title WHERE id = :cid AND title IS NULL",
                      {"title": title, "cid": conversation_id})

    # ------------------------------------------------------------------- turns
    def stored_texts(self, conversation_id: int, source_ids: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        """source id → (turn id, position, text) of those of `source_ids` the conversation already holds."""
        if not source_ids:
            return {}
        rows = self._rows("SELECT source_id, id, position, text FROM turns WHERE conversation_id = :cid"
                          f" AND {self.dialect.within('source_id', 'ids')}",
                          cid=conversation_id, ids=self.dialect.array(source_ids))
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def next_position(self, conversation_id: int) -> int:
        return self._value("SELECT coalesce(max(position), -1) + 1 FROM turns WHERE conversation_id = :cid",
                           cid=conversation_id)

    def insert_turns(self, turns: Sequence[NewTurn]) -> list[int]:
        stored = now_iso()
        ids = [self._value(
            "INSERT INTO turns(conversation_id, position, source_id, session, time, speaker, role, text,"
            " content_hash, extra, status, stored_at) VALUES (:cid, :position, :source_id, :session, :time,"
            " :speaker, :role, :text, :hash, :extra, :status, :stored) RETURNING id",
            cid=t.conversation_id, position=t.position, source_id=t.source_id, session=t.session, time=t.time,
            speaker=t.speaker, role=t.role, text=t.text, hash=t.content_hash,
            extra=orjson.dumps(t.extra).decode() if t.extra else None, status=t.status, stored=stored)
            for t in turns]
        self._index_turns([(tid, t.text) for tid, t in zip(ids, turns, strict=True)])
        return ids

    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]:
        rows = self._rows(f"SELECT {TURN_COLUMNS} FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                          f" WHERE {self.dialect.within('t.id', 'ids')}", ids=self.dialect.array(turn_ids))
        return {r[0]: turn_from_row(r) for r in rows}

    def turns_not_held_at(self, when: str, conversation_ids: Sequence[int] | None = None) -> tuple[set[int], int]:
        """Turns memory did not hold at `when` (ISO): said after it, or, undated, stored after it; and
        how many cues they have (what a KNN must fetch beyond top-m to still return top-m held cues)."""
        scope, params = self._scope("t.conversation_id", conversation_ids)
        rows = self._rows(
            "SELECT t.id, (SELECT count(*) FROM cues c WHERE c.turn_id = t.id) FROM turns t"
            f" WHERE {scope} AND CASE WHEN t.time IS NOT NULL THEN t.time > :when"
            " ELSE coalesce(t.stored_at, '') > :when END", when=when, **params)
        return {r[0] for r in rows}, sum(r[1] for r in rows)

    def speakers(self, conversation_ids: Sequence[int] | None = None) -> list[str]:
        """The names turns were said by, in the memory or the given conversations."""
        scope, params = self._scope("conversation_id", conversation_ids)
        return [r[0] for r in self._rows(f"SELECT DISTINCT speaker FROM turns WHERE {scope}"
                                         " AND speaker IS NOT NULL ORDER BY speaker", **params)]

    def conversations_with_speakers(self, names: Iterable[str],
                                    conversation_ids: Sequence[int] | None = None) -> dict[int, str]:
        """The conversations (id → name) in which any of `names` said a turn, within the given ones."""
        names = list(names)
        if not names:
            return {}
        scope, params = self._scope("t.conversation_id", conversation_ids)
        return dict(self._rows(
            "SELECT DISTINCT c.id, c.name FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            f" WHERE {scope} AND {self.dialect.within('t.speaker', 'names')} ORDER BY c.id",
            names=self.dialect.array(names), **params))

    def speaker_sets(self, conversation_ids: Sequence[int] | None = None) -> dict[int, frozenset[str]]:
        """Each conversation's speakers (a turn without a speaker name counts its role, or "")."""
        scope, params = self._scope("conversation_id", conversation_ids)
        out: dict[int, set[str]] = {}
        for cid, who in self._rows("SELECT DISTINCT conversation_id, coalesce(speaker, role, '') FROM turns"
                                   f" WHERE {scope}", **params):
            out.setdefault(cid, set()).add(who)
        return {cid: frozenset(people) for cid, people in out.items()}

    def turns_at_positions(self, conversation_id: int, low: int, high: int) -> list[tuple[int, int]]:
        """(turn id, position) for positions in [low, high], for temporal edges."""
        return self._rows("SELECT id, position FROM turns WHERE conversation_id = :cid"
                          " AND position BETWEEN :low AND :high ORDER BY position",
                          cid=conversation_id, low=low, high=high)

    def mark_retrieved(self, conversation_id: int, source_ids: Sequence[str], when: str) -> None:
        """Record that `ask` used these turns (the LRU forgetting policy reads it)."""
        self._execute("UPDATE turns SET last_retrieved_at = :when WHERE conversation_id = :cid"
                      f" AND {self.dialect.within('source_id', 'ids')}",
                      {"when": when, "cid": conversation_id, "ids": self.dialect.array(source_ids)})

    def previous_turns(self, turn_ids: Iterable[int]) -> dict[int, int]:
        """Each turn's predecessor in its conversation, where both were said in the same session."""
        return dict(self._rows(
            "SELECT t.id, p.id FROM turns t JOIN turns p ON p.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position < t.position"
            "  ORDER BY q.position DESC LIMIT 1)"
            f" WHERE {self.dialect.within('t.id', 'ids')} AND p.session IS NOT DISTINCT FROM t.session",
            ids=self.dialect.array(turn_ids)))

    def last_turn(self, conversation_id: int) -> tuple[str | None, str] | None:
        """(session, text) of the conversation's latest turn: what a turn appended to it is read after."""
        return self._one("SELECT session, text FROM turns WHERE conversation_id = :cid ORDER BY position DESC LIMIT 1",
                         cid=conversation_id)

    def turns_after(self, turn_ids: Iterable[int]) -> list[int]:
        """The turns said right after these in the same session, not among them: the turns whose
        vectors hold these turns' text (TURN_WITH_PREVIOUS)."""
        return [r[0] for r in self._rows(
            "SELECT DISTINCT n.id FROM turns t JOIN turns n ON n.id = ("
            "  SELECT q.id FROM turns q WHERE q.conversation_id = t.conversation_id AND q.position > t.position"
            "  ORDER BY q.position LIMIT 1)"
            f" WHERE {self.dialect.within('t.id', 'ids')} AND n.session IS NOT DISTINCT FROM t.session"
            f" AND {self.dialect.not_within('n.id', 'ids')} ORDER BY n.id", ids=self.dialect.array(turn_ids))]

    def turn_count(self) -> int:
        return self._value("SELECT count(*) FROM turns")

    def delete_turns(self, turn_ids: Sequence[int], keep_conversations: bool = False) -> dict[str, Any]:
        """Remove turns and all that is theirs; call inside `transaction()`.

        Order respects the foreign keys: cue vectors, cues, edges and changes (either end),
        turn vectors, full-text entries (`_unindex_turns`), turns, extraction-cache entries no remaining turn
        shares, then conversations left empty (unless `keep_conversations`: a replaced turn's successor is
        stored next).
        """
        counts: dict[str, Any] = {"turns": 0, "cues": 0, "vectors": 0, "edges": 0, "extraction_cache": 0,
                                  "conversations": {}, "conversations_removed": []}
        if not turn_ids:
            return counts
        d = self.dialect
        ids = d.array(turn_ids)
        counts["conversations"] = dict(self._rows(
            "SELECT c.name, count(*) FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            f" WHERE {d.within('t.id', 'ids')} GROUP BY c.id ORDER BY c.id", ids=ids))
        conversation_ids = d.array(r[0] for r in self._rows(
            f"SELECT DISTINCT conversation_id FROM turns WHERE {d.within('id', 'ids')}", ids=ids))
        hashes = d.array(r[0] for r in self._rows(
            f"SELECT DISTINCT content_hash FROM turns WHERE {d.within('id', 'ids')}", ids=ids))
        cue_ids = d.array(r[0] for r in self._rows(f"SELECT id FROM cues WHERE {d.within('turn_id', 'ids')}", ids=ids))
        if self._has_table("cue_vectors"):  # the vector tables come with the embedding model (bind_embedder)
            counts["vectors"] = self._value(f"SELECT count(*) FROM cue_vectors WHERE {d.within('cue_id', 'ids')}",
                                            ids=cue_ids)
            self._execute(f"DELETE FROM cue_vectors WHERE {d.within('cue_id', 'ids')}", {"ids": cue_ids})
        counts["cues"] = self._execute(f"DELETE FROM cues WHERE {d.within('id', 'ids')}", {"ids": cue_ids}).rowcount
        if counts["cues"]:  # a saved HNSW graph of the cues (ingest/graph.py) is stale from here on
            self._execute("INSERT INTO meta(key, value) VALUES (:key, '1') ON CONFLICT (key) DO UPDATE"
                          " SET value = CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)", {"key": CUE_DELETIONS})
        counts["edges"] = self._execute(f"DELETE FROM edges WHERE {d.within('src', 'ids')} OR {d.within('dst', 'ids')}",
                                        {"ids": ids}).rowcount
        self._execute(f"DELETE FROM changes WHERE {d.within('older_turn_id', 'ids')}"
                      f" OR {d.within('newer_turn_id', 'ids')}", {"ids": ids})
        self._execute(f"DELETE FROM turn_vectors WHERE {d.within('turn_id', 'ids')}", {"ids": ids})
        self._unindex_turns(ids)
        counts["turns"] = self._execute(f"DELETE FROM turns WHERE {d.within('id', 'ids')}", {"ids": ids}).rowcount
        counts["extraction_cache"] = self._execute(
            f"DELETE FROM extraction_cache WHERE {d.within('turn_hash', 'ids')}"
            " AND turn_hash NOT IN (SELECT content_hash FROM turns)", {"ids": hashes}).rowcount
        if not keep_conversations:
            counts["conversations_removed"] = sorted(r[0] for r in self._rows(
                f"DELETE FROM conversations WHERE {d.within('id', 'ids')}"
                " AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = conversations.id) RETURNING name",
                ids=conversation_ids))
        return counts
