"""`NameRows`, who is who as the store keeps it (`NameIndex`): each turn's signs of a name and each
conversation's learned names (m017; cues/names.py reads and learns them, ingest/names.py keeps them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .core import SQLRows


class NameRows(SQLRows):
    """The name index, written once for both backends."""

    def replace_name_signs(self, turn_ids: Sequence[int], rows: Sequence[tuple[int, int, str, int]]) -> None:
        """The signs of these turns are `rows`, (conversation id, turn id, name, how), and no others."""
        d = self.dialect
        self._execute(f"DELETE FROM name_signs WHERE {d.within('turn_id', 'ids')}", {"ids": d.array(turn_ids)})
        if rows:
            self._executemany("INSERT INTO name_signs(conversation_id, turn_id, name, how)"
                              " VALUES (:cid, :turn, :name, :how)",
                              [{"cid": c, "turn": t, "name": n, "how": h} for c, t, n, h in rows])

    def name_signs(self, conversation_id: int) -> list[tuple[int, str | None, str | None, str, int]]:
        """(turn id, its speaker, its role, name, how) of every sign of a name the conversation's turns hold."""
        return self._rows("SELECT s.turn_id, t.speaker, t.role, s.name, s.how FROM name_signs s"
                          " JOIN turns t ON t.id = s.turn_id WHERE s.conversation_id = :cid"
                          " ORDER BY t.position, s.how, s.name", cid=conversation_id)

    def texts_holding(self, conversation_id: int, word: str) -> list[str]:
        """The texts of the conversation's turns that hold `word` anywhere, in its case (a superset of the
        turns that mention it as a word: cues/names.mentions counts those)."""
        return [r[0] for r in self._rows(f"SELECT text FROM turns WHERE conversation_id = :cid"
                                         f" AND {self.dialect.find}(text, :word) > 0", cid=conversation_id,
                                         word=word)]

    def set_learned_names(self, conversation_id: int, learned: Mapping[str, str]) -> None:
        """The conversation's learned names (name → the speaker it means) are `learned`, and no others."""
        self._execute("DELETE FROM learned_names WHERE conversation_id = :cid", {"cid": conversation_id})
        if learned:
            self._executemany("INSERT INTO learned_names(conversation_id, name, speaker) VALUES (:cid, :name, :who)",
                              [{"cid": conversation_id, "name": n, "who": w} for n, w in learned.items()])

    def learned_names(self, names: Sequence[str] | None = None,
                      conversation_ids: Sequence[int] | None = None) -> list[tuple[str, str, str]]:
        """(conversation name, name, the speaker it means there) of the names learned, of `names` only
        (None: all) and in the given conversations (None: all), by conversation then name."""
        scope, params = self._scope("n.conversation_id", conversation_ids)
        wanted = "1 = 1" if names is None else self.dialect.within("n.name", "names")
        if names is not None:
            params["names"] = self.dialect.array(names)
        return self._rows("SELECT c.name, n.name, n.speaker FROM learned_names n"
                          f" JOIN conversations c ON c.id = n.conversation_id WHERE {scope} AND {wanted}"
                          " ORDER BY c.id, n.name", **params)
