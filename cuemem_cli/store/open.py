"""One way to a database for every interface (CLI commands, `cuemem mcp`, `cuemem browse`, `Memory`,
`cuemem eval --store`): `resolve_target` says which memory a name means, `open_store` opens it (a
`postgresql://` URL → PostgresStore, a path → SQLiteStore). Resolving in one place is what keeps a URL
from being taken for a file name by one interface while the others reach the server."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreError
from .base import Store

ENVIRONMENT = "CUEMEM_DB"  # the memory of every interface when none is named
POSTGRES_SCHEMES = ("postgresql://", "postgres://")

# A resolved database target: a SQLite file's path, or a PostgreSQL URL (a str) as the user wrote it.
Target = Path | str


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def default_db_path() -> Path:
    """The per-user data directory of the platform (XDG on Linux, ~/Library on macOS, %LOCALAPPDATA%)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("cuemem", appauthor=False)) / "memory.db"


def resolve_target(named: str | os.PathLike[str] | None = None) -> Target:
    """`named`, else $CUEMEM_DB, else `memory.db` in the per-user data directory. A `postgresql://` (or
    `postgres://`) URL stays a URL; anything else is a SQLite file's path, `~` expanded. A folder is refused
    here, so every interface says so alike instead of failing its own way later."""
    chosen = (os.fspath(named) if named is not None else "") or os.environ.get(ENVIRONMENT) or ""
    if is_postgres_url(chosen):
        return chosen
    path = Path(chosen).expanduser() if chosen else default_db_path()
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a database file", f"name a file, e.g. {path / 'memory.db'}",
                         fields=("db",))
    return path


def shown(target: Target) -> str:
    """The target as reports and messages name it: its path, or its URL without the password."""
    if isinstance(target, Path):
        return str(target)
    from .postgres import redacted

    return redacted(target)


def open_store(target: str | os.PathLike, create: bool = True, readonly: bool = False) -> Store:
    """The store of a target (resolve_target's, or a path or URL a program names): either backend satisfies
    `Store` (tests/test_store_contract.py)."""
    if is_postgres_url(target):
        from .postgres import PostgresStore

        return PostgresStore.open(str(target), create=create, readonly=readonly)
    from .sqlite import SQLiteStore

    return SQLiteStore.open(target, create=create, readonly=readonly)
