"""The real CLI end to end on the sample dialogues: ingest, ask, inspect-graph, errors."""

from __future__ import annotations

import html
import re
from itertools import pairwise

import orjson
import pytest

from conftest import PYTHON, SAMPLES, tier

MAYA = SAMPLES / "maya_and_leo.jsonl"
SAM = SAMPLES / "assistant_chat.jsonl"


@pytest.fixture(scope="module")
@tier("slow")
def maya_db(tmp_path_factory):
    """The Maya & Leo sample ingested once, through the CLI, for the read-only tests."""
    from typer.testing import CliRunner

    from cuemem_cli.cli import app

    path = tmp_path_factory.mktemp("maya") / "memory.db"
    result = CliRunner().invoke(app, ["--db", str(path), "ingest", str(MAYA), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return path


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


@pytest.mark.parametrize(("question", "place", "turn"), [
    ("Where does Maya live now?", "Denver", "s4:1"),  # the latest statement: "Greetings from Denver!"
    ("Where did Maya live in March 2023?", "Portland", "s1:8"),  # one said in the period asked about
])
def test_offline_where_answers_name_the_place_of_the_right_time(cli, maya_db, question, place, turn):
    """A where-question about a time is answered by a sentence that names a place ("on Thursday" is not
    one): the latest for a question about now, one said in the named period for one about then (issue 22)."""
    answer = ask_json(cli, maya_db, question, "--as-of", "2023-10-31")["answer"]
    span, source = answer.splitlines()[:2]
    assert span == place and source.startswith("source: ") and f", {turn}, " in source, answer


def test_evidence_reads_by_day_in_an_80_column_terminal(cli, maya_db, monkeypatch):
    from cuemem_cli import render
    from cuemem_cli.timeparse import format_human

    question = "What happened with Biscuit and the vet?"
    evidence = ask_json(cli, maya_db, question, "--context-only")["evidence"]
    monkeypatch.setattr(render.out, "width", 80)
    lines = cli("--db", str(maya_db), "ask", question, "--context-only").stdout.splitlines()
    assert max(map(len, lines)) <= 80
    days = list(dict.fromkeys(format_human(e["time"], with_time=False) for e in evidence))
    assert [line.split(" ─")[0] for line in lines if "───" in line] == days  # one rule per day, in order
    starts = [line.split()[0] for line in lines if line[:1].strip() and "───" not in line][1:]
    assert starts == [e["source_id"] for e in evidence]  # each turn once, chronological, id first


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
        [f"{e['speaker']}: {html.escape(e['text'], quote=False)}" for e in evidence]
    left_out = [a["time"][:10] == b["time"][:10] and b["position"] > a["position"] + 1
                for a, b in pairwise(evidence)]
    assert lines.count("…") == sum(left_out) > 0  # one line wherever turns of a day are left out


def test_cuemem_model_env_is_the_default_model(cli, maya_db, fake_llm, monkeypatch):
    monkeypatch.setenv("CUEMEM_MODEL", "fake/from-env")
    fake_llm.default = "Portland"
    data = ask_json(cli, maya_db, "Where did Maya live in March 2023?")
    assert data["model"] == "fake/from-env"


@pytest.mark.usefixtures("stub_models")
def test_several_conversations_need_a_choice(cli, db_path):
    assert cli("--db", str(db_path), "ingest", str(MAYA)).exit_code == 0
    assert cli("--db", str(db_path), "ingest", str(SAM)).exit_code == 0
    result = cli("--db", str(db_path), "ask", "What is Sam's diet?")
    assert result.exit_code == 1
    assert "maya-and-leo" in result.stderr and "assistant-chat" in result.stderr and "--conversation" in result.stderr
    data = ask_json(cli, db_path, "What is Sam's diet?", "--conversation", "assistant-chat", "--context-only")
    assert all(e["source_id"].startswith("s") for e in data["evidence"])
    assert data["conversation"] == "assistant-chat"


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
    from cuemem_cli import render

    monkeypatch.setattr(render.out, "width", 80)
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
    """The pipeline path (`ask --context-only --json`) must stay fast: no torch, spaCy or litellm."""
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from cuemem_cli.cli import app\n"
        f"r = CliRunner().invoke(app, ['--db', {str(maya_db)!r}, 'ask', 'Where does Maya live?', '--context-only',"
        " '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "heavy = sorted(m for m in ('torch', 'spacy', 'litellm', 'sentence_transformers') if m in sys.modules)\n"
        "print(','.join(heavy) or 'none')\n"
    )
    assert python_prints(code) == "none"


@pytest.mark.subprocess
def test_the_package_root_exports_the_result_types_lazily():
    """`from cuemem_cli import Memory, Context, Evidence, Answer, Settings` without reaching into modules; the
    bare import loads none of the engine (`cuemem --help` stays fast)."""
    code = (
        "import sys, cuemem_cli\n"
        "loaded = sorted(m for m in ('cuemem_cli.memory', 'cuemem_cli.reconstruct', 'cuemem_cli.store', 'numpy')"
        " if m in sys.modules)\n"
        "from cuemem_cli import Answer, Context, Evidence, Memory, Result, Settings\n"
        "from cuemem_cli import memory, records, reconstruct\n"
        "assert (Memory, Result, Settings) == (memory.Memory, memory.Result, reconstruct.Settings)\n"
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

    from cuemem_cli.cli import app

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
