"""Who a question names: people by the label their turns carry ("Emi"), by a name the chat calls them
("Kate", learned by cues/names.py from the turns that hold it), or by a near spelling of a label the chats
never write ("Elisa" for "Elise").

Measured on REALTALK's dev chats (bench/quality_notes.md, "Real conversations"): questions say "Kate" where every
turn says "Emi"; unresolved, "What are Kate's hobbies?" filled its budget with the turns that greet Kate and
lifted nobody.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..cues.names import NAME, learn, not_a_name, spelled_like
from ..store.base import Store

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
    unknown = [word for word in dict.fromkeys(re.findall(rf"\b{NAME}\b", question))
               if word.casefold() not in known and not not_a_name(word)]
    if not unknown or not learned:
        return Named(frozenset(labels), frozenset(), tuple(labels))
    called, found = source.names(tuple(unknown), scope_ids)
    known_as = {(conversation, speaker) for (conversation, _), speaker in called.items()}
    spelled = {word: label for word in unknown if word not in found
               and (label := spelled_like(word, speakers)) is not None}
    words = [*labels, *dict.fromkeys(name for _, name in called), *spelled]
    return Named(frozenset(labels | set(spelled.values())), frozenset(known_as), tuple(words))


def learn_names(store: Store, names: Sequence[str], scope_ids: Sequence[int] | None
                ) -> tuple[dict[tuple[str, str], str], set[str]]:
    """What each of `names` means in the conversations in scope, learned from the turns that hold them
    (at most NAME_TURNS, found by the full-text index), and which of the names some turn holds at all.
    Only those turns' conversations are read for their people: a memory of thousands of chats is not
    scanned for a name three of them use."""
    query = " OR ".join(f'"{name}"' for name in names)
    ids = [tid for tid, _ in store.search_turns_fts(query, NAME_TURNS, scope_ids)]
    turns = list(store.turns_by_id(ids).values())
    found = {name for name in names if any(re.search(rf"\b{name}\b", turn.text) for turn in turns)}
    chats = {cid: name for name in {turn.conversation for turn in turns}
             if (cid := store.conversation_id(name)) is not None}
    people = {chats[cid]: speakers for cid, speakers in store.speaker_sets(list(chats)).items()} if chats else {}
    return learn(turns, people, wanted=names), found
