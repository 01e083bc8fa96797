"""Library errors. Library code raises these and never exits; the CLI maps them to exit codes."""

from __future__ import annotations


class CuememError(Exception):
    """An error a user can act on: `message` says what is wrong, `hint` what to do."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n{self.hint}" if self.hint else self.message


class InputError(CuememError):
    """Bad input at a known place: renders as `FILE:LINE: what is wrong`."""

    def __init__(self, path: str, line: int, message: str, hint: str | None = None):
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {message}", hint)


class ModelMismatch(CuememError):
    """The database was built with another embedding model."""


class LLMError(CuememError):
    """A model call failed after its retries."""


class StoreError(CuememError):
    """The database cannot be used as asked: not a cuemem store, damaged, unreachable, or a storage fault
    (the store layer turns its driver's errors into these, with a hint)."""


class NoDatabase(StoreError):
    """No memory at the target yet: a missing file, or a PostgreSQL database (or schema) without cuemem's
    tables, opened by a reader (which never creates one)."""


class StoreBusy(StoreError):
    """Another process held the database's write lock for longer than cuemem waits."""


class DiskFull(StoreError):
    """A write found no space left; the transaction it was part of was rolled back."""


class ReadOnlyStore(StoreError):
    """The memory can be read but not written (a read-only mount or folder, a read-only server or role,
    or opened read-only on purpose); nothing was changed."""


class UnknownConversation(CuememError):
    """A conversation name the database does not hold; the hint lists the ones it does."""

    def __init__(self, name: str, known: list[str]):
        listed = ", ".join(known[:20]) + (f", … ({len(known)} in all)" if len(known) > 20 else "")
        super().__init__(f"no conversation named {name!r}", f"known: {listed or 'none (this memory is empty)'}")
