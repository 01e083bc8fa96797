"""Several `cuemem` processes on one database at once: each succeeds (or waits), and the database ends as
a serial run of the same commands would leave it. Real processes, real SQLite, real models."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import orjson
import pytest

from cuemem_cli.store.migrations import MIGRATIONS

from conftest import CUEMEM, SAMPLES, assert_whole, child_env, copy_memory, raw
from datetime import UTC

MAYA = SAMPLES / "maya_and_leo.jsonl"
CHAT = SAMPLES / "assistant_chat.jsonl"


def _env() -> dict[str, str]:
    return child_env()


def start(db: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*CUEMEM, "--db", str(db), *args], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(processes: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    out = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=600)
        out.append((process.returncode, stdout.decode(), stderr.decode()))
    return out


def run_serially(cli, db: Path, commands: list[tuple[str, ...]]) -> None:
    """The commands one after another through the same CLI, in this process (its models loaded once): what the
    processes run at once must leave."""
    for args in commands:
        result = cli("--db", str(db), *args)
        assert result.exit_code == 0, result.stderr


def run_at_once(db: Path, commands: list[tuple[str, ...]]) -> list[tuple[int, str, str]]:
    results = finish([start(db, *args) for args in commands])
    for code, _, stderr in results:
        assert code == 0, stderr
    return results


def write_lines(path: Path, source: Path, lines: slice, conversation: str) -> Path:
    records = [orjson.loads(line) for line in source.read_bytes().splitlines() if line.strip()][lines]
    path.write_bytes(b"".join(orjson.dumps({**r, "conversation": conversation}) + b"\n" for r in records))
    return path


def contents(db: Path) -> dict:
    """Everything a serial run decides, keyed by (conversation, source id) rather than by row ids."""
    conn = raw(db)
    turns = conn.execute("SELECT t.id, c.name, t.source_id, t.text, t.position, t.status FROM turns t"
                         " JOIN conversations c ON c.id = t.conversation_id").fetchall()
    key = {tid: (conv, sid) for tid, conv, sid, *_ in turns}
    assert len(set(key.values())) == len(turns), "a turn is stored twice"
    per_cue = conn.execute("SELECT c.id, count(v.cue_id) FROM cues c LEFT JOIN cue_vectors v ON v.cue_id = c.id"
                           " GROUP BY c.id").fetchall()
    assert all(n == 1 for _, n in per_cue), "every cue has exactly one vector"
    cues: dict = {}
    cue_vectors: dict = {}
    for tid, subject, relation, obj, kind, blob in conn.execute(
            "SELECT c.turn_id, c.subject, c.relation, c.object, c.kind, v.embedding FROM cues c"
            " JOIN cue_vectors v ON v.cue_id = c.id ORDER BY c.id"):
        cues.setdefault(key[tid], []).append((subject, relation, obj, kind))
        cue_vectors.setdefault(key[tid], []).append(np.frombuffer(blob, dtype=np.int8))
    edges = {(key[src], key[dst], kind): (round(weight, 4), rank)
             for src, dst, kind, weight, rank in conn.execute("SELECT src, dst, kind, weight, rank FROM edges")}
    turn_vectors = {key[tid]: np.frombuffer(blob, dtype=np.int8)
                    for tid, blob in conn.execute("SELECT turn_id, embedding FROM turn_vectors")}
    conn.close()
    assert set(turn_vectors) == set(key.values()), "every turn has its vector"
    return {"turns": sorted((conv, sid, text, position, status) for _, conv, sid, text, position, status in turns),
            "cues": cues, "cue_vectors": cue_vectors, "edges": edges, "turn_vectors": turn_vectors}


def assert_same(got: dict, want: dict) -> None:
    assert got["turns"] == want["turns"]
    assert got["cues"] == want["cues"]
    assert got["edges"] == want["edges"]
    assert got["turn_vectors"].keys() == want["turn_vectors"].keys()
    for turn, vector in want["turn_vectors"].items():
        assert np.allclose(got["turn_vectors"][turn], vector, atol=1e-5), turn
    for turn, vectors in want["cue_vectors"].items():
        assert np.allclose(np.vstack(got["cue_vectors"][turn]), np.vstack(vectors), atol=1e-5), turn


@pytest.mark.slow
@pytest.mark.subprocess  # real processes, each loading the models
def test_four_ingests_of_one_file_into_a_new_database(tmp_path, maya_memory):
    """The reported failures: UNIQUE constraint failed on turns, and a migration run twice. The serial run to
    compare with is conftest.maya_memory: the same file ingested alone."""
    db = tmp_path / "together.db"
    results = run_at_once(db, [("ingest", str(MAYA), "--json")] * 4)
    reports = [orjson.loads(stdout) for _, stdout, _ in results]
    assert sum(r["turns_added"] for r in reports) == 84, "each turn is stored by exactly one process"
    assert all(r["turns_added"] + r["turns_existing"] == 84 for r in reports)
    assert_whole(db)
    assert_same(contents(db), contents(copy_memory(maya_memory, tmp_path)))
    conn = raw(db)
    assert conn.execute("SELECT count(*) FROM _migrations").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x43554D45
    conn.close()


@pytest.mark.slow
@pytest.mark.subprocess  # real processes, each loading the models
def test_four_ingests_of_different_files_one_conversation_shared(cli, tmp_path):
    files = [
        write_lines(tmp_path / "a.jsonl", MAYA, slice(0, 20), "a"),
        write_lines(tmp_path / "b.jsonl", CHAT, slice(0, 20), "b"),
        write_lines(tmp_path / "c.jsonl", MAYA, slice(20, 40), "shared"),
        write_lines(tmp_path / "d.jsonl", MAYA, slice(40, 60), "shared"),
    ]
    db = tmp_path / "together.db"
    run_at_once(db, [("ingest", str(f)) for f in files])
    assert_whole(db)
    got = contents(db)
    # Each file is one batch, so it lands whole, in some order. Semantic edges link a turn to earlier-stored
    # turns of any conversation (ingest/graph.py), so a serial run in the order the four landed must give the same
    # database.
    conn = raw(db)
    landed = {}
    for f in files:
        records = [orjson.loads(line) for line in f.read_bytes().splitlines()]
        landed[f] = conn.execute("SELECT min(t.id) FROM turns t JOIN conversations c ON c.id = t.conversation_id"
                                 f" WHERE c.name = ? AND t.source_id IN ({','.join('?' * len(records))})",
                                 (records[0]["conversation"], *(r["id"] for r in records))).fetchone()[0]
    conn.close()
    order = sorted(files, key=landed.__getitem__)
    serial = tmp_path / "serial.db"
    run_serially(cli, serial, [("ingest", str(f)) for f in order])
    assert_same(got, contents(serial))


@pytest.mark.slow
@pytest.mark.subprocess  # real processes, each loading the models
def test_an_ingest_racing_a_forget_and_an_ask(cli, tmp_path):
    keep = write_lines(tmp_path / "keep.jsonl", MAYA, slice(0, 30), "keep")
    old = write_lines(tmp_path / "old.jsonl", MAYA, slice(30, 50), "shared")
    new = write_lines(tmp_path / "new.jsonl", MAYA, slice(50, 70), "shared")
    db = tmp_path / "memory.db"
    run_serially(cli, db, [("ingest", str(keep)), ("ingest", str(old))])
    run_at_once(db, [("ingest", str(new)), ("forget", "--conversation", "shared", "--yes"),
                     ("ask", "Where does Maya live?", "--conversation", "keep", "--json")])
    assert_whole(db)
    got = contents(db)
    new_ids = {orjson.loads(line)["id"] for line in new.read_bytes().splitlines()}
    shared = {sid for conv, sid, *_ in got["turns"] if conv == "shared"}
    # The forget removes what it selected when it ran: the old turns, and the new ones if they landed first.
    assert shared in (set(), new_ids)
    assert len([t for t in got["turns"] if t[0] == "keep"]) == 30
    conn = raw(db)
    assert conn.execute("SELECT count(*) FROM turns WHERE last_retrieved_at IS NOT NULL").fetchone()[0] > 0
    conn.close()


@pytest.mark.slow
@pytest.mark.subprocess  # real processes, each loading the models
def test_concurrent_replacing_ingests_stay_whole(cli, tmp_path):
    """`--replace` racing plain ingests of the same ids: every process ends well and the file stays whole."""
    base = write_lines(tmp_path / "base.jsonl", MAYA, slice(0, 20), "c")
    records = [orjson.loads(line) for line in base.read_bytes().splitlines()]
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(b"".join(orjson.dumps({**r, "text": r["text"] + " (edited)"}) + b"\n" for r in records[5:10]))
    db = tmp_path / "memory.db"
    run_serially(cli, db, [("ingest", str(base))])
    run_at_once(db, [("ingest", str(changed), "--replace")] * 3)
    assert_whole(db)
    got = contents(db)
    texts = {sid: text for _, sid, text, _, _ in got["turns"]}
    assert len(texts) == 20
    assert all(texts[r["id"]].endswith("(edited)") for r in records[5:10])
    assert sorted(position for *_, position, _ in got["turns"]) == list(range(20)), "replacements keep their place"


# ------------------------------------------------------------------ no silent drops on the write path
def _edited(tmp_path: Path, ids: set[str], name: str = "edited.jsonl") -> Path:
    records = [orjson.loads(line) for line in MAYA.read_bytes().splitlines() if line.strip()]
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps({**r, "text": r["text"] + " Actually, make that Zanzibar."
                                            if r["id"] in ids else r["text"]}) + b"\n" for r in records))
    return path


def test_a_changed_text_under_a_stored_id_is_a_reported_conflict(cli, db_path, tmp_path, stub_models):
    assert cli("--db", str(db_path), "ingest", str(MAYA)).exit_code == 0
    before = contents(db_path)
    edited = _edited(tmp_path, {"s1:3", "s1:4"})
    result = cli("--db", str(db_path), "ingest", str(edited))
    assert result.exit_code == 3
    assert ("2 lines conflict with stored turns (same id, different text): maya-and-leo/s1:3, maya-and-leo/s1:4; "
            "--replace to replace them") in result.stderr
    as_json = cli("--db", str(db_path), "ingest", str(edited), "--json")
    assert as_json.exit_code == 3
    report = orjson.loads(as_json.stdout)
    assert report["conflicts"] == 2 and report["conflict_ids"] == ["maya-and-leo/s1:3", "maya-and-leo/s1:4"]
    assert report["turns_added"] == 0 and report["turns_existing"] == 82
    assert_same(contents(db_path), before)
    again = cli("--db", str(db_path), "ingest", str(MAYA), "--json")
    assert again.exit_code == 0 and "conflict" not in again.stderr, "the same text again is a quiet skip"
    assert orjson.loads(again.stdout)["conflicts"] == 0


@pytest.mark.slow  # the turn after a replaced one is embedded again, read after the new text
def test_replace_puts_the_new_text_in_the_old_place(cli, db_path, tmp_path):
    assert cli("--db", str(db_path), "ingest", str(MAYA)).exit_code == 0
    edited = _edited(tmp_path, {"s1:3", "s2:1"})
    result = cli("--db", str(db_path), "ingest", str(edited), "--replace", "--json")
    assert result.exit_code == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert report["turns_replaced"] == 2 and report["turns_added"] == 2 and report["conflicts"] == 0
    assert_whole(db_path)
    got = contents(db_path)
    fresh = tmp_path / "fresh.db"
    assert cli("--db", str(fresh), "ingest", str(edited)).exit_code == 0
    want = contents(fresh)
    # Turns, positions, cues and every turn vector (the turn after a replaced one is read after the new
    # text) are as if the edited file had been ingested alone; so are the temporal edges.
    assert got["turns"] == want["turns"]
    assert got["cues"] == want["cues"]
    for turn, vector in want["turn_vectors"].items():
        assert np.allclose(got["turn_vectors"][turn], vector, atol=1e-5), turn
    temporal = lambda c: {k: v for k, v in c["edges"].items() if k[2] == "temporal"}  # noqa: E731
    assert temporal(got) == temporal(want)
    conn = raw(db_path)
    assert conn.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'Zanzibar'").fetchone()[0] == 2
    conn.close()
    assert cli("--db", str(db_path), "ingest", str(edited), "--replace").exit_code == 0


@pytest.mark.parametrize("failure", ["llm-without-model", "bad-line"])
def test_a_failed_ingest_leaves_nothing_behind(cli, tmp_path, failure, stub_models):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(MAYA.read_bytes() + b'{"conversation": "maya-and-leo", "text": \n')
    args = [str(MAYA), "--extractor", "llm"] if failure == "llm-without-model" else [str(bad)]
    new = tmp_path / "new" / "memory.db"
    result = cli("--db", str(new), "ingest", *args)
    assert result.exit_code == 1 and "error:" in result.stderr
    assert not new.exists() and not Path(f"{new}-wal").exists() and not Path(f"{new}-shm").exists()
    old = tmp_path / "old.db"
    assert cli("--db", str(old), "ingest", str(CHAT)).exit_code == 0
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("old.db")}
    result = cli("--db", str(old), "ingest", *args)
    assert result.exit_code == 1
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("old.db")} == files


# ------------------------------------------------------------------ one clock: UTC (issue 27)
@pytest.mark.slow
@pytest.mark.subprocess  # real processes, each loading the models
def test_forget_decay_selects_the_same_turns_in_any_time_zone(tmp_path):
    from datetime import datetime, timedelta

    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    at = lambda hours: (now - timedelta(hours=hours)).isoformat()  # noqa: E731
    lines = [
        {"conversation": "main", "id": "young", "time": at(17), "speaker": "Ann", "text": "I adopted a grey cat."},
        {"conversation": "main", "id": "old", "time": at(31), "speaker": "Ann", "text": "I sold my old bicycle."},
        {"conversation": "other", "id": "o1", "speaker": "Bob", "text": "My sister lives in Lisbon."},
    ]
    source = tmp_path / "times.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    kept = {}
    for zone in ("UTC", "Pacific/Kiritimati"):  # UTC+14: a local clock 14 hours ahead
        db = tmp_path / f"{zone.replace('/', '-')}.db"
        env = {**_env(), "TZ": zone}
        for args in (("ingest", str(source)), ("ask", "Where does the sister live?", "-c", "other", "--json"),
                     ("forget", "--decay", "1", "--conversation", "main", "--yes", "--json")):
            done = subprocess.run([*CUEMEM, "--db", str(db), *args], env=env,
                                  capture_output=True, timeout=600)
            assert done.returncode == 0, done.stderr.decode()
        conn = raw(db)
        kept[zone] = {r[0] for r in conn.execute("SELECT source_id FROM turns")}
        retrieved = conn.execute("SELECT last_retrieved_at FROM turns WHERE source_id = 'o1'").fetchone()[0]
        created = conn.execute("SELECT created_at FROM conversations WHERE name = 'other'").fetchone()[0]
        conn.close()
        for stamp in (retrieved, created):
            assert abs(datetime.fromisoformat(stamp) - now) < timedelta(minutes=10), (zone, stamp)
    assert kept["UTC"] == kept["Pacific/Kiritimati"] == {"young", "o1"}
