"""What a question says beyond its vector: its content words (for BM25), the roles its pronouns name,
and the periods it names."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from ..timeparse import named_periods

DATE_SLACK_DAYS = 7


_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


_STOPWORDS = frozenset(
    "a an the and or but if of at by for with about to from in on into over after before is are was were be been "
    "being do does did done have has had having i me my we our you your he him his she her it its they them their "
    "what which who whom whose when where why how this that these those there here as than then so not no can could "
    "would should will shall may might must just also very any some all each".split()
)



def fts_query(question: str) -> str:
    """A safe FTS5 query from free text: content words, each quoted, OR-ed (BM25 ranks the matches).

    Quoting keeps words literal (no FTS5 syntax from the user); the index's Porter tokenizer still
    stems each one, so "dogs" matches "dog" (migration m004)."""
    words = [w.lower().strip("'-") for w in _WORD.findall(question)]
    terms = dict.fromkeys(w for w in words if w and w not in _STOPWORDS and len(w) > 1)
    return " OR ".join(f'"{w}"' for w in terms)


_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself)\b", re.IGNORECASE)


_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)


_REQUEST = re.compile(r"\b(?:can|could|would|will)\s+you\b", re.IGNORECASE)



def addressed_roles(question: str) -> set[str]:
    """The roles a question names by pronoun: in a user/assistant chat the user asks, so "I", "me" and
    "my" name the user's turns, and "you" (not the "can you" of a request) the assistant's.

    This is the speaker lift for chats whose people are roles, not names: "Which city did I move to?"
    lifts the user's turns as "Where did Maya move?" lifts Maya's. A question with both ("what did
    you recommend for my trip?") lifts both, i.e. neither. Conversations without roles (LoCoMo) are
    untouched.
    """
    roles = {"user"} if _FIRST_PERSON.search(question) else set()
    if _SECOND_PERSON.search(_REQUEST.sub(" ", question)):
        roles.add("assistant")
    return roles


def question_periods(question: str) -> list[tuple[str, str]]:
    """Named periods widened by DATE_SLACK_DAYS at the end, as comparable ISO date strings."""
    return [(first, (date.fromisoformat(last) + timedelta(days=DATE_SLACK_DAYS)).isoformat())
            for first, last in named_periods(question)]


def said_in(when: str | None, periods: Sequence[tuple[str, str]]) -> bool:
    return when is not None and any(first <= when[:10] <= last for first, last in periods)


@dataclass(frozen=True)
class Asked:
    """What a question asks about beyond its topic: the people it names (`mentioned`, speaker labels; and
    `known_as`, people a chat calls by a name the question uses: recall/people.py), the roles its pronouns
    name (`addressed_roles`), the periods it names (`question_periods`), and the chats those people took part
    in (`involved`, by name; empty when they took part in every chat asked)."""

    mentioned: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    periods: tuple[tuple[str, str], ...] = ()
    involved: frozenset[str] = frozenset()
    known_as: frozenset[tuple[str, str]] = frozenset()  # (conversation, speaker) named by a name learned there
