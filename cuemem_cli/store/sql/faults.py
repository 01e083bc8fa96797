"""Storage faults in cuemem's words, alike on both drivers: a cursor class whose calls that reach the database
turn the driver's errors about storage (a full disk, a read-only file or transaction, a lock held too long,
a lost connection) into `StoreError`s with a hint, and leave any other driver error (a bug in a query) as
it is. Which errors those are, and their words, is each backend's (`_storage_error` in store/sqlite.py and
store/postgres.py); the connection carries it as `storage_error`, set once the store exists (while the
store opens, errors stay the driver's)."""

from __future__ import annotations

import functools
from typing import Any

# The cursor's calls that reach the database, and so may meet a storage fault.
DATABASE_CALLS = ("execute", "executemany", "fetchone", "fetchmany", "fetchall", "__next__")


def raise_storage_error(connection: Any, exc: Exception) -> None:
    """Raise cuemem's error for a driver error about storage, as `connection.storage_error` words it; return
    for any other (the caller re-raises the driver's)."""
    mapped = connection.storage_error(exc) if connection.storage_error is not None else None
    if mapped is not None:
        raise mapped from exc


def translating_cursor(base: type, driver_error: type[Exception]) -> type:
    """A subclass of the driver's cursor class `base` whose `DATABASE_CALLS` report a `driver_error` about
    storage as cuemem's (`raise_storage_error`, through the cursor's connection)."""

    def translated(name: str) -> Any:
        call = getattr(base, name)

        @functools.wraps(call)
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return call(self, *args, **kwargs)
            except driver_error as exc:
                raise_storage_error(self.connection, exc)
                raise

        return method

    doc = f"The driver's {base.__name__}, its storage faults reported as cuemem's errors (store/sql/faults.py)."
    return type(base.__name__, (base,), {"__module__": __name__, "__doc__": doc,
                                         **{name: translated(name) for name in DATABASE_CALLS}})
