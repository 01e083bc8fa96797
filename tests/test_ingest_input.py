"""No silent drops on input: every bad line reported, unique conversations per source, --conversation overrides."""

from __future__ import annotations

import json

import orjson
import pytest

from conftest import raw

pytestmark = pytest.mark.usefixtures("stub_models")  # about the lines read, not their cues or vectors


def stored(db_path) -> list[tuple[str, str, str]]:
    """(conversation, source id, text) of every stored turn, in conversation then position order."""
    conn = raw(db_path)
    rows = conn.execute("SELECT c.name, t.source_id, t.text FROM turns t "
                        "JOIN conversations c ON c.id = t.conversation_id ORDER BY c.name, t.position").fetchall()
    conn.close()
    return [tuple(row) for row in rows]


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_two_openai_files_get_their_own_conversations(cli, db_path, tmp_path):
    first, second = tmp_path / "monday.json", tmp_path / "tuesday.json"
    first.write_text(json.dumps({"messages": [{"role": "user", "content": "I adopted a beagle."},
                                              {"role": "assistant", "content": "Congratulations!"}]}))
    second.write_text(json.dumps({"messages": [{"role": "user", "content": "I started learning the cello."}]}))
    for path in (first, second):
        converted = tmp_path / f"{path.stem}.jsonl"
        result = cli("convert", "openai", str(path))
        assert result.exit_code == 0, result.stderr
        converted.write_text(result.stdout)
        assert cli("--db", str(db_path), "ingest", str(converted)).exit_code == 0
    turns = stored(db_path)
    assert len(turns) == 3
    names = sorted({conversation for conversation, _, _ in turns})
    assert names[0].startswith("monday-") and names[1].startswith("tuesday-")
    assert all(len(name.split("-")[-1]) == 8 for name in names)


def test_openai_unnamed_conversation_is_named_by_file_hash(cli, tmp_path):
    one, two = tmp_path / "a" / "chat.json", tmp_path / "b" / "chat.json"
    for path, text in ((one, "hello"), (two, "goodbye")):
        path.parent.mkdir()
        path.write_text(json.dumps([{"role": "user", "content": text}]))
    names = [orjson.loads(cli("convert", "openai", str(p)).stdout)["conversation"] for p in (one, two)]
    assert names[0] != names[1] and all(n.startswith("chat-") for n in names)
    again = orjson.loads(cli("convert", "openai", str(one)).stdout)["conversation"]
    assert again == names[0]  # stable: re-converting the same file names it the same
    piped = orjson.loads(cli("convert", "openai", "-", input=one.read_text()).stdout)["conversation"]
    assert piped == "stdin-" + names[0].split("-")[-1]


def test_conversation_option_overrides_every_line(cli, db_path, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(jsonl({"conversation": "trip", "id": "0", "text": "We booked Lisbon."},
                       {"text": "The flight leaves at nine.", "id": "1"}))
    b.write_text(jsonl({"conversation": "work", "id": "0", "text": "The review is on Friday."}))
    for path in (a, b):
        result = cli("--db", str(db_path), "ingest", str(path), "--conversation", "X", "--json")
        assert result.exit_code == 0, result.stderr
        assert orjson.loads(result.stdout)["turns_existing"] == 0
    assert stored(db_path) == [("X", "trip/0", "We booked Lisbon."), ("X", "1", "The flight leaves at nine."),
                               ("X", "work/0", "The review is on Friday.")]


def test_every_bad_line_is_reported_and_nothing_stored(cli, db_path, tmp_path):
    bad = tmp_path / "chat.jsonl"
    bad.write_text(jsonl({"conversation": "c", "text": "fine"}) + "{oops\n"
                   + jsonl({"conversation": "c", "text": "fine too"}, {"conversation": "c", "text": 42},
                           {"conversation": "c", "text": "ok", "time": "not a time"}))
    result = cli("--db", str(db_path), "ingest", str(bad))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert f"{bad}: 3 invalid lines (nothing stored): {bad}:2: not valid JSON" in message
    assert f"{bad}:4: 'text' must be a string, not a number" in message
    assert f"{bad}:5: cannot read time 'not a time'" in message
    assert not db_path.exists() or stored(db_path) == []


def test_a_turn_over_the_size_limit_is_refused_with_its_line_and_nothing_is_stored(cli, db_path, tmp_path):
    """A 5 MB agent log as one turn would take minutes and gigabytes; it is refused, naming the line and
    the way out, and the lines around it are not stored either (one batch, one decision)."""
    from cuemem_cli.ingest import MAX_TURN_CHARS

    big = tmp_path / "log.jsonl"
    big.write_text(jsonl({"conversation": "c", "text": "before"},
                         {"conversation": "c", "text": "x " * (MAX_TURN_CHARS // 2) + "y"},
                         {"conversation": "c", "text": "x " * (MAX_TURN_CHARS // 2)}))
    result = cli("--db", str(db_path), "ingest", str(big))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert (f"{big}:2: 'text' is {MAX_TURN_CHARS + 1:,} characters long; "
            f"a turn holds at most {MAX_TURN_CHARS:,}") in message
    assert "split it into several messages" in message and f"{big}:3" not in message  # exactly the limit is taken
    assert not db_path.exists() or stored(db_path) == []


def test_many_bad_lines_are_capped_with_a_count(cli, db_path, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(f'{{"conversation": "c", "text": {n}}}\n' for n in range(25)))
    result = cli("--db", str(db_path), "ingest", str(bad))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert "25 invalid lines" in message and "… and 15 more" in message
    assert f"{bad}:10:" in message and f"{bad}:11:" not in message


def test_type_errors_name_the_field(cli, db_path, tmp_path):
    cases = [('{"conversation": "c", "content": ["a", "b"]}', "'content' must be a string, not a list"),
             ('{"conversation": {"a": 1}, "text": "x"}', "'conversation' must be a string or a number, not an object"),
             ('{"conversation": "c", "text": "x", "speaker": true}',
              "'speaker' must be a string or a number, not a boolean"),
             ('{"conversation": "c", "text": "x", "time": [2023]}', "'time' must be a string or a number, not a list")]
    for line, expected in cases:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(line + "\n")
        result = cli("--db", str(db_path), "ingest", str(bad))
        assert result.exit_code == 1
        assert f"{bad}:1: {expected}" in " ".join(result.stderr.split()), result.stderr


def test_byte_order_mark_on_a_file_and_on_stdin(cli, db_path, tmp_path):
    data = jsonl({"conversation": "bom", "text": "I moved to Denver.", "id": "1"})
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + data.encode())
    assert cli("--db", str(db_path), "ingest", str(path)).exit_code == 0
    piped = jsonl({"conversation": "bom", "text": "I like hiking.", "id": "2"})
    assert cli("--db", str(db_path), "ingest", "-", input="\ufeff" + piped).exit_code == 0
    assert [sid for _, sid, _ in stored(db_path)] == ["1", "2"]


def test_several_files_need_from(cli, db_path, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(jsonl({"conversation": "c", "text": "x"}))
    result = cli("--db", str(db_path), "ingest", str(path), str(path))
    assert result.exit_code == 2 and "--from" in result.stderr
