"""Library errors. Library code raises these and never exits; the CLI maps them to exit codes.

Their words are the library's, whichever interface a user came through: "ask with a window of at most 2",
not "pass --window 2". What an interface calls a setting (a flag, a tool parameter, a form's menu) it adds
itself from the error's `fields` (`CuememError.hint_in`): cli/output.py's FLAGS, mcp_server's PARAMETERS,
browse's FORM."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class CuememError(Exception):
    """An error a user can act on: `message` says what is wrong, `hint` what to do. `fields` names the
    settings or actions the hint is about by their Python names (`window`, `conversation`, `db`, `add` for
    adding dialogue, …), for the interface to name them its own way."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None, fields: Sequence[str] = ()):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.fields = tuple(fields)

    def __str__(self) -> str:
        return f"{self.message}\n{self.hint}" if self.hint else self.message

    def hint_in(self, names: Mapping[str, str]) -> str | None:
        """The hint followed by an interface's own names for its fields (`names`: field → a flag, a tool
        parameter…): "add a dialogue first: cuemem ingest FILE". A field the interface lacks adds nothing."""
        said = ", ".join(dict.fromkeys(names[field] for field in self.fields if field in names))
        if not said:
            return self.hint
        return f"{self.hint}: {said}" if self.hint else said


class InputError(CuememError):
    """Bad input at a known place: renders as `FILE:LINE: what is wrong`."""

    def __init__(self, path: str, line: int, message: str, hint: str | None = None, fields: Sequence[str] = ()):
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {message}", hint, fields)


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

    def __init__(self, name: str, known: list[str], held: int | None = None):
        """`known`: the conversations to list; `held`: how many there are when `known` is the closest few."""
        if held is not None and held > len(known):
            hint = f"the closest of the {held} there are: {', '.join(known)}"
        else:
            listed = ", ".join(known[:20]) + (f", … ({len(known)} in all)" if len(known) > 20 else "")
            hint = f"known: {listed or 'none (this memory is empty)'}"
        super().__init__(f"no conversation named {name!r}", hint)
