"""Facts that change (issue 57): found at ingest (cues/changes.py), stored as pairs of turns (m018), kept together
by recall (recall/changes.py), read by the answer line (answer/changes.py), shown by every view, rebuilt for an
older memory by `cuemem reindex`. The end-to-end cases on the real models are in test_showcase.py (the sample
paraphrases) and at the end of this file (slow)."""

from __future__ import annotations

import json

import orjson
import pytest

from cuemem_cli.cues.changes import CHANGE, CONTRADICTION, ChangeFinder, Said
from cuemem_cli.records import Change, ChangeLink, Context, Evidence, Triple, Turn


def T(subject: str, relation: str, obj: str) -> Triple:
    return Triple(subject, relation, obj)


def found(turns: list[tuple[str, str | None, str, list[Triple]]]) -> list[tuple]:
    """The changes a finder finds in (speaker, role, text, triples) turns given in order: (older index, newer
    index, relation, older value, newer value, kind)."""
    finder = ChangeFinder()
    out = []
    for i, (speaker, role, text, triples) in enumerate(turns):
        out += [(f.older_turn, f.newer_turn, f.relation, f.older_value, f.newer_value, f.kind)
                for f in finder.see(Said(i, text, speaker, role, triples))]
    return out


# ------------------------------------------------------------------ finding them
def test_a_move_changes_where_someone_lives_from_the_place_they_named_before():
    turns = [("Maya", None, "Portland is grey as usual. I'd miss Portland, though.", [T("Portland", "be", "grey")]),
             ("Leo", None, "Would you move?", []),
             ("Maya", None, "I'm moving to Denver next month!", [T("Maya", "move to", "Denver")])]
    assert found(turns) == [(0, 2, "live in", "Portland", "Denver", CHANGE)]


def test_a_new_job_changes_where_someone_works_but_a_question_to_them_says_nothing():
    turns = [("Leo", None, "Also grey here. Still at the bookstore.", []),
             ("Leo", None, "What about you, still at the design agency?", []),
             ("Leo", None, "I got the job at Fernwood Robotics!", [T("Leo", "get", "job at Fernwood Robotics")])]
    assert found(turns) == [(0, 2, "work at", "bookstore", "Fernwood Robotics", CHANGE)]


def test_the_same_subject_and_relation_with_another_value_of_a_kind_that_holds_one_at_a_time():
    turns = [("Kevin", None, "I'm majoring in economics.", [T("Kevin", "major in", "economics")]),
             ("Kevin", None, "I want to stay in Lisbon the whole time.", [T("Kevin", "want to stay in",
                                                                          "Lisbon the whole time")]),
             ("Kevin", None, "I'm majoring in Computer Science.", [T("Kevin", "major in", "Computer Science")]),
             ("Kevin", None, "We stay in Porto.", [T("Kevin", "stay in", "Porto")])]
    assert found(turns) == [(0, 2, "major in", "economics", "Computer Science", CHANGE),
                            (1, 3, "live in", "Lisbon", "Porto", CHANGE)]  # the modal and the trailing words off


def test_numbers_change_when_they_count_the_same_thing():
    turns = [("Sam", None, "The rent costs $900.", [T("rent", "cost", "$900")]),
             ("Sam", None, "The rent costs $950 now.", [T("rent", "cost", "$950")]),
             ("Sam", None, "The course takes 3 weeks.", [T("course", "take", "3 weeks")]),
             ("Sam", None, "The course takes 4 days.", [T("course", "take", "4 days")])]
    assert found(turns) == [(0, 1, "cost", "$900", "$950", CHANGE)]  # weeks and days are not one thing


def test_relations_that_name_many_things_at_once_change_nothing():
    turns = [("Maya", None, "I went to the gym.", [T("Maya", "go to", "gym")]),
             ("Maya", None, "I went to Boise.", [T("Maya", "go to", "Boise")]),
             ("Maya", None, "I have news.", [T("Maya", "have", "news")]),
             ("Maya", None, "I have a dog.", [T("Maya", "have", "dog")])]
    assert found(turns) == []


def test_saying_the_opposite_is_a_contradiction_and_saying_what_instead_is_a_change():
    person = [("Nico", None, "I played it in high school.", [T("Nico", "go to", "high school")]),
              ("Nico", None, "I didn't go to high school.", [T("Nico", "not go to", "high school")])]
    assert found(person) == [(0, 1, "go to", "high school", "not high school", CONTRADICTION)]
    project = [("assistant", "assistant", "Here you use NextJS and GraphQL.", [T("you", "use", "NextJS and GraphQL")]),
               ("user", "user", "Don't use GraphQL, use server functions.", [T("", "not use", "GraphQL"),
                                                                              T("", "use", "server functions")])]
    assert found(project) == [(0, 1, "use", "NextJS and GraphQL", "server functions", CHANGE)]
    vague = [("Ana", None, "I think so.", [T("Ana", "think", "so")]), ("Ana", None, "I don't think so.",
                                                                      [T("Ana", "not think", "so")])]
    assert found(vague) == []


def test_a_sentence_that_says_it_changes_something():
    turns = [("Sam", "user", "I'm planning a trip to Japan in mid-April.", []),
             ("Assistant", "assistant", "April is cherry blossom time.", []),
             ("Sam", "user", "Small update: I moved the trip to May. The flights were cheaper.", []),
             ("user", "user", "My working title is AI and the Return of Pay-to-Play Models.", []),
             ("user", "user", 'FYI I changed the term "pay-to-play" to "give-to-get" because it reads better.', []),
             ("user", "user", "Also we're using two decks of cards for the game, instead of just one.", [])]
    assert found(turns) == [(0, 2, "change", "April", "May", CHANGE),  # the speaker's own plan, not the reply
                            (3, 4, "change", "pay-to-play", "give-to-get", CHANGE)]
    assert found([("user", "user", "Just one deck for now.", []),
                  ("user", "user", "We use two decks instead of one.", [])]) == [(0, 1, "change", "one", "two decks",
                                                                                  CHANGE)]
    # "instead of" from someone not speaking of themselves is a rule, not a change of theirs
    assert found([("user", "user", "Just one card.", []),
                  ("user", "user", "You pick up the pile instead of one card.", [])]) == []


def test_an_assistants_general_statements_are_no_facts_and_stored_turns_only_teach():
    turns = [("assistant", "assistant", "The latest version is 1.0.6.", [T("latest version", "be", "1.0.6 release")]),
             ("assistant", "assistant", "The latest version is 1.2.0.", [T("latest version", "be", "1.2.0 release")])]
    assert found(turns) == []
    finder = ChangeFinder()
    assert finder.see(Said(0, "I live in Lisbon.", "Ana", None, [T("Ana", "live in", "Lisbon")]), known=True) == []
    assert [f.older_value for f in finder.see(Said(1, "I live in Porto now.", "Ana", None,
                                                   [T("Ana", "live in", "Porto")]))] == ["Lisbon"]


# ------------------------------------------------------------------ recall keeps the pair together
def _turn(tid: int, position: int, text: str = "", time: str = "2024-01-01T10:00:00") -> Turn:
    return Turn(id=tid, conversation="c", position=position, source_id=f"t{tid}", text=text, time=time)


def _change(older: int, newer: int, relation: str = "live in", kind: str = "change") -> Change:
    return Change("c", f"t{older}", f"t{newer}", None, None, "maya", relation, "Portland", "Denver", kind, older, newer)


def test_recall_keeps_both_turns_of_a_change_the_question_is_about_and_now_puts_the_newer_first():
    from cuemem_cli.recall.changes import kept_together

    ranked = [_turn(1, 1), _turn(2, 2), _turn(3, 3)]
    stored = {9: _turn(9, 9)}
    scores = {1: 0.9, 2: 0.8, 3: 0.7}
    fetch = lambda ids: {i: stored[i] for i in ids}  # noqa: E731
    out, brought = kept_together(ranked, scores, [_change(1, 9)], "Where does Maya live?", fetch)
    assert [t.id for t in out] == [1, 9, 2, 3] and brought == {9} and scores[9] < scores[1]
    out, _ = kept_together(ranked, dict(scores), [_change(3, 1)], "Where does Maya live these days?",
                           lambda ids: {})
    assert [t.id for t in out] == [1, 3, 2]  # already candidates: the older moves up behind the newer
    out, _ = kept_together(ranked, dict(scores), [_change(1, 3)], "Where does Maya live now?", lambda ids: {})
    assert [t.id for t in out] == [3, 1, 2]  # "now": the newer first
    out, brought = kept_together(ranked, dict(scores), [_change(1, 9)], "Where does Maya live?", fetch, hidden={9})
    assert out == ranked and brought == set()  # said after the question's --as-of: never brought in
    far = [_turn(i, i) for i in range(1, 12)]
    out, _ = kept_together(far, {i: 1.0 - i / 100 for i in range(1, 12)}, [_change(11, 9)], "What did Leo eat?",
                           lambda ids: {})
    assert out == far  # neither turn among the best, nothing of it asked


# ------------------------------------------------------------------ the answer line
def _evidence(source_id: str, text: str, time: str, speaker: str = "Maya", **links) -> Evidence:
    return Evidence(source_id=source_id, time=time, speaker=speaker, text=text, via="anchor", conversation="c",
                    **links)


def _context(question: str, kind: str = "change", relation: str = "live in", values=("Portland", "Denver"),
             subject: str = "maya") -> Context:
    link_later = ChangeLink("t2", "2023-07-22T16:47:00", *values, kind, subject, relation)
    link_earlier = ChangeLink("t1", "2023-05-14T10:49:00", *values, kind, subject, relation)
    evidence = (_evidence("t1", f"I'd miss {values[0]}.", "2023-05-14T10:49:00", superseded_by=(link_later,)),
                _evidence("t9", "Leo works at Fernwood.", "2023-06-01T10:00:00", speaker="Leo"),
                _evidence("t2", f"I'm moving to {values[1]}!", "2023-07-22T16:47:00", supersedes=(link_earlier,)))
    return Context(question, (), None, (), evidence, 60, {})


def test_the_answer_line_gives_the_latest_value_its_day_and_the_earlier_one():
    from cuemem_cli.answer.changes import change_line
    from cuemem_cli.answer.question_parts import question_parts

    def line(question: str, **kw):
        context = _context(question, **kw)
        said = change_line(context, question_parts(question)[0])
        return said and said[0]

    assert line("Where does Maya live these days?") == \
        "Denver (said 22 July 2023; before: Portland, said 14 May 2023)"
    assert line("Which city does Maya live in?") == line("Where does Maya live these days?")
    assert line("Where did Maya live in March 2023?") is None  # a period: the reader reads that time
    assert line("Where did Maya live before?") is None
    assert line("Where does Leo live now?") is None  # asked about someone else
    assert line("What position does Maya hold now?") is None  # a position is no city
    assert line("How many dogs does Maya have now?") is None  # no number among the values
    contradiction = line("Did Nico go to high school?", kind="contradiction", relation="go to",
                         values=("high school", "not high school"), subject="nico")
    assert contradiction == ("contradiction: go to high school (said 14 May 2023), then not go to high school "
                             "(said 22 July 2023)")


# ------------------------------------------------------------------ through the CLI (stand-in models)
DIALOGUE = [
    {"conversation": "trip", "session": "s1", "time": "2024-04-06T10:00:00", "speaker": "Ana", "id": "1",
     "text": "My sister and I want to stay in Lisbon for the whole week."},
    {"conversation": "trip", "session": "s1", "time": "2024-04-06T10:01:00", "speaker": "Ben", "id": "2",
     "text": "Lisbon is lovely in September."},
    {"conversation": "trip", "session": "s2", "time": "2024-05-18T16:40:00", "speaker": "Ana", "id": "3",
     "text": "Change of plans: we're staying in Porto instead of Lisbon."},
    {"conversation": "trip", "session": "s2", "time": "2024-05-18T16:41:00", "speaker": "Ben", "id": "4",
     "text": "Porto has the best bridges."},
]


@pytest.fixture
def trip_db(tmp_path, cli, stub_models):
    path = tmp_path / "trip.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in DIALOGUE), encoding="utf-8")
    db = tmp_path / "memory.db"
    result = cli("--db", str(db), "ingest", str(path), "--json")
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["changes"] == 1
    return db


def test_a_change_is_shown_by_ask_json_inspect_graph_mcp_recall_and_the_browse_page(cli, trip_db):
    result = cli("--db", str(trip_db), "ask", "Where is Ana staying now?", "--json")
    data = orjson.loads(result.stdout)
    assert data["answer"].splitlines()[0] == "Porto (said 18 May 2024; before: Lisbon, said 6 April 2024)"
    by_id = {ev["source_id"]: ev for ev in data["evidence"]}
    assert [link["source_id"] for link in by_id["1"]["superseded_by"]] == ["3"]
    assert by_id["3"]["supersedes"] == [{"source_id": "1", "time": "2024-04-06T10:00:00", "older_value": "Lisbon",
                                          "newer_value": "Porto", "kind": "change", "subject": "ana",
                                          "relation": "change"}]
    assert by_id["2"]["superseded_by"] == [] and by_id["2"]["supersedes"] == []
    graph = orjson.loads(cli("--db", str(trip_db), "inspect-graph", "--json").stdout)
    assert [(c["older"], c["newer"], c["older_value"], c["newer_value"]) for c in graph["changes"]] == [
        ("1", "3", "Lisbon", "Porto")]
    assert graph["conversations"][0]["changes"] == 1 and graph["settings"]["stale"] == []
    table = cli("--db", str(trip_db), "inspect-graph").stdout
    assert "Lisbon → Porto" in table
    turn = orjson.loads(cli("--db", str(trip_db), "inspect-graph", "--turn", "1", "--json").stdout)
    assert [c["newer"] for c in turn["changes"]] == ["3"]

    from cuemem_cli.browse import pages
    from cuemem_cli.mcp_server import MemoryTools
    from cuemem_cli.memory import Memory
    from cuemem_cli.store.base import maintenance

    tools = MemoryTools(trip_db)
    try:
        text = tools.recall("Where is Ana staying?").text
    finally:
        tools.close()
    assert "(later changed: Lisbon → Porto (18 May 2024))" in text  # no ids in an agent's text
    with Memory(trip_db, create=False) as memory:
        ids = {t.source_id: t.id for t in maintenance(memory.store).turns(memory.store.conversation_id("trip"))}
        page = pages.turn(memory, ids["1"])
    assert [(v["change"]["newer_value"], v["turn"]["source_id"]) for v in page["later"]] == [("Porto", "3")]


def test_as_of_takes_the_latest_statement_before_that_time(cli, trip_db):
    data = orjson.loads(cli("--db", str(trip_db), "ask", "Where is Ana staying now?", "--as-of", "2024-05-01",
                            "--json").stdout)
    assert "Porto" not in data["answer"].splitlines()[0]
    assert all(not ev["superseded_by"] for ev in data["evidence"])  # the later turn was not said yet


def test_an_older_memory_finds_its_changes_with_reindex(cli, trip_db):
    """A memory whose turns were stored before m018 holds no changes and says so; `cuemem reindex` finds them,
    and running it again gives the same rows."""
    import pysqlite3 as sqlite3

    with sqlite3.connect(str(trip_db)) as conn:
        conn.execute("DELETE FROM changes")
        conn.execute("DELETE FROM _migrations WHERE name = 'm018_changes'")
        conn.execute("DROP TABLE changes")
    result = cli("--db", str(trip_db), "inspect-graph")  # opening it applies m018 to a memory with turns
    assert "`cuemem reindex` finds the others" in result.stderr
    assert orjson.loads(cli("--db", str(trip_db), "inspect-graph", "--json").stdout)["settings"]["stale"] == [
        "changes"]
    for _ in range(2):
        result = cli("--db", str(trip_db), "reindex", "--only", "changes", "--json")
        assert result.exit_code == 0 and orjson.loads(result.stdout)["changes"]["turns"] == len(DIALOGUE)
        graph = orjson.loads(cli("--db", str(trip_db), "inspect-graph", "--json").stdout)
        assert len(graph["changes"]) == 1 and graph["settings"]["stale"] == []
    result = cli("--db", str(trip_db), "reindex", "--only", "colours")
    assert result.exit_code == 1 and "no derived index 'colours'" in result.stderr


def test_forgetting_either_turn_forgets_the_change(cli, trip_db):
    assert cli("--db", str(trip_db), "forget", "-c", "trip", "--turn", "3", "--yes").exit_code == 0
    assert orjson.loads(cli("--db", str(trip_db), "inspect-graph", "--json").stdout)["changes"] == []


def test_an_export_imported_into_another_memory_finds_the_same_changes(cli, trip_db, tmp_path):
    exported = tmp_path / "trip-export.jsonl"
    assert cli("--db", str(trip_db), "export", "-o", str(exported)).exit_code == 0
    other = tmp_path / "other.db"
    assert cli("--db", str(other), "import", str(exported)).exit_code == 0

    def changes(db) -> list[tuple]:
        graph = orjson.loads(cli("--db", str(db), "inspect-graph", "--json").stdout)
        return [(c["older"], c["newer"], c["older_value"], c["newer_value"], c["kind"]) for c in graph["changes"]]

    assert changes(other) == changes(trip_db) == [("1", "3", "Lisbon", "Porto", "change")]


def test_a_time_word_or_a_bare_possessive_is_no_value():
    """Found on the check half (rt-5) after it was measured: "work at my boyfriend's job for now" became
    (work at, now), and "working at my job" (work at, Nebraas's): a change from "now" to "Nebraas's"."""
    turns = [("Ana", None, "I'll work at it for now.", [T("Ana", "work at", "now")]),
             ("Ana", None, "I work at my job.", [T("Ana", "work at", "Ana's")])]
    assert found(turns) == []


def test_a_pronoun_is_no_value_and_a_question_of_how_or_why_gets_no_change_line():
    """Found on LoCoMo after its answer line was measured (two lines of 775 lost to it): "(you, go, for hike)" and
    "(you, go, and the furry friends)" made a change that answered "How does Audrey describe the new beds?"."""
    from cuemem_cli.answer.changes import change_line
    from cuemem_cli.answer.question_parts import question_parts

    assert found([("Ana", "user", "Go for a hike.", [T("you", "go", "for hike")]),
                   ("Ana", "user", "Go with the dogs.", [T("you", "go", "you and the dogs")])]) == []
    question = "How does Maya describe Denver now?"
    assert change_line(_context(question), question_parts(question)[0]) is None
