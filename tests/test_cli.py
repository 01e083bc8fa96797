"""The real CLI end to end on the sample dialogues: ingest, ask, inspect-graph, errors."""

from __future__ import annotations

import html
import re
from itertools import pairwise

import orjson
import pytest

from cuemem_cli.recall.lines import shown_text

from conftest import PYTHON, SAMPLES, copy_memory

MAYA = SAMPLES / "maya_and_leo.jsonl"
SAM = SAMPLES / "assistant_chat.jsonl"


@pytest.fixture(scope="module")
def maya_db(maya_memory, tmp_path_factory):
    """The Maya & Leo sample ingested through the CLI (conftest.maya_memory), for the read-only tests."""
    return copy_memory(maya_memory, tmp_path_factory.mktemp("maya"))


def ask_json(cli, db, *args):
    result = cli("--db", str(db), "ask", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)


@pytest.mark.usefixtures("stub_models")
def test_ingest_summary(cli, db_path):
    result = cli("--db", str(db_path), "ingest", str(MAYA), "--json")
    assert result.exit_code == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert report["turns_added"] == 84 and report["conversations"] == ["maya-and-leo"]
    assert report["cues"] > 84 and report["semantic_edges"] > 0
    assert report["temporal_edges"] == 2 * (83 + 82)  # w = 2, both directions


@pytest.mark.parametrize(
    "question, needed",
    [
        ("What breed is the dog Maya adopted?", {"s2:9"}),
        ("When did Leo start his new job?", {"s2:14"}),
        ("What did Biscuit eat?", {"s3:2"}),
        ("When is Leo visiting Maya in Denver?", {"s4:12"}),
    ],
)
def test_ask_finds_the_turn_that_answers(cli, maya_db, question, needed):
    data = ask_json(cli, maya_db, question, "--context-only")
    ids = [e["source_id"] for e in data["evidence"]]
    assert needed <= set(ids)
    positions = [e["position"] for e in data["evidence"]]
    assert positions == sorted(positions), "evidence is chronological"
    assert data["answer"] is None and data["answer_kind"] is None
    assert data["tokens"] <= 2000
    assert {"subject", "relation", "object", "score", "turn"} <= set(data["cues"][0])
    assert {"source_id", "time", "speaker", "text", "via"} <= set(data["evidence"][0])


def test_graph_brings_in_turns_that_anchors_alone_miss(cli, maya_db):
    """The spread fact: the breed turn and the adoption turn arrive together only through the graph."""
    question = "What breed is the dog Maya adopted?"
    with_graph = ask_json(cli, maya_db, question, "--context-only", "--top-m", "3")
    anchors_only = ask_json(cli, maya_db, question, "--context-only", "--top-m", "3", "--no-graph")
    assert {e["via"] for e in anchors_only["evidence"]} <= {"anchor", "lexical"}
    assert "s2:9" not in {e["source_id"] for e in anchors_only["evidence"]}  # the breed: no anchor finds it
    via = {e["source_id"]: e["via"] for e in with_graph["evidence"]}
    assert "s2:1" in via and via.get("s2:9") in ("temporal", "semantic")  # the adoption, and the breed by an edge


def test_budget_is_respected(cli, maya_db):
    data = ask_json(cli, maya_db, "Where does Maya live now?", "--context-only", "--budget", "200")
    assert 0 < data["tokens"] <= 200
    assert sum(e["tokens"] for e in data["evidence"]) < data["tokens"]  # plus the day headers


def test_offline_ask_gives_a_labelled_extractive_answer(cli, maya_db):
    data = ask_json(cli, maya_db, "What is the name of Maya's dog?")
    assert data["answer_kind"] == "extractive" and data["model"] is None
    assert "Biscuit" in data["answer"]  # "His name is Biscuit, he's a beagle, …"
    result = cli("--db", str(maya_db), "ask", "What is the name of Maya's dog?")
    assert result.exit_code == 0
    assert "extractive" in result.stdout and "Evidence" in result.stdout and "His name is Biscuit" in result.stdout


@pytest.mark.parametrize(("question", "form", "label"), [
    ("Where does Maya live now?", "answer", "answer: Denver"),  # a place after "moved to": the reader is sure
    ("What is the name of Maya's dog?", "quote", 'best match: Maya, 14 May 2023: "His name is Biscuit'),
])
def test_the_text_view_says_whether_the_line_is_an_answer_or_a_quote(cli, maya_db, question, form, label):
    """Issue 49: `--json` says what the answer line is (`answer_form`); the text view opens it with
    "answer:" or "best match:" and shows the same line."""
    data = ask_json(cli, maya_db, question)
    assert data["answer_form"] == form
    shown = cli("--db", str(maya_db), "ask", question, "--evidence", "0").stdout
    assert label in shown and data["answer"].splitlines()[0][:40] in shown


@pytest.mark.parametrize(("question", "place", "turn"), [
    # the latest: the move to Denver, with the city she left beside it (issue 57's change line)
    ("Where does Maya live now?", "Denver (said 22 July 2023; before: Portland, said 14 May 2023)", "s3:6"),
    ("Where did Maya live in March 2023?", "Portland", "s1:8"),  # one said in the period asked about
])
def test_offline_where_answers_name_the_place_of_the_right_time(cli, maya_db, question, place, turn):
    """A where-question about a time is answered by a sentence that names a place ("on Thursday" is not
    one): the latest for a question about now, one said in the named period for one about then (issue 22)."""
    answer = ask_json(cli, maya_db, question, "--as-of", "2023-10-31")["answer"]
    span, source = answer.splitlines()[:2]
    assert span == place and source.startswith("source: ") and f", {turn}, " in source, answer


def test_evidence_reads_by_day_in_an_80_column_terminal(cli, maya_db, monkeypatch):
    from cuemem_cli.cli import render
    from cuemem_cli.timeparse import format_human

    question = "What happened with Biscuit and the vet?"
    evidence = ask_json(cli, maya_db, question, "--context-only")["evidence"]
    monkeypatch.setattr(render.out, "width", 80)
    lines = cli("--db", str(maya_db), "ask", question, "--context-only", "--verbose").stdout.splitlines()
    assert max(map(len, lines)) <= 80
    days = list(dict.fromkeys(format_human(e["time"], with_time=False) for e in evidence))
    assert [line.split(" ─")[0] for line in lines if "───" in line] == days  # one rule per day, in order
    ids = [m.group(1) for line in lines if (m := re.match(r"\s+(s\d+:\d+) · [a-z]+", line))]
    assert ids == [e["source_id"] for e in evidence]  # each turn once, chronological, its id below its text


def test_ask_with_a_model_goes_through_litellm(cli, maya_db, fake_llm):
    fake_llm.default = "Denver."
    data = ask_json(cli, maya_db, "Where does Maya live now?", "--model", "fake/answerer",
                    "--as-of", "2023-10-09", "--budget", "600")
    assert data["answer"] == "Denver." and data["answer_kind"] == "llm" and data["model"] == "fake/answerer"
    prompt = fake_llm.requests[0][1]["content"]
    assert "Question time: 9 October 2023" in prompt
    lines = prompt.split("<dialogue>\n")[1].split("\n</dialogue>")[0].splitlines()
    evidence = data["evidence"]
    assert [line for line in lines if line != "…" and not line.startswith("— ")] == \
        [f"{e['speaker']}: {html.escape(shown_text(e['text'], e['time']), quote=False)}" for e in evidence]
    assert any("[" in line and "2023]" in line for line in lines)  # a relative date, resolved for the model
    left_out = [a["time"][:10] == b["time"][:10] and b["position"] > a["position"] + 1
                for a, b in pairwise(evidence)]
    assert lines.count("…") == sum(left_out) > 0  # one line wherever turns of a day are left out


def test_cuemem_model_env_is_the_default_model(cli, maya_db, fake_llm, monkeypatch):
    monkeypatch.setenv("CUEMEM_MODEL", "fake/from-env")
    fake_llm.default = "Portland"
    data = ask_json(cli, maya_db, "Where did Maya live in March 2023?")
    assert data["model"] == "fake/from-env"


@pytest.mark.slow  # real spaCy and MiniLM
def test_a_question_ranges_over_every_conversation_and_c_narrows_it(cli, db_path):
    assert cli("--db", str(db_path), "ingest", str(MAYA)).exit_code == 0
    assert cli("--db", str(db_path), "ingest", str(SAM)).exit_code == 0
    data = ask_json(cli, db_path, "What is Sam's diet?")
    assert data["conversations"] == [] and data["answer_kind"] == "extractive"
    best = max(data["evidence"], key=lambda e: e["score"])
    assert (best["conversation"], best["title"]) == ("assistant-chat", None)
    data = ask_json(cli, db_path, "What is Sam's diet?", "--conversation", "maya-and-leo", "--context-only")
    assert data["conversations"] == ["maya-and-leo"]
    assert {e["conversation"] for e in data["evidence"]} == {"maya-and-leo"}
    both = ask_json(cli, db_path, "Where did Maya and Sam travel?", "-c", "maya-and-leo", "-c", "assistant-chat",
                    "--context-only")
    assert both["conversations"] == ["maya-and-leo", "assistant-chat"]
    assert {e["conversation"] for e in both["evidence"]} == {"maya-and-leo", "assistant-chat"}
    unknown = cli("--db", str(db_path), "ask", "What is Sam's diet?", "-c", "sam")
    assert unknown.exit_code == 1 and "no conversation named 'sam'" in unknown.stderr
    assert "maya-and-leo" in unknown.stderr and "assistant-chat" in unknown.stderr


@pytest.mark.usefixtures("stub_models")
def test_inspect_graph_finds_a_turn_by_its_id_in_any_conversation(cli, db_path, tmp_path):
    """An id copied from `ask`'s evidence (a ChatGPT export's UUID) needs no --conversation when one chat has
    it; an id two chats share asks which, naming them."""
    uuid = "1d9f6eb2-9aef-5c09-ad7e-f62d810480f9"
    source = tmp_path / "chats.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [
        {"conversation": "c-1", "id": uuid, "text": "We are staying at a guesthouse in Porto."},
        {"conversation": "c-1", "id": "1", "text": "The guesthouse is by the river."},
        {"conversation": "c-2", "id": "1", "text": "My physio wants me to cycle every day."}]))
    assert cli("--db", str(db_path), "ingest", str(source)).exit_code == 0
    found = cli("--db", str(db_path), "inspect-graph", "--turn", uuid, "--json")
    assert found.exit_code == 0, found.stderr
    detail = orjson.loads(found.stdout)
    assert detail["conversation"] == "c-1" and "Porto" in detail["turn"]["text"]
    shared = cli("--db", str(db_path), "inspect-graph", "--turn", "1")
    assert shared.exit_code == 1 and "2 conversations have a turn '1': c-1, c-2" in shared.stderr
    assert "--conversation" in shared.stderr
    narrowed = orjson.loads(cli("--db", str(db_path), "inspect-graph", "--turn", "1", "-c", "c-2", "--json").stdout)
    assert "physio" in narrowed["turn"]["text"]
    missing = cli("--db", str(db_path), "inspect-graph", "--turn", "nope")
    assert missing.exit_code == 1 and "no turn 'nope' in any conversation" in missing.stderr


CHATS = [  # an export's shape: chats named by id, titled; two share a title
    {"conversation": "c-9f1", "title": "Lisbon trip", "speaker": "Ana", "time": "2024-05-03T10:00:00",
     "text": "We are staying at a guesthouse in Alfama for the Lisbon trip."},
    {"conversation": "c-9f1", "title": "Lisbon trip", "speaker": "Assistant", "time": "2024-05-03T10:01:00",
     "text": "Alfama is lovely: steep streets, fado bars and views of the river."},
    {"conversation": "c-2b7", "title": "Lisbon trip", "speaker": "Ana", "time": "2023-11-20T09:00:00",
     "text": "Plan a weekend in Lisbon for my parents in December."},
    {"conversation": "c-3aa", "title": "Knee rehab", "speaker": "Ana", "time": "2024-02-01T08:00:00",
     "text": "My physio wants me to cycle twenty minutes a day for the knee."},
]


@pytest.mark.slow  # real spaCy and MiniLM
def test_titles_name_chats_everywhere_and_an_ambiguous_title_lists_its_chats(cli, db_path, tmp_path):
    chats = tmp_path / "chats.jsonl"
    chats.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in CHATS))
    assert cli("--db", str(db_path), "ingest", str(chats)).exit_code == 0
    assert cli("--db", str(db_path), "ingest", str(MAYA)).exit_code == 0
    ambiguous = cli("--db", str(db_path), "ask", "Where are we staying?", "-c", "lisbon TRIP")
    assert ambiguous.exit_code == 1
    assert "c-9f1 (Lisbon trip)" in ambiguous.stderr and "c-2b7 (Lisbon trip)" in ambiguous.stderr
    knee = ask_json(cli, db_path, "What did the physio say?", "-c", "Knee rehab", "--context-only")
    assert knee["conversations"] == ["c-3aa"] and {e["title"] for e in knee["evidence"]} == {"Knee rehab"}
    wide = ask_json(cli, db_path, "Where are we staying in Lisbon?", "--context-only")
    top = max(wide["evidence"], key=lambda e: e["score"])
    assert (top["conversation"], top["title"]) == ("c-9f1", "Lisbon trip") and "Alfama" in top["text"]
    assert {e["conversation"] for e in wide["evidence"]} > {"c-9f1"}  # other chats fill the rest of the budget
    # the rich view: a rule per chat and day, naming the chat by its title
    shown = cli("--db", str(db_path), "ask", "Where are we staying in Lisbon?", "--context-only", "--evidence", "all")
    assert shown.exit_code == 0 and "Lisbon trip · 3 May 2024" in shown.stdout
    stats = orjson.loads(cli("--db", str(db_path), "inspect-graph", "--format", "json").stdout)
    assert {c["conversation"]: c["title"] for c in stats["conversations"]} == \
        {"c-9f1": "Lisbon trip", "c-2b7": "Lisbon trip", "c-3aa": "Knee rehab", "maya-and-leo": None}
    table = cli("--db", str(db_path), "inspect-graph")
    assert table.exit_code == 0 and "title" in table.stdout and "Knee rehab" in table.stdout
    exported = cli("--db", str(db_path), "export", "-c", "knee rehab")
    assert exported.exit_code == 0
    [record] = [orjson.loads(line) for line in exported.stdout.splitlines()]
    assert (record["conversation"], record["title"]) == ("c-3aa", "Knee rehab")
    refused = cli("--db", str(db_path), "export", "-c", "Lisbon trip")
    assert refused.exit_code == 1 and "c-2b7 (Lisbon trip)" in refused.stderr and not refused.stdout


@pytest.mark.usefixtures("stub_models")
def test_inspect_graph_shows_the_names_a_chat_calls_its_people_by(cli, db_path, tmp_path):
    """"Kate" is what Elise calls Emi, and how Emi introduced herself: a question may ask about Kate."""
    lines = [("Elise", "What's your name?"), ("Emi", "I'm Kate."), ("Elise", "Hey Kate!"), ("Emi", "Hi Emily!"),
             ("Elise", "Thanks Kate!"), ("Emi", "Bye Emily!"), ("Elise", "See you, I'm Emily by the way.")]
    chat = tmp_path / "chat.jsonl"
    chat.write_bytes(b"".join(orjson.dumps({"conversation": "kate", "speaker": who, "text": text}) + b"\n"
                              for who, text in lines))
    assert cli("--db", str(db_path), "ingest", str(chat)).exit_code == 0
    assert cli("--db", str(db_path), "ingest", str(MAYA)).exit_code == 0
    stats = orjson.loads(cli("--db", str(db_path), "inspect-graph", "--format", "json").stdout)
    assert {c["conversation"]: c["names"] for c in stats["conversations"]} == \
        {"kate": {"Elise": ["Emily"], "Emi": ["Kate"]}, "maya-and-leo": {}}
    table = cli("--db", str(db_path), "inspect-graph", "-c", "kate")
    assert table.exit_code == 0 and "Elise = Emily; Emi = Kate" in table.stdout


@pytest.mark.usefixtures("stub_models")
def test_reingest_adds_nothing_and_appending_adds_only_new(cli, db_path, tmp_path):
    lines = MAYA.read_bytes().splitlines(keepends=True)
    first = tmp_path / "first.jsonl"
    first.write_bytes(b"".join(lines[:50]))
    assert cli("--db", str(db_path), "ingest", str(first)).exit_code == 0
    again = orjson.loads(cli("--db", str(db_path), "ingest", str(first), "--json").stdout)
    assert again["turns_added"] == 0 and again["turns_existing"] == 50
    full = orjson.loads(cli("--db", str(db_path), "ingest", str(MAYA), "--json").stdout)
    assert full["turns_added"] == 34 and full["turns_existing"] == 50
    detail = orjson.loads(cli("--db", str(db_path), "inspect-graph", "--turn", lines_id(lines[50]), "--format",
                              "json").stdout)
    assert any(n["kind"] == "temporal" and n["turn"] == lines_id(lines[49]) for n in detail["neighbours"])


def lines_id(line: bytes) -> str:
    return orjson.loads(line)["id"]


@pytest.mark.usefixtures("stub_models")
def test_invalid_jsonl_names_the_line_and_writes_nothing(cli, db_path, tmp_path):
    assert cli("--db", str(db_path), "ingest", str(SAM)).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    good = MAYA.read_text().splitlines()
    wrong_time = '{"conversation": "x", "text": "ok", "time": "not a time at all"}'
    bad.write_text("\n".join([*good[:5], wrong_time, *good[5:]]))
    result = cli("--db", str(db_path), "ingest", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:6:" in result.stderr and "time" in result.stderr
    summary = orjson.loads(cli("--db", str(db_path), "inspect-graph", "--format", "json").stdout)
    assert [c["conversation"] for c in summary["conversations"]] == ["assistant-chat"]
    assert summary["conversations"][0]["turns"] == 43


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "not valid JSON"),
        ('{"conversation": "x", "speaker": "a"}', "missing or empty 'text'"),
        ('["a list"]', "expected a JSON object"),
        ('{"text": "no conversation"}', "no conversation"),
    ],
)
def test_each_kind_of_bad_line(cli, db_path, tmp_path, line, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conversation": "x", "text": "fine"}\n' + line + "\n")
    result = cli("--db", str(db_path), "ingest", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:2: {message}" in result.stderr


@pytest.mark.usefixtures("stub_models")
def test_skip_invalid_reports_and_skips(cli, db_path, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conversation": "x", "text": "I moved to Denver."}\n{oops\n{"conversation": "x", "text": "hi"}\n')
    result = cli("--db", str(db_path), "ingest", str(bad), "--skip-invalid", "--json")
    assert result.exit_code == 3
    report = orjson.loads(result.stdout)
    assert report["turns_added"] == 2 and len(report["invalid"]) == 1 and ":2:" in report["invalid"][0]


@pytest.mark.usefixtures("stub_models")
def test_stdin_and_default_conversation(cli, db_path):
    data = '{"text": "I adopted a beagle named Biscuit.", "speaker": "Maya", "time": "8 May 2023"}\n'
    result = cli("--db", str(db_path), "ingest", "-", "--conversation", "piped", "--json", input=data)
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["conversations"] == ["piped"]


def test_inspect_graph_formats(cli, maya_db):
    summary = orjson.loads(cli("--db", str(maya_db), "inspect-graph", "--format", "json").stdout)
    assert summary["settings"]["graph_window"] == 2 and summary["settings"]["graph_sem_k"] == 5
    assert summary["settings"]["embedding_model"] == "all-MiniLM-L6-v2-int8"  # the default embedder
    assert summary["settings"]["turn_vectors"] == "turn+previous"  # each turn read after the one before it
    conv = summary["conversations"][0]
    assert conv["turns"] == 84 and conv["temporal_edges"] > 0 and conv["semantic_edges"] > 0
    assert conv["degree"]["max"] >= conv["degree"]["mean"] >= conv["degree"]["min"]
    dot = cli("--db", str(maya_db), "inspect-graph", "--format", "dot").stdout
    assert dot.startswith('digraph "maya-and-leo"') and 'kind="semantic"' in dot
    graphml = cli("--db", str(maya_db), "inspect-graph", "--format", "graphml").stdout
    import xml.dom.minidom

    assert len(xml.dom.minidom.parseString(graphml).getElementsByTagName("node")) == 84
    table = cli("--db", str(maya_db), "inspect-graph")
    assert table.exit_code == 0 and "maya-and-leo" in table.stdout
    turn = orjson.loads(cli("--db", str(maya_db), "inspect-graph", "--turn", "s2:9", "--format", "json").stdout)
    assert "beagle" in turn["turn"]["text"] and turn["cues"]
    missing = cli("--db", str(maya_db), "inspect-graph", "--turn", "nope")
    assert missing.exit_code == 1 and "no turn 'nope'" in missing.stderr


def test_inspect_graph_fits_80_columns(cli, maya_db, monkeypatch):
    from cuemem_cli.cli import render

    monkeypatch.setattr(render.out, "width", 80)
    monkeypatch.setattr(render, "piped", lambda: False)  # a terminal's table (a pipe gets tab-separated values)
    lines = cli("--db", str(maya_db), "inspect-graph").stdout.splitlines()
    assert max(map(len, lines)) <= 80 and not any("…" in line for line in lines)  # nothing cut short
    row = next(line for line in lines if line.startswith("maya-and-leo")).split()
    assert row[1] == "84" and row[-1] == "2023-03→2023-10"
    assert "pending" not in lines[1]  # shown only when some turn's extraction failed
    turn = cli("--db", str(maya_db), "inspect-graph", "--turn", "s2:9").stdout.splitlines()
    assert max(map(len, turn)) <= 80
    assert any(re.match(r" +cue \[triple\] +\(", line) for line in turn)  # the kind is text, not markup
    cue_lines = turn[turn.index(next(line for line in turn if "cue [" in line)):
                     turn.index(next(line for line in turn if line.startswith("Neighbours")))]
    assert len(cue_lines) > 3 and all(line.startswith("  ") for line in cue_lines)  # a long cue wraps indented
    assert any(line.startswith("in ") or line.startswith("out ") for line in turn)


def test_usage_errors_exit_2(cli, maya_db):
    assert cli("--db", str(maya_db), "inspect-graph", "--format", "pdf").exit_code == 2
    assert cli("--db", str(maya_db), "ask", "q", "--top-m", "0").exit_code == 2


def test_query_time_settings_beyond_the_built_graph_are_refused(cli, maya_db):
    result = cli("--db", str(maya_db), "ask", "q", "--window", "5")
    assert result.exit_code == 1 and "window=2" in result.stderr


def test_empty_memory_says_what_to_do(cli, db_path):
    result = cli("--db", str(db_path), "ask", "anything")
    assert result.exit_code == 1 and "ingest" in result.stderr


@pytest.mark.parametrize("command", [["ask", "anything"], ["inspect-graph"], ["export"],
                                     ["forget", "--conversation", "x", "--yes"], ["extract", "--pending"]])
def test_read_commands_name_a_missing_database_and_do_not_create_it(cli, tmp_path, command):
    """A mistyped --db must not leave an empty database behind that later reads as 'memory is empty'."""
    missing = tmp_path / "mistyped.db"
    result = cli("--db", str(missing), *command)
    assert result.exit_code == 1, result.output
    assert f"no cuemem database at {missing}" in result.stderr and "ingest" in result.stderr
    assert not missing.exists()


def test_an_empty_question_is_refused(cli, maya_db):
    result = cli("--db", str(maya_db), "ask", "  ")
    assert result.exit_code == 1 and "the question is empty" in result.stderr and result.stdout == ""


def python_prints(code: str) -> str:
    """Run `code` in a fresh interpreter (nothing imported yet) and return what it printed."""
    import subprocess

    out = subprocess.run([*PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.subprocess
def test_context_only_ask_imports_no_heavy_library(maya_db):
    """The pipeline path (`ask --context-only --json`) must stay fast: no torch, spaCy or litellm, and neither
    the answer step nor the ingest pipeline of cuemem itself (their imports were a tenth of its CPU time)."""
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from cuemem_cli.cli.app import app\n"
        f"r = CliRunner().invoke(app, ['--db', {str(maya_db)!r}, 'ask', 'Where does Maya live?', '--context-only',"
        " '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = sorted(m for m in ('torch', 'spacy', 'litellm', 'sentence_transformers',"
        " 'cuemem_cli.answer.extractive', 'cuemem_cli.ingest.pipeline') if m in sys.modules)\n"
        "print(','.join(heavy) or 'none')\n"
    )
    assert python_prints(code) == "none"


@pytest.mark.subprocess
def test_an_offline_answer_loads_spacy_only_for_a_question_that_needs_its_parser(maya_db):
    """`cuemem ask` as typed (the offline answer line): a where-question is read without spaCy (importing and
    loading it takes seconds); a what-question reads noun phrases, so it loads the parser, once."""
    def loaded(question: str) -> str:
        return python_prints(
            "import sys\n"
            "from typer.testing import CliRunner\n"
            "from cuemem_cli.cli.app import app\n"
            f"r = CliRunner().invoke(app, ['--db', {str(maya_db)!r}, 'ask', {question!r}, '--json'])\n"
            "assert r.exit_code == 0, r.output\n"
            "import json; assert json.loads(r.stdout)['answer_kind'] == 'extractive', r.stdout\n"
            "print(','.join(m for m in ('spacy', 'torch', 'litellm') if m in sys.modules) or 'none')\n")

    assert loaded("Where does Maya live now?") == "none"
    assert loaded("What breed is the dog Maya adopted?") == "spacy"


@pytest.mark.subprocess
def test_the_package_root_exports_the_result_types_lazily():
    """`from cuemem_cli import Memory, Context, Evidence, Answer, Settings` without reaching into modules; the
    bare import loads none of the engine (`cuemem --help` stays fast)."""
    code = (
        "import sys, cuemem_cli\n"
        "loaded = sorted(m for m in ('cuemem_cli.memory', 'cuemem_cli.recall.reconstruct', 'cuemem_cli.store.base',"
        " 'numpy')"
        " if m in sys.modules)\n"
        "from cuemem_cli import Answer, Context, Evidence, Memory, Result, Settings\n"
        "from cuemem_cli import memory, records\n"
        "from cuemem_cli.recall import settings\n"
        "assert (Memory, Result, Settings) == (memory.Memory, memory.Result, settings.Settings)\n"
        "assert (Answer, Context, Evidence) == (records.Answer, records.Context, records.Evidence)\n"
        "assert set(cuemem_cli.__all__) <= set(dir(cuemem_cli))\n"
        "print(','.join(loaded) or 'none')\n"
    )
    assert python_prints(code) == "none"


def test_help_lists_every_command_and_the_usage_page_documents_them(cli):
    """Walks the real Typer app, so a command added later fails here until it has help and an entry in the
    command table of docs/usage.md (the README links it)."""
    import typer
    from conftest import REPO

    from cuemem_cli.cli.app import app

    readme = (REPO / "docs" / "usage.md").read_text()
    listed = cli("--help").stdout
    commands = typer.main.get_command(app).commands
    assert {"ingest", "ask", "inspect-graph", "convert", "extract", "forget", "export", "import",
            "eval"} <= set(commands)
    for name, command in commands.items():
        assert not command.hidden and name in listed, f"{name} is missing from cuemem --help"
        assert (command.help or "").strip(), f"cuemem {name} has no help text"
        assert f"`cuemem {name}" in readme, f"docs/usage.md's command table does not document cuemem {name}"
        subcommands = getattr(command, "commands", {})  # a group: convert, eval
        group_help = cli(name, "--help").stdout if subcommands else ""
        for sub, subcommand in subcommands.items():
            assert (subcommand.help or "").strip(), f"cuemem {name} {sub} has no help text"
            assert sub in group_help, f"{sub} is missing from cuemem {name} --help"
            assert re.search(rf"cuemem {name} [^`\n]*\b{re.escape(sub)}\b", readme), \
                f"docs/usage.md does not document cuemem {name} {sub}"


@pytest.mark.parametrize("command", [("ask", "Where?", "-c"), ("export", "-c"), ("forget", "--yes", "--conversation"),
                                     ("inspect-graph", "-c"), ("extract", "--pending", "--conversation")])
def test_every_command_names_an_unknown_conversation_alike(cli, maya_db, command):
    """One error (errors.UnknownConversation) for every command that takes a conversation."""
    result = cli("--db", str(maya_db), *command, "nobody")
    assert result.exit_code == 1 and result.stdout == ""
    assert "no conversation named 'nobody'" in result.stderr and "known: maya-and-leo" in result.stderr


# ------------------------------------------------------------------ a newcomer's first hour (issue 35)
def test_inspect_graph_takes_json_as_every_read_command_does(cli, maya_db):
    summary = cli("--db", str(maya_db), "inspect-graph", "--json")
    assert summary.exit_code == 0, summary.stderr
    assert orjson.loads(summary.stdout) == orjson.loads(cli("--db", str(maya_db), "inspect-graph", "--format",
                                                            "json").stdout)
    turn = cli("--db", str(maya_db), "inspect-graph", "--turn", "s2:9", "--json")
    assert orjson.loads(turn.stdout)["turn"]["source_id"] == "s2:9"
    clash = cli("--db", str(maya_db), "inspect-graph", "--json", "--format", "dot")
    assert clash.exit_code == 2 and "--json" in clash.stderr and clash.stdout == ""


# Commands whose output is data in a format of its own rather than a report: JSONL (export, convert), the
# MCP protocol, or web pages (browse). Every other command prints its result as JSON with --json (docs/usage.md).
NOT_JSON = {("export",), ("mcp",), ("convert",), ("browse",)}


def test_every_command_that_reports_prints_json_with_json():
    import typer.main

    from cuemem_cli.cli.app import app

    def walk(prefix, command):
        subs = getattr(command, "commands", {})
        for name, sub in subs.items():
            yield from walk((*prefix, name), sub)
        if not subs and prefix[:1] not in NOT_JSON and prefix not in NOT_JSON:
            yield prefix, command

    checked = []
    for path, command in walk((), typer.main.get_command(app)):
        opts = {opt for param in command.params for opt in getattr(param, "opts", [])}
        assert "--json" in opts, f"cuemem {' '.join(path)} has no --json"
        checked.append(path)
    assert {("ask",), ("inspect-graph",), ("ingest",), ("eval", "locomo")} <= set(checked)


def test_export_to_dash_is_standard_output_and_a_gzipped_export_imports(cli, maya_db, tmp_path, monkeypatch):
    import gzip

    monkeypatch.chdir(tmp_path)
    dashed = cli("--db", str(maya_db), "export", "-o", "-")
    assert dashed.exit_code == 0, dashed.stderr
    assert dashed.stdout == cli("--db", str(maya_db), "export").stdout and dashed.stdout.count("\n") == 84
    assert not (tmp_path / "-").exists() and dashed.stderr == ""
    packed = tmp_path / "memory.jsonl.gz"
    packed.write_bytes(gzip.compress(dashed.stdout.encode()))
    copy = tmp_path / "copy.db"
    imported = cli("--db", str(copy), "import", str(packed), "--json")
    assert imported.exit_code == 0, imported.stderr
    assert orjson.loads(imported.stdout)["turns_added"] == 84
    assert cli("--db", str(copy), "export").stdout == dashed.stdout
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    refused = cli("--db", str(tmp_path / "none.db"), "import", str(empty))
    assert refused.exit_code == 1 and "no turns: the export is empty" in refused.stderr
    assert not (tmp_path / "none.db").exists()


@pytest.mark.usefixtures("stub_models")
def test_tables_in_a_pipe_are_tab_separated_with_every_value_whole(cli, db_path, tmp_path, monkeypatch):
    from cuemem_cli.cli import render

    name = "a-conversation-with-a-name-far-longer-than-any-column-of-an-80-column-table"
    text = "I moved to Denver yesterday, after " + "many weeks of packing boxes and " * 8 + "one long drive."
    source = tmp_path / "chat.jsonl"
    source.write_bytes(orjson.dumps({"conversation": name, "id": "1", "time": "2023-03-04", "text": "I live here."})
                       + b"\n" + orjson.dumps({"conversation": name, "id": "2", "time": "2024-08-20",
                                               "text": text}) + b"\n")
    assert cli("--db", str(db_path), "ingest", str(source)).exit_code == 0
    monkeypatch.setattr(render.out, "width", 40)  # a narrow terminal's table would cut all of it
    table = cli("--db", str(db_path), "inspect-graph")
    assert table.exit_code == 0, table.stderr
    rows, settings = table.stdout.split("\n\n")
    header, row = (line.split("\t") for line in rows.splitlines())
    assert header == ["conversation", "turns", "cues", "edges t/s", "degree", "no cue", "span", "kinds"]
    assert row[0] == name and row[1] == "2" and row[-2] == "2023-03→2024-08" and "…" not in table.stdout
    assert row[-1] == "city 1"  # Denver: the kinds of things its turns name
    assert dict(line.split("\t") for line in settings.splitlines())["graph_window"] == "2"
    turn = cli("--db", str(db_path), "inspect-graph", "--turn", "1", "-c", name).stdout
    neighbours = turn.split("\nNeighbours\n", 1)[1].splitlines()
    assert neighbours[0].split("\t") == ["dir", "kind", "turn", "weight", "rank", "text"]
    assert ["out", "temporal", "2", "1.000", "1", text] in [line.split("\t") for line in neighbours[1:]]


@pytest.mark.usefixtures("stub_models")
def test_reports_count_in_words(cli, db_path, tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text('{"conversation": "c", "text": "I adopted a beagle."}\n')
    result = cli("--db", str(db_path), "ingest", str(one))
    assert result.exit_code == 0, result.stderr
    said = " ".join(result.stderr.split())
    assert said.startswith("ingested 1 new turn (0 already stored) from 1 line into 1 conversation: ")
    assert "(s)" not in said and "1 new turns" not in said
