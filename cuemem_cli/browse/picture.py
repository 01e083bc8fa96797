"""A graph neighbourhood as a drawing: turns as nodes on a time line, edges as arcs.

Nodes go left to right in the order the turns were said (evenly spaced: a gap of months would otherwise
squeeze a session into a dot). Semantic edges arc above the line, temporal edges below it, an arc's
height growing with the distance it spans and its stroke with the edge's weight, so that a glance tells
"what was said around it" (below) from "what it is about elsewhere" (above). The template turns this
into inline SVG, each node a link to that turn's own neighbourhood: no JavaScript, no layout library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..records import Turn

STEP = 44  # pixels between two nodes, down to MIN_STEP when there are many
MIN_STEP = 18
WIDE = 1100  # a drawing narrower than this keeps STEP
PAD = 28  # left and right margin
AXIS = 150  # y of the time line: semantic arcs above it
LABELS = AXIS + 58  # where the nodes' labels start, below the temporal arcs
HEIGHT = LABELS + 72  # room for the labels, drawn slanted
RADIUS = 9
TIP_CHARS = 280  # of a turn's text in its node's tooltip


@dataclass(frozen=True)
class Node:
    id: int  # the turn's id
    x: float
    role: str  # center | anchor | lexical | temporal | semantic
    label: str  # its source id
    tip: str  # tooltip: id, time, speaker, the start of its text


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
    nodes = tuple(Node(t.id, x[t.id], roles.get(t.id, "semantic"), t.source_id, _tip(t)) for t in ordered)
    width = max(320, round(2 * PAD + step * max(len(ordered) - 1, 0)))
    return Picture(width, HEIGHT, AXIS, LABELS, RADIUS, nodes, links, hidden)


def _arc(x1: float, x2: float, widest: float, above: bool) -> str:
    """A quadratic curve from one node to the other, bowing above or below the line; its height grows with
    the square root of its span (relative to the widest span drawn), so that long arcs stay apart."""
    left, right = sorted((x1, x2))
    room = AXIS - 24 if above else LABELS - AXIS - 16
    rise = 8 + room * math.sqrt((right - left) / widest)
    control = AXIS - 2 * rise if above else AXIS + 2 * rise  # a quadratic's peak is half its control's offset
    return f"M {left} {AXIS} Q {(left + right) / 2} {round(control, 1)} {right} {AXIS}"


def _tip(turn: Turn) -> str:
    head = " · ".join(part for part in (turn.source_id, turn.time, turn.speaker) if part)
    text = turn.text if len(turn.text) <= TIP_CHARS else turn.text[:TIP_CHARS] + "…"
    return f"{head}\n{text}"
