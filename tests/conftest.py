"""Shared fixtures: throwaway databases, real models loaded once, a fake LLM registered in litellm."""

from __future__ import annotations

import os

# Before Typer, rich or litellm are imported: plain help, wide output, no network look-ups.
os.environ["_TYPER_FORCE_DISABLE_TERMINAL"] = "1"
os.environ["TERMINAL_WIDTH"] = "200"
os.environ["COLUMNS"] = "200"  # rich sizes tables by it
os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["PAGER"] = ""  # a test that makes stdout claim to be a terminal never starts a real pager

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_dialogues"
LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
# What a test that needs LoCoMo says when it is missing: where the file comes from and where it goes.
LOCOMO_MISSING = (f"LoCoMo data not found at {LOCOMO}: these tests read the LoCoMo benchmark's locomo10.json "
                  "(CC BY-NC 4.0), data/locomo10.json of the GitHub repository snap-research/locomo; put it at "
                  "../shared/data/locomo10.json beside this repository")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test gets its own default DB and no answer model from the environment."""
    monkeypatch.setenv("CUEMEM_DB", str(tmp_path / "memory.db"))
    monkeypatch.delenv("CUEMEM_MODEL", raising=False)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """Tests may talk to 127.0.0.1 only: a remote call is a bug in the test or the code."""
    real_connect = socket.socket.connect

    def guarded(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") and sock.family != socket.AF_UNIX:
            raise OSError(f"test tried to reach {host}: tests are offline")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def raw(path):
    """A plain connection to a database file (sqlite-vec loaded), for checks below the store's API."""
    import sqlite_vec

    from cuemem_cli.store_sqlite import sqlite3

    conn = sqlite3.connect(str(path), timeout=30)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    return conn


def assert_whole(path) -> None:
    """integrity_check ok; no orphan cue, vector, FTS entry or edge."""
    conn = raw(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 0)")
    cue_ids = {r[0] for r in conn.execute("SELECT id FROM cues")}
    turn_ids = {r[0] for r in conn.execute("SELECT id FROM turns")}
    assert {r[0] for r in conn.execute("SELECT cue_id FROM cue_vectors")} == cue_ids
    assert {r[0] for r in conn.execute("SELECT id FROM turns_fts_docsize")} == turn_ids
    assert {r[0] for r in conn.execute("SELECT src FROM edges UNION SELECT dst FROM edges")} <= turn_ids
    conn.close()


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def store(db_path):
    from cuemem_cli.store_sqlite import SQLiteStore

    s = SQLiteStore.open(db_path)
    yield s
    s.close()


@pytest.fixture(scope="session")
def embedder():
    from cuemem_cli.embed import get_embedder

    return get_embedder()  # the default, as the CLI uses it


@pytest.fixture(scope="session")
def spacy_extractor():
    from cuemem_cli.extract import SpacyExtractor

    return SpacyExtractor()


@pytest.fixture
def runner():
    from typer.testing import CliRunner

    return CliRunner()


@pytest.fixture
def cli(runner):
    """Run the real `cuemem` app: cli("ask", "q", "--json") → Result (stdout and stderr apart)."""
    from cuemem_cli.cli import app

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def locomo_path() -> Path:
    if not LOCOMO.exists():
        pytest.skip(LOCOMO_MISSING)
    return LOCOMO


class FakeLLM:
    """A litellm CustomLLM that answers from a script and records every request it receives."""

    def __init__(self):
        self.requests: list[list[dict]] = []
        self.script: list = []
        self.default: Callable[[list[dict]], str] | None = None

    def handler(self):
        import litellm

        fake = self

        class Handler(litellm.CustomLLM):
            def completion(self, *args, **kwargs):
                messages = kwargs["messages"]
                fake.requests.append(messages)
                step = fake.script.pop(0) if fake.script else fake.default
                if isinstance(step, BaseException):
                    raise step
                reply = step(messages) if callable(step) else step
                return litellm.completion(model="gpt-4o-mini", messages=messages, mock_response=reply)

        return Handler()


@pytest.fixture
def fake_llm(monkeypatch):
    """Register `fake/...` models in litellm's own provider map for the duration of a test."""
    import litellm

    fake = FakeLLM()
    monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "fake", "custom_handler": fake.handler()}])
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    yield fake


# ------------------------------------------------------------------ PostgreSQL
@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server with pgvector for the session: $CUEMEM_TEST_POSTGRES (a server URL), else
    one `.ci/postgres-up` starts in a temporary folder and `.ci/postgres-down` stops. Tests are skipped when
    none can be started, except under CI, where that fails them.

    The folder is not under pytest's basetemp: the server runs as another user (pgserver, when root starts
    it), and every pytest session on the machine makes /tmp/pytest-of-USER 0700 again as it starts."""
    import shutil
    import subprocess
    import sys
    import tempfile

    url = os.environ.get("CUEMEM_TEST_POSTGRES")
    if url:
        yield url
        return
    folder = Path(tempfile.mkdtemp(prefix="cuemem-pg-"))
    try:
        env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
        done = subprocess.run(["bash", str(REPO / ".ci" / "postgres-up"), str(folder)], capture_output=True,
                              text=True, timeout=300, env=env)  # `python` there is this test run's
    except (OSError, subprocess.TimeoutExpired) as exc:
        done = None
        why = str(exc)
    if done is None or done.returncode != 0:
        why = why if done is None else done.stderr.strip()[-500:]
        shutil.rmtree(folder, ignore_errors=True)
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"no PostgreSQL server: .ci/postgres-up failed: {why}")
    try:
        yield done.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(REPO / ".ci" / "postgres-down"), str(folder)], capture_output=True, timeout=120,
                       env=env)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server):
    """The URL of a new, empty database on the session's server, dropped after the test."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield urlunsplit(urlsplit(postgres_server)._replace(path=f"/{name}"))
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgres"])
def backend_db(request, tmp_path):
    """A new database of each backend in turn: a SQLite file path, or a PostgreSQL URL (as --db takes them)."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def any_store(backend_db):
    """A migrated store of each backend in turn (stores.open_store)."""
    from cuemem_cli.stores import open_store

    s = open_store(backend_db)
    yield s
    s.close()
