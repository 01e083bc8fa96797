"""Importers for ChatGPT, Claude.ai and Claude Code exports: `cuemem convert FORMAT` and `cuemem ingest --from`."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import orjson
import pytest

from conftest import raw

pytestmark = pytest.mark.usefixtures("stub_models")  # about the turns stored, not their cues or vectors

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHATGPT = FIXTURES / "chatgpt_conversations.json"
CLAUDE = FIXTURES / "claude_conversations.json"
CLAUDE_CODE = FIXTURES / "claude_code"
TRIP = "6790a1b2-0000-4000-8000-00000000trip"
CELLO = "6790a1b2-0000-4000-8000-0000000cello"
GARDEN = "5f1c0000-0000-4000-8000-000000garden"
SESSION_1 = "0b1c2d3e-0000-4000-8000-000000000001"
SESSION_2 = "0b1c2d3e-0000-4000-8000-000000000002"


def converted(cli, *args: str) -> list[dict]:
    result = cli("convert", *args)
    assert result.exit_code == 0, result.stderr
    return [orjson.loads(line) for line in result.stdout.splitlines()]


def stored(db_path) -> list[tuple[str, str, str, str | None, str | None]]:
    """(conversation, source id, text, time, role) of every stored turn, by conversation then position."""
    conn = raw(db_path)
    rows = conn.execute("SELECT c.name, t.source_id, t.text, t.time, t.role FROM turns t "
                        "JOIN conversations c ON c.id = t.conversation_id ORDER BY c.name, t.position").fetchall()
    conn.close()
    return [tuple(row) for row in rows]


def ids(records: list[dict], conversation: str) -> list[str]:
    return [r["id"] for r in records if r["conversation"] == conversation]


# ---------------------------------------------------------------- chatgpt
def test_chatgpt_follows_the_kept_branch(cli):
    records = converted(cli, "chatgpt", str(CHATGPT))
    # not the edited-away branch (u-0002a, a-0002a), nor system, hidden, tool, tool-call, empty or reasoning messages
    assert ids(records, TRIP) == ["u-0001", "a-0001", "u-0002b", "a-0002b", "a-0003"]
    assert ids(records, CELLO) == ["u-0101", "a-0101"]
    first = records[0]
    assert first == {"conversation": TRIP, "time": "2024-06-01T09:01:00", "speaker": "user", "role": "user",
                     "text": "I'm planning a trip to Lisbon in July.", "id": "u-0001", "title": "Lisbon trip"}
    texts = " ".join(r["text"] for r in records)
    for hidden in ("Custom instructions", "search(", "Rua das Escolas", "Porto is cooler"):
        assert hidden not in texts


def test_chatgpt_all_branches_takes_every_node_once(cli):
    records = converted(cli, "chatgpt", "--all-branches", str(CHATGPT))
    trip = ids(records, TRIP)
    assert trip == ["u-0001", "a-0001", "u-0002a", "a-0002a", "u-0002b", "a-0002b", "a-0003"]
    assert len({(r["conversation"], r["id"]) for r in records}) == len(records)


def test_chatgpt_parts_and_times(cli):
    by_id = {r["id"]: r for r in converted(cli, "chatgpt", str(CHATGPT))}
    assert by_id["u-0002b"]["text"] == "[image]\nHere is my hotel, is it near the Alfama?"
    assert by_id["a-0101"]["text"] == "That's wonderful!\nHow often do you practise?"
    assert by_id["a-0001"]["time"] == "2024-06-01T09:01:10"  # epoch float 1717232470.25, UTC
    assert by_id["a-0002b"]["time"] == "2024-06-01T09:00:00"  # null create_time: the conversation's
    assert (by_id["a-0001"]["role"], by_id["a-0001"]["speaker"]) == ("assistant", "assistant")


def test_chatgpt_unpacked_export_folder(cli, tmp_path):
    shutil.copy(CHATGPT, tmp_path / "conversations.json")
    assert converted(cli, "chatgpt", str(tmp_path)) == converted(cli, "chatgpt", str(CHATGPT))


# ---------------------------------------------------------------- claude
def test_claude_messages(cli):
    records = converted(cli, "claude", str(CLAUDE))
    assert [r["id"] for r in records] == ["m-0001", "m-0002", "m-0004", "m-0101"]  # m-0003 is empty
    reply = records[1]
    assert reply["text"] == "Tomatoes need six hours of sun.\nCherry varieties suit pots best."  # no tool use/result
    assert (reply["role"], reply["speaker"], reply["conversation"], reply["title"]) == (
        "assistant", "assistant", GARDEN, "Balcony garden")
    assert (records[0]["role"], records[0]["speaker"]) == ("user", "user")
    assert "title" not in records[3]  # an untitled conversation gets no empty title


def test_time_zones_give_the_same_instant(cli, db_path):
    records = converted(cli, "claude", str(CLAUDE))
    assert records[0]["time"] == "2024-05-10T08:00:00"  # ...Z
    assert records[1]["time"] == "2024-05-10T08:00:05"  # 10:00:05+02:00
    result = cli("--db", str(db_path), "ingest", "--from", "claude", str(CLAUDE))
    assert result.exit_code == 0, result.stderr
    times = {sid: time for _, sid, _, time, _ in stored(db_path)}
    assert times["m-0002"] == "2024-05-10T08:00:05" and times["m-0001"] == "2024-05-10T08:00:00"


# ---------------------------------------------------------------- claude code
def test_claude_code_directory(cli):
    records = converted(cli, "claude-code", str(CLAUDE_CODE))
    assert ids(records, SESSION_1) == ["cc-0001", "cc-0003", "cc-0006"]
    assert ids(records, SESSION_2) == ["cd-0001", "cd-0002"]
    by_id = {r["id"]: r for r in records}
    assert by_id["cc-0003"]["text"] == "Let me run the test first.\n[tool: Bash]"  # thinking left out
    assert by_id["cc-0006"]["time"] == "2025-03-01T10:05:00"  # 12:05+02:00
    assert by_id["cc-0001"]["time"] == "2025-03-01T10:00:00"
    assert (by_id["cc-0001"]["role"], by_id["cc-0001"]["speaker"]) == ("user", "user")
    texts = " ".join(r["text"] for r in records)
    for left_out in ("Caveat", "Sub-agent", "token expired", "Probably a clock", "Compacting", "Fix flaky"):
        assert left_out not in texts


def test_claude_code_several_files(cli):
    files = sorted(str(p) for p in CLAUDE_CODE.rglob("*.jsonl"))
    assert converted(cli, "claude-code", *files) == converted(cli, "claude-code", str(CLAUDE_CODE))
    one = converted(cli, "claude-code", files[1])
    assert {r["conversation"] for r in one} == {SESSION_1}


@pytest.mark.parametrize("bad, expected", [
    ('{"type": "user", "uuid": "x", "timestamp": "2025-03-01T10:00:00Z", "message": {"role": "user", "content": "hi"}}',
     ":3: a user event needs 'sessionId'"),
    ('{"type": "assistant", "uuid": "x", "sessionId": "s", "message": "text"}', ":3: 'message' must be an object"),
    ('{"type": "user", "uuid": "x", "sessionId": "s", "timestamp": "soon", "message": {"content": "hi"}}',
     ":3: bad time"),
    ('{"type": "user", ', ":3: invalid JSON"),
])
def test_claude_code_malformed_line(cli, db_path, tmp_path, bad, expected):
    source = next(CLAUDE_CODE.rglob(f"{SESSION_1}.jsonl")).read_text().splitlines()
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join([*source[:2], bad, *source[2:]]) + "\n")
    result = cli("convert", "claude-code", str(path))
    assert result.exit_code == 1
    assert f"{path}{expected}" in " ".join(result.stderr.split())
    result = cli("--db", str(db_path), "ingest", "--from", "claude-code", str(CLAUDE_CODE), str(path))
    assert result.exit_code == 1 and f"{path}{expected}" in " ".join(result.stderr.split())
    assert not db_path.exists() or stored(db_path) == []


# ---------------------------------------------------------------- ingest --from
def test_ingest_from_stores_what_convert_writes(cli, db_path):
    result = cli("--db", str(db_path), "ingest", "--from", "chatgpt", str(CHATGPT), "--json")
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["turns_added"] == 7
    records = converted(cli, "chatgpt", str(CHATGPT))
    expected = sorted(((r["conversation"], r["id"], r["text"], r["time"], r["role"]) for r in records),
                      key=lambda row: row[0])
    assert stored(db_path) == expected
    conn = raw(db_path)
    extras = [orjson.loads(row[0]) for row in conn.execute("SELECT extra FROM turns").fetchall()]
    conn.close()
    assert {e.get("title") for e in extras} == {"Lisbon trip", "Cello"}


def test_malformed_export_stores_nothing(cli, db_path, tmp_path):
    data = json.loads(CHATGPT.read_text())
    broken = copy.deepcopy(data[1])
    broken["id"] = "broken-one"
    broken["mapping"] = ["not", "an", "object"]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([data[0], broken]))
    result = cli("--db", str(db_path), "ingest", "--from", "chatgpt", str(path))
    assert result.exit_code == 1
    message = " ".join(result.stderr.split())
    assert str(path) in message and "conversation broken-one" in message and "'mapping'" in message
    assert not db_path.exists() or stored(db_path) == []


def test_reimporting_a_newer_export_adds_only_new_turns(cli, db_path, tmp_path):
    assert cli("--db", str(db_path), "ingest", "--from", "chatgpt", str(CHATGPT)).exit_code == 0
    before = stored(db_path)
    data = json.loads(CHATGPT.read_text())
    trip = data[0]
    trip["mapping"]["a-0003"]["children"] = ["u-0004"]
    for node, parent, role, text, when in (("u-0004", "a-0003", "user", "I booked the Convento hotel.", 1717400000.0),
                                           ("a-0004", "u-0004", "assistant", "Great choice!", 1717400010.0)):
        trip["mapping"][node] = {"id": node, "parent": parent, "children": ["a-0004"] if node == "u-0004" else [],
                                 "message": {"id": node, "author": {"role": role}, "create_time": when,
                                             "content": {"content_type": "text", "parts": [text]},
                                             "metadata": {}, "recipient": "all"}}
    trip["current_node"] = "a-0004"
    newer = tmp_path / "conversations.json"
    newer.write_text(json.dumps(data))
    result = cli("--db", str(db_path), "ingest", "--from", "chatgpt", str(newer), "--json")
    assert result.exit_code == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert (report["turns_added"], report["turns_existing"]) == (2, len(before))
    after = stored(db_path)
    assert len(after) == len(before) + 2
    assert [row[1] for row in after if row[0] == TRIP][-2:] == ["u-0004", "a-0004"]


def test_ingest_from_claude_code_directory(cli, db_path):
    result = cli("--db", str(db_path), "ingest", "--from", "claude-code", str(CLAUDE_CODE), "--json")
    assert result.exit_code == 0, result.stderr
    assert sorted(orjson.loads(result.stdout)["conversations"]) == [SESSION_1, SESSION_2]
    assert len(stored(db_path)) == 5


def test_ingest_from_unknown_format_is_a_usage_error(cli, db_path):
    result = cli("--db", str(db_path), "ingest", "--from", "whatsapp", str(CHATGPT))
    assert result.exit_code == 2 and "chatgpt" in result.stderr
    assert not db_path.exists()


def test_all_branches_needs_chatgpt(cli, db_path):
    result = cli("--db", str(db_path), "ingest", "--from", "claude", "--all-branches", str(CLAUDE))
    assert result.exit_code == 2 and "--from chatgpt" in result.stderr
    assert not db_path.exists()


def test_ingest_from_stdin(cli, db_path):
    result = cli("--db", str(db_path), "ingest", "--from", "claude", "-", "--json", input=CLAUDE.read_text())
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout)["turns_added"] == 4
