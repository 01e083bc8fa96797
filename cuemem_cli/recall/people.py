"""Who a question names: people by the label their turns carry ("Emi"), by a name the chat calls them
("Kate", learned by cues/names.py from the chat's turns, kept by ingest/names.py), or by a near spelling of a
label the chats never write ("Elisa" for "Elise").

Measured on REALTALK's dev chats (bench/quality_notes.md, "Real conversations"): questions say "Kate" where every
turn says "Emi"; unresolved, "What are Kate's hobbies?" filled its budget with the turns that greet Kate and
lifted nobody.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..cues.names import NAME, learn, not_a_name, spelled_like
from ..records import Turn
from ..store.base import Store, name_index, names_indexed

NAME_TURNS = 400  # turns holding a question's unknown names, read to learn who they are


@dataclass(frozen=True)
class Named:
    """The people a question names: `labels`, speakers named by their label (or a spelling of it), anywhere
    in the memory; `known_as`, (conversation, speaker) named by a name that conversation calls them; `words`,
    the question's words that name them (kept out of its topic, as labels are)."""

    labels: frozenset[str] = frozenset()
    known_as: frozenset[tuple[str, str]] = frozenset()
    words: tuple[str, ...] = ()


def named_people(source, question: str, speakers: Sequence[str], scope_ids: Sequence[int] | None,
                 learned: bool = True) -> Named:
    """The people `question` names among the conversations in scope (`source`: a StoreSource or MemoryView);
    with `learned` off, by their labels only."""
    labels = {name for name in speakers if re.search(rf"\b{re.escape(name)}\b", question, re.IGNORECASE)}
    known = {name.casefold() for name in speakers}
    unknown = tuple(word for word in dict.fromkeys(re.findall(rf"\b{NAME}\b", question))
                    if word.casefold() not in known and not not_a_name(word))
    if not unknown or not learned:
        return Named(frozenset(labels), frozenset(), tuple(labels))
    called = source.names(unknown, scope_ids)
    spelled = {word: label for word in unknown if (label := spelled_like(word, speakers)) is not None}
    if spelled:  # a near spelling of a label only where no turn says the word itself
        said = source.said(unknown, scope_ids)
        spelled = {word: label for word, label in spelled.items() if word not in said}
    known_as = {(conversation, speaker) for (conversation, _), speaker in called.items()}
    words = [*labels, *dict.fromkeys(name for _, name in called), *spelled]
    return Named(frozenset(labels | set(spelled.values())), frozenset(known_as), tuple(words))


def names_known(store: Store, names: Sequence[str], scope_ids: Sequence[int] | None) -> dict[tuple[str, str], str]:
    """What each of `names` means in the conversations in scope: (conversation, name) → speaker. Read from the
    name index ingest keeps (ingest/names.py); in a memory written before it and not reindexed since, learned
    from the turns that hold the names (at most NAME_TURNS, found by the full-text index), whose
    conversations alone are read for their people: a memory of thousands of chats is not scanned for a name
    three of them use."""
    index = name_index(store)
    if index is not None and names_indexed(store):
        return {(conversation, name): speaker for conversation, name, speaker in index.learned_names(names, scope_ids)}
    turns = _holding(store, names, scope_ids)
    chats = {cid: name for name in {turn.conversation for turn in turns}
             if (cid := store.conversation_id(name)) is not None}
    people = {chats[cid]: speakers for cid, speakers in store.speaker_sets(list(chats)).items()} if chats else {}
    return learn(turns, people, wanted=names)


def names_said(store: Store, names: Sequence[str], scope_ids: Sequence[int] | None) -> set[str]:
    """Which of `names` some turn in scope says, as a word in its case (among the NAME_TURNS turns the
    full-text index finds for them)."""
    turns = _holding(store, names, scope_ids)
    return {name for name in names if any(re.search(rf"\b{name}\b", turn.text) for turn in turns)}


def _holding(store: Store, names: Sequence[str], scope_ids: Sequence[int] | None) -> list[Turn]:
    """The turns in scope the full-text index finds for `names` (at most NAME_TURNS)."""
    query = " OR ".join(f'"{name}"' for name in names)
    ids = [tid for tid, _ in store.search_turns_fts(query, NAME_TURNS, scope_ids)]
    return list(store.turns_by_id(ids).values())
