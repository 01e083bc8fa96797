"""The evidence block: how chosen turns are laid out for the answer model, what that costs, and the
budget filled by rank.

The chosen turns are ordered by when they were said across conversations (`chronological`: an undated
turn by when it was stored, its conversation's own order; position breaks ties within a conversation).
Tokens are estimated as ceil(characters / 4) of each line of the evidence block as the answer prompt
shows it (turn lines: lines.py; a header per run of turns of one conversation and day, naming the
conversation when the turns come from several, or a ditto mark for the chat of the header above it:
`header_line`, and the "…" lines between turns of a conversation that were not said
one after the other: `dialogue_lines`); each turn is taken whole or not at all, except that a turn
longer than `excerpt_tokens` is shown (and paid for) as an excerpt of its sentences nearest the
question (recall/excerpt.py).
"""

from __future__ import annotations

from bisect import bisect
from collections.abc import Callable, Iterable, Sequence

from ..records import Evidence, Said, Turn, chat_label
from ..timeparse import day_of
from .excerpt import GAP
from .lines import estimate_tokens, evidence_line, shown_text, turn_cost


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


def evidence_lines(evidence: Iterable[Evidence], quote: Callable[[str], str] = str,
                   notes: Callable[[Evidence], list[str]] | None = None) -> list[str]:
    """The evidence block as the answer model reads it: `dialogue_lines` of each turn's `speaker: text`, its
    relative dates resolved (lines.shown_text). `quote` makes stored text inert where the block is embedded
    (the answer prompt escapes `<`, `>` and `&`); an agent's MCP `recall` gets the text as it is, and with
    `notes` what each turn is followed by in parentheses (the facts it states that changed: changes.py)."""
    def line(ev: Evidence) -> str:
        said = evidence_line(quote(ev.speaker or "unknown"), quote(shown_text(ev.text, ev.time)))
        return said + "".join(f" ({note})" for note in (notes(ev) if notes else ()))

    return dialogue_lines((ev, line(ev)) for ev in evidence)


def break_lines(turns: Iterable[Turn]) -> list[str]:
    """The lines of the evidence block that are not turns (headers and gap lines), in order."""
    ordered = sorted(turns, key=chronological)
    labelled = len({t.conversation for t in ordered}) > 1
    return [line for before, turn in zip([None, *ordered], ordered, strict=False)
            for line in _between(before, turn, labelled)]


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
