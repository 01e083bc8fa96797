"""Converters produce our JSONL records from LoCoMo, LongMemEval and OpenAI chats; samples are valid input."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuemem_cli.input.formats import FORMATS
from cuemem_cli.input.formats.base import Options, load_json
from cuemem_cli.errors import CuememError, InputError
from cuemem_cli.records import Message
from cuemem_cli.timeparse import parse_time

from conftest import LOCOMO, LOCOMO_MISSING, REPO, tier

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLES = REPO / "sample_dialogues"
SAMPLE_FILES = sorted(SAMPLES.glob("*.jsonl"))
REQUIRED = ("conversation", "session", "time", "speaker", "text", "id")


def convert(fmt: str, data: Any) -> list[Message]:
    return list(FORMATS[fmt].convert(data))


# ---------------------------------------------------------------- locomo
@pytest.fixture(scope="module")
@tier("slow")  # reads all of LoCoMo
def locomo_messages() -> list[Message]:
    if not LOCOMO.exists():
        pytest.skip(LOCOMO_MISSING)
    return convert("locomo", load_json(LOCOMO))


def test_locomo_counts(locomo_messages: list[Message]) -> None:
    assert len(locomo_messages) == 5882
    assert len({m.conversation for m in locomo_messages}) == 10


def test_locomo_turn_fields(locomo_messages: list[Message]) -> None:
    turn = next(m for m in locomo_messages if m.conversation == "conv-26" and m.source_id == "D1:3")
    assert turn.text == "I went to a LGBTQ support group yesterday and it was so powerful."
    assert turn.speaker == "Caroline"
    assert turn.session == "1"
    assert turn.time == "2023-05-08T13:56:00"
    assert turn.role is None
    assert turn.to_json() == {
        "conversation": "conv-26",
        "session": "1",
        "time": "2023-05-08T13:56:00",
        "speaker": "Caroline",
        "text": turn.text,
        "id": "D1:3",
    }


def test_locomo_image_caption_is_appended(locomo_messages: list[Message]) -> None:
    turn = next(m for m in locomo_messages if m.conversation == "conv-26" and m.source_id == "D1:5")
    assert turn.text.startswith("The transgender stories were so inspiring!")
    assert turn.text.endswith(" [shares a photo: a photo of a dog walking past a wall with a painting of a woman]")


def test_locomo_ids_unique_per_conversation(locomo_messages: list[Message]) -> None:
    counts = Counter((m.conversation, m.source_id) for m in locomo_messages)
    assert max(counts.values()) == 1


def test_locomo_sessions_in_numeric_order(locomo_messages: list[Message]) -> None:
    sessions = [m.session for m in locomo_messages if m.conversation == "conv-26"]
    order = [int(s) for s in dict.fromkeys(sessions)]
    assert order == list(range(1, 20))  # date keys for sessions 20-35 have no turns


def test_locomo_small_inline() -> None:
    data = [
        {
            "sample_id": "s",
            "conversation": {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_10_date_time": "9:00 am on 2 June, 2023",
                "session_10": [{"speaker": "B", "dia_id": "D10:1", "text": "later"}],
                "session_2_date_time": "1:56 pm on 8 May, 2023",
                "session_2": [
                    {"speaker": "A", "dia_id": "D2:1", "text": "look", "blip_caption": "a photo of a cat"},
                    {"speaker": "B", "dia_id": "D2:2", "text": "cute"},
                ],
                "session_3_date_time": "1:00 pm on 9 May, 2023",
            },
        }
    ]
    messages = convert("locomo", data)
    assert [m.source_id for m in messages] == ["D2:1", "D2:2", "D10:1"]
    assert messages[0].text == "look [shares a photo: a photo of a cat]"
    assert [m.time for m in messages] == ["2023-05-08T13:56:00", "2023-05-08T13:56:00", "2023-06-02T09:00:00"]


@pytest.mark.parametrize(
    "data",
    [
        {"sample_id": "x"},
        [{"conversation": {}}],
        [{"sample_id": "x", "conversation": {"session_1": "oops"}}],
        [{"sample_id": "x", "conversation": {"session_1": [], "session_1_date_time": "someday"}}],
    ],
)
def test_locomo_bad_shape_is_a_cuemem_error(data: Any) -> None:
    with pytest.raises(CuememError, match="locomo"):
        convert("locomo", data)


# ---------------------------------------------------------------- longmemeval
@pytest.fixture(scope="module")
def longmemeval_messages() -> list[Message]:
    return convert("longmemeval", load_json(FIXTURES / "longmemeval_mini.json"))


def test_longmemeval_one_conversation_per_question(longmemeval_messages: list[Message]) -> None:
    assert list(dict.fromkeys(m.conversation for m in longmemeval_messages)) == ["e47becba", "gpt4_2655b836_abs"]


def test_longmemeval_sessions_sorted_by_time(longmemeval_messages: list[Message]) -> None:
    first = [m for m in longmemeval_messages if m.conversation == "e47becba"]
    assert [m.source_id for m in first] == [
        "answer_280352e9:0",
        "answer_280352e9:2",  # index 1 is empty: skipped, later ids keep their source index
        "sharegpt_hChsWOp_97:0",
        "sharegpt_hChsWOp_97:1",
        "ultrachat_12345:0",
        "ultrachat_12345:1",
    ]
    assert [m.time for m in first] == sorted(m.time for m in first)
    assert first[0].time == "2023-05-20T02:21:00"
    assert first[0].session == "answer_280352e9"


def test_longmemeval_equal_times_keep_source_order(longmemeval_messages: list[Message]) -> None:
    second = [m for m in longmemeval_messages if m.conversation == "gpt4_2655b836_abs"]
    assert [m.source_id for m in second] == ["answer_4be1b6b4_2:0", "answer_4be1b6b4_2:1", "answer_4be1b6b4_1:0"]


def test_longmemeval_roles_and_has_answer(longmemeval_messages: list[Message]) -> None:
    turn = longmemeval_messages[0]
    assert (turn.role, turn.speaker) == ("user", "user")
    assert turn.extra == {"has_answer": True}
    assert turn.to_json()["has_answer"] is True
    assistant = next(m for m in longmemeval_messages if m.source_id == "answer_280352e9:2")
    assert (assistant.role, assistant.extra) == ("assistant", {"has_answer": False})
    plain = next(m for m in longmemeval_messages if m.source_id == "sharegpt_hChsWOp_97:0")
    assert plain.extra == {}
    assert "has_answer" not in plain.to_json()


def test_longmemeval_mismatched_lists() -> None:
    data = [{"question_id": "q", "haystack_session_ids": ["a"], "haystack_dates": [], "haystack_sessions": [[]]}]
    with pytest.raises(CuememError, match="differ in length"):
        convert("longmemeval", data)


# ---------------------------------------------------------------- openai
CHAT = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi, I moved to Denver.", "timestamp": "2024-01-05T10:00:00Z"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Welcome"},
            {"type": "image_url", "image_url": {}},
            {"type": "text", "text": "to Denver!"},
        ],
    },
    {"role": "tool", "content": "{}"},
    {"role": "user", "content": "   "},
    {"role": "assistant", "content": None},
    {"role": "user", "content": "Thanks", "created": 1704448800},
]


def test_openai_object_with_messages() -> None:
    messages = convert("openai", {"messages": CHAT})
    assert [m.source_id for m in messages] == ["1", "2", "6"]
    assert {m.conversation for m in messages} == {"chat"}
    assert messages[0].time == "2024-01-05T10:00:00"
    assert messages[1].text == "Welcome\nto Denver!"
    assert (messages[1].role, messages[1].speaker, messages[1].time) == ("assistant", "assistant", None)
    assert messages[2].time == "2024-01-05T10:00:00"


def test_openai_list_of_conversations() -> None:
    data = [
        {"id": "trip", "messages": [{"role": "user", "content": "a"}]},
        {"messages": [{"role": "user", "content": "b"}]},
        {"conversation": "work", "messages": [{"role": "assistant", "content": "c"}]},
    ]
    messages = convert("openai", data)
    assert [(m.conversation, m.text) for m in messages] == [("trip", "a"), ("chat-2", "b"), ("work", "c")]
    tagged = list(FORMATS["openai"].convert(data, Options(tag="chats-0123abcd")))
    assert [m.conversation for m in tagged] == ["trip", "chats-0123abcd-2", "work"]


def test_openai_bare_list_of_messages() -> None:
    messages = convert("openai", CHAT)
    assert [m.source_id for m in messages] == ["1", "2", "6"]
    assert {m.conversation for m in messages} == {"chat"}


@pytest.mark.parametrize(
    "data",
    [
        "text",
        {"chat": []},
        [{"messages": []}, {"role": "user", "content": "x"}],
        [{"content": "no role"}],
        [{"role": "user", "content": 5}],
    ],
)
def test_openai_bad_shape_is_a_cuemem_error(data: Any) -> None:
    with pytest.raises(CuememError, match="openai"):
        convert("openai", data)


@pytest.mark.parametrize("name", ["chat.jsonl", "chat.json"])
def test_openai_jsonl_messages(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(m) for m in CHAT) + "\n\n")
    messages = convert("openai", load_json(path))
    assert [m.source_id for m in messages] == ["1", "2", "6"]


def test_openai_jsonl_conversations(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text(json.dumps({"id": "a", "messages": CHAT}) + "\n" + json.dumps({"messages": CHAT[1:3]}) + "\n")
    messages = convert("openai", load_json(path))
    expected = [("a", "1"), ("a", "2"), ("a", "6"), ("chat-2", "0"), ("chat-2", "1")]
    assert [(m.conversation, m.source_id) for m in messages] == expected


# ---------------------------------------------------------------- load_json
def test_load_json_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CuememError, match="no such file") as info:
        load_json(tmp_path / "nope.json")
    assert not isinstance(info.value, InputError)


def test_load_json_reports_the_line_of_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"a": 1},\n  {"b": }\n]\n')
    with pytest.raises(InputError) as info:
        load_json(path)
    assert info.value.line == 3
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}:3: invalid JSON")


def test_load_json_reports_the_line_of_bad_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"role": "user", "content": "a"}\n{"role": "user", "content": "b"}\n{"role": \n')
    with pytest.raises(InputError) as info:
        load_json(path)
    assert info.value.line == 3


def test_load_json_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    with pytest.raises(InputError) as info:
        load_json(path)
    assert info.value.line == 1


def test_load_json_strips_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + orjson.dumps({"messages": []}))
    assert load_json(path) == {"messages": []}


# ---------------------------------------------------------------- samples
def _sample_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_samples_read_as_cuemem_input_field_for_field() -> None:
    """The samples (the README's quick start input) through ingest's own line reader: every line a
    message, and nothing of it changed on the way in."""
    from cuemem_cli.input.jsonl import parse_line

    assert {p.name for p in SAMPLE_FILES} >= {"maya_and_leo.jsonl", "assistant_chat.jsonl"}
    for path in SAMPLE_FILES:
        lines = path.read_bytes().splitlines()
        messages = [parse_line(raw, str(path), n, None) for n, raw in enumerate(lines, start=1)]
        assert [m.to_json() for m in messages] == [json.loads(raw) for raw in lines], path.name


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_lines_are_valid(path: Path) -> None:
    records = _sample_lines(path)
    assert records
    for record in records:
        for key in REQUIRED:
            assert isinstance(record.get(key), str) and record[key].strip(), (record.get("id"), key)
        assert parse_time(record["time"]) == record["time"]
    assert len({r["id"] for r in records}) == len(records)
    assert len({r["conversation"] for r in records}) == 1
    times = [r["time"] for r in records]
    assert times == sorted(times)


def test_sample_readme_ids_exist() -> None:
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", readme, flags=re.MULTILINE)[1:]
    checked = set()
    for section in sections:
        name = section.split("\n", 1)[0].strip()
        ids = set(re.findall(r"`(s\d+:\d+)`", section))
        known = {r["id"] for r in _sample_lines(SAMPLES / name)}
        assert ids and ids <= known, (name, ids - known)
        checked.add(name)
    assert checked == {p.name for p in SAMPLE_FILES}


# ---------------------------------------------------------------- chat exports: bad shapes
@pytest.mark.parametrize(
    "fmt, data",
    [
        ("chatgpt", "text"),
        ("chatgpt", [5]),
        ("chatgpt", [{"id": "c", "mapping": {"n": {"parent": ["x"], "children": []}}}]),
        ("chatgpt", [{"id": "c", "mapping": {"n": {"parent": None, "children": {"a": 1}}}}]),
        ("chatgpt", [{"id": "c", "mapping": {}, "current_node": ["n"]}]),
        ("chatgpt", [{"id": "c", "mapping": {}, "current_node": "missing"}]),
        ("chatgpt", [{"id": "c", "current_node": "n",
                      "mapping": {"n": {"parent": None, "message": {"author": "me"}}}}]),
        ("chatgpt", [{"id": "c", "current_node": "n", "mapping": {"n": {"message": {
            "author": {"role": "user"}, "content": {"content_type": "text", "parts": "x"}}}}}]),
        ("chatgpt", [{"id": "c", "current_node": "n", "mapping": {"n": {"message": {
            "author": {"role": "user"}, "create_time": [1], "content": {"content_type": "text", "parts": ["x"]}}}}}]),
        ("claude", {"name": "no uuid"}),
        ("claude", [{"uuid": "u", "chat_messages": "x"}]),
        ("claude", [{"uuid": "u", "chat_messages": [{"sender": "human", "text": 5}]}]),
        ("claude", [{"uuid": "u", "chat_messages": [{"sender": "human", "text": "", "content": "x"}]}]),
        ("claude", [{"uuid": "u", "chat_messages": [{"sender": "human", "text": "x", "created_at": "whenever"}]}]),
        ("claude-code", {"type": "user"}),
        ("claude-code", [[1, 2]]),
        ("claude-code", [{"type": "user", "uuid": "u", "sessionId": "s", "message": {"content": {"a": 1}}}]),
    ],
)
def test_chat_export_bad_shape_is_a_cuemem_error(fmt: str, data: Any) -> None:
    with pytest.raises(CuememError):
        convert(fmt, data)


def test_chatgpt_without_current_node_takes_the_latest_regeneration() -> None:
    def node(key, parent, children, text):
        message = {"id": key, "author": {"role": "user"}, "content": {"content_type": "text", "parts": [text]}}
        return {"id": key, "parent": parent, "children": children, "message": message}

    mapping = {"r": node("r", None, ["a", "b"], "root"), "a": node("a", "r", [], "first"),
               "b": node("b", "r", [], "second")}
    messages = convert("chatgpt", [{"id": "c", "mapping": mapping}])
    assert [m.text for m in messages] == ["root", "second"]


_KEYS = ["id", "conversation_id", "mapping", "current_node", "parent", "children", "message", "author", "role",
         "content", "content_type", "parts", "create_time", "metadata", "recipient", "uuid", "sender", "text",
         "chat_messages", "created_at", "type", "sessionId", "timestamp", "isMeta", "isSidechain", "name"]


@settings(max_examples=300, deadline=None)
@given(data=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.sampled_from(
        ["user", "assistant", "human", "text", "multimodal_text", "all", "n", "2024-05-10T08:00:00Z"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=5),
    max_leaves=20), fmt=st.sampled_from(["chatgpt", "claude", "claude-code"]))
def test_chat_exports_give_messages_or_a_cuemem_error(data: Any, fmt: str) -> None:
    try:
        messages = convert(fmt, data)
    except CuememError:
        return
    for message in messages:
        assert isinstance(message.conversation, str) and message.text.strip()
        assert message.time is None or parse_time(message.time) == message.time
