"""Which conversations a question ranges over: the whole memory, or those named by name or title."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from ..errors import CuememError, UnknownConversation
from ..store.base import Store


@dataclass(frozen=True)
class Scope:
    """What a question ranges over: the whole memory (`ids` None, `names` empty) or some conversations."""

    ids: tuple[int, ...] | None = None
    names: tuple[str, ...] = ()
    held: int = 0  # conversations the question ranges over


def conversation_labels(store: Store) -> list[str]:
    """Every conversation as messages list it: its name, and its title in brackets when it has one."""
    return [_label(row) for row in store.conversations()]


Row = tuple[int, str, str | None]  # a conversation: id, name, title
SHOWN_CLOSEST = 5  # conversations an unknown or ambiguous name lists, the closest first


def resolve_scope(store: Store, conversations: str | Sequence[str] | None, starts: bool = True) -> Scope:
    """The conversations a question is narrowed to: each named by its name, by its title, or (`starts`) by
    the start of its name or title, as long as that names exactly one conversation (case and surrounding
    spaces aside); none named, the whole memory. A name that matches none, or several, lists the few closest."""
    rows = store.conversations()
    if not rows:
        raise CuememError("this memory is empty", "add a dialogue first", fields=("add",))
    wanted = [conversations] if isinstance(conversations, str) else list(conversations or [])
    if not wanted:
        return Scope(held=len(rows))
    by_name = {name: cid for cid, name, _ in rows}
    chosen: dict[int, str] = {}
    for item in wanted:
        if item in by_name:
            chosen[by_name[item]] = item
            continue
        cid, name = _one_named(item, rows, starts)
        chosen[cid] = name
    return Scope(tuple(chosen), tuple(chosen.values()), len(chosen))


def _one_named(item: str, rows: Sequence[Row], starts: bool) -> tuple[int, str]:
    """The one conversation `item` names by its title, else (`starts`) by the start of its title or name."""
    key = item.strip().casefold()
    titled = [row for row in rows if row[2] and row[2].strip().casefold() == key]
    started = titled or [row for row in rows if starts and key and any(
        text and text.strip().casefold().startswith(key) for text in (row[1], row[2]))]
    if len(started) == 1:
        return started[0][0], started[0][1]
    if not started:
        raise UnknownConversation(item, [_label(row) for row in closest(item, rows)], len(rows))
    how, hint = ("the title", "name the one you mean by its name") if titled else \
        ("the start", "name the one you mean by its name, or more of its title")
    listed = ", ".join(_label(row) for row in closest(item, started))
    more = f", … ({len(started)} in all)" if len(started) > SHOWN_CLOSEST else ""
    raise CuememError(f"{how} {item!r} names {len(started)} conversations: {listed}{more}", hint,
                      fields=("conversation",))


def closest(item: str, rows: Sequence[Row], count: int = SHOWN_CLOSEST) -> list[Row]:
    """The `count` conversations whose name or title is most like `item` (difflib's ratio, a title that holds
    it first), for a message that must not list a memory's every chat."""
    key = item.strip().casefold()

    def likeness(row: Row) -> tuple[bool, float]:
        texts = [text.strip().casefold() for text in (row[1], row[2]) if text]
        return (any(key and key in text for text in texts),
                max((SequenceMatcher(None, key, text).ratio() for text in texts), default=0.0))

    return sorted(rows, key=likeness, reverse=True)[:count]


def _label(row: Row) -> str:
    _, name, title = row
    return f"{name} ({title})" if title else name


def resolve_one(store: Store, conversation: str | None, starts: bool = True) -> tuple[int, str]:
    """One conversation, by name or title (`resolve_scope`; `starts`: or their start); None: the memory's only
    one, else an error listing them (what a turn's source id needs: ids are unique within a conversation only)."""
    if conversation is None:
        rows = store.conversations()
        if len(rows) > 1:
            labels = conversation_labels(store)
            listed = ", ".join(labels[:20]) + (f", … ({len(labels)} in all)" if len(labels) > 20 else "")
            raise CuememError(f"this memory holds {len(rows)} conversations: {listed}",
                              "choose one by its name or title", fields=("conversation",))
        if not rows:
            raise CuememError("this memory is empty", "add a dialogue first", fields=("add",))
        return rows[0][0], rows[0][1]
    scope = resolve_scope(store, conversation, starts)
    assert scope.ids is not None  # a name was given
    return scope.ids[0], scope.names[0]
