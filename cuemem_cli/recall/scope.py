"""Which conversations a question ranges over: the whole memory, or those named by name or title."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
    return [f"{name} ({title})" if title else name for _, name, title in store.conversations()]


def resolve_scope(store: Store, conversations: str | Sequence[str] | None) -> Scope:
    """The conversations a question is narrowed to: each named by its name, or by its title when that
    title names exactly one conversation (case and surrounding spaces aside); none named, the whole memory.
    An unknown name lists the conversations there are; an ambiguous title lists the ones it names."""
    rows = store.conversations()
    if not rows:
        raise CuememError("this memory is empty", "add a dialogue first", fields=("add",))
    wanted = [conversations] if isinstance(conversations, str) else list(conversations or [])
    if not wanted:
        return Scope(held=len(rows))
    by_name = {name: cid for cid, name, _ in rows}
    by_title: dict[str, list[tuple[int, str, str]]] = {}
    for cid, name, title in rows:
        if title:
            by_title.setdefault(title.strip().casefold(), []).append((cid, name, title))
    chosen: dict[int, str] = {}
    for item in wanted:
        if item in by_name:
            chosen[by_name[item]] = item
            continue
        titled = by_title.get(item.strip().casefold(), [])
        if not titled:
            raise UnknownConversation(item, conversation_labels(store))
        if len(titled) > 1:
            listed = ", ".join(f"{name} ({title})" for _, name, title in titled[:20])
            raise CuememError(f"the title {item!r} names {len(titled)} conversations: {listed}"
                              + (", …" if len(titled) > 20 else ""),
                              "name the one you mean by its name", fields=("conversation",))
        chosen[titled[0][0]] = titled[0][1]
    return Scope(tuple(chosen), tuple(chosen.values()), len(chosen))


def resolve_one(store: Store, conversation: str | None) -> tuple[int, str]:
    """One conversation, by name or title (`resolve_scope`); None: the memory's only one, else an error
    listing them (what a turn's source id needs: ids are unique within a conversation only)."""
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
    scope = resolve_scope(store, conversation)
    assert scope.ids is not None  # a name was given
    return scope.ids[0], scope.names[0]
