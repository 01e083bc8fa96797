"""Who is who (cues/names.py): the names a chat calls its people by, learned from how they are addressed
and how they introduce themselves; and a question's spelling of a name the chat never writes."""

from __future__ import annotations

import json

import pytest

from cuemem_cli.cues.names import CLOSING, GREETED, INTRODUCED, addressed, introduced, learn, signs, spelled_like
from cuemem_cli.records import Turn


def chat(*lines: tuple[str, str], conversation: str = "c") -> list[Turn]:
    return [Turn(i, conversation, i, f"t{i}", text, speaker=speaker) for i, (speaker, text) in enumerate(lines)]


TWO = {"c": frozenset({"Emi", "Elise"})}


@pytest.mark.parametrize("text, names", [
    ("Hey Kate!", ["Kate"]),
    ("Thank you so much Kate. I'm going to sign up now", ["Kate"]),
    ("Wow Kate, that looks amazing.", ["Kate"]),
    ("Kate", ["Kate"]),
    ("Hi Kate and Tom, long time", []),  # two people greeted: neither is the one reading
    ("I went to Paris with Kate.", []),
    ("Hey! How are you?", []),
    ("Certainly! Here is the recipe.", []),
])
def test_a_greeting_names_the_one_addressed(text, names):
    assert addressed(text) == names


@pytest.mark.parametrize("text, names", [
    ("Do you enjoy smoothies Kate?", ["Kate"]),
    ("That's quite ambitious, Emily!", ["Emily"]),
    ("Those look amazing Kate!", ["Kate"]),
    ("I'm from Houston, Texas.", []),  # a place after a place, not a person after a comma
    ("Have you ever been to Paris?", []),  # what the sentence is about
    ("Do you like Julio?", []),
])
def test_the_end_of_a_sentence_addresses_someone_only_after_a_word_in_lower_case(text, names):
    assert addressed(text, closing=True) == names
    assert addressed(text) == []  # a weaker sign: it supports a name, never learns one alone


@pytest.mark.parametrize("text, names", [
    ("Haha, totally forgot to introduce myself, I'm Kate. What's your name?", ["Kate"]),
    ("My name is Emilia, nice to meet you Kevin.", ["Emilia"]),
    ("I'm Italian, so pasta is serious business", []),
    ("I'm Emily", ["Emily"]),
    ("I got a puppy! Her name's Coco.", []),  # someone else's name
])
def test_an_introduction_names_its_writer(text, names):
    assert introduced(text) == names


def test_a_name_is_learned_from_greetings_for_the_other_person_of_a_chat_of_two():
    turns = chat(("Elise", "What's your name by the way?"), ("Emi", "Haha, I'm Kate. What's yours?"),
                 ("Elise", "I'm Emily"), ("Elise", "Hey Kate!"), ("Emi", "Hey Emily! How are you?"),
                 ("Elise", "Those look amazing Kate!"), ("Emi", "Thanks Emily!"), ("Elise", "I'm doing well Emily."))
    assert learn(turns, TWO) == {("c", "Kate"): "Emi", ("c", "Emily"): "Elise"}
    assert learn(turns, TWO, wanted=["Kate"]) == {("c", "Kate"): "Emi"}


def test_a_name_said_once_or_mostly_about_someone_is_not_learned():
    once = chat(("Elise", "Hey Kate!"), ("Emi", "Hi!"))
    assert learn(once, TWO) == {}
    about = chat(("Elise", "Hey Julio!"), ("Elise", "Thanks Julio!"), ("Emi", "Julio came over"),
                 ("Elise", "Julio is so funny"), ("Emi", "I met Julio at work"), ("Elise", "Did Julio call?"),
                 ("Emi", "Julio again"))
    assert learn(about, TWO) == {}  # two greetings among seven mentions: a third person, not a name of Emi


def test_a_label_is_never_learned_as_a_name_and_a_chat_of_three_learns_only_introductions():
    turns = chat(("Emi", "Hey Elise!"), ("Emi", "Thanks Elise!"))
    assert learn(turns, TWO) == {}
    three = {"c": frozenset({"Ana", "Ben", "Cy"})}
    greeted = chat(("Ana", "Hey Bobby!"), ("Cy", "Thanks Bobby!"), ("Ben", "Hi all, call me Bobby."))
    assert learn(greeted, three) == {("c", "Bobby"): "Ben"}
    assert learn(greeted[:2], three) == {}  # greeted, but by whom of the two others?


def test_a_name_is_learned_per_conversation():
    turns = [*chat(("Elise", "Hey Kate!"), ("Elise", "Hi Kate!")),
             *chat(("Paola", "Hey Bella!"), ("Paola", "Thank you, Bella!"), conversation="d")]
    people = {**TWO, "d": frozenset({"Emi", "Paola"})}
    assert learn(turns, people) == {("c", "Kate"): "Emi", ("d", "Bella"): "Emi"}


@pytest.mark.parametrize("name, known, meant", [
    ("Elisa", ["Elise", "Emi"], "Elise"),
    ("Eliza", ["Elise", "Emi"], "Elise"),  # two letters in a name of five
    ("Emiy", ["Emi", "Elise"], "Emi"),
    ("Paris", ["Paola"], None),
    ("Kim", ["Tim"], None),  # another first letter: another name
    ("Jon", ["John", "Joan"], None),  # two names as close: neither
])
def test_a_spelling_names_the_one_label_close_to_it(name, known, meant):
    assert spelled_like(name, known) == meant


def test_a_turns_signs_are_each_way_it_names_someone_once():
    assert signs("Hey Kate! I'm Emily.") == [("Emily", INTRODUCED), ("Kate", GREETED)]
    assert signs("Do you enjoy smoothies Kate? Thanks Kate!") == [("Kate", GREETED)]  # greeted beats closing
    assert signs("Do you enjoy smoothies Kate?") == [("Kate", CLOSING)]
    assert signs("I went to Paris with Kate.") == []


def test_an_address_at_the_end_of_a_long_sentence_is_found_in_time_linear_in_its_length():
    """`addressed` with `closing` tried a match at every position of a sentence and read on to its end from
    each: a real ChatGPT answer of 13,000 characters took 1.8 s (the 500-chat export, 160 s). Its matches
    are the same read once: 200,000 characters without a sentence's end, then the name."""
    import time

    text = "so " * 70_000 + "enjoy smoothies Kate?"
    started = time.perf_counter()
    assert addressed(text, closing=True) == ["Kate"]
    assert time.perf_counter() - started < 5  # quadratic: 200,000² steps, hours


# --------------------------------------------------- the names ingest keeps
KATE = [("Elise", "What's your name by the way?"), ("Emi", "Haha, I forgot to introduce myself, I'm Kate."),
        ("Elise", "Hey Kate! How was your weekend?"), ("Emi", "I went skiing in Aspen, it's my favourite sport."),
        ("Elise", "Thanks Kate! Talk tomorrow."), ("Emi", "Bye Elly!"), ("Elise", "Hello Kate, how is padel?")]


def _stored(memory) -> dict[tuple[str, str], str]:
    return {(c, n): who for c, n, who in memory.store.learned_names()}


def _learned_from_turns(memory) -> dict[tuple[str, str], str]:
    from cuemem_cli.store.base import maintenance

    store = memory.store
    people = {name: store.speaker_sets([cid]).get(cid, frozenset()) for cid, name, _ in store.conversations()}
    return learn([t for cid, _, _ in store.conversations() for t in maintenance(store).turns(cid)], people)


def _unlearnable(monkeypatch) -> None:
    """Reading a turn's text for names from here on fails the test: what is shown must be read from the index."""
    def read_again(text):
        raise AssertionError("a chat's names were learned again from its turns")

    monkeypatch.setattr("cuemem_cli.cues.names._greeted", read_again)
    monkeypatch.setattr("cuemem_cli.cues.names.introduced", read_again)


def test_ingest_keeps_each_chats_names_and_reads_learn_nothing_again(tmp_path, stub_models, cli, monkeypatch):
    """A turn at a time (as an MCP server stores them) the stored names are what learning from all the turns
    gives; `inspect-graph` and a question then read them, and never read the turns for names again."""
    from cuemem_cli import Memory
    from cuemem_cli.recall.people import named_people
    from cuemem_cli.recall.view import MemoryView, StoreSource

    db = tmp_path / "m.db"
    with Memory(db) as memory:
        for i, (who, text) in enumerate(KATE):
            memory.add([{"conversation": "chat", "session": "s1", "speaker": who, "text": text}])
            assert _stored(memory) == _learned_from_turns(memory), f"after turn {i}"
        memory.add([{"conversation": "other", "speaker": who, "text": text} for who, text in KATE[:3]])
        assert _stored(memory) == _learned_from_turns(memory) == {("chat", "Kate"): "Emi", ("other", "Kate"): "Emi"}
        _unlearnable(monkeypatch)
        speakers = memory.store.speakers()
        for source in (StoreSource(memory.store, 8), MemoryView(memory.store, memory.embedder().dim)):
            kate = named_people(source, "What sports does Kate play?", speakers, None)
            assert kate.known_as == {("chat", "Emi"), ("other", "Emi")} and kate.words == ("Kate",)
        assert memory.context("What sports does Kate play?").evidence
    shown = json.loads(cli("--db", str(db), "inspect-graph", "--json").stdout)
    assert {s["conversation"]: s["names"] for s in shown["conversations"]} == {"chat": {"Emi": ["Kate"]},
                                                                               "other": {"Emi": ["Kate"]}}


def test_forgetting_or_replacing_turns_learns_the_chats_names_again(tmp_path, stub_models):
    """A name learned from turns that are forgotten goes with them; one a replaced turn no longer says too."""
    from cuemem_cli import Memory

    with Memory(tmp_path / "m.db") as memory:
        memory.add([{"conversation": "chat", "speaker": who, "text": text, "id": f"t{i}"}
                    for i, (who, text) in enumerate(KATE)])
        assert _stored(memory) == {("chat", "Kate"): "Emi"}
        memory.add([{"conversation": "chat", "speaker": "Emi", "id": "t1", "text": "I forgot to introduce myself."}],
                   replace=True)
        assert _stored(memory) == _learned_from_turns(memory) == {("chat", "Kate"): "Emi"}  # still greeted thrice
        memory.forget(conversation="chat", turns=["t2", "t4"])
        assert _stored(memory) == _learned_from_turns(memory) == {}


def test_an_older_memory_reads_names_from_its_turns_until_reindexed(tmp_path, stub_models, cli):
    """A memory written before m017 gets empty tables: `inspect-graph` learns its names from all the turns (and
    says to run `cuemem reindex`), a question from the turns holding them; `cuemem reindex` builds what an
    ingest of today would have, and the same names are then read."""
    from cuemem_cli import Memory

    from conftest import raw

    db = tmp_path / "m.db"
    with Memory(db) as memory:
        memory.add([{"conversation": "chat", "speaker": who, "text": text} for who, text in KATE])
        memory.add([{"conversation": "other", "speaker": who, "text": text} for who, text in KATE[:3]])
        signs_today = memory.store.conn.execute("SELECT * FROM name_signs ORDER BY turn_id, name, how").fetchall()
        assert _stored(memory) and signs_today
    conn = raw(db)
    with conn:
        conn.execute("DROP TABLE name_signs")
        conn.execute("DROP TABLE learned_names")
        conn.execute("DELETE FROM meta WHERE key = 'names_indexed'")
        conn.execute("DELETE FROM _migrations WHERE name = 'm017_name_index'")
    conn.close()

    shown = cli("--db", str(db), "inspect-graph", "--json")
    assert {s["conversation"]: s["names"] for s in json.loads(shown.stdout)["conversations"]} == {
        "chat": {"Emi": ["Kate"]}, "other": {"Emi": ["Kate"]}}
    assert "cuemem reindex" in shown.stderr
    with Memory(db) as memory:
        assert _stored(memory) == {}
        kate = memory.context("What sports does Kate play?")
        assert kate.evidence
    done = cli("--db", str(db), "reindex", "--json")
    assert json.loads(done.stdout)["names"]["turns"] == len(KATE) + 3
    with Memory(db) as memory:
        assert memory.store.conn.execute("SELECT * FROM name_signs ORDER BY turn_id, name, how").fetchall() == \
            signs_today
        assert _stored(memory) == {("chat", "Kate"): "Emi", ("other", "Kate"): "Emi"}
    again = cli("--db", str(db), "inspect-graph")
    assert "reindex" not in again.stderr and "Kate" in again.stdout
