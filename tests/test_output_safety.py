"""Stored text is untrusted: what cuemem prints for people never carries its control characters or markup;
--json keeps the exact text; DOT and GraphML escape by their own rules."""

from __future__ import annotations

import re

import orjson
import pytest

from conftest import stand_in_models

pytestmark = pytest.mark.usefixtures("stub_models")  # about what is printed, not which turns are found

EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m \x9b2J [bold]not bold[/bold]"
EVIL_SHOWN = r"\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m \x9b2J [bold]not bold[/bold]"
CONV = "chat\x1b[1m"
SPEAKER = 'Leo "the\\ \x1bcat"'
TEXT = "I adopted a dog named Biscuit. " + EVIL


def evil_lines() -> list[dict]:
    return [
        {"conversation": CONV, "id": "s1:1", "speaker": SPEAKER, "time": "2023-05-08T13:56:00", "text": TEXT},
        {"conversation": CONV, "id": "s1:2", "speaker": "Ana", "time": "2023-05-08T13:57:00",
         "text": "Nice! What breed is Biscuit?\nA beagle?"},
        {"conversation": CONV, "id": "s1:3", "speaker": SPEAKER, "time": "2023-05-08T13:58:00",
         "text": "Biscuit is a beagle, he loves the park."},
        {"conversation": "other", "id": "o:1", "speaker": "Zoe", "text": "I live in Lisbon."},
        {"conversation": "other", "id": "o:2", "speaker": "Ian", "text": "Lisbon is sunny."},
    ]


@pytest.fixture(scope="module")
def evil_db(tmp_path_factory):
    from typer.testing import CliRunner

    from cuemem_cli.cli.app import app

    folder = tmp_path_factory.mktemp("evil")
    source = folder / "evil.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in evil_lines()))
    path = folder / "memory.db"
    with stand_in_models():
        result = CliRunner().invoke(app, ["--db", str(path), "ingest", str(source), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return path


def assert_safe(result) -> str:
    """No raw control byte (but newline and tab) and no C1 control character in stdout or stderr."""
    for raw in (result.stdout_bytes, result.stderr_bytes):
        assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", raw), raw
        assert not re.search("[\x80-\x9f]", raw.decode()), raw
    return result.stdout + result.stderr


@pytest.mark.parametrize("args", [
    ["ask", "What dog did Leo adopt?", "-c", CONV],
    ["ask", "What dog did Leo adopt?", "-c", CONV, "--context-only"],
    ["ask", "What dog did Leo adopt?", "-c", CONV, "--context-only", "--verbose"],  # ids and cues too
    ["inspect-graph", "--turn", "s1:1", "-c", CONV],
])
def test_stored_control_characters_are_shown_escaped(cli, evil_db, args):
    shown = assert_safe(cli("--db", str(evil_db), *args))
    assert EVIL_SHOWN.replace("[bold]not bold[/bold]", "") in shown
    assert "[bold]not" in shown and "bold[/bold]" in shown  # markup printed as text, not applied
    assert r'Leo "the\ \x1bcat"' in shown
    assert args[0] != "ask" or r"chat\x1b[1m" in shown  # the evidence header names the conversation


def test_tables_and_reports_escape_names(cli, evil_db):
    table = cli("--db", str(evil_db), "inspect-graph")
    assert table.exit_code == 0 and r"chat\x1b[1m" in assert_safe(table)
    dry = cli("--db", str(evil_db), "forget", "-c", CONV, "--dry-run")
    assert dry.exit_code == 0 and "would forget" in assert_safe(dry)


def test_errors_that_quote_input_escape_it(cli, evil_db, tmp_path):
    evil_id = "x\x1b]0;t\x07\x9b"
    missing = cli("--db", str(evil_db), "inspect-graph", "--turn", evil_id, "-c", CONV)
    assert missing.exit_code == 1 and r"x\x1b]0;t\x07\x9b" in assert_safe(missing)
    no_file = cli("--db", str(evil_db), "ingest", str(tmp_path / "a\x1b[2Jb.jsonl"))
    assert no_file.exit_code == 1 and r"a\x1b[2Jb.jsonl" in assert_safe(no_file)
    no_conv = cli("--db", str(evil_db), "ask", "q", "-c", "zz\x07[red]")
    assert no_conv.exit_code == 1 and r"zz\x07[red]" in assert_safe(no_conv)


def test_skipped_lines_are_reported_escaped(cli, tmp_path):
    source = tmp_path / "bad\x1b]0;x\x07.jsonl"
    source.write_bytes(orjson.dumps({"conversation": "c", "text": "fine"}) + b"\n"
                       + orjson.dumps({"conversation": "c\x1b[2J", "text": 5}) + b"\n")
    result = cli("--db", str(tmp_path / "m.db"), "ingest", str(source), "--skip-invalid")
    assert result.exit_code == 3
    assert r"bad\x1b]0;x\x07.jsonl:2" in assert_safe(result)


def test_json_keeps_the_exact_text(cli, evil_db):
    data = orjson.loads(cli("--db", str(evil_db), "ask", "What dog did Leo adopt?", "-c", CONV, "--context-only",
                            "--json").stdout)
    assert data["conversations"] == [CONV]
    first = next(e for e in data["evidence"] if e["source_id"] == "s1:1")
    assert first["speaker"] == SPEAKER and EVIL in first["text"]
    detail = orjson.loads(cli("--db", str(evil_db), "inspect-graph", "--turn", "s1:1", "-c", CONV, "--format",
                              "json").stdout)
    assert detail["turn"]["text"] == TEXT and detail["turn"]["speaker"] == SPEAKER


# ------------------------------------------------------------------ DOT, GraphML
def dot_label(dot: str, node: int) -> str:
    """A node's label as Graphviz draws it: the DOT string's \\" and \\\\ undone, \\n a line break."""
    quoted = re.search(rf'^  {node} \[label="((?:[^"\\]|\\.)*)"\];$', dot, re.M).group(1)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "l": "\n", "r": "\n"}.get(m.group(1), m.group(1)), quoted)


def test_dot_labels_show_ids_and_speakers_literally(cli, evil_db):
    result = cli("--db", str(evil_db), "inspect-graph", "-c", CONV, "--format", "dot")
    assert result.exit_code == 0
    dot = assert_safe(result)
    ids = {t["source_id"]: t["id"] for t in orjson.loads(cli(
        "--db", str(evil_db), "inspect-graph", "-c", CONV, "--format", "json").stdout)["nodes"]}
    assert dot_label(dot, ids["s1:2"]) == "s1:2\nAna: Nice! What breed is Biscuit? A beagle?"
    first = dot_label(dot, ids["s1:1"])
    assert first.startswith('s1:1\nLeo "the\\ \\x1bcat": I adopted a dog')  # the ESC shown as \x1b
    assert dot.startswith('digraph "chat\\\\x1b[1m" {')


def test_graphml_round_trips_through_networkx(cli, evil_db):
    nx = pytest.importorskip("networkx")
    import io

    result = cli("--db", str(evil_db), "inspect-graph", "-c", CONV, "--format", "graphml")
    assert_safe(result)
    graph = nx.read_graphml(io.BytesIO(result.stdout_bytes))
    texts = {data["source_id"]: data for data in graph.nodes.values()}
    assert texts["s1:2"]["text"] == "Nice! What breed is Biscuit?\nA beagle?"
    # XML cannot hold ESC or BEL at all: shown as \x1b; the C1 CSI and everything else comes back exactly
    assert texts["s1:1"]["text"] == TEXT.replace("\x1b", r"\x1b").replace("\x07", r"\x07")
    assert texts["s1:1"]["speaker"] == SPEAKER.replace("\x1b", r"\x1b")


# ------------------------------------------------------------------ inspect-graph JSON
def test_inspect_graph_json_has_nodes_and_edges(cli, evil_db):
    whole = orjson.loads(cli("--db", str(evil_db), "inspect-graph", "--format", "json").stdout)
    assert {c["conversation"] for c in whole["conversations"]} == {CONV, "other"}
    assert len(whole["nodes"]) == 5
    assert set(whole["nodes"][0]) == {"id", "conversation", "source_id", "time", "speaker", "cues", "kinds"}
    assert set(whole["edges"][0]) == {"src", "dst", "kind", "weight", "rank"}
    counts = whole["conversations"]
    assert len(whole["edges"]) == sum(c["temporal_edges"] + c["semantic_edges"] for c in counts)
    assert sum(n["cues"] for n in whole["nodes"]) == sum(c["cues"] for c in counts)
    ids = {n["id"] for n in whole["nodes"]}
    assert all(e["src"] in ids and e["dst"] in ids for e in whole["edges"])

    one = orjson.loads(cli("--db", str(evil_db), "inspect-graph", "-c", "other", "--format", "json").stdout)
    own = [n for n in one["nodes"] if n["conversation"] == "other"]
    assert [n["source_id"] for n in own] == ["o:1", "o:2"] and one["nodes"][:2] == own  # its turns first
    other_ids, node_ids = {n["id"] for n in own}, {n["id"] for n in one["nodes"]}
    assert one["edges"] and all(e["src"] in other_ids for e in one["edges"])  # the edges leaving its turns …
    assert all(e["dst"] in node_ids for e in one["edges"])  # … and the turns they reach, of any conversation
    assert all(e["kind"] == "semantic" for e in one["edges"] if e["dst"] not in other_ids)

    turn = orjson.loads(cli("--db", str(evil_db), "inspect-graph", "-c", CONV, "--turn", "s1:2", "--format",
                            "json").stdout)
    me = turn["turn"]["id"]
    assert turn["nodes"][0]["id"] == me and turn["nodes"][0]["cues"] == len(turn["cues"])
    assert all(me in (e["src"], e["dst"]) for e in turn["edges"]) and len(turn["edges"]) == len(turn["neighbours"])
    assert {n["source_id"] for n in turn["nodes"]} == {"s1:2"} | {n["turn"] for n in turn["neighbours"]}


def test_turn_with_dot_gives_its_neighbourhood(cli, evil_db):
    result = cli("--db", str(evil_db), "inspect-graph", "-c", "other", "--turn", "o:1", "--format", "dot")
    assert result.exit_code == 0 and result.stdout.startswith('digraph "other" {')
    assert "label=" in result.stdout and "Neighbours" not in result.stdout
    nodes = re.findall(r"^  (\d+) \[label=", result.stdout, re.M)
    edges = re.findall(r"^  (\d+) -> (\d+) ", result.stdout, re.M)
    detail = orjson.loads(cli("--db", str(evil_db), "inspect-graph", "-c", "other", "--turn", "o:1", "--json").stdout)
    reached = {n["turn"] for n in detail["neighbours"]} - {"o:1"}  # by either edge direction, of any conversation
    assert len(nodes) == 1 + len(reached) > 2 and edges and all(set(e) <= set(nodes) for e in edges)
    graphml = cli("--db", str(evil_db), "inspect-graph", "-c", "other", "--turn", "o:1", "--format", "graphml")
    assert graphml.exit_code == 0 and graphml.stdout.count("<node ") == len(nodes)
