"""One memory across every conversation (issue 34): edges across chats, questions over the whole memory or
narrowed by name or title, evidence from several chats with its headers paid for, relative dates resolved."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from cuemem_cli import Memory
from cuemem_cli.errors import CuememError
from cuemem_cli.ingest.pipeline import IngestReport, Ingestor
from cuemem_cli.recall.evidence import chronological, context_tokens, dialogue_lines, fill_budget
from cuemem_cli.recall.lines import estimate_tokens, evidence_line
from cuemem_cli.recall.reconstruct import reconstruct
from cuemem_cli.recall.scope import resolve_scope
from cuemem_cli.recall.score import circle_strength, within_circles
from cuemem_cli.recall.settings import Settings
from cuemem_cli.records import Cue, Message, Triple, Turn
from cuemem_cli.recall.view import Hops

from conftest import copy_memory

SAMPLES = Path(__file__).resolve().parent.parent / "sample_dialogues"
VECTORS = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.8, 0.6, 0.0], "d": [0.6, 0.0, 0.8]}
LISBON = [
    {"conversation": "c-9f1", "title": "Lisbon trip", "session": "1", "speaker": "Ana", "role": "user",
     "time": "2024-05-03T10:00:00", "text": "We are staying at a guesthouse in Alfama for the Lisbon trip."},
    {"conversation": "c-9f1", "title": "Lisbon trip", "session": "1", "speaker": "Assistant", "role": "assistant",
     "time": "2024-05-03T10:01:00", "text": "Alfama is lovely: steep streets, fado bars and views of the river."},
    {"conversation": "c-9f1", "title": "Lisbon trip", "session": "2", "speaker": "Ana", "role": "user",
     "time": "2024-05-09T18:00:00", "text": "We took the tram to Belém yesterday and ate pastéis de nata."},
    {"conversation": "c-2b7", "title": "Lisbon trip", "session": "1", "speaker": "Ana", "role": "user",
     "time": "2023-11-20T09:00:00", "text": "Plan a weekend in Lisbon for my parents in December."},
]


class KeyedEmbedder:
    """Fixed vectors by the last word of a text, so similarities can be worked out by hand."""

    model_id, dim, name = "hand", 3, "hand"

    def embed(self, texts):
        return np.array([VECTORS[t.split()[-1]] for t in texts], dtype=np.float32)

    def embed_in_context(self, pairs):
        return self.embed([text for text, _ in pairs])


class OneCue:
    name = "one-cue"

    def extract(self, turns):
        return [[Triple("s", "r", t.text)] for t in turns]


def _edges(store):
    names = {t.id: f"{t.conversation}/{t.source_id}" for cid, _, _ in store.conversations() for t in store.turns(cid)}
    return {(names[s], names[d], kind, round(w, 2), rank) for s, d, kind, w, rank in store.all_edges()}


def test_semantic_edges_cross_conversations_and_a_later_ingest_never_rewrites_old_ones(store):
    ingest = Ingestor(store, OneCue(), KeyedEmbedder(), window=1, sem_k=1)
    ingest.run([Message("x", text, source_id=f"t{i}") for i, text in enumerate(["a", "b"])], IngestReport())
    before = _edges(store)
    later = Ingestor(store, OneCue(), KeyedEmbedder(), window=1, sem_k=1)  # another run, as a new process
    later.run([Message("y", text, source_id=f"t{i}") for i, text in enumerate(["c", "d"])], IngestReport())
    after = _edges(store)
    assert before <= after
    assert {e for e in after if e[0].startswith("x/")} == {e for e in before if e[0].startswith("x/")}
    # y's "c" (0.8, 0.6, 0) is nearest to x's "a"; y's "d" (0.6, 0, 0.8) too (0.6 beats c's 0.48 and b's 0)
    assert ("y/t0", "x/t0", "semantic", 0.8, 1) in after and ("y/t1", "x/t0", "semantic", 0.6, 1) in after
    assert ("y/t1", "y/t0", "temporal", 1.0, 1) in after
    assert not {e for e in after if e[2] == "temporal" and e[0][0] != e[1][0]}  # temporal edges stay in a chat


def test_the_edges_inside_a_conversation_are_those_it_would_have_alone(store, tmp_path):
    """A question narrowed to a chat follows only edges inside it: other chats in the memory, however
    alike, must not thin them (each cue keeps its top-k within its own conversation too)."""
    from cuemem_cli.store.sqlite import SQLiteStore

    chat = [Message("x", text, source_id=f"t{i}") for i, text in enumerate(["a", "c", "d"])]
    Ingestor(store, OneCue(), KeyedEmbedder(), window=1, sem_k=1).run(chat, IngestReport())
    alone = {e for e in _edges(store) if e[2] == "semantic"}
    shared = SQLiteStore.open(tmp_path / "shared.db")
    try:
        before = [Message("z", text, source_id=f"t{i}") for i, text in enumerate(["a", "c"])]
        Ingestor(shared, OneCue(), KeyedEmbedder(), window=1, sem_k=1).run(before, IngestReport())
        Ingestor(shared, OneCue(), KeyedEmbedder(), window=1, sem_k=1).run(chat, IngestReport())
        edges = {e for e in _edges(shared) if e[2] == "semantic"}
    finally:
        shared.close()
    inside = {e for e in edges if e[0].startswith("x/") and e[1].startswith("x/")}
    assert inside == alone and ("x/t1", "x/t0", "semantic", 0.8, 1) in inside
    # x's "c" is nearest to z's "c" across the memory: that edge is there too, as rank 1 of the whole memory
    assert ("x/t1", "z/t1", "semantic", 1.0, 1) in edges


def test_chats_with_the_same_people_stay_one_neighbourhood_among_other_peoples(store):
    """Sessions of one friendship exported as separate chats, among chats of other people: each cue also
    links to its nearest among the earlier turns of the chats with its own people, however near other
    people's chats are."""

    def said(chat, who, texts):
        return [Message(chat, text, source_id=f"t{i}", speaker=who[i % 2]) for i, text in enumerate(texts)]

    ingest = Ingestor(store, OneCue(), KeyedEmbedder(), window=1, sem_k=1)
    ingest.run(said("ana-1", ("Ana", "Ben"), ["a", "b"]), IngestReport())
    ingest.run(said("cy-1", ("Cy", "Di"), ["c"]), IngestReport())
    ingest.run(said("ana-2", ("Ana", "Ben"), ["d", "c"]), IngestReport())
    edges = {e for e in _edges(store) if e[2] == "semantic"}
    # ana-2's "c" is nearest to cy-1's "c" in the memory (1.0), and to its own chat's "d" (0.48); among the
    # chats with Ana and Ben, its nearest is ana-1's "a" (0.8)
    assert {("ana-2/t1", "cy-1/t0", "semantic", 1.0, 1), ("ana-2/t1", "ana-2/t0", "semantic", 0.48, 1),
            ("ana-2/t1", "ana-1/t0", "semantic", 0.8, 1)} <= edges
    assert ("ana-2/t0", "ana-1/t0", "semantic", 0.6, 1) in edges


@pytest.fixture(scope="module")
def memory(samples_memory, tmp_path_factory):
    """Both sample dialogues (conftest.samples_memory) and two chats titled alike ("Lisbon trip"), one memory."""
    mem = Memory(copy_memory(samples_memory, tmp_path_factory.mktemp("wide")))
    mem.add(LISBON)
    yield mem
    mem.close()


@pytest.mark.slow  # real spaCy and MiniLM
def test_a_question_ranges_over_every_conversation(memory):
    maya = memory.context("What breed is the dog Maya adopted?")
    assert maya.conversations == () and maya.evidence[0].conversation
    assert {e.conversation for e in maya.evidence if e.via == "anchor"} >= {"maya-and-leo"}
    lisbon = memory.context("Where are we staying in Lisbon?")
    top = max(lisbon.evidence, key=lambda e: e.score)
    assert (top.conversation, top.title, top.source_id) == ("c-9f1", "Lisbon trip", top.source_id)
    assert "Alfama" in top.text
    both = memory.ask("What did Maya adopt?", ["assistant-chat", "maya-and-leo"])  # the Python API takes a list
    assert both.context.conversations == ("assistant-chat", "maya-and-leo") and both.answer.kind == "extractive"
    assert {e.conversation for e in both.context.evidence} <= {"assistant-chat", "maya-and-leo"}
    assert memory.context("Where are we staying?", "c-2b7").conversations == ("c-2b7",)  # or one name


@pytest.mark.slow  # real spaCy and MiniLM
def test_the_chats_of_a_person_the_question_names_get_their_own_top_cues(memory):
    """"What did Maya say about a guesthouse in Alfama?": the memory's top cues are the Lisbon chat's, and
    Maya's own chat gets top-m cues of its own beside them; without that, none of her turns is an anchor."""
    from dataclasses import replace

    question = "What did Maya say about the guesthouse in Alfama?"
    on = memory.context(question, settings=replace(Settings(), top_m=3))
    off = memory.context(question, settings=replace(Settings(), top_m=3, participant_cues=False))
    anchored = {e.conversation for e in on.evidence if e.via == "anchor"}
    assert {"maya-and-leo", "c-9f1"} <= anchored
    assert "maya-and-leo" not in {e.conversation for e in off.evidence if e.via == "anchor"}
    assert 3 < len(on.cues) <= 6 and len(off.cues) == 3


@pytest.mark.slow  # real spaCy and MiniLM
def test_evidence_from_several_chats_is_chronological_with_a_header_per_chat_and_day(memory):
    from cuemem_cli.answer.prompt import build_messages

    ctx = memory.context("Where are we staying in Lisbon, and what did Sam plan in Japan?",
                         settings=Settings(budget=700))
    assert len({e.conversation for e in ctx.evidence}) > 1
    keys = [(e.time or "", e.conversation, e.position) for e in ctx.evidence]
    assert keys == sorted(keys)
    block = build_messages(ctx)[1]["content"].split("<dialogue>\n", 1)[1].split("\n</dialogue>", 1)[0].split("\n")
    assert sum(estimate_tokens(line) for line in block) == ctx.tokens <= 700  # every line paid for, no more
    headers = [line for line in block if line.startswith("— ")]
    assert "— Lisbon trip · 3 May 2024 —" in headers
    assert any(h.startswith("— assistant-chat · ") for h in headers)  # untitled: its name
    runs = [(e.conversation, e.time[:10] if e.time else None) for e in ctx.evidence]
    assert len(headers) == 1 + sum(a != b for a, b in pairwise(runs))
    for line, after in pairwise(block):  # a gap line sits inside one chat's run only
        if line == "…":
            assert not after.startswith("— ")


@pytest.mark.slow  # real spaCy and MiniLM
def test_a_relative_date_is_resolved_for_the_model_and_paid_for(memory):
    from cuemem_cli.answer.prompt import build_messages

    ctx = memory.context("When did Ana go to Belém?", ["c-9f1"])
    [belem] = [e for e in ctx.evidence if "Belém" in e.text]
    assert "[8 May 2024]" not in belem.text  # the stored text stays verbatim
    user = build_messages(ctx)[1]["content"]
    assert "tram to Belém yesterday [8 May 2024] and ate" in user
    block = user.split("<dialogue>\n", 1)[1].split("\n</dialogue>", 1)[0].split("\n")
    assert sum(estimate_tokens(line) for line in block) == ctx.tokens


@pytest.mark.slow  # real spaCy and MiniLM
def test_a_question_narrowed_by_title_or_name_stays_inside(memory):
    store = memory.store
    with pytest.raises(CuememError, match="names 2 conversations: c-9f1 \\(Lisbon trip\\), c-2b7 \\(Lisbon trip\\)"):
        resolve_scope(store, "lisbon trip")
    with pytest.raises(CuememError, match="no conversation named 'Porto'") as unknown:
        resolve_scope(store, "Porto")
    assert "c-9f1 (Lisbon trip)" in unknown.value.hint and "maya-and-leo" in unknown.value.hint
    scope = resolve_scope(store, ["assistant-chat", "c-2b7"])
    assert scope.names == ("assistant-chat", "c-2b7") and len(scope.ids or ()) == 2
    with Memory(store.path) as other:  # a title naming one chat narrows to it
        other.add([{"conversation": "solo", "title": "Knee rehab", "speaker": "Sam", "text": "My knee hurts."}])
        assert resolve_scope(other.store, "  KNEE rehab ").names == ("solo",)
    for question in ("Where are we staying in Lisbon?", "What did Maya adopt?"):
        narrowed = reconstruct(store, memory.embedder(), question, ["maya-and-leo"], Settings(sem_k=5, window=2))
        assert {e.conversation for e in narrowed.evidence} == {"maya-and-leo"}
        assert narrowed.conversations == ("maya-and-leo",)


def test_undated_turns_take_the_time_they_were_stored_and_position_breaks_ties():
    dated = Turn(1, "b", 4, "t4", "x", time="2024-01-02T00:00:00")
    undated = [Turn(i, "a", i, f"t{i}", "x", stored_at="2024-01-01T00:00:00") for i in (3, 2)]
    later = Turn(9, "a", 7, "t7", "x", stored_at="2024-02-01T00:00:00")
    assert sorted([later, dated, *undated], key=chronological) == [undated[1], undated[0], dated, later]
    chosen = fill_budget([later, dated, *undated], 10_000)
    assert context_tokens(chosen) == sum(estimate_tokens(f"unknown: {t.text}") for t in chosen) + sum(
        estimate_tokens(line) for line in ["— a · date unknown —", "— b · 2 January 2024 —", "— a · date unknown —"])


def test_a_turn_to_shorten_is_offered_the_room_the_block_leaves():
    """Once the evidence comes from two chats every header names its chat, so the room `shorten` is offered
    is the budget less what the chosen turns cost as the prompt shows them, headers named. (It was offered
    the room of unnamed headers: long turns were cut to more than was left and dropped, hundreds a
    question on a memory of real chats.)"""
    title = "Planning the family trip to Lisbon and Porto next spring, with the train times"
    ranked = [Turn(i, f"c{i % 4}", i, f"t{i}", f"Turn {i} says " + "something useful " * (i % 5 + 3),
                   time=f"2024-01-{i:02d}T10:00:00", title=title) for i in range(1, 25)]
    offered: list[int] = []

    def shorten(turn: Turn, room: int) -> Turn:
        offered.append(room)
        return turn

    budget = 300
    chosen = fill_budget(ranked, budget, shorten)
    assert 2 < len(chosen) < len(ranked)
    checked = 0
    for k, room in enumerate(offered):
        before = [t for t in ranked[:k] if t in chosen]
        if len({t.conversation for t in before}) > 1:
            assert room == budget - context_tokens(before)
            checked += 1
    assert checked > 5


def test_a_header_ditto_marks_only_the_chat_of_the_header_above_it():
    """The same chat on another day is headed by a ditto mark; another chat is named in full, even when its
    title begins like the one above (a small reader took "〃 2" for the chat above) or equals it (a second
    "New chat" is another chat), and the budget pays for the lines as shown."""
    chats = [("c0", "Ana and Ben, day 1"), ("c1", "Ana and Ben, day 2"), ("c1", "Ana and Ben, day 2"),
             ("c3", "Knee rehab"), ("c4", "Knee rehab")]
    turns = [Turn(i, conv, 0, f"t{i}", "x" * 5, time=f"2023-05-0{i + 1}T10:00:00", speaker="A", title=title)
             for i, (conv, title) in enumerate(chats)]
    lines = dialogue_lines((t, evidence_line(t.speaker, t.text)) for t in turns)
    assert [line for line in lines if line.startswith("— ")] == [
        "— Ana and Ben, day 1 · 1 May 2023 —", "— Ana and Ben, day 2 · 2 May 2023 —", "— 〃 · 3 May 2023 —",
        "— Knee rehab · 4 May 2023 —", "— Knee rehab · 5 May 2023 —"]
    shown = sum(estimate_tokens(line) for line in lines)
    assert context_tokens(turns) == shown
    assert fill_budget(turns, shown) == turns and len(fill_budget(turns, shown - 1)) < len(turns)
    # A turn placed between two others changes the header below it: the budget counts that too.
    middle = fill_budget([turns[0], turns[2], turns[1]], shown)
    assert context_tokens(middle) <= shown


def test_the_evidence_line_counts_chats_not_titles():
    """Two chats titled alike ("New chat", as a chat export titles many) are two conversations in the
    evidence's summary line and under two named rules."""
    from cuemem_cli.cli import render
    from cuemem_cli.records import Context, Evidence

    evidence = tuple(Evidence(source_id=f"t{i}", time=f"2024-05-0{i + 1}T10:00:00", speaker="user", text="Porto",
                              via="anchor", conversation=f"c{i}", title="New chat") for i in range(2))
    context = Context(question="Where?", conversations=(), as_of=None, cues=(), evidence=evidence, tokens=20,
                      timings_ms={})
    with render.out.capture() as captured:
        render.render_evidence(context)
    shown = captured.get()
    assert "Evidence · 2 conversations · 2 turns" in shown
    assert "New chat · 1 May 2024" in shown and "New chat · 2 May 2024" in shown


CIRCLES = {"ab-1": frozenset({"Ana", "Ben"}), "ab-2": frozenset({"Ana", "Ben"}), "cd-1": frozenset({"Cleo", "Dan"})}


def _turns(*conversations):
    return {i: Turn(i, conv, i, f"t{i}", "x") for i, conv in enumerate(conversations, start=1)}


def test_semantic_hops_stay_between_chats_that_have_a_person_in_common():
    """Seeds 1 (ab-1) and 3 (cd-1); 2 (ab-2) is reached from 1, 4 (cd-1) from 3 by a temporal edge, and 5 (ab-2)
    only from 3, between people who never talk to each other: that hop and the turn it alone brought are left
    out. Chats sharing one person (a person's history: me and Ana, me and Ben) keep their edges."""
    turns = _turns("ab-1", "ab-2", "cd-1", "cd-1", "ab-2")
    hops = Hops(np.array([1, 3, 3]), np.array([2, 4, 5]), np.array([False, True, False]),
                np.array([0.9, 1.0, 0.8], dtype=np.float32))
    kept, candidates = within_circles(hops, [1, 3, 2, 4, 5], [1, 3], turns, CIRCLES)
    assert kept.dst.tolist() == [2, 4] and candidates == [1, 3, 2, 4]
    one_circle = {name: frozenset({"user", "assistant"}) for name in CIRCLES}  # an export: every edge kept
    assert within_circles(hops, [1, 3, 2, 4, 5], [1, 3], turns, one_circle)[1] == [1, 3, 2, 4, 5]
    with_me = {"ab-1": frozenset({"me", "Ana"}), "ab-2": frozenset({"me", "Ana"}), "cd-1": frozenset({"me", "Ben"})}
    assert within_circles(hops, [1, 3, 2, 4, 5], [1, 3], turns, with_me)[1] == [1, 3, 2, 4, 5]


def test_the_people_holding_the_best_cues_lift_their_chats_and_one_circle_lifts_all_alike():
    turns = _turns("ab-1", "ab-2", "cd-1", "cd-1")
    hits = [(Cue(1, 1, "s", "r", "o"), 0.8), (Cue(2, 3, "s", "r", "o"), 0.6), (Cue(3, 2, "s", "r", "o"), 0.5)]
    lift = circle_strength([1, 2, 3, 4], turns, hits, CIRCLES)
    assert lift.tolist() == pytest.approx([1.0, 1.0, 0.75, 0.75])
    alone = {name: frozenset({"Ana"}) for name in CIRCLES}
    assert circle_strength([1, 2, 3, 4], turns, hits, alone).tolist() == [1.0] * 4
