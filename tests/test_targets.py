"""One way to a database (issue 50, item 1): a path, a `postgresql://` URL, $CUEMEM_DB or the per-user
default names the same memory in every interface — the CLI's commands, `cuemem mcp`, `cuemem browse` and
the Python API — on SQLite and on PostgreSQL. `cuemem --db postgresql://… mcp` once wrote a SQLite file
at ./postgresql:/… instead.

The memories are built in this process with the stand-in models (conftest.stand_in_models); what the
servers are asked (list, forget, the conversation list) loads no model."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import orjson
import pytest

from conftest import CUEMEM, child_env, stand_in_models

LINES = [{"conversation": "lisbon", "speaker": "Ana", "time": "2024-05-03T10:00:00", "id": "l1",
          "text": "We are staying at a guesthouse in Alfama."},
         {"conversation": "errands", "speaker": "Ana", "time": "2024-05-04T09:00:00", "id": "e1",
          "text": "Buy stamps and return the library books."}]


def build(target: str) -> None:
    """Two conversations in `target`, through the Python API with the stand-in models."""
    from cuemem_cli import Memory

    with stand_in_models(), Memory(target) as memory:
        memory.add(LINES)


def conversations(target: str) -> list[str]:
    """The conversations `target` holds, read through the store itself."""
    from cuemem_cli.store.open import open_store

    store = open_store(target, create=False)
    try:
        return sorted(name for _, name, _ in store.conversations())
    finally:
        store.close()


def reported(target: str) -> str:
    """The target as reports name it: a path, or a URL without its password."""
    from cuemem_cli.store.postgres import redacted

    return redacted(target) if target.startswith("postgresql://") else target


def leftovers(folder: Path) -> list[str]:
    """What a process run in `folder` left there: a memory it should have reached elsewhere shows up here."""
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------ the resolution itself
def test_a_name_resolves_to_a_url_a_path_the_environment_or_the_per_user_default(tmp_path, monkeypatch):
    from cuemem_cli.errors import StoreError
    from cuemem_cli.store.open import resolve_target, shown

    url = "postgresql://ann:secret@db.internal/memories?schema=ann"
    assert resolve_target(url) == url, "a URL is never taken for a file name"
    assert shown(resolve_target(url)) == "postgresql://ann:***@db.internal/memories?schema=ann"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_target("~/notes.db") == tmp_path / "notes.db"
    monkeypatch.setenv("CUEMEM_DB", url)
    assert resolve_target(None) == url and resolve_target("") == url, "nothing named: $CUEMEM_DB"
    assert resolve_target("local.db") == Path("local.db"), "a name wins over $CUEMEM_DB"
    monkeypatch.delenv("CUEMEM_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert resolve_target() == tmp_path / "data" / "cuemem" / "memory.db", "neither: the per-user data directory"
    with pytest.raises(StoreError, match=f"{tmp_path} is a directory, not a database file"):
        resolve_target(tmp_path)


# ------------------------------------------------------------------ each interface, on both backends
def test_the_python_api_opens_what_the_environment_names(backend_db, tmp_path, monkeypatch):
    """`Memory()` names no database: it opens $CUEMEM_DB as the CLI does (a URL on PostgreSQL)."""
    from cuemem_cli import Memory

    monkeypatch.setenv("CUEMEM_DB", backend_db)
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    with stand_in_models(), Memory() as memory:
        memory.add(LINES[:1])
        assert memory.path == (backend_db if backend_db.startswith("postgresql://") else Path(backend_db))
    assert conversations(backend_db) == ["lisbon"]
    assert leftovers(folder) == []


def test_the_python_api_expands_a_home_folder(tmp_path, monkeypatch, stub_models):
    from cuemem_cli import Memory

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    with Memory("~/notes.db") as memory:
        memory.add(LINES[:1])
    assert conversations(str(tmp_path / "home" / "notes.db")) == ["lisbon"]
    assert not (tmp_path / "~").exists(), "no folder named ~ in the working directory"


@pytest.mark.usefixtures("stub_models")
def test_the_cli_reads_the_environment_and_db_overrides_it(cli, backend_db, tmp_path, monkeypatch):
    source = tmp_path / "lines.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in LINES))
    monkeypatch.setenv("CUEMEM_DB", backend_db)
    report = cli("ingest", str(source), "--json")
    assert report.exit_code == 0, report.stderr
    assert orjson.loads(report.stdout)["db"] == reported(backend_db)
    assert conversations(backend_db) == ["errands", "lisbon"]
    elsewhere = tmp_path / "other.db"
    refused = cli("--db", str(elsewhere), "inspect-graph", "--json")
    assert refused.exit_code == 1 and f"no cuemem database at {elsewhere}" in refused.stderr, "--db wins"
    monkeypatch.setenv("CUEMEM_DB", str(elsewhere))
    listed = orjson.loads(cli("--db", backend_db, "inspect-graph", "--json").stdout)
    assert sorted(c["conversation"] for c in listed["conversations"]) == ["errands", "lisbon"]


def test_the_cli_falls_back_to_the_per_user_database(cli, tmp_path, monkeypatch, stub_models):
    source = tmp_path / "lines.jsonl"
    source.write_bytes(orjson.dumps(LINES[0]) + b"\n")
    monkeypatch.delenv("CUEMEM_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert cli("ingest", str(source)).exit_code == 0
    assert conversations(str(tmp_path / "data" / "cuemem" / "memory.db")) == ["lisbon"]


@asynccontextmanager
async def mcp_session(args: list[str], env: dict[str, str], cwd: Path) -> AsyncIterator:
    """`cuemem ARGS` (ending in `mcp …`) as an MCP server in `cwd`, with a client session on its stdio."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=CUEMEM[0], args=[*CUEMEM[1:], *args], env=child_env(**env), cwd=cwd)
    with open(cwd.parent / f"{cwd.name}.mcp.log", "w") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@pytest.mark.subprocess  # an MCP server process (no model loads: listing and forgetting a whole chat embed nothing)
@pytest.mark.parametrize("named_by", ["--db", "CUEMEM_DB"])
def test_the_mcp_server_reaches_the_database_named(backend_db, tmp_path, named_by):
    pytest.importorskip("mcp")
    build(backend_db)
    folder = tmp_path / "cwd"
    folder.mkdir()
    args, env = (["--db", backend_db], {}) if named_by == "--db" else ([], {"CUEMEM_DB": backend_db})

    async def scenario():
        async with mcp_session([*args, "mcp", "--allow-forget"], env, folder) as session:
            listed = await session.call_tool("list_conversations", {})
            forgot = await session.call_tool("forget", {"conversation": "errands"})
            return listed, forgot

    listed, forgot = asyncio.run(scenario())
    assert not listed.is_error and not forgot.is_error, (listed.content, forgot.content)
    assert sorted(c["conversation"] for c in listed.structured_content["result"]) == ["errands", "lisbon"]
    assert forgot.structured_content["conversations_removed"] == ["errands"]
    assert conversations(backend_db) == ["lisbon"], "the forget reached the database named"
    assert leftovers(folder) == [], "no memory made in the working directory (./postgresql:/…)"


@pytest.mark.subprocess  # a browse server process (no model loads: the conversation list embeds nothing)
def test_browse_serves_the_database_the_environment_names(backend_db, tmp_path):
    pytest.importorskip("starlette", reason="`cuemem browse` needs the browse extra")
    from test_browse import Server, stop

    build(backend_db)
    folder = tmp_path / "cwd"
    folder.mkdir()
    process = subprocess.Popen([*CUEMEM, "browse", "--no-open"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=child_env(CUEMEM_DB=backend_db), cwd=folder)
    line = process.stdout.readline() if process.stdout else ""
    if not line.startswith("http://"):
        process.kill()
        raise AssertionError(f"no address printed: {line!r} {process.communicate(timeout=30)[1][-2000:]}")
    server = Server(line.strip(), backend_db, folder, process)
    try:
        listed = server.json("api/conversations")
    finally:
        code, stderr = stop(server)
    assert sorted(c["conversation"] for c in listed["conversations"]) == ["errands", "lisbon"]
    assert f"serving {reported(backend_db)} read-only" in stderr and code == 0
    assert leftovers(folder) == []
