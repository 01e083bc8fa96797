"""Long turns shown as excerpts (recall/excerpt.py): the pure cut, then `ask` on a chat with a very long answer."""

from __future__ import annotations

import json

import orjson
import pytest

from cuemem_cli.recall.excerpt import GAP, excerpt
from cuemem_cli.recall.lines import estimate_tokens
from cuemem_cli.text import sentences

TEXT = ("We land in Osaka on Monday. The hotel is near the station. Breakfast is included every day. "
        "The museum closes early on Fridays. We fly home from Tokyo.")


def under(tokens: int):
    return lambda text: estimate_tokens(text) <= tokens


def test_a_turn_that_fits_is_returned_whole():
    assert excerpt(TEXT, {}, under(1000)) == TEXT


def test_the_best_sentences_are_kept_in_their_order_with_gaps_marked():
    parts = sentences(TEXT)
    similarity = {parts[0]: 0.1, parts[1]: 0.2, parts[2]: 0.3, parts[3]: 0.9, parts[4]: 0.8}
    cut = excerpt(TEXT, similarity, under(20))
    assert cut == f"{GAP} The museum closes early on Fridays. We fly home from Tokyo."
    cut = excerpt(TEXT, similarity, under(26))
    assert cut == f"{GAP} Breakfast is included every day. The museum closes early on Fridays. We fly home from Tokyo."
    parts_far_apart = {parts[0]: 0.9, parts[4]: 0.8}
    assert excerpt(TEXT, parts_far_apart, under(20)) == f"We land in Osaka on Monday. {GAP} We fly home from Tokyo."


def test_a_lower_sentence_that_fits_still_comes_in_after_one_that_does_not():
    long = "This sentence is rather long and goes on and on about nothing in particular at all."
    text = f"Short one here. {long} Tiny fact stated."
    parts = sentences(text)
    similarity = {parts[0]: 0.9, parts[1]: 0.5, parts[2]: 0.4}
    cut = excerpt(text, similarity, under(12))
    assert cut == f"Short one here. {GAP} Tiny fact stated."


def test_the_best_sentence_is_kept_even_when_it_alone_is_over_the_limit():
    parts = sentences(TEXT)
    cut = excerpt(TEXT, {parts[2]: 0.5}, under(3))
    assert cut == f"{GAP} Breakfast is included every day. {GAP}"


def test_without_sentence_cues_the_opening_is_kept():
    assert excerpt(TEXT, {}, under(16)) == f"We land in Osaka on Monday. The hotel is near the station. {GAP}"


FILLER_TOPICS = ["socks", "chargers", "an umbrella", "sunscreen", "a rail pass", "cash", "a towel", "snacks",
                 "a notebook", "earplugs", "a scarf", "medicine", "a map", "headphones", "a water bottle"]
FACT = "For ramen in Kyoto, the one to try is Menya Inoichi, a small shop near Nishiki Market."


def long_answer() -> str:
    """~60 sentences (~1,000 tokens): longer than a 600-token budget, the fact sentence in the middle."""
    topics = len(FILLER_TOPICS)
    filler = [f"Tip {i + 1}: pack {FILLER_TOPICS[i % topics]} for day {i // topics + 2} of the trip."
              for i in range(60)]
    return " ".join([*filler[:31], FACT, *filler[31:]])


@pytest.fixture
def long_chat(tmp_path, cli, stub_models):
    """Stand-in models: the excerpt keeps the sentences nearest the question, and words shared with it make
    a sentence near under the stub embedder too."""
    rows = [
        {"speaker": "Sam", "role": "user", "text": "I'm going to Japan in May, can you help me get ready?"},
        {"speaker": "Assistant", "role": "assistant", "text": long_answer()},
        {"speaker": "Sam", "role": "user", "text": "Thanks, that is a lot of packing."},
        {"speaker": "Assistant", "role": "assistant", "text": "You're welcome, have a great trip!"},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(
        json.dumps({"conversation": "trip", "session": "s1", "id": f"s1:{i + 1}",
                    "time": f"2024-03-01T10:0{i}:00", **row}) + "\n"
        for i, row in enumerate(rows)))
    assert cli("ingest", str(path)).exit_code == 0
    return path


QUESTION = "Which ramen shop in Kyoto did the assistant recommend?"


def test_a_turn_longer_than_the_budget_comes_in_as_an_excerpt_holding_the_fact(long_chat, cli):
    result = cli("ask", QUESTION, "--context-only", "--budget", "600", "--json")
    assert result.exit_code == 0, result.stderr
    evidence = {e["source_id"]: e for e in orjson.loads(result.stdout)["evidence"]}
    shown = evidence["s1:2"]
    assert shown["excerpt"] is True
    assert FACT in shown["text"] and GAP in shown["text"]
    assert shown["tokens"] <= 150 < estimate_tokens(long_answer())
    assert not evidence["s1:1"]["excerpt"]


def test_excerpt_zero_shows_turns_whole_so_one_longer_than_the_budget_never_fits(long_chat, cli):
    result = cli("ask", QUESTION, "--context-only", "--budget", "600", "--excerpt", "0", "--json")
    assert result.exit_code == 0, result.stderr
    ids = [e["source_id"] for e in orjson.loads(result.stdout)["evidence"]]
    assert "s1:2" not in ids and "s1:1" in ids


def test_the_sql_and_the_in_memory_view_cut_the_same_excerpt(long_chat):
    from cuemem_cli import Memory
    from cuemem_cli.recall.reconstruct import reconstruct
    from cuemem_cli.recall.settings import Settings

    with Memory(long_chat.parent / "memory.db", create=False) as memory:
        first, second = (reconstruct(memory.store, memory.embedder(), QUESTION, "trip", Settings(budget=600))
                         for _ in range(2))  # the first question reads SQLite, the second the cached view
    assert [(e.source_id, e.text) for e in first.evidence] == [(e.source_id, e.text) for e in second.evidence]
    assert any(e.excerpt for e in first.evidence)


def test_the_answer_prompt_explains_the_gap_mark(long_chat, cli, fake_llm):
    fake_llm.default = "Menya Inoichi"
    result = cli("ask", QUESTION, "--budget", "600", "--model", "fake/model", "--json")
    assert result.exit_code == 0, result.stderr
    system, user = fake_llm.requests[-1]
    assert f'"{GAP}" marks sentences left out' in system["content"]
    assert FACT in user["content"]


def test_refusing_trials_by_length_changes_no_excerpt():
    """`max_chars` refuses a trial from the length it would have (kept as sentences join) without joining
    it: with `fits` a length limit, every cut equals the one `fits` alone makes, whatever is chosen."""
    import random

    rng = random.Random(34)
    words = TEXT.replace(".", "").split()
    for _ in range(300):
        text = " ".join(" ".join(rng.choices(words, k=rng.randint(2, 9))).capitalize() + "."
                        for _ in range(rng.randint(2, 9)))
        parts = sentences(text)
        similarity = {part: rng.random() for part in parts if rng.random() < 0.8}
        limit = rng.randint(10, len(text))
        alone = excerpt(text, similarity, lambda t, limit=limit: len(t) <= limit)
        assert excerpt(text, similarity, lambda t, limit=limit: len(t) <= limit, max_chars=limit) == alone


def test_long_candidates_are_cut_only_as_the_budget_reaches_them():
    """`Excerpts` cuts a long turn when `fill_budget` reaches it, fetching sentence similarities for it and
    the next long turns together: of 200 long candidates, only the first few are ever fetched. While the
    room is at least the excerpt limit it cuts exactly as the eager cut did, and the block fits the budget."""
    from cuemem_cli.recall.evidence import context_tokens, fill_budget
    from cuemem_cli.recall.excerpt import Excerpts, excerpt_turn
    from cuemem_cli.records import Turn

    long_text = " ".join(f"Sentence number {i} of this answer says something about item {i}." for i in range(60))
    turns = [Turn(id=i + 1, conversation="c", position=i, source_id=f"t{i}", text=long_text, session="1",
                  time="2024-05-01T10:00:00", speaker="assistant", role="assistant", stored_at=None, title=None)
             for i in range(200)]

    class Source:
        def __init__(self):
            self.fetched: list[int] = []

        def sentence_similarities(self, turn_ids, vector):
            self.fetched += turn_ids
            return {tid: {s: (tid * 7 + n) % 11 / 10 for n, s in enumerate(sentences(long_text))} for tid in turn_ids}

    source = Source()
    excerpts = Excerpts(source, None, 150, turns)
    chosen = fill_budget(turns, 2000, excerpts)
    assert context_tokens(chosen) <= 2000 and len(chosen) >= 12
    assert len(set(source.fetched)) <= len(chosen) + Excerpts.TAIL + Excerpts.CHUNK < 200
    eager = {t.id: excerpt_turn(t, Source().sentence_similarities([t.id], None)[t.id], 150) for t in turns[:10]}
    assert [t.text for t in chosen[:10]] == [eager[t.id].text for t in turns[:10]]
    assert {t.id for t in chosen} <= set(excerpts.cut)  # every one shown shorter, and said so (`Evidence.excerpt`)
