"""Which store a database target opens: a `postgresql://` URL → PostgresStore, anything else → the SQLite Store."""

from __future__ import annotations

import os

from .config import is_postgres_url


def open_store(target: str | os.PathLike, create: bool = True, readonly: bool = False):
    """The store for --db / $CUEMEM_DB: both answer the same methods (tests/test_store_contract.py)."""
    if is_postgres_url(target):
        from .store_postgres import PostgresStore

        return PostgresStore.open(str(target), create=create, readonly=readonly)
    from .store import Store

    return Store.open(target, create=create, readonly=readonly)
