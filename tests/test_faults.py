"""Faults a real machine has (issue 35): a full disk, a memory that cannot be written, a damaged file.

Each is provoked for real: a small tmpfs filled to its last byte, a read-only bind mount, a folder only
another user may write, a PostgreSQL database that is read-only or whose tablespace is full. Each must end
in one clear message (what happened, what to do) and an exit code, never a traceback; nothing stored is
lost; and a read must not fail because its bookkeeping write (which turns an answer used) cannot be made.
Mounting needs root: where it is impossible these tests are skipped, saying why, except under CI."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

import orjson
import pytest

from conftest import SAMPLES, assert_whole, raw, stand_in_models, tier

SAMPLE = SAMPLES / "maya_and_leo.jsonl"  # 84 turns, conversation maya-and-leo
OTHER = SAMPLES / "assistant_chat.jsonl"
QUESTION = "Where does Maya live now?"

# Storage faults, not cues or vectors: stand-in models throughout (tests/README.md), so a test is in the tier of
# what else it needs: `subprocess` to mount (small_disk, read_only_view), `postgres` for a server; else fast.
pytestmark = pytest.mark.usefixtures("stub_models")


def _cannot(reason: str) -> None:
    (pytest.fail if os.environ.get("CI") else pytest.skip)(reason)


def _mount(*args: str) -> str | None:
    """Run mount; None when it worked, else why not."""
    try:
        done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"mount exited {done.returncode}")


@pytest.fixture
def mounts():
    """The mount points a test made (point, whether to remove the folder after), unmounted after it (lazily if
    something still holds one)."""
    made: list[tuple[Path, bool]] = []
    yield made
    for point, remove in reversed(made):
        if subprocess.run(["umount", str(point)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(point)], capture_output=True)
        if remove:
            shutil.rmtree(point, ignore_errors=True)


@pytest.fixture
@tier("subprocess")  # mount and umount
def small_disk(tmp_path, mounts):
    """A factory: a new folder with a tmpfs of `size` mounted on it; `outside` puts it outside pytest's
    folders, which other users (a PostgreSQL server's) cannot enter."""

    def make(size: str = "3m", outside: bool = False) -> Path:
        if os.geteuid() != 0:
            _cannot("a small disk to fill is a tmpfs, and mounting one needs root")
        if outside:
            folder = Path(tempfile.mkdtemp(prefix="cuemem-disk-"))
        else:
            folder = tmp_path / f"disk{len(mounts)}"
            folder.mkdir()
        why = _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
        if why:
            if outside:
                folder.rmdir()
            _cannot(f"cannot mount a tmpfs here: {why}")
        mounts.append((folder, outside))
        return folder

    return make


@pytest.fixture
@tier("subprocess")  # mount and umount
def read_only_view(tmp_path, mounts):
    """A factory: a read-only bind mount of a folder (what a backup, a container layer or a shared
    read-only folder look like)."""

    def make(source: Path) -> Path:
        if os.geteuid() != 0:
            _cannot("a read-only view of a folder is a read-only bind mount, and mounting needs root")
        view = tmp_path / f"ro{len(mounts)}"
        view.mkdir()
        why = _mount("--bind", str(source), str(view))
        if why:
            _cannot(f"cannot bind-mount here: {why}")
        mounts.append((view, False))
        why = _mount("-o", "remount,ro,bind", str(view))
        if why:
            _cannot(f"cannot make a bind mount read-only here: {why}")
        return view

    return make


def fill(folder: Path) -> Path:
    """Fill the file system of `folder` to its last byte; returns the filler (delete it to make room)."""
    filler = folder / "filler"
    chunk = 1 << 16
    with open(filler, "wb", buffering=0) as fh:
        while chunk:
            try:
                fh.write(b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                chunk //= 2
    assert shutil.disk_usage(folder).free == 0
    return filler


@pytest.fixture(scope="module")
def memory_file(tmp_path_factory) -> Path:
    """The sample dialogue ingested once with the stand-in models (closed: no -wal or -shm beside it); tests
    copy it."""
    from typer.testing import CliRunner

    from cuemem_cli.cli.app import app

    db = tmp_path_factory.mktemp("memory") / "memory.db"
    with stand_in_models():
        result = CliRunner().invoke(app, ["--db", str(db), "ingest", str(SAMPLE)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in db.parent.iterdir()) == ["memory.db"]
    return db


def copy_of(memory_file: Path, folder: Path) -> Path:
    db = folder / "memory.db"
    shutil.copyfile(memory_file, db)
    return db


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def turn_count(db) -> int:
    conn = raw(db)
    try:
        return conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    finally:
        conn.close()


def lines(stream: str, prefix: str) -> list[str]:
    return [line for line in stream.splitlines() if line.startswith(prefix)]


def clean(result) -> None:
    """Said as cuemem says things: no traceback, no driver exception name."""
    for text in (result.stdout, result.stderr):
        assert "Traceback" not in text and "OperationalError" not in text and "psycopg" not in text, text


# ------------------------------------------------------------------ full disk
def test_a_write_that_meets_a_full_disk_stores_nothing_and_says_so_and_reads_still_answer(
        cli, memory_file, small_disk):
    """Another process has the memory open (its -wal and -shm stay), so this one opens it as usual and
    meets the full disk at its first write: one error line and a hint, nothing stored, the memory whole;
    `ask` answers and says once that it could not record which turns it used."""
    db = copy_of(memory_file, small_disk())
    holder = raw(db)
    try:
        holder.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # any later write must grow the log
        filler = fill(db.parent)

        result = cli("--db", str(db), "ingest", str(OTHER))
        assert result.exit_code == 1
        clean(result)
        assert lines(result.stderr, "error:") == [
            f"error: {db}: the disk is full (SQLite: database or disk is full); what this command was writing "
            "was not stored"]
        assert lines(result.stderr, "hint:") == [
            f"hint: free space on that disk (df -h {db.parent}), then run the command again; what was stored "
            "before is intact"]

        result = cli("--db", str(db), "ask", QUESTION, "--json")
        assert result.exit_code == 0, result.stderr
        clean(result)
        assert orjson.loads(result.stdout)["answer"]
        [warning] = lines(result.stderr, "warning:")
        assert "the disk is full" in warning and "not recorded as used" in warning

        result = cli("--db", str(db), "ask", QUESTION, "--context-only", "--json")
        assert result.exit_code == 0 and orjson.loads(result.stdout)["evidence"]
        assert not lines(result.stderr, "warning:")  # nothing to record: nothing to say
    finally:
        holder.close()
    filler.unlink()
    assert turn_count(db) == 84
    conn = raw(db)
    assert conn.execute("SELECT count(*) FROM turns WHERE last_retrieved_at IS NOT NULL").fetchone()[0] == 0
    conn.close()
    assert_whole(db)
    result = cli("--db", str(db), "ingest", str(OTHER), "--json")  # room again: it goes in
    assert result.exit_code == 0, result.stderr
    assert turn_count(db) == 84 + orjson.loads(result.stdout)["turns_added"] > 84


def test_a_memory_on_a_disk_too_full_for_its_index_is_read_and_not_written(cli, memory_file, small_disk):
    """Closed, the memory has no -shm index beside it, and SQLite needs room for one even to read: with none
    left, cuemem reads the file alone (it has no write-ahead log to miss) and refuses writes as a full disk."""
    db = copy_of(memory_file, small_disk())
    before = digest(db)
    filler = fill(db.parent)

    result = cli("--db", str(db), "ask", QUESTION, "--json")
    assert result.exit_code == 0, result.stderr
    clean(result)
    assert orjson.loads(result.stdout)["answer"]
    [warning] = lines(result.stderr, "warning:")
    assert "the disk it is on is full" in warning and "not recorded as used" in warning

    for command in (["ingest", str(OTHER)], ["forget", "-c", "maya-and-leo", "--yes"]):
        result = cli("--db", str(db), *command)
        assert result.exit_code == 1
        clean(result)
        assert lines(result.stderr, "error:") == [
            f"error: {db} cannot be written: the disk it is on is full (SQLite needs room for its -shm index even "
            "to read); cuemem can read it but not change it"]
        assert lines(result.stderr, "hint:") == [
            f"hint: free space on that disk (df -h {db.parent}), then run the command again"]
    assert digest(db) == before
    filler.unlink()
    assert turn_count(db) == 84


def test_an_ingest_stopped_by_a_full_disk_keeps_its_whole_batches_and_says_how_many(small_disk):
    """Batches commit one by one: those before the full disk stay, whole; the error counts them, and the
    same input given again adds only the rest."""
    from cuemem_cli.errors import DiskFull
    from cuemem_cli.ingest.pipeline import IngestReport
    from cuemem_cli.input.jsonl import parse_line
    from cuemem_cli.memory import Memory

    disk = small_disk("1m")
    messages = [parse_line(orjson.dumps({"conversation": "shop", "speaker": "Ann" if i % 2 else "Bob", "id": str(i),
                                         "text": f"On day {i} I bought {i} apples and a notebook at the market."}),
                           "<messages>", i + 1, None) for i in range(3000)]  # far more than 1 MB holds
    with Memory(disk / "memory.db") as memory, pytest.raises(DiskFull) as caught:
        memory.writer().run(messages, IngestReport(lines=len(messages)), batch_turns=16)
    said = re.search(r"; (\d+) new turns? of this input had been stored before it, in whole batches$",
                     caught.value.message)
    assert said, caught.value.message
    stored = int(said.group(1))
    assert stored > 0 and stored % 16 == 0
    assert caught.value.hint.endswith("; the same command run again skips what is stored")

    assert _mount("-o", "remount,size=20m", str(disk)) is None  # room again
    assert turn_count(disk / "memory.db") == stored
    assert_whole(disk / "memory.db")
    with Memory(disk / "memory.db") as memory:
        report = memory.writer().run(messages[:stored + 20], IngestReport(lines=stored + 20), batch_turns=16)
    assert (report.turns_existing, report.turns_added) == (stored, 20)


# ---------------------------------------------------------- read-only memory
def test_a_memory_on_a_read_only_mount_is_read_and_writes_are_refused(cli, memory_file, tmp_path, read_only_view):
    backup = tmp_path / "backup"
    backup.mkdir()
    copy_of(memory_file, backup)
    before = digest(backup / "memory.db")
    db = read_only_view(backup) / "memory.db"

    result = cli("--db", str(db), "ask", QUESTION, "--json")
    assert result.exit_code == 0, result.stderr
    clean(result)
    assert orjson.loads(result.stdout)["answer"]
    [warning] = lines(result.stderr, "warning:")
    assert f"{db} is read-only: the file system it is on is mounted read-only" in warning
    assert "not recorded as used" in warning

    result = cli("--db", str(db), "ask", QUESTION, "--context-only", "--json")
    assert result.exit_code == 0 and orjson.loads(result.stdout)["evidence"]
    assert not lines(result.stderr, "warning:")
    result = cli("--db", str(db), "inspect-graph", "--json")
    assert result.exit_code == 0 and orjson.loads(result.stdout)["conversations"][0]["turns"] == 84
    exported = tmp_path / "export.jsonl"
    result = cli("--db", str(db), "export", "-o", str(exported))
    assert result.exit_code == 0 and len(exported.read_text(encoding="utf-8").splitlines()) == 84
    result = cli("--db", str(db), "forget", "-c", "maya-and-leo", "--dry-run", "--json")
    assert result.exit_code == 0 and orjson.loads(result.stdout)["turns"] == 84

    refused = [f"error: {db} is read-only: the file system it is on is mounted read-only; cuemem can read it but "
               "not change it"]
    for command in (["ingest", str(OTHER)], ["forget", "-c", "maya-and-leo", "--yes"],
                    ["import", str(exported)]):
        result = cli("--db", str(db), *command)
        assert result.exit_code == 1, command
        clean(result)
        assert lines(result.stderr, "error:") == refused, command
        assert lines(result.stderr, "hint:") == [
            "hint: to change it, make it writable, or copy it (with its -wal file, if any) to a folder you may write "
            "and open the copy: --db PATH (or $CUEMEM_DB)"]

    result = cli("--db", str(db.parent / "new.db"), "ingest", str(OTHER))
    assert result.exit_code == 1
    assert lines(result.stderr, "error:") == [
        f"error: cannot create {db.parent / 'new.db'}: the file system it is on is mounted read-only"]
    assert sorted(p.name for p in backup.iterdir()) == ["memory.db"] and digest(backup / "memory.db") == before


def test_the_mcp_server_reads_a_read_only_memory_and_refuses_to_remember(memory_file, tmp_path, read_only_view,
                                                                        caplog):
    from cuemem_cli.errors import ReadOnlyStore
    from cuemem_cli.mcp_server import MemoryTools

    backup = tmp_path / "backup"
    backup.mkdir()
    copy_of(memory_file, backup)
    tools = MemoryTools(read_only_view(backup) / "memory.db")
    assert tools.recall(QUESTION, "maya-and-leo").data["evidence"]
    assert tools.ask(QUESTION, "maya-and-leo").data["answer"]
    with pytest.raises(ReadOnlyStore, match="is read-only"):
        tools.remember("maya-and-leo", [{"text": "I moved again."}])
    tools.close()  # its record of used turns cannot be written: dropped, said once
    said = [r.getMessage() for r in caplog.records if "not recorded as used" in r.getMessage()]
    assert len(said) == 1 and "is read-only" in said[0]


def test_a_write_ahead_log_on_a_read_only_mount_is_read_or_the_refusal_says_why(cli, memory_file, tmp_path,
                                                                               read_only_view):
    """Changes still in the -wal are read through its -shm index; without one (and no room to make it) SQLite
    could read only the file and would miss them: cuemem refuses, naming the log, rather than answer from
    an older state."""
    live = tmp_path / "live"
    live.mkdir()
    db = copy_of(memory_file, live)
    conn = raw(db)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT INTO conversations(name, created_at) VALUES ('late', '2024-01-01T00:00:00')")
    conn.commit()  # into the -wal, which no checkpoint empties while this connection is open
    with_index, without = tmp_path / "with-index", tmp_path / "without"
    for folder, names in ((with_index, ("memory.db", "memory.db-wal", "memory.db-shm")),
                          (without, ("memory.db", "memory.db-wal"))):
        folder.mkdir()
        for name in names:
            shutil.copyfile(live / name, folder / name)
    conn.close()
    assert (without / "memory.db-wal").stat().st_size > 0

    result = cli("--db", str(read_only_view(with_index) / "memory.db"), "inspect-graph", "--json")
    assert result.exit_code == 0, result.stderr
    assert [c["conversation"] for c in orjson.loads(result.stdout)["conversations"]] == ["maya-and-leo", "late"]

    db = read_only_view(without) / "memory.db"
    result = cli("--db", str(db), "inspect-graph", "--json")
    assert result.exit_code == 1
    clean(result)
    assert lines(result.stderr, "error:") == [
        f"error: cannot read {db}: its write-ahead log memory.db-wal holds changes not yet in the file, and SQLite "
        "cannot create the memory.db-shm index it needs to read them, since the file system it is on is mounted "
        "read-only"]
    assert "copy the file with its -wal to a folder you may write" in result.stderr


def _read_and_try_to_write(db: Path) -> list[str]:
    """What a user sees opening `db`: why it is read-only, what it holds, and the refusal of a write."""
    from cuemem_cli.errors import ReadOnlyStore
    from cuemem_cli.store.base import conversation_names
    from cuemem_cli.store.open import open_store

    store = open_store(db, create=False)
    try:
        seen = [str(store.read_only), ",".join(conversation_names(store))]
        try:
            with store.transaction():
                store.set_meta("written", "yes")
        except ReadOnlyStore as exc:
            seen.append(exc.message)
        return seen
    finally:
        store.close()


def _as_nobody(task, *args) -> list[str]:
    """`task(*args)` in a forked child that became the user nobody (root may write anything, so root's
    own view shows nothing); the child reuses this process's imports, so nothing else need be readable."""
    import json

    from cuemem_cli.store import sqlite  # noqa: F401  (imported before the fork: its files may be root's alone)

    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(reader)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            payload = json.dumps(task(*args))
            code = 0
        except BaseException as exc:  # reported to the parent
            payload = json.dumps({"error": repr(exc)})
        finally:
            with os.fdopen(writer, "w") as out:
                out.write(payload)
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader) as got:
        payload = got.read()
    os.waitpid(pid, 0)
    result = json.loads(payload)
    assert not isinstance(result, dict), result["error"]
    return result


def test_a_memory_the_user_may_not_write_is_read_and_not_written(memory_file):
    """A folder or a file the user may not write is read as it is and writes are refused, naming why (as root,
    checked as the user nobody, since root may write anything). In a folder where no -shm can be made, the
    file is read alone (SQLite's immutable mode): it has no -wal to miss."""
    as_nobody = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="cuemem-perm-"))
    shared, own = root / "shared", root / "mine"
    try:
        for folder in (shared, own):
            folder.mkdir()
            db = copy_of(memory_file, folder)
            db.chmod(0o644 if folder == shared else 0o444)  # the file in `shared` is the user's to write
            if as_nobody:
                os.chown(db, 65534, 65534)
                if folder == own:
                    os.chown(folder, 65534, 65534)
        shared.chmod(0o555)
        root.chmod(0o755)
        for folder, reason in ((shared, f"you may not write its folder {shared}, where SQLite keeps its -wal and "
                                        "-shm files"),
                               (own, "you may not write the file (its permissions)")):
            db = folder / "memory.db"
            seen = _as_nobody(_read_and_try_to_write, db) if as_nobody else _read_and_try_to_write(db)
            assert seen == [reason, "maya-and-leo",
                            f"{db} is read-only: {reason}; cuemem can read it but not change it"]
            assert turn_count(db) == 84
        assert sorted(p.name for p in shared.iterdir()) == ["memory.db"]
    finally:
        shared.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------ damaged file
def test_a_damaged_memory_is_named_with_what_to_do(cli, memory_file, tmp_path):
    db = copy_of(memory_file, tmp_path)
    data = bytearray(db.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page but the first (the schema) overwritten
    db.write_bytes(bytes(data))
    result = cli("--db", str(db), "ask", QUESTION)
    assert result.exit_code == 1
    clean(result)
    [error] = lines(result.stderr, "error:")
    assert error.startswith(f"error: {db} is damaged (SQLite: ")
    assert lines(result.stderr, "hint:") == [
        "hint: restore it from a copy: a .bak-schemaN file beside it (made before each upgrade), or an export of "
        "it, imported again: cuemem export, then cuemem import"]


# ---------------------------------------------------------------- PostgreSQL
def _with_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}@{parts.netloc.rsplit('@', 1)[-1]}"))


def test_a_read_only_postgres_memory_is_read_and_writes_are_refused(cli, pg_url, postgres_server):
    """A database whose server starts every transaction read-only, and a role that may only SELECT."""
    import psycopg

    result = cli("--db", pg_url, "ingest", str(SAMPLE))
    assert result.exit_code == 0, result.stderr
    name = urlsplit(pg_url).path.lstrip("/")
    reader = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {reader} LOGIN")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}")
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    try:
        for url, reason in ((pg_url, "the server starts every transaction read-only (default_transaction_read_only)"),
                            (_with_user(pg_url, reader), f"the role {reader} may not write its tables (no INSERT "
                                                         "privilege on turns)")):
            if url != pg_url:
                with psycopg.connect(postgres_server, autocommit=True) as admin:
                    admin.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = off")
            result = cli("--db", url, "ask", QUESTION, "--json")
            assert result.exit_code == 0, result.stderr
            clean(result)
            [warning] = lines(result.stderr, "warning:")
            assert f"is read-only: {reason}" in warning and "not recorded as used" in warning
            for command in (["ingest", str(OTHER)], ["forget", "-c", "maya-and-leo", "--yes"]):
                result = cli("--db", url, *command)
                assert result.exit_code == 1, command
                clean(result)
                assert lines(result.stderr, "error:") == [
                    f"error: {url} is read-only: {reason}; cuemem can read it but not change it"]
        result = cli("--db", pg_url, "inspect-graph", "--json")
        assert orjson.loads(result.stdout)["conversations"][0]["turns"] == 84
    finally:
        with psycopg.connect(pg_url, autocommit=True, options="-c default_transaction_read_only=off") as admin:
            admin.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {reader}")
            admin.execute(f"DROP ROLE {reader}")


def test_a_full_postgres_disk_is_one_clear_error_and_keeps_the_memory(cli, pg_url, postgres_server, small_disk):
    """cuemem's tables in a tablespace on a small tmpfs, filled: the server's own 'No space left on device'
    becomes one line and a hint; what was stored stays, and reads still answer."""
    import psycopg

    socket_dir = parse_qs(urlsplit(pg_url).query).get("host", [""])[0]
    if not socket_dir.startswith("/") or not Path(socket_dir, "PG_VERSION").exists():
        pytest.skip("the PostgreSQL server is not a local one whose data folder this test can see")
    owner = Path(socket_dir).stat().st_uid
    disk = small_disk("20m", outside=True)
    os.chown(disk, owner, owner)
    disk.chmod(0o700)
    name, space = urlsplit(pg_url).path.lstrip("/"), f"small_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE TABLESPACE {space} LOCATION '{disk}'")
        admin.execute(f"ALTER DATABASE {name} SET default_tablespace = {space}")
    try:
        result = cli("--db", pg_url, "ingest", str(SAMPLE))
        assert result.exit_code == 0, result.stderr
        used = 20 * 1024 - shutil.disk_usage(disk).free // 1024
        assert _mount("-o", f"remount,size={used + 64}k", str(disk)) is None
        with psycopg.connect(pg_url, autocommit=True) as admin:  # what room remains goes to a table of no use
            admin.execute("CREATE TABLE filler (t text STORAGE PLAIN)")  # uncompressed: a row fills a page
            with pytest.raises(psycopg.errors.DiskFull):
                for _ in range(1000):
                    admin.execute("INSERT INTO filler SELECT repeat('x', 7000) FROM generate_series(1, 8)")

        result = cli("--db", pg_url, "ingest", str(OTHER))
        assert result.exit_code == 1
        clean(result)
        [error] = lines(result.stderr, "error:")
        assert error.startswith(f"error: {pg_url}: the server's disk is full (PostgreSQL: could not extend file ")
        assert error.endswith("what this command was writing was not stored")
        assert lines(result.stderr, "hint:") == [
            "hint: free space on the database server's disk (or ask its administrator), then run the command "
            "again; what was stored before is intact"]
        result = cli("--db", pg_url, "ask", QUESTION, "--json")
        assert result.exit_code == 0, result.stderr
        clean(result)
        assert orjson.loads(result.stdout)["answer"]
        result = cli("--db", pg_url, "inspect-graph", "--json")
        assert [c["turns"] for c in orjson.loads(result.stdout)["conversations"]] == [84]
    finally:  # the database first: a tablespace in use cannot be dropped (pg_url drops it again, harmlessly)
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"DROP TABLESPACE IF EXISTS {space}")
