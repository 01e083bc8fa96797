"""The offline answer reads its evidence sentences' vectors from the memory (answer/stored_vectors.py): ingest
stored them as statement cues, and embedding them again at every question was most of a `cuemem ask`."""

from __future__ import annotations

import numpy as np

from cuemem_cli.answer import stored_vectors
from cuemem_cli.answer.stored_vectors import Embedded, Remembered

CHAT = [("Maya", "I adopted a beagle from the shelter last spring. His name is Biscuit and he loves long walks."),
        ("Leo", "What a lovely dog. Does Biscuit get along with your cat Pepper?"),
        ("Maya", "They sleep together on the sofa every afternoon. Pepper taught him to climb the bookshelf."),
        ("Leo", "Here is my config:\n```\nport = 8080\n```\nIt runs the dog-walking app on my laptop.")]


class Counting:
    """The memory's own embedder, counting the texts it is asked to embed."""

    def __init__(self, embedder):
        self.embedder, self.texts = embedder, []
        self.dim, self.model_id, self.name = embedder.dim, embedder.model_id, embedder.name

    def embed(self, texts):
        self.texts += list(texts)
        return self.embedder.embed(texts)


def test_an_answer_reads_the_stored_sentence_vectors_and_embeds_only_the_rest(tmp_path, stub_models):
    """Every evidence sentence that is a statement cue is read, not embedded; what is embedded (the question, the
    turn before a sentence, phrases) is kept for the next question, whose answer embeds nothing it embedded
    before; and the answer is the one embedding every sentence gives."""
    from cuemem_cli import Memory
    from cuemem_cli.answer.extractive import answer_extractively
    from cuemem_cli.cues.statements import cue_text
    from cuemem_cli.records import Triple
    from cuemem_cli.store.base import maintenance

    with Memory(tmp_path / "m.db") as memory:
        memory.add([{"conversation": "pets", "session": "s1", "speaker": who, "text": text} for who, text in CHAT])
        counting = Counting(memory.embedder())
        memory._embedder = counting
        store = memory.store
        statements = {cue_text(Triple(c.subject, c.relation, c.object, kind=c.kind), turn.speaker)
                      for turn in maintenance(store).turns(store.conversation_id("pets"))
                      for c in maintenance(store).cues_of_turns([turn.id]).get(turn.id, []) if c.kind == "statement"}
        question = "What is the name of Maya's dog?"
        context = memory.context(question)
        counting.texts.clear()
        asked = memory.ask(question, record_retrieval=False)
        assert len(statements) >= 5 and not statements & set(counting.texts)
        assert counting.texts  # the question, and what no cue holds, are embedded
        # The turn before a sentence: the first of its session is read from its stored vector (the stand-in
        # model has no `reads_alone`, so a later turn, read in context at ingest, is embedded again).
        assert CHAT[0][1] not in counting.texts and CHAT[1][1] in counting.texts
        assert asked.context.evidence == context.evidence
        assert asked.answer == answer_extractively(context, counting.embedder)
        embedded = set(counting.texts)
        counting.texts.clear()
        memory.ask("Which pet climbs the bookshelf?", record_retrieval=False)
        assert not embedded & set(counting.texts)


def test_remembered_gives_stored_vectors_first_then_those_it_embedded(monkeypatch):
    class Words:
        dim, calls = 2, 0

        def embed(self, texts):
            Words.calls += 1
            return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

    monkeypatch.setattr(stored_vectors, "EMBEDDED_KEPT", 3)
    kept = Embedded()
    remembered = Remembered(Words(), {"stored": np.array([9.0, 9.0], dtype=np.float32)}, kept)
    got = remembered.embed(["stored", "ab", "ab", "abc"])
    assert got.tolist() == [[9, 9], [2, 1], [2, 1], [3, 1]] and remembered.embedded == 2 and Words.calls == 1
    assert remembered.embed(["abc", "stored"]).tolist() == [[3, 1], [9, 9]] and Words.calls == 1  # kept: no call
    assert remembered.embed([]).shape == (0, 2) and remembered.dim == 2
    remembered.embed(["abcd", "abcde"])
    assert set(kept) == {"abcd", "abcde"}  # over EMBEDDED_KEPT: started again
