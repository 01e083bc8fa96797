"""Question → top cues → anchor turns → one hop over the turn graph → scored, chronological evidence.

A question ranges over the whole memory, every conversation at once, unless it is narrowed to some
(`resolve_scope`: by name, or by a title that names one conversation). The paper adds every one-hop
neighbour of every anchor. Measured on LoCoMo at a 2,000-token budget that
spends most of the budget on neighbours that do not help (bench/RESULTS.md), so here expansion must earn
its tokens: anchors, their one-hop neighbours and lexical (FTS5) hits are all *candidates*, and each gets
a score; the budget is filled by score, then the chosen turns are put back in chronological order.

    own(t)   = cue_weight · best cue similarity of t  (candidates without a top-m cue: the m-th similarity)
             + (1 − cue_weight) · similarity of t as a whole: its turn vector, its own tokens read with
                               the turn before it in the session (ingest.embed_turns)
             + speaker_weight  if t was said by a person the question names (or by the role its
                               pronouns name in a user/assistant chat: addressed_roles)
             + date_weight     if the question names a day, month or year and t was said then
                               (or up to a week later: people tell of things in the days after)
    score(t) = own(t)
             + temporal_weight · max own(u) over temporal neighbours u in the same session
             + semantic_weight · max own(u) · edge weight over semantic neighbours u
             + lexical_weight  · BM25(t) / best BM25
             + participant_weight  if t is in a chat where a person the question names took part
             + circle_weight · (best similarity of the memory's top-m cues in the chats of t's people,
                               over the best of all: `circle_strength`)

A question that names people who took part in some of the memory's chats (not all of them) also takes
the top-m cues of those chats beside the memory's top-m (`participant_cues`): in a memory of many people's
chats, "What did Caroline research?" should not spend its anchors on the lives of others. A question
narrowed to one chat, or naming nobody, or naming people in every chat (the "user" of a ChatGPT export),
is scored as without these two terms.

In a memory of several people's chats the last term lifts the people who hold the question's best cues
(all chats of the same people are one circle: one chat, or a user/assistant export, gets the same lift
everywhere, i.e. none), and one hop follows a semantic edge only between chats that have a person in
common (`within_circles`): a question naming nobody, or a name two people share, is not filled with
the turns of lives the memory holds beside the one it is about.

Why each term (each measured as an ablation): a turn's best cue finds the precise fact, its whole
vector finds the turn about the topic, and the turn before it tells what a short reply is about; a
person's facts are mostly in their own turns (names are kept out of the vectors, see statements.py,
so this is where they count); an answer usually sits next to the question that prompted it, in the
same session; rare words (names of places, pets, books) are
what BM25 finds and MiniLM blurs; "what did she do on 25 May, 2022" names the day the turn was said.
The weights are round values from the middle of a flat plateau (bench/quality_notes.md), not a fit.

The chosen turns are ordered by when they were said across conversations (`chronological`: an undated
turn by when it was stored, its conversation's own order; position breaks ties within a conversation).
Tokens are estimated as ceil(characters / 4) of each line of the evidence block as the answer prompt
shows it (turn lines, a header per run of turns of one conversation and day, naming the conversation
when the turns come from several, or a ditto mark for the chat of the header above it: `header_line`,
and the "…" lines between turns of a conversation that were not said
one after the other: `dialogue_lines`); each turn is taken whole or not at all, except that a turn
longer than `excerpt_tokens` is shown (and paid for) as an excerpt of its sentences nearest the
question (excerpt.py).
"""

from __future__ import annotations

import math
import re
import time
from bisect import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import lru_cache

import numpy as np

from .config import ASK_SEM_K, ASK_WINDOW, DEFAULT_BUDGET, DEFAULT_EXCERPT_TOKENS, DEFAULT_TOP_M
from .embed import embed_questions
from .errors import CuememError, UnknownConversation
from .excerpt import GAP, excerpt
from .records import Context, Cue, Evidence, Said, ScoredCue, Turn, chat_label
from .statements import without_names
from .store import TURN_ALONE, Store
from .timeparse import dated, day_of, named_periods, said_on
from .view import Hops, memory_source

DATE_SLACK_DAYS = 7


@dataclass(frozen=True)
class Settings:
    top_m: int = DEFAULT_TOP_M
    window: int = ASK_WINDOW
    sem_k: int = ASK_SEM_K
    budget: int = DEFAULT_BUDGET
    graph: bool = True
    cue_weight: float = 0.5
    context_weight: float = 0.3  # only for turn vectors of the turn alone (databases from before m005)
    speaker_weight: float = 0.2
    date_weight: float = 0.2
    temporal_weight: float = 0.2
    semantic_weight: float = 0.1
    lexical_weight: float = 0.1
    participant_weight: float = 0.2  # as speaker_weight; 0.1 and 0.2 measured the same (bench/memory_notes.md)
    participant_cues: bool = True  # the chats of the people a question names get their own top_m cues
    circle_weight: float = 0.2  # chats of the people who hold the question's best cues (0: off, as one chat)
    lexical_m: int = 50
    excerpt_tokens: int = DEFAULT_EXCERPT_TOKENS  # 0: every turn whole


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def evidence_line(speaker: str | None, text: str) -> str:
    """How a turn is shown to the answer model, and what the budget counts: `speaker: text`.

    Its day is on a header line above it (`header_line`), once per run of turns said the same day in the
    same conversation: questions ask on which day, and a date repeated on every line costs tokens that
    buy more evidence (bench/RESULTS.md, "Quality: LoCoMo evidence in a 2,000-token context", its table
    "How the method got here").
    Its turn id is not shown: the model is not asked to cite, and an id tells it nothing but where the
    turn sits, which a "…" line between turns not said one after the other tells for one token per gap
    (`dialogue_lines`). Ids cost tokens on every line ("[D14:23] ", "[h:3f9a0c2e71b4d586] "): without
    them more LoCoMo questions have all their evidence at 2,000 tokens (bench/quality_notes.md, "Evidence
    lines without turn ids"). People see the ids in `ask`'s evidence table.
    """
    return f"{speaker or 'unknown'}: {text}"


def shown_text(text: str, time: str | None) -> str:
    """A turn's text as the answer prompt shows it: each relative date ("yesterday", "last week", "next
    month") followed by the day it means, resolved against the day the turn was said, by the rules the
    date cues and the offline answer use (timeparse.dated): "yesterday [7 May 2023]". The local-model run
    missed temporal questions over an unresolved "yesterday" (issue 34); the budget pays for the notes."""
    return dated(text, said_on(time), brief=True)


def day_header(day: str, chat: str | None = None) -> str:
    """A run's header: its day, after its conversation's title (or name) when the evidence comes from
    several conversations: `— Lisbon trip · 3 May 2024 —`."""
    return f"— {chat} · {day} —" if chat else f"— {day} —"


GAP_LINE = GAP  # between two turns of one conversation and day that were not said one after the other


def chronological(turn: Turn) -> tuple[str, str, int]:
    """A turn's place in time across conversations: when it was said (an undated turn: when it was
    stored, its conversation's own order), then its conversation and position, which break ties."""
    return turn.time or turn.stored_at or "", turn.conversation, turn.position


def _run(turn: Said) -> tuple[str, str]:
    """The run a turn belongs to: one header per run of turns of one conversation and day."""
    return turn.conversation, day_of(turn.time)


DITTO = "〃"


def header_label(turn: Said, previous: Said | None) -> str:
    """What a named header calls the chat of `turn`, under the turn shown above it: the ditto mark when
    it is the same chat on another day ("— 〃 · 5 May 2024 —"), which a reader that passes over the mark
    still reads right; otherwise the chat's title (or name) whole, even when it begins like the one above
    or equals it (a second "New chat" is another chat). Shown as "〃 4" under "Ana and Ben, day 3", a
    small model took the turns under an abbreviated title for the chat above every time
    (bench/experiments/ditto_probe.py: 0 of 20 named the right chat, 8 and 11 of 20 with the titles whole;
    bench/memory_notes.md, "Ditto marks and the reader")."""
    if previous is not None and previous.conversation == turn.conversation:
        return DITTO
    return chat_label(turn)


def header_line(turn: Said, labelled: bool, previous: Said | None = None) -> str:
    """The header of the run `turn` starts, after `previous` (the turn shown above it, None at the top):
    its day, and once the evidence comes from several chats (`labelled`) its chat (`header_label`)."""
    if not labelled:
        return day_header(day_of(turn.time))
    return day_header(day_of(turn.time), header_label(turn, previous))


def _between(before: Said | None, after: Said, labelled: bool) -> list[str]:
    """The lines the evidence block shows between two consecutive turns (before None: at its start): a
    header where the run changes, "…" where turns of the run were left out between them."""
    if before is None or _run(before) != _run(after):
        return [header_line(after, labelled, before)]
    return [GAP_LINE] if after.position > before.position + 1 else []


def dialogue_lines(items: Iterable[tuple[Said, str]]) -> list[str]:
    """(turn, its evidence line) in chronological order → the evidence block's lines: a header wherever
    the conversation or the day changes (naming the conversation when the turns come from several), and
    a "…" line where turns between two shown ones of a conversation are left out."""
    items = list(items)
    labelled = len({turn.conversation for turn, _ in items}) > 1
    lines: list[str] = []
    previous: Said | None = None
    for turn, line in items:
        lines += _between(previous, turn, labelled)
        lines.append(line)
        previous = turn
    return lines


def break_lines(turns: Iterable[Turn]) -> list[str]:
    """The lines of the evidence block that are not turns (headers and gap lines), in order."""
    ordered = sorted(turns, key=chronological)
    labelled = len({t.conversation for t in ordered}) > 1
    return [line for before, turn in zip([None, *ordered], ordered, strict=False)
            for line in _between(before, turn, labelled)]


def turn_cost(turn: Turn) -> int:
    return _line_cost(turn.speaker or turn.role, turn.text, turn.time)


def _line_cost(speaker: str | None, text: str, time: str | None) -> int:
    return _shown_cost(speaker, text, time)[0]


@lru_cache(maxsize=65536)
def _shown_cost(speaker: str | None, text: str, time: str | None) -> tuple[int, bool]:
    """A line's cost, and whether the prompt shows its text with resolved dates added (shown_text). Every
    question re-ranks the same turns of a memory: both are worth keeping."""
    shown = shown_text(text, time)
    return estimate_tokens(evidence_line(speaker, shown)), shown != text


def context_tokens(turns: Sequence[Turn]) -> int:
    """Tokens of the evidence block as the prompt shows it: turn lines, headers and gap lines."""
    return sum(turn_cost(t) for t in turns) + sum(estimate_tokens(line) for line in break_lines(turns))


def _separator(before: Turn | None, after: Turn | None, labelled: bool) -> int:
    if after is None:
        return 0
    return sum(estimate_tokens(line) for line in _between(before, after, labelled))


def fill_budget(ranked: Iterable[Turn], budget: int,
                shorten: Callable[[Turn, int], Turn | None] | None = None) -> list[Turn]:
    """Turns in rank order while they fit, each whole or skipped (a skipped turn is not a stop).

    `shorten(turn, room)`, when given, is asked for each turn as it is reached, with the tokens still
    free: the turn as it would be shown (an excerpt of a long one: `Excerpts`), or None to skip it.

    A turn pays for its line and for what it changes in the lines around it where it falls in
    chronological order: the header of a run it starts, the "…" lines it adds between itself and the
    turns beside it, less one it closes. Both totals are kept, with conversations named in the headers
    and without (`dialogue_lines` names them once the turns come from two conversations), so the block
    the prompt shows costs exactly what was counted: `context_tokens(chosen) ≤ budget`.
    """
    chosen: list[Turn] = []
    ordered: list[Turn] = []  # the chosen turns in chronological order, and their keys
    keys: list[tuple[str, str, int]] = []
    used = {False: 0, True: 0}  # tokens without and with conversations named in headers
    conversations: set[str] = set()
    for turn in ranked:
        # The room left: once the chosen turns come from two conversations every header names its chat,
        # whatever comes next; before that, the cheaper count (the next turn may keep them unnamed).
        room = budget - (used[True] if len(conversations) > 1 else min(used.values()))
        if shorten is not None:
            shown = shorten(turn, room)
            if shown is None:
                continue
            turn = shown
        key = chronological(turn)
        at = bisect(keys, key)
        before, after = (ordered[at - 1] if at else None), (ordered[at] if at < len(ordered) else None)
        # A line dearer than the room left plus the one separator it could save never fits: the common
        # case once the budget is nearly spent, decided without costing the separators around it.
        if turn_cost(turn) - _separator(before, after, True) > room:
            continue
        cost = {labelled: turn_cost(turn) + _separator(before, turn, labelled) + _separator(turn, after, labelled)
                - _separator(before, after, labelled) for labelled in (False, True)}
        labelled = len(conversations | {turn.conversation}) > 1
        if used[labelled] + cost[labelled] > budget:
            continue
        chosen.append(turn)
        ordered.insert(at, turn)
        keys.insert(at, key)
        used = {named: used[named] + cost[named] for named in used}
        conversations.add(turn.conversation)
    return chosen


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
        raise CuememError("this memory is empty", "ingest a dialogue first: cuemem ingest FILE")
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
                              "name the one you mean by its name: --conversation NAME")
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
                              "choose one with --conversation NAME (or its title)")
        if not rows:
            raise CuememError("this memory is empty", "ingest a dialogue first: cuemem ingest FILE")
        return rows[0][0], rows[0][1]
    scope = resolve_scope(store, conversation)
    assert scope.ids is not None  # a name was given
    return scope.ids[0], scope.names[0]


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


def _best_cues(hits: list[tuple[Cue, float]]) -> dict[int, tuple[Cue, float]]:
    """Each anchor turn's best cue and its similarity (hits come best first)."""
    best: dict[int, tuple[Cue, float]] = {}
    for cue, sim in hits:
        best.setdefault(cue.turn_id, (cue, sim))
    return best


def question_periods(question: str) -> list[tuple[str, str]]:
    """Named periods widened by DATE_SLACK_DAYS at the end, as comparable ISO date strings."""
    return [(first, (date.fromisoformat(last) + timedelta(days=DATE_SLACK_DAYS)).isoformat())
            for first, last in named_periods(question)]


def said_in(when: str | None, periods: list[tuple[str, str]]) -> bool:
    return when is not None and any(first <= when[:10] <= last for first, last in periods)


def _render_cue(cue: Cue) -> str:
    return f"({cue.subject}, {cue.relation}, {cue.object})"


def _score(candidates: list[int], turns: dict[int, Turn], whole: np.ndarray, best: dict[int, tuple[Cue, float]],
           lexical: dict[int, float], hops: Hops, floor: float, mentioned: set[str], roles: set[str],
           periods: list[tuple[str, str]], involved: set[str], lift: np.ndarray,
           settings: Settings) -> tuple[dict[int, float], dict[int, str]]:
    """The module docstring's formula over all candidates at once (NumPy), and how each came in."""
    n = len(candidates)
    at = {tid: i for i, tid in enumerate(candidates)}
    cue = np.full(n, floor, dtype=np.float32)
    for tid, (_, sim) in best.items():
        cue[at[tid]] = sim
    whole = np.where(np.isnan(whole), cue, whole)  # a turn without a vector (older database) counts its cue
    people = np.array([turns[tid].speaker in mentioned or turns[tid].role in roles for tid in candidates],
                      dtype=np.float32)
    dated = np.array([said_in(turns[tid].time, periods) for tid in candidates], dtype=np.float32) \
        if periods else np.zeros(n, dtype=np.float32)
    own = (settings.cue_weight * cue + (1 - settings.cue_weight) * whole
           + settings.speaker_weight * people + settings.date_weight * dated)
    pulled = {"temporal": np.zeros(n, dtype=np.float32), "semantic": np.zeros(n, dtype=np.float32)}
    if len(hops.src):
        ids = np.array(candidates, dtype=np.int64)
        order = np.argsort(ids)
        src, dst = (order[np.searchsorted(ids[order], end)] for end in (hops.src, hops.dst))
        temporal, weight = hops.temporal, hops.weight
        sessions: dict[tuple[str, str | None], int] = {}  # a session is one conversation's
        session = np.array([sessions.setdefault((turns[tid].conversation, turns[tid].session), len(sessions))
                            for tid in candidates])
        same_session = session[src] == session[dst]
        factor = np.where(temporal, settings.temporal_weight, settings.semantic_weight * weight)
        positive = np.maximum(own, 0.0)
        # Edges count in both directions: one end of each is a seed, the other any candidate.
        for kind, keep in (("temporal", temporal & same_session), ("semantic", ~temporal)):
            np.maximum.at(pulled[kind], dst[keep], factor[keep] * positive[src[keep]])
            np.maximum.at(pulled[kind], src[keep], factor[keep] * positive[dst[keep]])
    lex = np.zeros(n, dtype=np.float32)
    top_lexical = max(lexical.values(), default=0.0)
    if top_lexical > 0:
        for tid, value in lexical.items():
            lex[at[tid]] = settings.lexical_weight * value / top_lexical
    total = own + pulled["temporal"] + pulled["semantic"] + lex + lift
    if involved:
        total += settings.participant_weight * np.array([turns[tid].conversation in involved for tid in candidates],
                                                        dtype=np.float32)
    score = dict(zip(candidates, total.tolist(), strict=True))
    via = {tid: "anchor" if tid in best else "lexical" if tid in lexical
           else "temporal" if pulled["temporal"][i] >= pulled["semantic"][i] else "semantic"
           for i, tid in enumerate(candidates)}
    return score, via


def within_circles(hops: Hops, candidates: list[int], seeds: list[int], turns: dict[int, Turn],
                   people: dict[str, frozenset[str]]) -> tuple[Hops, list[int]]:
    """The hops between chats that have a person in common, and the candidates they leave (the seeds, and
    the turns still reached). A semantic edge between chats of people who never talk to each other is a
    likeness of topic between different lives: in a memory of ten people's chats (LoCoMo as exports)
    following them filled the budget with other people's turns (bench/memory_notes.md, "The last as-exports
    gap"). In one person's history every chat has that person, so every edge is kept: the same trip told to
    a friend and to an assistant stays linked. (Keeping only edges between chats of the same set of people
    measured the same on LoCoMo and would cut those.)"""
    if not len(hops.src):
        return hops, candidates
    circle = {tid: people.get(turn.conversation) for tid, turn in turns.items()}

    def related(a: int, b: int) -> bool:
        first, second = circle[a], circle[b]
        return first is None or second is None or bool(first & second)

    keep = np.fromiter((related(s, d) for s, d in zip(hops.src.tolist(), hops.dst.tolist(), strict=True)),
                       bool, len(hops.src))
    if keep.all():
        return hops, candidates
    hops = Hops(*(column[keep] for column in hops))
    reached = {*seeds, *hops.dst.tolist()}
    return hops, [tid for tid in candidates if tid in reached]


def circle_strength(candidates: list[int], turns: dict[int, Turn], hits: list[tuple[Cue, float]],
                    people: dict[str, frozenset[str]]) -> np.ndarray:
    """Per candidate, how strongly the chats of its people hold the question: the best similarity of the
    memory's top cues in those chats over the best of all (0 for people with none of them). All chats of
    one set of people (a single chat, a user/assistant export) get the same lift: the ranking is as
    without it. In a memory of several people's chats it ranks the turns of the people the question is
    about above other people's, where the question names nobody or a name several people share. The hits'
    turns are among `turns`: each is a seed."""
    best: dict[frozenset[str] | None, float] = {}
    for cue, sim in hits:
        if cue.turn_id in turns:
            circle = people.get(turns[cue.turn_id].conversation)
            best[circle] = max(best.get(circle, 0.0), sim)
    top = max(best.values(), default=0.0)
    if top <= 0:
        return np.zeros(len(candidates), dtype=np.float32)
    return np.array([best.get(people.get(turns[tid].conversation), 0.0) / top for tid in candidates],
                    dtype=np.float32)


def excerpt_turn(turn: Turn, similarity: dict[str, float], limit: int) -> Turn:
    """`turn` with its text cut to the sentences nearest the question whose evidence line fits `limit`
    tokens (excerpt.py); `similarity` maps each of its sentences to its cosine with the question.

    A trial excerpt's cost is first taken without resolved dates, which only add to it: over `limit`,
    it does not fit. A turn with no relative date has none in any excerpt of it (its sentences, joined
    by spaces or "…"), so its trials cost just that. Resolving dates in every trial of every long
    candidate was a large part of a question's CPU on a memory of real chats (bench/bench_memory_scale.py;
    bench/design-notes.md, "Measured choices elsewhere in the code")."""
    speaker = turn.speaker or turn.role
    dates = _shown_cost(speaker, turn.text, turn.time)[1]  # its cost was taken already: turn_cost

    def fits(text: str) -> bool:
        if estimate_tokens(evidence_line(speaker, text)) > limit:
            return False
        return not dates or _line_cost(speaker, text, turn.time) <= limit

    most = 4 * limit - len(evidence_line(speaker, ""))  # the longest text whose undated line fits (estimate_tokens)
    return replace(turn, text=excerpt(turn.text, similarity, fits, most))


def _is_long(turn: Turn, limit: int) -> bool:
    """turn_cost(turn) > limit, without resolving the dates of a turn whose text alone is over it: resolved
    dates only add to a line, and finding them in every long candidate is what a cold question spent most
    on after the search."""
    return _raw_cost(turn.speaker or turn.role, turn.text) > limit or turn_cost(turn) > limit


@lru_cache(maxsize=65536)
def _raw_cost(speaker: str | None, text: str) -> int:
    return estimate_tokens(evidence_line(speaker, text))


class Excerpts:
    """Long candidates cut to excerpts as `fill_budget` reaches them, in rank order (its `shorten`).

    A memory of real chats has hundreds of long candidates a question (assistant answers) and the budget
    takes a handful; cutting every one before filling was most of a warm question's time at scale
    (bench/memory_notes.md). So a long turn is cut only when reached, its sentences' similarities fetched
    for it and the next long turns in rank order together (`CHUNK`). Once the room left is under `limit`,
    a long turn is cut to what the room holds (less `HEADER` tokens for the header it may start), so the
    budget's last tokens go to the best sentences of the next long turns rather than to much lower-ranked
    short ones; that is tried for `TAIL` long turns (the best sentence of most is already more than the
    room), then long turns are passed over, as all are under `FLOOR` tokens of room. A memory without long
    turns (LoCoMo has none over the limit) fills exactly as it did. `cut` holds the turns shown shorter.
    """

    CHUNK = 8
    TAIL = 4
    HEADER = 16
    FLOOR = 24

    def __init__(self, source, vector: np.ndarray, limit: int, ranked: Sequence[Turn]):
        self.source, self.vector, self.limit = source, vector, limit
        self.long = [t.id for t in ranked if limit and _is_long(t, limit)]
        self.rank = {tid: i for i, tid in enumerate(self.long)}
        self.similarity: dict[int, dict[str, float]] = {}
        self.cut: dict[int, Turn] = {}
        self.tail = 0  # long turns tried in less room than `limit`

    def __call__(self, turn: Turn, room: int) -> Turn | None:
        if not self.limit or not _is_long(turn, self.limit):
            return turn
        limit = min(self.limit, room - self.HEADER)
        if limit < self.limit:
            self.tail += 1
        if limit < self.FLOOR or self.tail > self.TAIL:
            return None
        if turn.id not in self.similarity:
            after = self.long[self.rank[turn.id] + 1:self.rank[turn.id] + self.CHUNK]
            wanted = [turn.id, *(tid for tid in after if tid not in self.similarity)]
            self.similarity.update(self.source.sentence_similarities(wanted, self.vector))
        shown = excerpt_turn(turn, self.similarity[turn.id], limit)
        if shown.text == turn.text:
            return turn
        self.cut[turn.id] = shown
        return shown


def reconstruct(store: Store, embedder, question: str, conversations: str | Sequence[str] | None = None,
                settings: Settings = Settings(), as_of: str | None = None, held_at: str | None = None) -> Context:
    """The evidence for `question` from the whole memory, or from the conversations named (`resolve_scope`).

    `as_of` is the question time the answer prompt states; `held_at` (ISO) limits memory to what it
    held then: turns said after it, and undated turns stored after it, are never candidates, anchors
    or graph neighbours (`ask --as-of`). A narrowed question never reaches past its conversations, not
    even over a semantic edge into another one."""
    if not question.strip():
        raise CuememError("the question is empty", 'ask something, e.g. cuemem ask "Where does Maya live now?"')
    scope = resolve_scope(store, conversations)
    if not store.has_vectors():
        raise CuememError("this memory holds no cue vectors yet", "ingest a dialogue first: cuemem ingest FILE")
    store.check_embedder(embedder.model_id, embedder.dim)
    built_w = int(store.get_meta("graph_window") or 0)
    built_k = int(store.get_meta("graph_sem_k") or 0)
    if settings.window > built_w or settings.sem_k > built_k:
        raise CuememError(
            f"this graph was built with window={built_w}, sem_k={built_k}; ask cannot use more",
            f"pass --window ≤ {built_w} and --sem-k ≤ {built_k}",
        )
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    source = memory_source(store, embedder.dim)
    speakers = source.speakers(scope.ids)
    mentioned = {name for name in speakers if re.search(rf"\b{re.escape(name)}\b", question, re.IGNORECASE)}
    topic = without_names(question, speakers) or question
    vector = embed_questions(embedder, [topic])[0]
    t1 = time.perf_counter()
    timings["embed_query"] = (t1 - t0) * 1000

    involved = source.conversations_with_speakers(mentioned, scope.ids) \
        if mentioned and (settings.participant_weight or settings.participant_cues) else {}
    if len(involved) >= scope.held:
        involved = {}  # the people named took part in every chat asked: nothing to tell the chats apart
    hidden, hidden_cues = store.turns_not_held_at(held_at, scope.ids) if held_at else (set(), 0)

    def search(k: int, within: Sequence[int] | None) -> list[tuple[Cue, float]]:
        found = source.knn_cues(vector, k + hidden_cues, within)  # each source caps k at max_k
        return [hit for hit in found if hit[0].turn_id not in hidden][:k] if hidden else found

    hits = search(settings.top_m, scope.ids)
    memory_hits = hits  # what tells the circles apart: the memory's own top cues, before any chat's own
    floor = hits[-1][1] if hits else 0.0
    if settings.participant_cues and involved:
        # The chats of the people the question names get their own top cues beside the memory's.
        seen = {cue.id for cue, _ in hits}
        extra = [hit for hit in search(settings.top_m, list(involved)) if hit[0].id not in seen]
        hits = sorted([*hits, *extra], key=lambda hit: (-hit[1], hit[0].id))
    best = _best_cues(hits)
    lexical: dict[int, float] = {}
    query = fts_query(topic) if settings.lexical_weight else ""
    if query:
        lexical = dict(store.search_turns_fts(query, settings.lexical_m + len(hidden), scope.ids))
        lexical = dict([(t, v) for t, v in lexical.items() if t not in hidden][:settings.lexical_m])
    t2 = time.perf_counter()
    timings["cue_search"] = (t2 - t1) * 1000

    seeds = list(dict.fromkeys([*best, *lexical]))
    hops = source.hops(seeds, settings.window, settings.sem_k) if settings.graph and seeds else Hops.of([])
    if hidden and len(hops.dst):
        held = ~np.isin(hops.dst, np.fromiter(hidden, np.int64, len(hidden)))
        hops = Hops(*(column[held] for column in hops))
    candidates = list(dict.fromkeys([*seeds, *hops.dst.tolist()]))
    turns = source.turns_by_id(candidates)
    if scope.ids is not None:  # semantic edges cross conversations; a narrowed question stays inside its own
        outside = {tid for tid, turn in turns.items() if turn.conversation not in scope.names}
        if outside:
            inside = ~np.isin(hops.dst, np.fromiter(outside, np.int64, len(outside)))
            hops = Hops(*(column[inside] for column in hops))
            candidates = [tid for tid in candidates if tid not in outside]
    lift = np.zeros(len(candidates), dtype=np.float32)
    if settings.circle_weight and scope.held > 1:
        people = source.people()
        hops, candidates = within_circles(hops, candidates, seeds, turns, people)
        lift = np.float32(settings.circle_weight) * circle_strength(candidates, turns, memory_hits, people)
    # Turn vectors of the turn alone get the turn before them mixed in here instead (view.in_context).
    mix = settings.context_weight if store.turn_vector_text() == TURN_ALONE else 0.0
    score, via = _score(candidates, turns, source.turn_similarities(candidates, vector, mix), best, lexical, hops,
                        floor, mentioned, addressed_roles(question),
                        question_periods(question), set(involved.values()), lift, settings)
    t3 = time.perf_counter()
    timings["expand"] = (t3 - t2) * 1000

    ranked = [turns[tid] for tid in sorted(candidates, key=lambda tid: (-score[tid], chronological(turns[tid])))]
    excerpts = Excerpts(source, vector, settings.excerpt_tokens, ranked)
    chosen = sorted(fill_budget(ranked, settings.budget, excerpts), key=chronological)
    shown = excerpts.cut
    used = context_tokens(chosen)
    evidence = tuple(
        Evidence(
            source_id=t.source_id, time=t.time, speaker=t.speaker, text=t.text, via=via[t.id],
            session=t.session, position=t.position, score=round(score[t.id], 4),
            cue=_render_cue(best[t.id][0]) if t.id in best else None, tokens=turn_cost(t), excerpt=t.id in shown,
            conversation=t.conversation, title=t.title,
        )
        for t in chosen
    )
    source_of = {tid: turn.source_id for tid, turn in turns.items()}
    cues = tuple(
        ScoredCue(cue.subject, cue.relation, cue.object, round(sim, 4), source_of.get(cue.turn_id, "?"), cue.kind)
        for cue, sim in hits
    )
    timings["trim"] = (time.perf_counter() - t3) * 1000
    timings["total"] = (time.perf_counter() - t0) * 1000
    timings = {k: round(v, 2) for k, v in timings.items()}
    return Context(question=question, conversations=scope.names, as_of=as_of, cues=cues, evidence=evidence,
                   tokens=used, timings_ms=timings)
