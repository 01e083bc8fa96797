"""`ExtractionRows`, the LLM extractor's records (`ExtractionRecords`): its cache, and the turns it left pending."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from ..base import TURN_COLUMNS, turn_from_row
from ...records import Turn
from .core import SQLRows


class ExtractionRows(SQLRows):
    """The extraction cache and the turns' extraction status, written once for both backends."""

    def cached_triples(self, model: str, prompt_version: str, turn_hash: str) -> list[list[str]] | None:
        row = self._one("SELECT triples FROM extraction_cache WHERE model = :model AND prompt_version = :version"
                        " AND turn_hash = :hash", model=model, version=prompt_version, hash=turn_hash)
        return orjson.loads(row[0]) if row else None

    def cache_triples(self, model: str, prompt_version: str, turn_hash: str, triples: list[list[str]]) -> None:
        self._execute("INSERT INTO extraction_cache(model, prompt_version, turn_hash, triples)"
                      " VALUES (:model, :version, :hash, :triples)"
                      " ON CONFLICT (model, prompt_version, turn_hash) DO UPDATE SET triples = excluded.triples",
                      {"model": model, "version": prompt_version, "hash": turn_hash,
                       "triples": orjson.dumps(triples).decode()})

    def pending_turns(self, conversation_id: int | None = None) -> list[tuple[Turn, str]]:
        """Turns whose LLM extraction failed, with their content hash."""
        rows = self._rows(
            f"SELECT {TURN_COLUMNS}, t.content_hash FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE t.status = 'pending'" + ("" if conversation_id is None else " AND t.conversation_id = :cid")
            + " ORDER BY t.conversation_id, t.position", cid=conversation_id)
        return [(turn_from_row(r), r[11]) for r in rows]

    def set_status(self, turn_ids: Sequence[int], status: str) -> None:
        self._execute(f"UPDATE turns SET status = :status WHERE {self.dialect.within('id', 'ids')}",
                      {"status": status, "ids": self.dialect.array(turn_ids)})
