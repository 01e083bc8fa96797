"""`cuemem mcp`: the real server as a subprocess, driven by the official SDK's stdio client, the way an
agent's MCP client runs it. Real SQLite, real models; only the answer model is a stub on 127.0.0.1."""

from __future__ import annotations

import re

import asyncio
import json
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import orjson
import pytest

from cuemem_cli.memory import Memory
from cuemem_cli.store.base import TEMPORAL

from conftest import CUEMEM, SAMPLES, assert_whole, chat_completion, child_env, raw, send_json
from test_concurrency import assert_same, contents, run_serially

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

MAYA = SAMPLES / "maya_and_leo.jsonl"
LISBON = [{"title": "Lisbon trip", "speaker": "Ana", "time": "2024-05-03T10:00:00", "id": "l1",
           "text": "We are staying at a guesthouse in Alfama for the Lisbon trip."},
          {"title": "Lisbon trip", "speaker": "Assistant", "time": "2024-05-03T10:01:00", "id": "l2",
           "text": "Alfama is lovely: steep streets, fado bars and views of the river."}]


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return child_env(**(extra or {}))  # the conftest's offline switches included


@asynccontextmanager
async def server(db: Path, *args: str, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """A `cuemem --db DB mcp ARGS` subprocess and an initialised client session on its stdio. Its stderr
    (the logs) goes to DB.PID.log beside the database: stdout carries nothing but the protocol."""
    params = StdioServerParameters(command=CUEMEM[0], args=[*CUEMEM[1:], "--db", str(db), "mcp", *args],
                                   env=_env(env))
    with open(db.parent / f"{db.name}.{id(params)}.log", "w") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, arguments: dict | None = None):
    """The tool's structured result; the call must succeed."""
    result = await session.call_tool(tool, arguments or {})
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def refused(session: ClientSession, tool: str, arguments: dict) -> str:
    """The tool error's text; the call must fail as a tool error (not a protocol error)."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


def maya(count: int) -> list[dict]:
    """The sample dialogue's first turns as remember messages (their conversation is the tool's argument)."""
    lines = [orjson.loads(line) for line in MAYA.read_bytes().splitlines() if line.strip()][:count]
    return [{k: v for k, v in line.items() if k != "conversation"} for line in lines]


def turn_count(db: Path) -> int:
    if not db.exists():
        return 0
    conn = raw(db)
    try:
        return conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.subprocess  # real server processes, each loading the models
def test_lists_the_tools_and_keeps_forget_for_allow_forget(tmp_path):
    async def scenario():
        async with server(tmp_path / "m.db") as session:
            plain = {tool.name: tool for tool in (await session.list_tools()).tools}
        async with server(tmp_path / "m.db", "--allow-forget") as session:
            allowed = {tool.name for tool in (await session.list_tools()).tools}
        return plain, allowed

    plain, allowed = asyncio.run(scenario())
    assert set(plain) == {"remember", "recall", "ask", "list_conversations"}
    assert allowed == {"remember", "recall", "ask", "list_conversations", "forget"}
    assert plain["remember"].input_schema["required"] == ["conversation", "messages"]
    assert set(plain["recall"].input_schema["properties"]) == {"question", "conversations", "budget", "as_of"}
    assert "conversations" not in plain["recall"].input_schema.get("required", [])
    assert set(plain["ask"].input_schema["properties"]) == {"question", "conversations", "model"}
    assert plain["recall"].input_schema["properties"]["budget"]["default"] == 2000
    assert not (tmp_path / "m.db").exists(), "listing tools creates no database"


@pytest.mark.slow
@pytest.mark.subprocess  # real server processes, each loading the models
def test_remember_stores_as_ingest_does_then_recall_ask_and_list_find_it(cli, tmp_path):
    db = tmp_path / "m.db"
    messages = maya(30)

    async def scenario():
        async with server(db) as session:
            assert await call(session, "list_conversations") == {"result": []}
            # one call, then two more into the same conversation: the server keeps its ingest pipeline between
            stored = await call(session, "remember", {"conversation": "maya-and-leo", "messages": messages[:20]})
            for part in (messages[20:25], messages[25:]):
                more = await call(session, "remember", {"conversation": "maya-and-leo", "messages": part})
                for key in ("turns_added", "cues", "temporal_edges", "semantic_edges"):
                    stored[key] += more[key]
            again = await call(session, "remember", {"conversation": "maya-and-leo", "messages": messages[:5]})
            alone = contents(db)  # maya-and-leo only, to compare with `cuemem ingest` below
            # a second chat, titled: questions range over both unless `conversations` narrows them
            await call(session, "remember", {"conversation": "c-9f1", "messages": LISBON})
            raw_recall = await session.call_tool("recall", {"question": "Where does Leo work?",
                                                             "conversations": ["maya-and-leo"], "budget": 300})
            recalled = raw_recall.structured_content
            wide = await call(session, "recall", {"question": "Where does Leo work, and where is the guesthouse?"})
            titled = await call(session, "recall", {"question": "Where is the guesthouse?",
                                                    "conversations": ["lisbon TRIP"]})
            answered = await call(session, "ask", {"question": "Where does Leo work?"})
            listed = await call(session, "list_conversations")
            unknown = await refused(session, "recall", {"question": "x", "conversations": ["nobody"]})
            await call(session, "remember", {"conversation": "c-2b7", "messages": [{**LISBON[0], "id": "l3"}]})
            ambiguous = await refused(session, "recall", {"question": "x", "conversations": ["Lisbon trip"]})
        return stored, again, raw_recall, recalled, answered, listed, unknown, wide, titled, alone, ambiguous

    stored, again, raw_recall, recalled, answered, listed, unknown, wide, titled, alone, ambiguous = \
        asyncio.run(scenario())
    assert stored["turns_added"] == 30 and stored["conflicts"] == 0 and stored["cues"] > 30
    assert stored["temporal_edges"] > 0 and stored["semantic_edges"] > 0
    assert (again["turns_added"], again["turns_existing"]) == (0, 5), "remembering the same ids again is a no-op"

    # the same rows, cues, vectors and edges as `cuemem ingest` of the same lines
    jsonl = tmp_path / "maya30.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps({"conversation": "maya-and-leo", **m}) + b"\n" for m in messages))
    ingested = tmp_path / "ingested.db"
    run_serially(cli, ingested, [("ingest", str(jsonl))])
    assert_same(alone, contents(ingested))
    assert_whole(db)

    # recall: `ask --context-only --json`'s evidence, within the budget
    bookstore = next(m["id"] for m in messages if "bookstore" in m["text"])
    assert bookstore in [e["source_id"] for e in recalled["evidence"]]
    first = recalled["evidence"][0]
    assert {"conversation", "title", "source_id", "time", "speaker", "text", "via"} <= set(first)
    assert recalled["conversations"] == ["maya-and-leo"]
    assert {e["conversation"] for e in recalled["evidence"]} == {"maya-and-leo"}
    # the whole memory by default: both chats, each item saying where it was said
    assert wide["conversations"] == [] and {e["conversation"] for e in wide["evidence"]} == {"maya-and-leo", "c-9f1"}
    assert {e["title"] for e in wide["evidence"] if e["conversation"] == "c-9f1"} == {"Lisbon trip"}
    assert titled["conversations"] == ["c-9f1"] and "Alfama" in titled["evidence"][0]["text"]
    assert 0 < recalled["tokens"] <= 300
    # what the client hands its model: the transcript, not the JSON (that is the structured content)
    [block] = raw_recall.content
    assert block.text.startswith("Evidence from maya-and-leo, oldest first") and "\nLeo: " in block.text
    assert len(block.text) <= 1.5 * sum(len(e["text"]) for e in recalled["evidence"])
    positions = [e["position"] for e in recalled["evidence"]]
    assert positions == sorted(positions), "evidence is chronological"
    conn = raw(db)
    used = {r[0] for r in conn.execute("SELECT source_id FROM turns WHERE last_retrieved_at IS NOT NULL")}
    conn.close()
    assert bookstore in used, "recalled turns count as used for forget --decay/--lru"

    # ask without a model: the offline answer, and a note that says no model is configured
    assert answered["answer_kind"] == "extractive" and answered["model"] is None
    assert "no answer model is configured" in answered["note"]
    with Memory(db, create=False) as memory:  # one answer everywhere: the library gives the same line and form
        library = memory.ask("Where does Leo work?", record_retrieval=False).answer
    assert answered["answer_form"] in ("answer", "quote")
    assert (answered["answer"], answered["answer_form"]) == (library.text, library.form)
    assert bookstore in [e["source_id"] for e in answered["evidence"]]

    assert listed["result"][0] == {"conversation": "maya-and-leo", "title": None, "turns": 30, "cues": stored["cues"],
                                   "pending_turns": 0, "first_time": messages[0]["time"],
                                   "last_time": messages[-1]["time"]}
    assert [(r["conversation"], r["title"], r["turns"]) for r in listed["result"][1:]] == [("c-9f1", "Lisbon trip", 2)]
    assert "no conversation named 'nobody'" in unknown and "maya-and-leo" in unknown
    # the library's hint, with the tool's argument where the command line would name its flag
    assert "the title 'Lisbon trip' names 2 conversations" in ambiguous
    assert ambiguous.endswith("(hint: name the one you mean by its name: the conversations argument)")


BAD_CALLS = [
    ({"conversation": "c", "messages": [{"text": "fine"}, {"text": "  "}]}, "messages[1]: missing or empty 'text'"),
    ({"conversation": "c", "messages": [{"text": "fine", "time": "the day after"}]},
     "messages[0]: cannot read time 'the day after'"),
    ({"conversation": "c", "messages": [{"speaker": "Ann"}]}, "messages.0.text"),
    ({"conversation": "c", "messages": [{"text": 42}]}, "messages.0.text"),
    ({"conversation": "c", "messages": []}, "messages is empty"),
    ({"conversation": " ", "messages": [{"text": "fine"}]}, "conversation is empty"),
    ({"messages": [{"text": "fine"}]}, "conversation"),
]


@pytest.mark.slow
@pytest.mark.subprocess  # real server processes, each loading the models
def test_bad_input_is_a_tool_error_and_writes_nothing(tmp_path):
    db = tmp_path / "m.db"

    async def scenario():
        async with server(db) as session:
            errors = [await refused(session, "remember", arguments) for arguments, _ in BAD_CALLS]
            created = db.exists()
            # the server survives the errors and still works
            stored = await call(session, "remember", {"conversation": "ok", "messages": [{"text": "Still here."}]})
            return errors, created, stored

    errors, created, stored = asyncio.run(scenario())
    for error, (_, says) in zip(errors, BAD_CALLS, strict=True):
        assert says in error
    assert not created, "a rejected call creates no database"
    assert stored["turns_added"] == 1
    conn = raw(db)
    assert conn.execute("SELECT c.name, t.text FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                        ).fetchall() == [("ok", "Still here.")], "the rejected calls stored nothing"
    conn.close()


@pytest.mark.subprocess  # a real server process (no model loads)
def test_refusals_say_what_is_wrong_in_the_agents_terms(tmp_path):
    """Arguments that fail a tool's schema are said as `field: problem`, without pydantic's type codes and
    URLs; a turn over the size limit gets the hint about its size, not the one about dates. (No model
    loads: every call is refused before a tool runs.)"""
    from cuemem_cli.input.jsonl import MAX_TURN_CHARS

    db = tmp_path / "m.db"
    calls = [("recall", {"question": "Where?", "conversation": "c", "budget": 10}),
             ("recall", {"question": ["Where?"], "conversation": "c"}),
             ("remember", {"conversation": "c", "messages": "I moved to Denver."}),
             ("remember", {"conversation": "c", "messages": [{"text": "x" * (MAX_TURN_CHARS + 1)}]})]

    async def scenario():
        async with server(db) as session:
            return [await refused(session, tool, arguments) for tool, arguments in calls]

    budget, question, messages, size = asyncio.run(scenario())
    prefix = "Error executing tool"  # the SDK's, on every tool error
    assert budget == f"{prefix} recall: invalid arguments: budget: Input should be greater than or equal to 50"
    assert question == f"{prefix} recall: invalid arguments: question: Input should be a valid string"
    assert messages == f"{prefix} remember: invalid arguments: messages: Input should be a valid list"
    for said in (budget, question, messages, size):
        assert "pydantic" not in said and "http" not in said and "type=" not in said
    assert size.startswith(f"{prefix} remember: 1 invalid message, nothing stored: messages[0]: 'text' is 1,000,001 "
                           "characters long")
    assert "(hint: split it into several messages" in size and "date" not in size
    assert not db.exists()


@pytest.mark.subprocess  # a real server process (no model loads: the call is refused before one is needed)
def test_refusals_name_the_tools_arguments_not_the_command_lines_flags(tmp_path):
    """A library error says what to do in its own words; the server adds the argument it is about
    (CuememError.fields), where the CLI adds a flag (--as-of)."""
    from cuemem_cli import Memory

    from conftest import stand_in_models

    db = tmp_path / "m.db"
    with stand_in_models(), Memory(db) as memory:  # a memory to ask, built with the stand-in models
        memory.add(maya(2), conversation="maya-and-leo")

    async def scenario():
        async with server(db) as session:
            return await refused(session, "recall", {"question": "Where?", "as_of": "the day after"})

    when = asyncio.run(scenario())
    assert "as_of: cannot read time 'the day after'" in when
    assert when.endswith("or e.g. '8 May 2023': the as_of argument)")
    assert "--" not in when


@pytest.mark.slow
@pytest.mark.subprocess  # real server processes, each loading the models
def test_forget_is_refused_without_allow_forget_and_works_with_it(tmp_path):
    db = tmp_path / "m.db"
    messages = maya(6)

    async def scenario():
        async with server(db) as session:
            await call(session, "remember", {"conversation": "maya-and-leo", "messages": messages})
            await call(session, "remember", {"conversation": "other", "messages": [{"text": "Keep me.", "id": "k"}]})
            conflict = await call(session, "remember", {"conversation": "other", "messages": [
                {"text": "Not me.", "id": "k"}, {"text": "New.", "id": "n"}]})
            refusal = await refused(session, "forget", {"conversation": "maya-and-leo"})
        kept = turn_count(db)
        async with server(db, "--allow-forget") as session:
            some = await call(session, "forget", {"conversation": "maya-and-leo", "turn_ids": ["s1:2", "nope"]})
            after = await call(session, "remember", {"conversation": "maya-and-leo", "messages": maya(7)[6:]})
            empty = await refused(session, "forget", {"conversation": "maya-and-leo", "turn_ids": []})
            whole = await call(session, "forget", {"conversation": "maya-and-leo"})
            listed = await call(session, "list_conversations")
        return conflict, refusal, kept, some, after, empty, whole, listed

    conflict, refusal, kept, some, after, empty, whole, listed = asyncio.run(scenario())
    assert (conflict["turns_added"], conflict["conflicts"], conflict["conflict_ids"]) == (1, 1, ["other/k"])
    assert "not stored" in conflict["note"]
    assert "forget" in refusal and kept == 8, "without --allow-forget nothing is forgotten"
    assert some["applied"] and some["turns"] == 1 and some["not_found"] == ["nope"]
    assert "turn_ids is empty" in empty
    assert after["turns_added"] == 1, "remembering after a forget works"
    assert whole["turns"] == 6 and whole["conversations_removed"] == ["maya-and-leo"]
    assert [c["conversation"] for c in listed["result"]] == ["other"]
    conn = raw(db)
    assert conn.execute("SELECT text FROM turns WHERE source_id = 'k'").fetchall() == [("Keep me.",)]
    conn.close()
    assert_whole(db)


@pytest.mark.slow
@pytest.mark.subprocess  # real server processes, each loading the models
def test_two_servers_on_one_database_lose_no_turn(tmp_path):
    """Two agents remembering into one conversation at once, a turn per call: all 20 turns are stored,
    each with its cues, cue vectors, turn vector and temporal edges."""
    db = tmp_path / "m.db"

    async def agent(name: str) -> list[dict]:
        async with server(db) as session:
            return [await call(session, "remember", {"conversation": "shared", "messages": [
                {"speaker": name, "id": f"{name}-{i}", "text": f"{name} note {i}: the meeting moved to room {i}."}]})
                for i in range(10)]

    async def both():
        return await asyncio.gather(agent("ann"), agent("bob"))

    reports = asyncio.run(both())
    assert [sum(r["turns_added"] for r in rs) for rs in reports] == [10, 10]
    assert_whole(db)
    conn = raw(db)
    ids = {r[0] for r in conn.execute("SELECT source_id FROM turns")}
    positions = sorted(r[0] for r in conn.execute("SELECT position FROM turns"))
    no_cues = conn.execute("SELECT count(*) FROM turns t WHERE NOT EXISTS "
                           "(SELECT 1 FROM cues c WHERE c.turn_id = t.id)").fetchone()[0]
    no_vector = conn.execute("SELECT count(*) FROM turns t WHERE NOT EXISTS "
                             "(SELECT 1 FROM turn_vectors v WHERE v.turn_id = t.id)").fetchone()[0]
    cues_without_vector = conn.execute("SELECT count(*) FROM cues c WHERE NOT EXISTS "
                                       "(SELECT 1 FROM cue_vectors v WHERE v.cue_id = c.id)").fetchone()[0]
    temporal = {frozenset(pair) for pair in conn.execute(
        "SELECT a.position, b.position FROM edges e JOIN turns a ON a.id = e.src JOIN turns b ON b.id = e.dst"
        f" WHERE e.kind = {TEMPORAL}")}  # edge kinds are stored as codes (m011)
    conn.close()
    assert ids == {f"{n}-{i}" for n in ("ann", "bob") for i in range(10)}
    assert positions == list(range(20)), "one chronological order, no position taken twice"
    assert (no_cues, no_vector, cues_without_vector) == (0, 0, 0)
    assert temporal == {frozenset((p, q)) for p in range(20) for q in (p + 1, p + 2) if q < 20}, \
        "every turn linked to its neighbours within the window of 2, whichever server stored them"


class _StubLLM(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that answers from the evidence it was sent."""

    requests: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _StubLLM.requests.append(body)
        prompt = " ".join(str(m.get("content")) for m in body["messages"])
        text = "Leo works at a bookstore." if "bookstore" in prompt else "I don't know."
        send_json(self, 200, chat_completion(body["model"], text))

    def log_message(self, *args):
        pass


@pytest.mark.slow
@pytest.mark.subprocess  # real server processes, each loading the models
def test_ask_answers_with_the_configured_model(tmp_path):
    """--model is the server's answer model; the call's `model` argument overrides it (here the same
    stub under another name). The model is a stub OpenAI endpoint on 127.0.0.1, reached through litellm."""
    db = tmp_path / "m.db"
    stub = ThreadingHTTPServer(("127.0.0.1", 0), _StubLLM)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{stub.server_port}/v1", "OPENAI_API_KEY": "test-key"}
    _StubLLM.requests.clear()

    async def scenario():
        async with server(db, "--model", "openai/stub-a", env=env) as session:
            await call(session, "remember", {"conversation": "maya-and-leo", "messages": maya(10)})
            default = await call(session, "ask", {"question": "Where does Leo work?", "conversation": "maya-and-leo"})
            chosen = await call(session, "ask", {"question": "Where does Leo work?", "conversation": "maya-and-leo",
                                                 "model": "openai/stub-b"})
        return default, chosen

    try:
        default, chosen = asyncio.run(scenario())
    finally:
        stub.shutdown()
    assert default["answer"] == "Leo works at a bookstore." and default["answer_kind"] == "llm"
    assert default["model"] == "openai/stub-a" and "note" not in default
    assert chosen["model"] == "openai/stub-b"
    assert [r["model"] for r in _StubLLM.requests] == ["stub-a", "stub-b"]
    assert any("bookstore" in json.dumps(r["messages"]) for r in _StubLLM.requests), "the evidence reached the model"


def test_without_the_mcp_extra_the_command_says_what_to_install(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if `mcp` were not installed
    result = cli("mcp")
    assert result.exit_code == 1
    assert "pip install 'cuemem[mcp]'" in result.stderr


@pytest.mark.slow  # loads the models
def test_used_turns_are_recorded_in_batches_so_warm_recalls_keep_the_view(tmp_path, monkeypatch):
    """Each write drops the in-memory view of the memory (recall/view.py); recall's marks wait until
    USED_FLUSH_SECONDS passed, this process writes, or it stops."""
    from cuemem_cli import mcp_server
    from cuemem_cli.recall.view import MemoryView, _views

    def used(db):
        conn = raw(db)
        try:
            return {r[0] for r in conn.execute("SELECT source_id FROM turns WHERE last_retrieved_at IS NOT NULL")}
        finally:
            conn.close()

    db = tmp_path / "m.db"
    monkeypatch.setattr(mcp_server, "USED_FLUSH_SECONDS", 3600.0)  # a loaded machine may take a minute to here
    tools = mcp_server.MemoryTools(db)
    try:
        tools.remember("maya-and-leo", maya(20))
        for _ in range(3):
            tools.recall("Where does Leo work?", ["maya-and-leo"])
        assert used(db) == set(), "not yet recorded"
        assert isinstance(_views[tools.memory.store][1], MemoryView), "the third recall was answered from the view"
        monkeypatch.setattr(mcp_server, "USED_FLUSH_SECONDS", 0.0)
        recalled = tools.recall("Where does Leo work?", ["maya-and-leo"])
        assert used(db) == {e["source_id"] for e in recalled.data["evidence"]}
    finally:
        tools.close()


SAMPLE_QUESTION = "What breed is the dog Maya adopted, and when?"


@pytest.fixture
def two_chats(cli, tmp_path, stub_models) -> Path:
    """The two sample dialogues in one memory, with the stand-in models (what is laid out, not what is found)."""
    db = tmp_path / "two.db"
    for name in ("maya_and_leo.jsonl", "assistant_chat.jsonl"):
        result = cli("--db", str(db), "ingest", str(SAMPLES / name), "--json")
        assert result.exit_code == 0, result.stderr
    return db


def dialogue_block(context) -> list[str]:
    """The lines of the answer model's <dialogue> block, unescaped."""
    import html

    from cuemem_cli.answer.prompt import build_messages

    user = build_messages(context)[1]["content"]
    return html.unescape(user.split("<dialogue>\n", 1)[1].split("\n</dialogue>", 1)[0]).splitlines()


def tools_recall(db, question: str):
    from cuemem_cli.mcp_server import MemoryTools

    tools = MemoryTools(db)
    try:
        return tools.recall(question)
    finally:
        tools.close()


def test_recall_text_is_the_transcript_the_answer_model_reads(two_chats):
    """What an agent's model reads of `recall` (clients hand it the text): the answer model's evidence block,
    under one line saying where it is from, within 1.5× the evidence's own text; before, it was the
    pretty-printed JSON of every field, 5.5× the evidence."""
    from cuemem_cli import Memory
    from cuemem_cli.mcp_server import MemoryTools

    tools = MemoryTools(two_chats)
    try:
        wide = tools.recall(SAMPLE_QUESTION)
        narrow = tools.recall(SAMPLE_QUESTION, ["maya-and-leo"], budget=400)
    finally:
        tools.close()
    with Memory(two_chats) as memory:
        context = memory.context(SAMPLE_QUESTION)
    evidence = wide.data["evidence"]
    assert [e["source_id"] for e in evidence] == [e.source_id for e in context.evidence]
    head, *block = wide.text.splitlines()
    assert head == f"Evidence from 2 conversations, oldest first ({len(evidence)} turns):"
    # each turn a later one changed, and each that changed one, says so after it (issue 57), in parentheses
    noted = [line for line in block if re.search(r" \((?:later changed|changes): [^()]*\([^()]*\)\)$", line)]
    assert len(noted) == sum(bool(e["superseded_by"]) or bool(e["supersedes"]) for e in evidence)
    assert [re.sub(r"(?: \((?:later changed|changes): [^()]*\([^()]*\)\))+$", "", line) for line in block] == \
        dialogue_block(context)
    assert "— 〃 · 14 May 2023 —" in block  # a header per chat and day, the chat named (〃: as above)
    assert {"— maya-and-leo · 4 March 2023 —", "— assistant-chat · 3 February 2024 —"} <= set(block)
    assert "Maya: Leo!! I have news. I adopted a dog last weekend [weekend of 6 May 2023]!" in block  # dates resolved
    assert not any(e["source_id"] in wide.text for e in evidence if ":" in e["source_id"])  # no ids, no scores
    assert "score" not in wide.text and "{" not in wide.text
    assert len(wide.text) <= 1.5 * sum(len(e["text"]) for e in evidence)

    moved = tools_recall(two_chats, "When is Sam's trip to Japan now?")
    assert "(later changed: April → May (15 March 2024))" in moved.text  # what an agent reads of a change
    assert "(changes: April → May (earlier: 3 February 2024))" in moved.text

    head, *block = narrow.text.splitlines()
    chosen = narrow.data["evidence"]
    assert head == f"Evidence from maya-and-leo, oldest first ({len(chosen)} turns):"
    assert block[0].startswith("— ") and "maya-and-leo" not in block[0]  # one chat: the headers give the day only
    assert len(narrow.text) <= 1.5 * sum(len(e["text"]) for e in chosen)


def test_a_question_has_one_json_shape_everywhere(cli, two_chats):
    """`ask --json` (and `--context-only`), MCP recall's and ask's structured content, the browse page's
    /api/context and the Python API's `to_json()` give one object with the same fields."""
    from cuemem_cli import Memory
    from cuemem_cli.browse import pages
    from cuemem_cli.mcp_server import MemoryTools

    def printed(*args: str) -> dict:
        result = cli("--db", str(two_chats), "ask", SAMPLE_QUESTION, "--json", *args)
        assert result.exit_code == 0, result.stderr
        return orjson.loads(result.stdout)

    only, answered = printed("--context-only"), printed()
    tools = MemoryTools(two_chats)
    try:
        recalled, asked = tools.recall(SAMPLE_QUESTION).data, tools.ask(SAMPLE_QUESTION).data
    finally:
        tools.close()
    with Memory(two_chats, create=False) as memory:
        api = memory.ask(SAMPLE_QUESTION).to_json()
        context = memory.context(SAMPLE_QUESTION).to_json()
        browsed = pages.question(memory, SAMPLE_QUESTION, None, None, answer=False)["context"]
    keys = set(only)
    assert keys == {"question", "conversations", "as_of", "kinds", "answer", "answer_kind", "answer_form", "model",
                    "usage", "cues", "evidence", "tokens", "timings_ms"}
    for shape in (answered, recalled, api, context, browsed):
        assert set(shape) == keys
    assert set(asked) == keys | {"note"}  # no model configured: said so
    for shape in (answered, recalled, asked, api, context, browsed):
        assert shape["evidence"] == only["evidence"] and shape["cues"] == only["cues"]
    assert recalled["answer"] is None and asked["answer_kind"] == answered["answer_kind"] == "extractive"
    assert asked["answer"] == answered["answer"] == api["answer"]


def test_ask_text_gives_the_answer_then_the_evidence(two_chats):
    from cuemem_cli.mcp_server import MemoryTools

    tools = MemoryTools(two_chats)
    try:
        reply = tools.ask(SAMPLE_QUESTION)
        recalled = tools.recall(SAMPLE_QUESTION)
    finally:
        tools.close()
    answer, note, evidence = reply.text.split("\n\n", 2)
    label = {"answer": "answer", "quote": "best match"}[reply.data["answer_form"]]  # as the CLI's text view says it
    assert answer == f"Offline answer (extractive), {label}: {reply.data['answer']}"
    assert note.startswith("Note: no answer model is configured")
    assert evidence == recalled.text
