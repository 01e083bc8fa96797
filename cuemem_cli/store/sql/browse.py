"""`BrowseRows`, what only `cuemem browse` asks (`BrowseQueries`, browse/pages.py)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from .core import SQLRows


class BrowseRows(SQLRows):
    """The conversation list, written once for both backends. A backend gives its memory-wide search of turns
    by words (`browse_search_turns`), which is its own full text."""

    @abstractmethod
    def browse_search_turns(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """Turns of any conversation holding every one of `words` (each stemmed as the full-text index
        stems it): (turn id, score, higher is better), best first. The turns found are the same on every
        backend; the score is the backend's own (`cuemem browse` only orders by it)."""

    def browse_conversations(self, search: str | None, name: str | None, offset: int,
                             limit: int) -> tuple[int, list[dict[str, Any]]]:
        """(how many conversations match, one page of them, most recently said first): each with its name,
        `title` (the one its turns kept from an export, else None), first and last time, turn and cue
        counts. `search` matches name or title (case-insensitive substring); `name` picks one conversation.
        Counts come from the indexes, never a scan of another conversation's rows."""
        d = self.dialect
        found = f"{d.find}(lower(name), lower(:q)) > 0 OR {d.find}(lower(coalesce(title, '')), lower(:q)) > 0"
        matched = (
            "WITH listed AS (SELECT c.id, c.name, c.created_at, c.title,"
            "  (SELECT min(t.time) FROM turns t WHERE t.conversation_id = c.id) AS first_time,"
            "  (SELECT max(t.time) FROM turns t WHERE t.conversation_id = c.id) AS last_time"
            " FROM conversations c" + ("" if name is None else " WHERE c.name = :name") + "),"
            " matched AS (SELECT * FROM listed" + ("" if search is None else f" WHERE {found}") + ")")
        params = {"q": search, "name": name}
        total = self._value(f"{matched} SELECT count(*) FROM matched", **params)
        rows = self._rows(
            f"{matched} SELECT name, title, first_time, last_time,"
            " (SELECT count(*) FROM turns t WHERE t.conversation_id = matched.id),"
            " (SELECT count(*) FROM cues q WHERE q.conversation_id = matched.id)"
            " FROM matched ORDER BY coalesce(last_time, created_at) DESC, id DESC LIMIT :limit OFFSET :offset",
            **params, limit=limit, offset=offset)
        keys = ("conversation", "title", "first_time", "last_time", "turns", "cues")
        return total, [dict(zip(keys, r, strict=True)) for r in rows]
