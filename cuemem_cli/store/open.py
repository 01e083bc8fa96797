"""Which store a database target opens: a `postgresql://` URL → PostgresStore, anything else → SQLiteStore."""

from __future__ import annotations

import os

from ..config import is_postgres_url
from .base import Store


def open_store(target: str | os.PathLike, create: bool = True, readonly: bool = False) -> Store:
    """The store for --db / $CUEMEM_DB: either backend satisfies `Store` (tests/test_store_contract.py)."""
    if is_postgres_url(target):
        from .postgres import PostgresStore

        return PostgresStore.open(str(target), create=create, readonly=readonly)
    from .sqlite import SQLiteStore

    return SQLiteStore.open(target, create=create, readonly=readonly)
