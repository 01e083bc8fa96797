"""A graph neighbourhood as a drawing: turns as nodes on a time line, edges as arcs.

Nodes go left to right in the order the turns were said (evenly spaced: a gap of months would otherwise
squeeze a session into a dot). Semantic edges arc above the line, temporal edges below it, an arc's
height growing with the distance it spans and its stroke with the edge's weight, so that a glance tells
"what was said around it" (below) from "what it is about elsewhere" (above). Under the line, a mark where
each run of turns of one chat and day starts, labelled with the day (and the chat, when the turns come
from several), level and on one of two rows, left out where it would overlap another: the turns' own
ids (a ChatGPT export's are 36-character UUIDs) were unreadable, slanted and over each other. The
template turns this into inline SVG, each node a link to that turn's own neighbourhood (its tooltip
says which turn and what it said): no JavaScript, no layout library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..records import Turn, chat_label
from ..timeparse import day_of

STEP = 44  # pixels between two nodes, down to MIN_STEP when there are many
MIN_STEP = 18
WIDE = 1100  # a drawing narrower than this keeps STEP
PAD = 28  # left and right margin
AXIS = 150  # y of the time line: semantic arcs above it
BELOW = 42  # how far below the line the deepest temporal arc reaches, at most (less its 8 px start)
LABELS = AXIS + 62  # the first row of labels' baseline, below the temporal arcs
ROW = 16  # from one row of labels to the next
ROWS = 2
HEIGHT = LABELS + ROWS * ROW - 4
RADIUS = 9
TIP_CHARS = 280  # of a turn's text in its node's tooltip
CHAR = 7.3  # pixels a label's character takes (12 px monospace: 0.6 em, and a little room)
FIT_WIDTH = 1300  # a drawing up to this wide is scaled to fit its card (browse.css); a wider one scrolls
GAP = 10  # pixels between two labels on a row
CHAT_CHARS = 24  # of a chat's title in a label


@dataclass(frozen=True)
class Node:
    id: int  # the turn's id
    x: float
    role: str  # center | anchor | lexical | temporal | semantic
    tip: str  # tooltip: id, time, speaker, the start of its text


@dataclass(frozen=True)
class Mark:
    """Where a run of turns of one chat and day starts: its label ("" where there was no room for it, its
    tooltip `run` saying it all the same) and the row it is on."""

    x: float
    label: str
    row: int
    run: str


@dataclass(frozen=True)
class Link:
    src: int
    dst: int
    kind: str  # temporal | semantic
    weight: float
    path: str  # SVG path data
    width: float
    aside: bool  # between two neighbours of the centre turn, not from it: drawn fainter


@dataclass(frozen=True)
class Picture:
    width: int
    height: int
    axis: int
    labels: int
    radius: int
    nodes: tuple[Node, ...]
    links: tuple[Link, ...]
    hidden: int  # neighbours left out of the drawing (they are listed beside it)
    marks: tuple[Mark, ...] = ()
    row: int = ROW
    fit_width: int = FIT_WIDTH


def draw(turns: Sequence[Turn], edges: Iterable[Sequence], roles: dict[int, str], hidden: int = 0) -> Picture:
    """Lay out `turns` (role of each by turn id; a turn whose role is "center" is the one the picture is
    about) and those of `edges` (src, dst, kind, weight, …) whose both ends are drawn; an edge stored or
    returned in both directions is drawn once, at its best weight."""
    ordered = sorted(turns, key=lambda t: (t.time or "", t.conversation, t.position))
    step = max(MIN_STEP, min(STEP, WIDE / max(len(ordered) - 1, 1)))
    x = {t.id: round(PAD + i * step, 1) for i, t in enumerate(ordered)}
    best: dict[tuple[int, int, str], float] = {}
    for src, dst, kind, weight, *_ in edges:
        if src in x and dst in x and src != dst:
            key = (min(src, dst), max(src, dst), kind)
            best[key] = max(best.get(key, 0.0), float(weight))
    center = {turn_id for turn_id, role in roles.items() if role == "center"}
    widest = max(max(x.values(), default=0) - min(x.values(), default=0), 1)
    links = tuple(Link(a, b, kind, round(w, 4), _arc(x[a], x[b], widest, above=kind == "semantic"),
                       round(1 + 2.5 * w, 2),
                       aside=bool(center) and not {a, b} & center)
                  for (a, b, kind), w in sorted(best.items(), key=lambda item: item[0][2] == "semantic"))
    nodes = tuple(Node(t.id, x[t.id], roles.get(t.id, "semantic"), _tip(t)) for t in ordered)
    marks = _marks(ordered, x)
    right = max((m.x - RADIUS + len(m.label) * CHAR for m in marks), default=0.0)
    width = max(320, round(2 * PAD + step * max(len(ordered) - 1, 0)), round(right + PAD / 2))
    return Picture(width, HEIGHT, AXIS, LABELS, RADIUS, nodes, links, hidden, marks)


def _marks(ordered: Sequence[Turn], x: dict[int, float]) -> tuple[Mark, ...]:
    """A mark at the first turn of each run of one chat and day, labelled as the evidence block heads it
    ("14 May 2023"; "Lisbon trip · 3 May 2024" once the turns come from several chats), on the first row
    with room for it (a label starts at its run's first node and runs right), else unlabelled."""
    labelled = len({t.conversation for t in ordered}) > 1
    free = [float("-inf")] * ROWS  # where each row's last label ends
    marks: list[Mark] = []
    previous: tuple[str, str] | None = None
    for turn in ordered:
        run = (turn.conversation, day_of(turn.time))
        if run == previous:
            continue
        previous = run
        said = f"{chat_label(turn)} · {run[1]}" if labelled else run[1]
        label = f"{_clipped(chat_label(turn))} · {run[1]}" if labelled else run[1]
        left = x[turn.id] - RADIUS
        row = next((r for r in range(ROWS) if left >= free[r] + GAP), None)
        if row is None:
            marks.append(Mark(x[turn.id], "", 0, said))
            continue
        free[row] = left + len(label) * CHAR
        marks.append(Mark(x[turn.id], label, row, said))
    return tuple(marks)


def _clipped(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= CHAT_CHARS else title[:CHAT_CHARS - 1].rstrip() + "…"


def _arc(x1: float, x2: float, widest: float, above: bool) -> str:
    """A quadratic curve from one node to the other, bowing above or below the line; its height grows with
    the square root of its span (relative to the widest span drawn), so that long arcs stay apart."""
    left, right = sorted((x1, x2))
    room = AXIS - 24 if above else BELOW
    rise = 8 + room * math.sqrt((right - left) / widest)
    control = AXIS - 2 * rise if above else AXIS + 2 * rise  # a quadratic's peak is half its control's offset
    return f"M {left} {AXIS} Q {(left + right) / 2} {round(control, 1)} {right} {AXIS}"


def _tip(turn: Turn) -> str:
    head = " · ".join(part for part in (turn.source_id, turn.time, turn.speaker) if part)
    text = turn.text if len(turn.text) <= TIP_CHARS else turn.text[:TIP_CHARS] + "…"
    return f"{head}\n{text}"
