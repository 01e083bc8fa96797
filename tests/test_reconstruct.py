"""Scored expansion (recall/reconstruct.py): turn vectors, and the speaker, date and graph terms, on real data."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import orjson
import pytest

from cuemem_cli import Memory
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.settings import Settings
from cuemem_cli.store.vectors import roundtrip

from conftest import copy_memory

MAYA = Path(__file__).resolve().parent.parent / "sample_dialogues" / "maya_and_leo.jsonl"
ASSISTANT = MAYA.with_name("assistant_chat.jsonl")


@pytest.fixture(scope="module")
def memory(maya_memory, tmp_path_factory):
    """Maya & Leo as `cuemem ingest` stores it (conftest.maya_memory)."""
    mem = Memory(copy_memory(maya_memory, tmp_path_factory.mktemp("rec")))
    yield mem
    mem.close()


def context(memory, question, **change):
    return reconstruct(memory.store, memory.embedder(), question, "maya-and-leo", replace(Settings(), **change))


def test_every_turn_is_embedded_whole_read_with_the_turn_before_it_in_its_session(memory):
    store = memory.store
    turns = {t.source_id: t for t in store.turns(store.conversation_id("maya-and-leo"))}
    vectors = store.turn_vectors([t.id for t in turns.values()])
    assert len(vectors) == len(turns) == 84
    embedder = memory.embedder()

    def stored(source_id: str) -> np.ndarray:
        return vectors[turns[source_id].id]

    def alone(source_id: str) -> np.ndarray:
        return roundtrip(embedder.embed([turns[source_id].text]))[0]

    def read_after(source_id: str, before: str) -> np.ndarray:
        return roundtrip(embedder.embed_in_context([(turns[source_id].text, turns[before].text)]))[0]

    # Stored as int8 codes: what the store gives back for the model's vectors (vectors.roundtrip).
    # s1:3 is read with s1:2, the turn before it, and differs from the turn alone;
    assert np.allclose(stored("s1:3"), read_after("s1:3", "s1:2"), atol=1e-6)
    assert not np.allclose(stored("s1:3"), alone("s1:3"), atol=1e-3)
    # s1:1 has no turn before it, and s2:1 opens a session: each is read alone, not after s1's last turn.
    last_of_s1 = max((t for t in turns.values() if t.session == "s1"), key=lambda t: t.position).source_id
    assert np.allclose(stored("s1:1"), alone("s1:1"), atol=1e-6)
    assert np.allclose(stored("s2:1"), alone("s2:1"), atol=1e-6)
    assert not np.allclose(stored("s2:1"), read_after("s2:1", last_of_s1), atol=1e-3)


MESSAGES = [{"conversation": "c", "session": "s1", "speaker": "Ana", "text": "Do you still paint?"},
            {"conversation": "c", "session": "s1", "speaker": "Ben", "text": "Yep, a few years back I started again."},
            {"conversation": "c", "session": "s1", "speaker": "Ana", "text": "Oils or watercolours?"},
            {"conversation": "c", "session": "s2", "speaker": "Ben", "text": "Guess what, I sold a painting!"},
            {"conversation": "c", "session": "s2", "speaker": "Ana", "text": "Congratulations, which one?"}]


@pytest.mark.slow
def test_an_appended_turn_is_read_after_the_stored_turn_before_it(tmp_path):
    """Ingesting a conversation in pieces gives the turn vectors one ingest gives."""
    with Memory(tmp_path / "one.db") as one, Memory(tmp_path / "pieces.db") as pieces:
        one.add(MESSAGES)
        for chunk in (MESSAGES[:2], MESSAGES[2:4], MESSAGES[4:]):
            pieces.add(chunk)
        vectors = [np.vstack(list(m.store.turn_vectors([t.id for t in m.store.turns(1)]).values()))
                   for m in (one, pieces)]
        assert np.allclose(*vectors, atol=1e-6)
        alone = roundtrip(one.embedder().embed([m["text"] for m in MESSAGES]))
        first_of_session = [0, 3]
        assert np.allclose(vectors[0][first_of_session], alone[first_of_session], atol=1e-6)
        assert float(vectors[0][1] @ alone[1]) < 0.99  # "Yep, a few years back…" is read after "Do you still paint?"


@pytest.mark.slow
def test_a_database_from_before_m005_keeps_its_turn_vectors_and_mixes_the_turn_before(tmp_path):
    """Such vectors hold the turn alone: appends stay so, and the previous turn is mixed in at question time."""
    from cuemem_cli.store.base import TURN_ALONE

    with Memory(tmp_path / "new.db") as new, Memory(tmp_path / "old.db") as old:
        new.add(MESSAGES[:4])
        old.add(MESSAGES[:4])
        turns = old.store.turns(1)
        with old.store.transaction():  # as m005 leaves a database written before it
            alone = old.embedder().embed([t.text for t in turns])
            old.store.insert_turn_vectors(list(zip([t.id for t in turns], alone, strict=True)))
            old.store.set_meta("turn_vectors", TURN_ALONE)
        old.add(MESSAGES[4:])
        [appended] = [t for t in old.store.turns(1) if t.text == MESSAGES[4]["text"]]
        assert np.allclose(old.store.turn_vectors([appended.id])[appended.id],
                           roundtrip(old.embedder().embed([appended.text]))[0], atol=1e-6)
        new.add(MESSAGES[4:])

        def scores(memory, weight):
            settings = replace(Settings(), context_weight=weight)
            found = reconstruct(memory.store, memory.embedder(), "What does Ben paint with?", "c", settings)
            return {e.source_id: e.score for e in found.evidence}

        assert scores(old, 0.0) != scores(old, 0.3)
        assert scores(new, 0.0) == scores(new, 0.3)  # the turn before is in the vector already

        exported = tmp_path / "old.jsonl"
        exported.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in old.export()))
        with Memory(tmp_path / "imported.db") as imported:  # how the README says to upgrade such a database
            imported.import_file(str(exported))
            vectors = [m.store.turn_vectors([t.id for t in m.store.turns(1)]) for m in (new, imported)]
            assert np.allclose(np.vstack(list(vectors[0].values())), np.vstack(list(vectors[1].values())), atol=1e-6)


def test_a_named_day_lifts_the_turns_said_that_week(memory):
    question = "What happened on 14 May, 2023?"
    said_then = lambda ctx: [e.time[:10] for e in ctx.evidence if "2023-05-14" <= e.time[:10] <= "2023-05-21"]  # noqa: E731
    without = context(memory, question, date_weight=0.0, budget=300)
    with_date = context(memory, question, budget=300)
    assert len(said_then(with_date)) >= 2 * len(said_then(without))
    assert len(said_then(with_date)) > len(with_date.evidence) / 2


def test_a_named_person_lifts_their_own_turns(memory):
    question = "What does Leo do for work?"
    by_leo = lambda ctx: sum(e.speaker == "Leo" for e in ctx.evidence) / len(ctx.evidence)  # noqa: E731
    without_lift = context(memory, question, speaker_weight=0.0, budget=300)
    assert by_leo(context(memory, question, budget=300)) > by_leo(without_lift)


def test_neighbours_compete_for_the_budget_instead_of_all_coming_in(memory):
    """One hop reaches many turns; only those that score high enough are kept, and each says how it came."""
    ctx = context(memory, "What breed is the dog Maya adopted?", budget=400)
    loose = context(memory, "What breed is the dog Maya adopted?", budget=100_000)
    assert ctx.tokens <= 400 < loose.tokens
    assert {"anchor", "temporal"} <= {e.via for e in loose.evidence}
    kept = sorted(ctx.evidence, key=lambda e: -e.score)
    dropped = {e.source_id for e in loose.evidence} - {e.source_id for e in ctx.evidence}
    lowest_kept = kept[-1].score
    better_dropped = [e for e in loose.evidence if e.source_id in dropped and e.score > lowest_kept]
    assert all(e.tokens > 400 - ctx.tokens for e in better_dropped), "a better turn was left out though it fit"
    assert np.all(np.diff([e.position for e in ctx.evidence]) > 0), "evidence is chronological"


def test_the_budget_counts_exactly_the_dialogue_the_model_reads(memory):
    from cuemem_cli.answer.prompt import build_messages
    from cuemem_cli.recall.lines import estimate_tokens

    ctx = context(memory, "Where did Maya and Leo travel together?", budget=600)
    user = build_messages(ctx)[1]["content"]
    block = user.split("<dialogue>\n", 1)[1].split("\n</dialogue>", 1)[0].split("\n")
    headers = [line for line in block if line.startswith("— ")]
    assert headers and len(headers) < len(ctx.evidence), "one header per day, not per turn"
    assert sum(estimate_tokens(line) for line in block) == ctx.tokens <= 600


@pytest.mark.parametrize("question, roles", [
    ("Which city did I move to for my new job?", {"user"}),
    ("What was the hotel you recommended?", {"assistant"}),
    ("Can you remind me what you suggested for my knee?", {"user", "assistant"}),
    ("Can you suggest a dinner for this weekend?", set()),  # a request, not a reference to the assistant
    ("What is Sam's diet?", set()),
])
def test_pronouns_name_the_roles_of_a_user_assistant_chat(question, roles):
    from cuemem_cli.recall.question import addressed_roles

    assert addressed_roles(question) == roles


@pytest.mark.slow
def test_a_first_person_question_lifts_the_users_turns(tmp_path):
    """The speaker lift for chats whose people are roles: with roles stored, "I" lifts the user's turns by
    the speaker weight; the same chat stored without roles gets no lift."""
    rows = [orjson.loads(line) for line in ASSISTANT.read_text().splitlines()]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(orjson.dumps({k: v for k, v in row.items() if k != "role"}).decode() + "\n"
                            for row in rows))
    question = "How far did I run on 14 March 2024?"
    scores = {}
    for name, path in (("roles", ASSISTANT), ("bare", bare)):
        with Memory(tmp_path / f"{name}.db") as mem:
            mem.ingest_file(path)
            ctx = reconstruct(mem.store, mem.embedder(), question, "assistant-chat", Settings(budget=100_000))
            scores[name] = {e.source_id: (e.speaker, e.score) for e in ctx.evidence}
    shared = scores["roles"].keys() & scores["bare"].keys()
    lift = {sid: scores["roles"][sid][1] - scores["bare"][sid][1] for sid in shared}
    by_sam = [lift[sid] for sid in shared if scores["roles"][sid][0] == "Sam"]
    by_assistant = [lift[sid] for sid in shared if scores["roles"][sid][0] == "Assistant"]
    assert by_sam and by_assistant
    assert min(by_sam) >= Settings().speaker_weight - 1e-3
    assert max(by_assistant) < Settings().speaker_weight / 2  # at most a neighbour's pull of the lift


KATE = [("Elise", "What's your name by the way?"), ("Emi", "Haha, I forgot to introduce myself, I'm Kate."),
        ("Elise", "Hey Kate! How was your weekend?"), ("Emi", "I went skiing in Aspen, it's my favourite sport."),
        ("Elise", "I love skiing too, I go every winter with my dad."), ("Elise", "Thanks Kate! Talk tomorrow."),
        ("Emi", "I also play padel with friends on Sundays."), ("Elise", "Hello Kate, how is the padel going?")]


def kate_chat(**extra) -> list[dict]:
    return [{"conversation": "chat", "session": "s1", "speaker": who, "text": text, **extra} for who, text in KATE]


def test_a_question_names_a_person_by_the_name_the_chat_calls_them(tmp_path, stub_models):
    """"Kate" is no speaker's label: the chat greets Emi by it, and Emi introduces herself by it. A name no
    turn holds is read as a near spelling of a label ("Elisa" for "Elise")."""
    from cuemem_cli.recall.people import named_people
    from cuemem_cli.recall.view import StoreSource

    with Memory(tmp_path / "m.db") as mem:
        mem.add(kate_chat())
        source = StoreSource(mem.store, mem.embedder().dim)
        speakers = mem.store.speakers()
        kate = named_people(source, "What sports does Kate play?", speakers, None)
        assert kate.known_as == {("chat", "Emi")} and kate.labels == set() and kate.words == ("Kate",)
        elisa = named_people(source, "Where does Elisa ski with her dad?", speakers, None)
        assert elisa.labels == {"Elise"} and elisa.known_as == set() and elisa.words == ("Elisa",)
        aspen = named_people(source, "Who went to Aspen?", speakers, None)  # a place, greeted by nobody
        assert aspen == named_people(source, "Who went skiing?", speakers, None)


@pytest.mark.slow
def test_a_learned_name_lifts_that_persons_turns_and_stays_out_of_the_topic(tmp_path):
    """Without learned names "Kate" is just a word of the question: the turns holding it match it and hers
    get no speaker lift, so her introduction ranks first. With them, her two sports lead."""
    with Memory(tmp_path / "m.db") as mem:
        mem.add(kate_chat())
        question = "What sports does Kate play?"

        def ranked(**change) -> list[str]:
            ctx = reconstruct(mem.store, mem.embedder(), question, "chat", replace(Settings(budget=100_000), **change))
            return [e.text for e in sorted(ctx.evidence, key=lambda e: -e.score)]

        sports = {KATE[3][1], KATE[6][1]}
        assert set(ranked()[:2]) == sports
        assert "Kate" in ranked(learned_names=False)[0]


@pytest.mark.parametrize("text, asks", [
    ("What kind of food do you like?", True),
    ("How about you?", True),
    ("Do you like sushi? I love it.", False),  # says something of its writer
    ("I wonder, what should we cook tonight?", False),
    ("Mostly Italian food.", False),
])
def test_a_turn_that_only_asks_is_told_apart(text, asks):
    from cuemem_cli.recall.score import asks_only

    assert asks_only(text) is asks


def test_a_turn_that_only_asks_loses_the_asking_weight_and_still_pulls_its_answer(tmp_path, stub_models):
    """"Which sports do you play?" matches "Which sports does Ana play?" word for word, yet says nothing; the
    answer after it keeps the pull of the question's own score."""
    chat = [("Ben", "Which sports do you play?"), ("Ana", "Mostly tennis, and padel on weekends."),
            ("Ben", "I play football with my brother."), ("Ana", "Nice, I watch football sometimes.")]
    with Memory(tmp_path / "m.db") as mem:
        mem.add([{"conversation": "c", "session": "s", "speaker": who, "text": text} for who, text in chat])

        def scores(**change) -> dict[str, float]:
            ctx = reconstruct(mem.store, mem.embedder(), "Which sports does Ana play?", "c",
                              replace(Settings(budget=100_000), **change))
            return {e.text: e.score for e in ctx.evidence}

        with_prior, without = scores(), scores(asking_weight=0.0)
        assert with_prior.keys() == without.keys() == {text for _, text in chat}
        for text in with_prior:
            drop = Settings().asking_weight if text == chat[0][1] else 0.0
            assert with_prior[text] == pytest.approx(without[text] - drop, abs=2e-4), text
