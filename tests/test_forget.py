"""Memory maintenance: ADD never overwrites, DELETE (`cuemem forget`) leaves no trace, UPDATE by recency,
and `export` → `import` round-trips."""

from __future__ import annotations

import os
import shutil
import stat

import numpy as np
import orjson
import pytest

from conftest import SAMPLES, assert_whole, raw
from cuemem_cli.ingest.pipeline import IngestReport, Ingestor
from cuemem_cli.records import content_hash
from cuemem_cli.input.jsonl import parse_line
from cuemem_cli.records import Message
from cuemem_cli.store.base import conversation_names
from cuemem_cli.store.sqlite import SQLiteStore
from cuemem_cli.store.vectors import roundtrip

MAYA = SAMPLES / "maya_and_leo.jsonl"
SAM = SAMPLES / "assistant_chat.jsonl"
SAM_TURNS = 4  # a few turns of it are enough here

SECRET = "vault-7f3k"  # a conversation whose every trace must go
SECRET_LINES = [
    ("2022-01-10T09:00:00", "Quilliam", "I hid the spare key under the Zorblaxium statue in the garden."),
    ("2022-01-10T09:01:00", "Bea", "Nobody will ever look under the Zorblaxium statue, good thinking."),
    ("2022-01-10T09:02:00", "Quilliam", "My banking password is fernhollow99, please remember it for me."),
    ("2022-01-10T09:03:00", "Bea", "Noted. I will never write fernhollow99 down anywhere."),
    ("2022-01-11T18:00:00", "Quilliam", "The Zorblaxium statue came from my grandmother in Lisbon."),
    ("2022-01-11T18:05:00", "Bea", "Your grandmother had wonderful taste in Zorblaxium art."),
]
PENDING_ID = "v6"  # stored as pending: its extraction "failed"
MARKERS = ["Zorblaxium", "fernhollow99", "Quilliam", SECRET]
WORD_MARKERS = ["zorblaxium", "fernhollow99", "quilliam"]
TOTAL = 84 + SAM_TURNS + len(SECRET_LINES)


def messages(path, conversation=None) -> list[Message]:
    out = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        message = parse_line(line, str(path), number, conversation)
        if message is not None:
            out.append(message)
    return out


def secret_messages() -> list[Message]:
    return [Message(SECRET, text, source_id=f"v{i}", session="v", time=time, speaker=speaker)
            for i, (time, speaker, text) in enumerate(SECRET_LINES, start=1)]


class PendingFor:
    """The real extractor, except that chosen turns fail (→ stored as pending)."""

    name = "spacy-with-failures"

    def __init__(self, inner, failing: set[str]):
        self.inner = inner
        self.failing = failing

    def extract(self, turns):
        results = self.inner.extract(turns)
        return [None if t.source_id in self.failing else r for t, r in zip(turns, results, strict=True)]


def ingest(path, batch: list[Message], embedder, extractor) -> IngestReport:
    store = SQLiteStore.open(path)
    try:
        report = IngestReport(lines=len(batch))
        return Ingestor(store, extractor, embedder).run(batch, report)
    finally:
        store.close()


@pytest.fixture(scope="module")
def base_db(tmp_path_factory, embedder, spacy_extractor):
    """Maya & Leo, the assistant chat and the secret conversation, ingested once; tests get copies."""
    path = tmp_path_factory.mktemp("forget") / "base.db"
    extractor = PendingFor(spacy_extractor, {PENDING_ID})
    ingest(path, messages(MAYA) + messages(SAM)[:SAM_TURNS] + secret_messages(), embedder, extractor)
    store = SQLiteStore.open(path)
    with store.transaction():
        for m in secret_messages():
            store.cache_triples("fake/x", "extract-v1", content_hash(m), [["Quilliam", "hid", "Zorblaxium key"]])
        store.cache_triples("fake/x", "extract-v1", content_hash(messages(MAYA)[0]), [["Leo", "greets", "Maya"]])
    store.close()
    assert not os.path.exists(f"{path}-wal"), "closing checkpoints the WAL into the file"
    return path


@pytest.fixture
def db(base_db, tmp_path):
    path = tmp_path / "memory.db"
    shutil.copy2(base_db, path)
    return path


def ids_of(path, conversation: str) -> dict:
    conn = raw(path)
    cid = conn.execute("SELECT id FROM conversations WHERE name = ?", (conversation,)).fetchone()[0]
    turns = {r[0] for r in conn.execute("SELECT id FROM turns WHERE conversation_id = ?", (cid,))}
    cues = {r[0] for r in conn.execute("SELECT id FROM cues WHERE conversation_id = ?", (cid,))}
    vectors = [r[0] for r in conn.execute("SELECT embedding FROM cue_vectors WHERE conversation_id = ?", (cid,))]
    edges = conn.execute("SELECT count(*) FROM edges WHERE src IN (SELECT id FROM turns WHERE conversation_id = ?1)"
                         " OR dst IN (SELECT id FROM turns WHERE conversation_id = ?1)", (cid,)).fetchone()[0]
    conn.close()
    return {"conversation": cid, "turns": turns, "cues": cues, "vectors": vectors, "edges": edges}


# Columns that hold a turn id or a cue id, in our tables and in the FTS5 / vec0 shadow tables.
ID_COLUMNS = {
    "turns": {"id": "turns"}, "cues": {"id": "cues", "turn_id": "turns"}, "edges": {"src": "turns", "dst": "turns"},
    "turns_fts_docsize": {"id": "turns"},
    "cue_vectors_rowids": {"rowid": "cues"},
}


def traces(path, ids: dict, markers: list[str]) -> list[str]:
    """Every place in every table (shadow tables included) that still holds something of `ids`/`markers`."""
    conn = raw(path)
    found = []
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'")]
    assert {"turns_fts_data", "cue_vectors_chunks", "cue_vectors_vector_chunks00"} <= set(tables)
    lowered = [m.lower() for m in markers]
    for table in tables:
        columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
        for row in conn.execute(f'SELECT * FROM "{table}"'):
            for column, value in zip(columns, row, strict=True):
                if column in ("conversation_id", "partition00") and value == ids["conversation"]:
                    found.append(f"{table}.{column} = {value}")
                kind = ID_COLUMNS.get(table, {}).get(column)
                if kind and value in ids[kind]:
                    found.append(f"{table}.{column} = {value} ({kind})")
                if isinstance(value, str) and any(m in value.lower() for m in lowered):
                    found.append(f"{table}.{column}: text {value[:60]!r}")
                if isinstance(value, bytes):
                    if any(m.encode() in value.lower() for m in lowered):
                        found.append(f"{table}.{column}: bytes with a marker")
                    if any(v in value for v in ids["vectors"]):
                        found.append(f"{table}.{column}: a forgotten cue vector")
    for word in WORD_MARKERS:
        if conn.execute("SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?", (word,)).fetchall():
            found.append(f"turns_fts MATCH {word}")
    conn.close()
    return found


def content(path, skip: str | None = None) -> dict:
    """What a memory holds, by source ids (not row ids), for comparisons."""
    conn = raw(path)
    out = {
        "turns": conn.execute(
            "SELECT c.name, t.position, t.source_id, t.session, t.time, t.speaker, t.role, t.text, t.content_hash,"
            " t.extra, t.status FROM turns t JOIN conversations c ON c.id = t.conversation_id"
            " WHERE c.name IS NOT ?1 ORDER BY c.name, t.position", (skip,)).fetchall(),
        "cues": conn.execute(
            "SELECT c.name, t.source_id, q.subject, q.relation, q.object, q.kind FROM cues q"
            " JOIN turns t ON t.id = q.turn_id JOIN conversations c ON c.id = t.conversation_id"
            " WHERE c.name IS NOT ?1 ORDER BY c.name, t.position, q.id", (skip,)).fetchall(),
        "edges": sorted(conn.execute(
            "SELECT c.name, s.source_id, d.source_id, e.kind, round(e.weight, 4), e.rank FROM edges e"
            " JOIN turns s ON s.id = e.src JOIN turns d ON d.id = e.dst"
            " JOIN conversations c ON c.id = s.conversation_id WHERE c.name IS NOT ?1", (skip,)).fetchall()),
        "vectors": sorted(conn.execute(
            "SELECT c.name, count(*) FROM cue_vectors v JOIN conversations c ON c.id = v.conversation_id"
            " WHERE c.name IS NOT ?1 GROUP BY c.name", (skip,)).fetchall()),
    }
    conn.close()
    return out


def forget_json(cli, db, *args):
    result = cli("--db", str(db), "forget", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)


# ------------------------------------------------------------------- DELETE
def test_forget_conversation_leaves_no_row_vector_or_fts_entry(cli, db):
    secret = ids_of(db, SECRET)
    assert traces(db, secret, MARKERS), "the scan must see the secret before it is forgotten"
    others = content(db, skip=SECRET)
    planned = forget_json(cli, db, "--conversation", SECRET, "--dry-run")
    report = forget_json(cli, db, "--conversation", SECRET, "--yes")
    assert report["applied"] and not planned["applied"]
    for key in ("turns", "cues", "vectors", "edges", "extraction_cache", "conversations_removed"):
        assert planned[key] == report[key], key
    assert report["turns"] == len(secret["turns"]) == len(SECRET_LINES)
    assert report["cues"] == len(secret["cues"]) == report["vectors"] == len(secret["vectors"]) > 0
    assert report["edges"] == secret["edges"] > 0
    assert report["extraction_cache"] == len(SECRET_LINES)
    assert report["conversations_removed"] == [SECRET] and report["conversations"] == {SECRET: len(SECRET_LINES)}
    assert traces(db, secret, MARKERS) == []
    assert content(db) == others, "nothing of the other conversations changed"
    assert_whole(db)
    store = SQLiteStore.open(db)
    assert store.cached_triples("fake/x", "extract-v1", content_hash(messages(MAYA)[0])) == [["Leo", "greets", "Maya"]]
    store.close()


def test_vacuum_leaves_no_byte_of_forgotten_text_in_file_or_wal(db, embedder):
    from cuemem_cli.memory import Memory

    turn_marker, cue_marker = b"fernhollow99", b"Zorblaxium statue"
    files = [db, db.with_name(db.name + "-wal")]
    assert turn_marker in db.read_bytes() and cue_marker in db.read_bytes()
    conn = raw(db)
    assert conn.execute("SELECT count(*) FROM cues WHERE object LIKE '%Zorblaxium statue%'").fetchone()[0] > 0
    conn.close()
    with Memory(db, embedder=embedder) as memory:
        # Touch every page first so the WAL holds frames full of the secret, as after a real ingest.
        with memory.store.transaction():
            memory.store.conn.execute("UPDATE turns SET last_retrieved_at = '2024-01-01T00:00:00'")
        assert turn_marker in files[1].read_bytes()
        report = memory.forget(conversation=SECRET, vacuum=True)
        assert report.applied and report.vacuumed
        # The connection is still open: the WAL exists but must be empty, the file rebuilt.
        assert os.path.exists(files[1]) and os.path.getsize(files[1]) == 0
        for path in files:
            data = path.read_bytes() if path.exists() else b""
            for marker in (turn_marker, cue_marker, b"Quilliam", SECRET.encode()):
                assert marker not in data and marker.lower() not in data.lower(), (path.name, marker)
        assert memory.conversations() == ["maya-and-leo", "assistant-chat"]
    assert_whole(db)


def test_vacuum_through_the_cli(cli, db):
    result = cli("--db", str(db), "forget", "--conversation", SECRET, "--vacuum", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "file scrubbed" in result.stderr
    for path in db.parent.glob(db.name + "*"):
        assert b"fernhollow99" not in path.read_bytes()


def test_dry_run_changes_nothing(cli, db):
    before = content(db)
    report = forget_json(cli, db, "--conversation", "maya-and-leo", "--before", "2023-06-01", "--dry-run")
    assert report["dry_run"] and not report["applied"] and report["turns"] > 0
    assert content(db) == before
    text = cli("--db", str(db), "forget", "--conversation", "maya-and-leo", "--dry-run")
    assert text.exit_code == 0 and "would forget 84 turns" in text.stderr and "dry run" in text.stderr
    assert content(db) == before


def test_no_consent_no_delete(cli, db, monkeypatch):
    before = content(db)
    refused = cli("--db", str(db), "forget", "--conversation", SECRET)
    assert refused.exit_code == 1
    assert "--yes" in refused.stderr and "6 turns" in refused.stderr
    assert content(db) == before

    from cuemem_cli.manage import forget as forgetting

    monkeypatch.setattr(forgetting, "stdin_is_terminal", lambda: True)
    declined = cli("--db", str(db), "forget", "--conversation", SECRET, input="n\n")
    assert declined.exit_code == 0 and "nothing forgotten" in declined.stderr  # a no is an answer, not an error
    assert content(db) == before
    agreed = cli("--db", str(db), "forget", "--conversation", SECRET, input="y\n")
    assert agreed.exit_code == 0, agreed.stderr
    assert "forgot 6 turns" in agreed.stderr
    assert content(db) == content(db, skip=SECRET) != before


def test_what_would_be_forgotten_is_not_said_as_done(cli, db, monkeypatch):
    """A refusal, a dry run and a prompt say what *would* go; only a forget that ran says it went."""
    def said(result) -> str:
        return " ".join(result.stderr.split())

    refused = said(cli("--db", str(db), "forget", "--conversation", SECRET))
    assert refused.startswith("error: nothing forgotten: nobody confirmed (standard input is not a terminal); "
                              f"it would forget 6 turns ({SECRET}: 6)")
    assert f"the conversation {SECRET}, left empty, would be removed" in refused
    assert "emptied" not in refused and "now empty" not in refused and "(s)" not in refused
    dry = said(cli("--db", str(db), "forget", "--conversation", SECRET, "--dry-run"))
    assert dry.startswith("would forget 6 turns") and "left empty, would be removed" in dry
    from cuemem_cli.manage import forget as forgetting

    monkeypatch.setattr(forgetting, "stdin_is_terminal", lambda: True)
    agreed = said(cli("--db", str(db), "forget", "--conversation", SECRET, input="y\n"))
    assert f"About to forget 6 turns ({SECRET}: 6)" in agreed and "would be removed." in agreed
    assert f"forgot 6 turns ({SECRET}: 6)" in agreed and f"the conversation {SECRET}, now empty, removed" in agreed
    one = said(cli("--db", str(db), "forget", "--conversation", "maya-and-leo", "--turn", "s1:1", "--yes"))
    assert one.startswith("forgot 1 turn (maya-and-leo: 1), ") and "1 following turn embedded again" in one


def test_session_and_turns_take_their_edges_in_both_directions(cli, db):
    conn = raw(db)
    s2 = {r[0] for r in conn.execute(
        "SELECT t.id FROM turns t JOIN conversations c ON c.id = t.conversation_id"
        " WHERE c.name = 'maya-and-leo' AND t.session = 's2'")}
    incoming = conn.execute("SELECT count(*) FROM edges WHERE dst IN (SELECT value FROM json_each(?1))"
                            " AND src NOT IN (SELECT value FROM json_each(?1))", (orjson.dumps(list(s2)).decode(),)
                            ).fetchone()[0]
    conn.close()
    assert incoming > 0, "later turns link back to session 2"
    sam_before = content(db, skip="maya-and-leo")
    report = forget_json(cli, db, "--conversation", "maya-and-leo", "--session", "s2", "--yes")
    assert report["turns"] == len(s2) == 24
    conn = raw(db)
    assert conn.execute("SELECT count(*) FROM turns WHERE session = 's2' AND conversation_id ="
                        " (SELECT id FROM conversations WHERE name = 'maya-and-leo')").fetchone()[0] == 0
    left = {r[0] for r in conn.execute("SELECT src FROM edges UNION SELECT dst FROM edges")}
    assert not left & s2
    # The gap: the turns around session 2 keep their positions and lose their temporal edges into it.
    positions = [r[0] for r in conn.execute(
        "SELECT position FROM turns WHERE conversation_id = (SELECT id FROM conversations WHERE name = 'maya-and-leo')"
        " ORDER BY position")]
    assert len(positions) == 60 and positions[18] - positions[17] == 25
    conn.close()
    assert content(db, skip="maya-and-leo")["turns"] == sam_before["turns"]
    assert_whole(db)

    report = forget_json(cli, db, "-c", "maya-and-leo", "--turn", "s3:6", "--turn", "s4:1", "--turn", "nope", "--yes")
    assert report["turns"] == 2
    result = cli("--db", str(db), "ask", "When is Maya moving to Denver?", "-c", "maya-and-leo", "--context-only",
                 "--json")
    ids = {e["source_id"] for e in orjson.loads(result.stdout)["evidence"]}
    assert ids and not ids & {"s3:6", "s4:1"} and not any(i.startswith("s2:") for i in ids)
    assert_whole(db)


def test_ambiguous_or_empty_selections_are_refused(cli, db):
    before = content(db)
    for args, message in [
        (["--turn", "s1:1"], "--conversation"),
        (["--session", "s1"], "--conversation"),
        (["--conversation", "nobody"], "no conversation named 'nobody'"),
        ([], "nothing selected"),
        (["--before", "someday"], "cannot read time"),
    ]:
        result = cli("--db", str(db), "forget", *args, "--yes")
        assert result.exit_code == 1, args
        assert message in result.stderr, (args, result.stderr)
    assert content(db) == before
    nothing = cli("--db", str(db), "forget", "--before", "1999-01-01", "--yes")
    assert nothing.exit_code == 0 and "nothing matches" in nothing.stderr


def test_before_forgets_older_turns_only(cli, db):
    report = forget_json(cli, db, "--before", "2023-06-01", "--yes")
    assert set(report["conversations"]) == {"maya-and-leo", SECRET}
    conn = raw(db)
    times = [r[0] for r in conn.execute("SELECT time FROM turns")]
    conn.close()
    assert min(times) >= "2023-06-01" and len(times) == 84 + SAM_TURNS + 6 - report["turns"]
    assert report["conversations_removed"] == [SECRET]
    assert_whole(db)


def test_lru_keeps_the_most_recently_retrieved_turns_per_conversation(cli, db, embedder):
    from cuemem_cli.memory import Memory

    with Memory(db, embedder=embedder) as memory:
        used = memory.ask("What breed is Maya's dog?", conversation="maya-and-leo")
        retrieved = {r[0] for r in memory.store.conn.execute(
            "SELECT source_id FROM turns WHERE last_retrieved_at IS NOT NULL")}
        assert retrieved == {e.source_id for e in used.context.evidence}, "ask records what it retrieved"
        store = memory.store
        with store.transaction():
            maya = store.conversation_id("maya-and-leo")
            store.mark_retrieved(maya, ["s1:1"], "2030-01-01T00:00:03")
            store.mark_retrieved(maya, ["s4:2"], "2030-01-01T00:00:02")
            store.mark_retrieved(maya, ["s2:5"], "2030-01-01T00:00:01")
    report = forget_json(cli, db, "--lru", "3", "--yes")
    conn = raw(db)
    kept = conn.execute("SELECT c.name, t.source_id FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                        " ORDER BY c.id, t.position").fetchall()
    conn.close()
    assert kept == [("maya-and-leo", "s1:1"), ("maya-and-leo", "s2:5"), ("maya-and-leo", "s4:2"),
                    # never retrieved: the newest positions stay
                    ("assistant-chat", "s1:2"), ("assistant-chat", "s1:3"), ("assistant-chat", "s1:4"),
                    (SECRET, "v4"), (SECRET, "v5"), (SECRET, "v6")]
    assert report["turns"] == 84 + SAM_TURNS + 6 - 9
    assert_whole(db)


def test_decay_forgets_old_turns_not_used_lately(cli, db):
    store = SQLiteStore.open(db)
    with store.transaction():
        store.mark_retrieved(store.conversation_id("maya-and-leo"), ["s1:2"], "2023-12-24T10:00:00")
        store.mark_retrieved(store.conversation_id("maya-and-leo"), ["s1:3"], "2023-01-01T10:00:00")
    store.close()
    # Cutoff: 180 days before 2024-01-01 = 2023-07-05.
    report = forget_json(cli, db, "--decay", "180", "--as-of", "2024-01-01", "--yes")
    conn = raw(db)
    left = conn.execute("SELECT c.name, t.source_id, t.time FROM turns t JOIN conversations c"
                        " ON c.id = t.conversation_id").fetchall()
    conn.close()
    maya = {sid: time for name, sid, time in left if name == "maya-and-leo"}
    assert "s1:2" in maya, "used within the window: kept although old"
    assert "s1:3" not in maya, "used, but long ago: forgotten"
    assert all(time >= "2023-07-05" for sid, time in maya.items() if sid != "s1:2")
    assert sum(1 for name, *_ in left if name == "assistant-chat") == SAM_TURNS
    assert report["conversations_removed"] == [SECRET]
    assert_whole(db)


def test_forget_from_the_library(db, embedder):
    from cuemem_cli.memory import Memory

    seen = []
    with Memory(db, embedder=embedder) as memory:
        report = memory.forget(conversation="maya-and-leo", session="s1", confirm=lambda r: seen.append(r) or False)
        assert report.cancelled and not report.applied and seen[0].turns == 18
        report = memory.forget(conversation="maya-and-leo", session="s1", confirm=lambda r: True)
        assert report.applied and report.turns == 18
        assert memory.forget(conversation="maya-and-leo", session="s1").turns == 0


def test_the_turn_after_a_forgotten_one_is_embedded_again_without_it(cli, db, embedder):
    """Its vector was read with the forgotten turn; now it is read with the turn before that."""
    def vectors():
        store = SQLiteStore.open(db)
        turns = {t.source_id: t for t in store.turns(store.conversation_id(SECRET))}
        found = store.turn_vectors([t.id for t in turns.values()])
        store.close()
        return {sid: found[t.id] for sid, t in turns.items()}

    text = {f"v{i}": line[2] for i, line in enumerate(SECRET_LINES, start=1)}
    before = vectors()
    assert np.allclose(before["v3"], roundtrip(embedder.embed_in_context([(text["v3"], text["v2"])]))[0], atol=1e-6)
    report = forget_json(cli, db, "--conversation", SECRET, "--turn", "v2", "--yes")
    assert report["turns"] == 1 and report["turn_vectors_renewed"] == 1
    after = vectors()
    assert np.allclose(after["v3"], roundtrip(embedder.embed_in_context([(text["v3"], text["v1"])]))[0], atol=1e-6)
    assert all(np.array_equal(after[sid], before[sid]) for sid in after if sid != "v3")
    assert_whole(db)


def test_forgetting_whole_sessions_or_the_last_turn_needs_no_model(db):
    from cuemem_cli.manage.forget import forget, selection_from

    def no_model():
        raise AssertionError("no kept turn was embedded with a forgotten one: the model must not load")

    store = SQLiteStore.open(db)
    try:
        last = forget(store, selection_from(SECRET, turns=["v6"]), embedder=no_model)
        session = forget(store, selection_from("maya-and-leo", session="s1"), embedder=no_model)
        assert (last.turns, last.turn_vectors_renewed) == (1, 0)
        assert (session.turns, session.turn_vectors_renewed) == (18, 0)
    finally:
        store.close()


# ---------------------------------------------------------------------- ADD
def test_a_duplicate_line_never_deletes_or_changes_the_original(db_path, tmp_path, embedder, spacy_extractor):
    first = [
        {"conversation": "c", "id": "a", "speaker": "Ann", "time": "2024-01-01T10:00:00", "text": "I live in Oslo."},
        {"conversation": "c", "speaker": "Bob", "time": "2024-01-01T10:01:00", "text": "Oslo is cold in winter."},
    ]
    again = [
        {"conversation": "c", "id": "a", "speaker": "Ann", "time": "2024-02-01T10:00:00",
         "text": "CHANGED: I live in Rome."},
        first[1], first[1], first[0],
        {"conversation": "c", "id": "b", "speaker": "Ann", "text": "I bought a red bike."},
    ]

    def to_messages(records):
        return [parse_line(orjson.dumps(r), "x", i, None) for i, r in enumerate(records, start=1)]

    def rows():
        conn = raw(db_path)
        out = {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in ("turns", "cues")}
        out["vectors"] = conn.execute("SELECT cue_id, embedding FROM cue_vectors ORDER BY cue_id").fetchall()
        out["edges"] = conn.execute("SELECT * FROM edges ORDER BY src, dst, kind").fetchall()
        conn.close()
        return out

    ingest(db_path, to_messages(first), embedder, spacy_extractor)
    original = rows()
    report = ingest(db_path, to_messages(again), embedder, spacy_extractor)
    assert report.turns_added == 1 and report.turns_existing == 3
    assert report.conflicts == 1 and report.conflict_ids == ["c/a"], "the changed text is reported, not stored"
    now = rows()
    assert now["turns"][:2] == original["turns"], "the stored turns are untouched, row for row"
    assert now["turns"][2][3] == "b"
    n = len(original["cues"])
    assert now["cues"][:n] == original["cues"] and now["vectors"][:n] == original["vectors"]
    assert set(original["edges"]) <= set(now["edges"])
    assert "CHANGED" not in str(now["turns"])


# ------------------------------------------------------------------- UPDATE
def test_a_changed_fact_reaches_the_model_newest_last(db_path, embedder, spacy_extractor, fake_llm):
    from cuemem_cli.memory import Memory

    dialogue = [
        ("2023-03-04T19:00:00", "Maya", "I live in Portland, in a small flat near the river."),
        ("2023-03-04T19:01:00", "Leo", "Portland suits you. How is the design job going?"),
        ("2023-03-04T19:02:00", "Maya", "Busy! Lots of packaging work for coffee brands."),
        ("2023-05-14T10:00:00", "Leo", "Did you finish the pottery class?"),
        ("2023-05-14T10:01:00", "Maya", "Yes, and I made a bowl that looks like an ashtray."),
        ("2023-08-20T09:00:00", "Leo", "How was the big move last weekend?"),
        ("2023-08-20T09:01:00", "Maya", "Exhausting, but I live in Denver now, in an apartment near Washington Park."),
    ]
    ingest(db_path, [Message("moves", text, source_id=f"m{i}", time=time, speaker=speaker)
                     for i, (time, speaker, text) in enumerate(dialogue)], embedder, spacy_extractor)
    fake_llm.default = "Denver."
    with Memory(db_path, embedder=embedder) as memory:
        result = memory.ask("Where does Maya live?", conversation="moves", model="fake/answerer",
                            as_of="2023-09-01")
    evidence = [e.source_id for e in result.context.evidence]
    assert {"m0", "m6"} <= set(evidence), "both statements are evidence: nothing was overwritten"
    assert evidence[-1] == "m6", "the newer fact comes last"
    assert [e.position for e in result.context.evidence] == sorted(e.position for e in result.context.evidence)
    system, user = fake_llm.requests[0][0]["content"], fake_llm.requests[0][1]["content"]
    assert "most recent" in system and "latest statement" in system
    assert user.index("I live in Portland") < user.index("I live in Denver now")
    assert result.answer.text == "Denver."


# ------------------------------------------------------------ export/import
def test_export_import_export_round_trips(cli, db, tmp_path, embedder, monkeypatch):
    # the same model, loaded once
    monkeypatch.setattr("cuemem_cli.models.embedders.get_embedder", lambda *a, **k: embedder)
    first = tmp_path / "first.jsonl"
    result = cli("--db", str(db), "export", "--output", str(first))
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
    lines = [orjson.loads(line) for line in first.read_bytes().splitlines()]
    assert len(lines) == TOTAL
    pending = [line for line in lines if line["cues"] is None]
    assert [line["id"] for line in pending] == [PENDING_ID]
    assert all({"conversation", "text", "id", "cues"} <= set(line) for line in lines)
    assert {cue[3] for line in lines if line["cues"] for cue in line["cues"]} >= {"triple", "statement"}

    copy = tmp_path / "copy.db"
    result = cli("--db", str(copy), "import", str(first), "--json")
    assert result.exit_code == 3, "the pending turn is reported as pending"
    report = orjson.loads(result.stdout)
    assert report["turns_added"] == TOTAL and report["pending"] == [f"{SECRET}/{PENDING_ID}"]
    second = cli("--db", str(copy), "export")
    assert second.exit_code == 0
    assert second.stdout_bytes == first.read_bytes()

    original, imported = content(db), content(copy)
    assert imported["turns"] == original["turns"] and imported["cues"] == original["cues"]
    assert imported["vectors"] == original["vectors"]
    assert len(imported["edges"]) > 0
    assert_whole(copy)
    again = orjson.loads(cli("--db", str(copy), "import", str(first), "--json").stdout)
    assert again["turns_added"] == 0 and again["turns_existing"] == TOTAL

    one = cli("--db", str(db), "export", "--conversation", "assistant-chat")
    assert len(one.stdout_bytes.splitlines()) == SAM_TURNS
    assert cli("--db", str(db), "export", "-o", str(first)).exit_code == 1, "never overwrites a file"


def test_import_refuses_what_is_not_an_export(cli, db_path, tmp_path):
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"conversation": "x", "text": "hi", "cues": []}\n{"conversation": "x", "text": "no cues"}\n')
    result = cli("--db", str(db_path), "import", str(plain))
    assert result.exit_code == 1 and f"{plain}:2: no 'cues' field" in result.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conversation": "x", "text": "hi", "cues": [["a", "b"]]}\n')
    result = cli("--db", str(db_path), "import", str(bad))
    assert result.exit_code == 1 and f"{bad}:1: cue 1 must be" in result.stderr
    assert not db_path.exists() or conversation_names(SQLiteStore.open(db_path)) == []


def test_forgotten_turns_come_back_only_by_ingesting_them_again(cli, db, embedder, spacy_extractor):
    forget_json(cli, db, "--conversation", SECRET, "--yes")
    gone = cli("--db", str(db), "ask", "Where is the spare key?", "-c", SECRET, "--context-only", "--json")
    assert gone.exit_code == 1 and gone.stdout == ""  # forgotten: nothing to reconstruct from
    report = ingest(db, secret_messages(), embedder, spacy_extractor)  # reuses the freed row ids
    assert report.turns_added == len(SECRET_LINES)
    assert_whole(db)
    conn = raw(db)
    assert conn.execute("SELECT rowid FROM turns_fts WHERE turns_fts MATCH 'fernhollow99'").fetchall()
    conn.close()
    result = cli("--db", str(db), "ask", "Where is the spare key?", "-c", SECRET, "--context-only", "--json")
    found = {e["source_id"] for e in orjson.loads(result.stdout)["evidence"]}
    assert "v1" in found and found <= {f"v{i}" for i in range(1, 7)}  # the key's turn is back, nothing foreign
    missing = cli("--db", str(db), "export", "-c", "nobody", "-o", str(db.parent / "x.jsonl"))
    assert missing.exit_code == 1 and not (db.parent / "x.jsonl").exists()
