"""Several memories on one PostgreSQL server (issue 34): a memory is a schema (`?schema=NAME`, or libpq's
`options=-csearch_path%3DNAME`), and no memory ever sees another's turns: not while the other is written,
not through a table of the same name in `public`, not through a conversation of the same name. Each
memory's writers wait only for that memory's write lock. A real server (conftest.postgres_server), real
models; memory B is written from a thread while memory A is asked."""

from __future__ import annotations

import threading
import time
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import pytest
from conftest import SAMPLES

from cuemem_cli.errors import StoreError
from cuemem_cli.memory import Memory
from cuemem_cli.store.base import has_vectors
from cuemem_cli.store.postgres import PostgresStore, search_path_schemas, split_schema

MAYA = SAMPLES / "maya_and_leo.jsonl"
CHAT = SAMPLES / "assistant_chat.jsonl"
# asked of the Maya memory, answered by the assistant chat's turns: a leak would surface in the evidence
QUESTIONS = ["What did the assistant recommend for the Japan trip?", "Is it hard to be vegetarian in Japan?",
             "Where does Maya live now?", "Which rail pass should Sam buy?"]


def with_query(url: str, **params: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query=urlencode([*parse_qsl(parts.query), *params.items()])))


def texts(path) -> set[str]:
    return {orjson.loads(line)["text"] for line in path.read_bytes().splitlines() if line.strip()}


def said_in(evidence, turns: set[str]) -> bool:
    """Every evidence item was said in one of `turns` (a long turn is shown shortened: each of its
    "…"-separated parts, whitespace aside)."""
    said = [" ".join(turn.split()) for turn in turns]
    return all(any(" ".join(part.split()) in turn for turn in said)
               for item in evidence for part in item.text.split("…") if part.strip())


@pytest.fixture
def memories(pg_url, embedder):
    """Opens a Memory on a URL with the session's embedder; closes them all afterwards."""
    opened: list[Memory] = []

    def open_memory(url: str, create: bool = True) -> Memory:
        memory = Memory(url, embedder=embedder, create=create)
        opened.append(memory)
        return memory

    yield open_memory
    for memory in opened:
        memory.close()


def test_the_url_names_the_schema():
    assert split_schema("postgresql://u:p@host/db?schema=alice&sslmode=require") == \
        ("postgresql://u:p@host/db?sslmode=require", "alice")
    assert split_schema("postgresql://host/db?host=/run/pg") == ("postgresql://host/db?host=/run/pg", None)
    with pytest.raises(StoreError, match="one schema"):
        split_schema("postgresql://host/db?schema=a&schema=b")
    assert search_path_schemas('"$user", public') == ["$user", "public"]
    assert search_path_schemas('"Team, ""A""",public') == ['Team, "A"', "public"]


def test_a_memory_never_sees_another_written_at_the_same_time(pg_url, memories):
    alice, bob = with_query(pg_url, schema="alice"), with_query(pg_url, schema="bob")
    memories(alice).ingest_file(MAYA, conversation="shared-name")  # the same conversation name in both
    mine, theirs = texts(MAYA), texts(CHAT)
    assert not mine & theirs
    failures: list[BaseException] = []

    def write_bob() -> None:
        try:
            writer = memories(bob)
            for round_ in range(2):
                writer.ingest_file(CHAT, conversation="shared-name" if round_ == 0 else f"chat-{round_}")
        except BaseException as exc:  # reported by the asking thread
            failures.append(exc)

    reader, watcher = memories(alice), PostgresStore.open(bob, create=True)
    try:
        thread = threading.Thread(target=write_bob)
        thread.start()
        asked, during = 0, 0
        while thread.is_alive() or asked < len(QUESTIONS):
            context = reader.context(QUESTIONS[asked % len(QUESTIONS)])
            bob_turns = watcher._value("SELECT count(*) FROM turns") if watcher._has_table("turns") else 0
            during += bool(thread.is_alive() and bob_turns)
            assert context.evidence, context.question
            assert said_in(context.evidence, mine), context.question
            assert {e.conversation for e in context.evidence} == {"shared-name"}
            asked += 1
        thread.join()
    finally:
        watcher.close()
    assert not failures, failures
    assert during >= 1  # A was asked while B held some of its turns and was still being written
    assert sorted(memories(bob).conversations()) == ["chat-1", "shared-name"]
    assert memories(alice).conversations() == ["shared-name"]
    bob_context = memories(bob).context("Where does Maya live now?")
    assert bob_context.evidence and said_in(bob_context.evidence, theirs)


def test_a_schema_memory_is_not_the_default_memory_in_public(cli, pg_url, memories):
    """The default memory lives in `public`, pgvector too; a schema memory's search_path reaches
    `public` for the vector type, and still never reads the tables there."""
    memories(pg_url).ingest_file(CHAT)
    carol = with_query(pg_url, options="-csearch_path=carol")  # libpq's own form names a schema too
    with pytest.raises(StoreError, match="no cuemem database"):
        memories(carol, create=False).store  # noqa: B018 (opening it is the test)
    fresh = memories(carol)
    assert fresh.conversations() == []
    assert has_vectors(fresh.store) is False
    fresh.ingest_file(MAYA)
    assert fresh.conversations() == ["maya-and-leo"]
    assert memories(pg_url).conversations() == ["assistant-chat"]
    context = memories(carol).context("What did the assistant recommend for the Japan trip?")
    assert context.evidence and said_in(context.evidence, texts(MAYA))
    listed = orjson.loads(cli("--db", with_query(pg_url, schema="carol"), "inspect-graph", "--format",
                              "json").stdout)
    assert [c["conversation"] for c in listed["conversations"]] == ["maya-and-leo"]
    import psycopg

    with psycopg.connect(pg_url) as conn:  # pgvector once, in public; each memory's tables in its schema
        assert conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
                            " WHERE e.extname = 'vector'").fetchall() == [("public",)]
        tables = conn.execute("SELECT schemaname, count(*) FROM pg_tables WHERE tablename IN ('turns', 'cue_vectors')"
                              " GROUP BY schemaname ORDER BY schemaname").fetchall()
        assert tables == [("carol", 2), ("public", 2)]


def test_each_memory_has_its_own_write_lock(pg_url, memories):
    alice, bob = with_query(pg_url, schema="alice"), with_query(pg_url, schema="bob")
    for url in (alice, bob):
        memories(url).store  # noqa: B018 (created and migrated on open)
    holder, same, other = (PostgresStore.open(url) for url in (alice, alice, bob))
    done: dict[str, float] = {}

    def write(store: PostgresStore, name: str) -> None:
        with store.transaction():
            store.set_meta("touched", name)
        done[name] = time.monotonic()

    try:
        with holder.transaction():
            started = time.monotonic()
            waiting = threading.Thread(target=write, args=(same, "alice"))
            free = threading.Thread(target=write, args=(other, "bob"))
            waiting.start(), free.start()
            free.join(timeout=10)
            assert "bob" in done and done["bob"] - started < 10  # another memory's writer does not wait
            waiting.join(timeout=1.5)
            assert "alice" not in done  # this memory's second writer waits for the first
        waiting.join(timeout=10)
        assert "alice" in done
        assert same.get_meta("touched") == "alice" and other.get_meta("touched") == "bob"
    finally:
        for store in (holder, same, other):
            store.close()


def test_a_role_that_may_not_create_the_schema_is_told_what_to_ask_for(pg_url):
    import uuid

    import psycopg

    role = f"r_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    try:
        parts = urlsplit(pg_url)
        url = urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname or ''}"))
        with pytest.raises(StoreError, match="cannot create the schema dave") as refused:
            PostgresStore.open(with_query(url, schema="dave"))
        assert "CREATE SCHEMA dave" in refused.value.hint
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP ROLE {role}")
