"""What each page of `cuemem browse` shows, read from one `Memory`: plain data for the templates and for
the JSON endpoints, no HTTP and no HTML (app.py renders it). Every page costs a fixed number of queries,
whatever the memory holds: a page of conversations, a page of turns, one turn's edges.

The question page shows `Context.to_json` of the same `Memory.context` / `Memory.ask` call the CLI makes, so
the evidence is exactly what `cuemem ask --context-only --json` prints for the same question. The browser
never writes: answers are asked with `record_retrieval=False` (`ask` records which turns it used, for
`forget --lru`; looking at memory should not count as using it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import asdict
from typing import Any

from ..errors import CuememError, LLMError, UnknownConversation
from ..memory import Memory
from ..recall.settings import Settings
from ..store.base import browse_queries, change_records, conversation_names, kind_index, maintenance
from .picture import Picture, draw

PAGE_CONVERSATIONS = 50  # conversations per page of the list
PAGE_TURNS = 100  # turns per page of a conversation, by position
SEARCH_HITS = 50  # turns a search shows, best first
SEARCH_WORDS = 12  # words of a search kept (each one is a term every hit must hold)
SELECTOR_CONVERSATIONS = 300  # the most recent conversations offered by the question box's selector
GRAPH_NODES = 40  # turns drawn in a turn's neighbourhood (the strongest edges first); all are listed
SEEDS = ("anchor", "lexical")  # evidence found directly, not over an edge: where a question's hop starts
EVERY_RANK = 1_000_000  # a rank bound above any built edge's: every edge
SNIPPET_CHARS = 320  # what a search hit shows of a long turn, around its first match

class NotFound(CuememError):
    """A page of something the memory does not hold (an unknown conversation or turn): HTTP 404."""


def conversations(memory: Memory, search: str | None, page: int) -> dict[str, Any]:
    """One page of the conversation list, most recently said first; `search` keeps those whose name or
    title holds it, and adds the turns (of any conversation) that hold its words."""
    store = memory.store
    search = (search or "").strip() or None
    with store.snapshot():
        total, rows = browse_queries(store).browse_conversations(search, None, page * PAGE_CONVERSATIONS,
                                                                 PAGE_CONVERSATIONS)
        hits = _search_turns(memory, search) if search else []
    return {"search": search, "words": search_words(search) if search else [], "page": page,
            "pages": max(1, math.ceil(total / PAGE_CONVERSATIONS)), "total": total,
            "conversations": [_titled(row) for row in rows], "turns": hits}


def _search_turns(memory: Memory, text: str) -> list[dict[str, Any]]:
    store = memory.store
    words = search_words(text)
    hits = browse_queries(store).browse_search_turns(words, SEARCH_HITS)
    turns = store.turns_by_id([turn_id for turn_id, _ in hits])
    return [{**asdict(turns[turn_id]), "score": round(score, 4), "snippet": snippet(turns[turn_id].text, words)}
            for turn_id, score in hits if turn_id in turns]


def search_words(text: str) -> list[str]:
    """The words of a search, as the lexical index splits text (letters and digits); no search syntax."""
    return re.findall(r"\w+", text)[:SEARCH_WORDS]


def snippet(text: str, words: list[str]) -> str:
    """A long turn cut around the first place one of `words` starts a word ("…" marks the cuts)."""
    if len(text) <= SNIPPET_CHARS:
        return text
    found = [m.start() for w in words if (m := re.search(rf"\b{re.escape(w)}", text, re.I))]
    start = max(0, min(found, default=0) - SNIPPET_CHARS // 3)
    end = min(len(text), start + SNIPPET_CHARS)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def conversation(memory: Memory, name: str, page: int | None = None, at: int | None = None) -> dict[str, Any]:
    """One page of a conversation read in order, each turn with its cues: page `page`, or the page that
    holds turn id `at`. Pages are ranges of positions, so a page costs the same anywhere in a long chat."""
    store = memory.store
    with store.snapshot():
        cid = store.conversation_id(name)
        if cid is None:
            raise _unknown(UnknownConversation(name, conversation_names(store)))
        if at is not None:
            found = store.turns_by_id([at]).get(at)
            if found is None or found.conversation != name:
                raise NotFound(f"conversation {name!r} has no turn {at}")
            page = found.position // PAGE_TURNS
        page = page or 0
        pages = max(1, math.ceil(store.next_position(cid) / PAGE_TURNS))
        low = page * PAGE_TURNS
        ids = [turn_id for turn_id, _ in store.turns_at_positions(cid, low, low + PAGE_TURNS - 1)]
        turns = sorted(store.turns_by_id(ids).values(), key=lambda t: t.position)
        cues = maintenance(store).cues_of_turns(ids)
        _, [summary] = browse_queries(store).browse_conversations(None, name, 0, 1)
    return {"conversation": _titled(summary), "page": page, "pages": pages, "at": at,
            "turns": [{**asdict(t), "cues": [asdict(c) for c in cues.get(t.id, [])]} for t in turns]}


def turn(memory: Memory, turn_id: int) -> dict[str, Any]:
    """A turn, its cues, every edge that touches it (with the turn at the other end) and a picture of its
    neighbourhood: itself and its GRAPH_NODES - 1 strongest neighbours, with the edges between them."""
    store = memory.store
    with store.snapshot():
        found = store.turns_by_id([turn_id]).get(turn_id)
        if found is None:
            raise NotFound(f"this memory has no turn {turn_id}", "it may have been forgotten")
        reads = maintenance(store)
        cues = reads.cues_of_turns([turn_id]).get(turn_id, [])
        index = kind_index(store)
        kinds = list(index.turn_kinds([turn_id]).get(turn_id, ())) if index is not None else []

        def other(src: int, dst: int) -> int:
            return dst if src == turn_id else src

        edges = reads.edges_of(turn_id)
        others = store.turns_by_id({other(src, dst) for src, dst, *_ in edges})
        edges = [e for e in edges if other(e[0], e[1]) in others]
        drawn: dict[int, str] = {turn_id: "center"}
        for src, dst, kind, _, _ in sorted(edges, key=lambda e: (e[2] != "temporal", -e[3])):
            if len(drawn) >= GRAPH_NODES:
                break
            drawn.setdefault(other(src, dst), kind)
        between = store.neighbours(list(drawn), EVERY_RANK, EVERY_RANK)
        records = change_records(store)
        changes = records.changes_of_turns([turn_id]) if records is not None else []
        versions = store.turns_by_id({c.newer_turn if c.older_turn == turn_id else c.older_turn for c in changes})
    neighbours = [{"direction": "out" if src == turn_id else "in", "kind": kind, "weight": round(weight, 4),
                   "rank": rank, "turn": asdict(others[other(src, dst)])} for src, dst, kind, weight, rank in edges]
    turns = [found, *(others[i] for i in drawn if i != turn_id)]
    picture = draw(turns, between, drawn, hidden=len(others) + 1 - len(drawn))
    # The facts of this turn that a later turn changed (its later version), and those it changes itself.
    later = [{"change": asdict(c), "turn": asdict(versions[c.newer_turn])} for c in changes
             if c.older_turn == turn_id and c.newer_turn in versions]
    earlier = [{"change": asdict(c), "turn": asdict(versions[c.older_turn])} for c in changes
               if c.newer_turn == turn_id and c.older_turn in versions]
    return {"turn": asdict(found), "kinds": kinds, "cues": [asdict(c) for c in cues], "neighbours": neighbours,
            "later": later, "earlier": earlier, "graph": picture_json(picture), "picture": picture}


def question(memory: Memory, text: str, conversation: str | None, model: str | None, answer: bool = True,
             unlocked: Callable[[], AbstractContextManager[Any]] = nullcontext) -> dict[str, Any]:
    """What `cuemem ask` gives for `text`: `context` is `ask --json`'s object (`ask --context-only --json`'s
    without `answer`), the evidence's turn ids for links, and a picture of the evidence as a graph: every
    evidence turn, and the edges of the question's one hop that brought a temporal or semantic turn in
    from an anchor or lexical one (edges between two turns found directly would only hide those).

    A model's answer is written inside `unlocked()`: it reads neither the database nor the embedder, so a
    server may serve other pages meanwhile (the offline answer embeds, and stays inside)."""
    settings = Settings()
    failure = None
    if answer:
        aside = ExitStack()
        try:
            with aside:
                result = memory.ask(text, conversation, settings, model=model, record_retrieval=False,
                                    on_context=(lambda _: aside.enter_context(unlocked())) if model else None)
            context, reply = result.context, result.answer
        except LLMError as exc:  # the evidence is still worth showing, as `ask` does
            failure = exc.message
            context, reply = memory.context(text, conversation, settings), None
    else:
        context, reply = memory.context(text, conversation, settings), None
    data = context.to_json(reply)
    store = memory.store
    with store.snapshot():
        ids = _evidence_ids(memory, data)
        turns = store.turns_by_id([i for i in ids if i is not None])
        roles = {turn_id: ev["via"] for turn_id, ev in zip(ids, data["evidence"], strict=True) if turn_id in turns}
        seeds = [turn_id for turn_id, via in roles.items() if via in SEEDS]
        hops = store.neighbours(seeds, settings.window, settings.sem_k) if settings.graph and seeds else []
    brought = [hop for hop in hops if roles.get(hop[1], "anchor") not in SEEDS]  # the edges that brought one in
    picture = draw([turns[i] for i in roles], brought, roles)
    return {"context": data, "turn_ids": ids, "error": failure, "graph": picture_json(picture), "picture": picture,
            "shown_answer": reply.labelled() if reply else None}  # as `ask` prints it: "answer:" or "best match:"


def _evidence_ids(memory: Memory, data: dict[str, Any]) -> list[int | None]:
    """The stored turn behind each evidence item: its conversation and source id."""
    store = memory.store
    reads = maintenance(store)
    cids: dict[str, int | None] = {}
    ids: list[int | None] = []
    for ev in data["evidence"]:
        name = ev["conversation"]
        if name not in cids:
            cids[name] = store.conversation_id(name)
        cid = cids[name]
        found = reads.turns_with_source_id(ev["source_id"], cid) if cid is not None else []
        ids.append(found[0].id if found else None)
    return ids


def scope(memory: Memory, chosen: str | None) -> dict[str, Any]:
    """The question box's conversation selector: the most recent conversations (and the chosen one), and
    which is selected: `chosen`, else "all" (a question ranges over the whole memory)."""
    store = memory.store
    listing = browse_queries(store)
    with store.snapshot():
        total, rows = listing.browse_conversations(None, None, 0, SELECTOR_CONVERSATIONS)
        if chosen and chosen not in {r["conversation"] for r in rows}:
            rows += listing.browse_conversations(None, chosen, 0, 1)[1]
    return {"chosen": chosen, "total": total, "options": [_titled(r) for r in rows]}


def picture_json(picture: Picture) -> dict[str, Any]:
    """The drawn graph as data: nodes (turn ids, in the order drawn, with their role) and edges."""
    return {"nodes": [{"id": n.id, "role": n.role} for n in picture.nodes],
            "edges": [{"src": e.src, "dst": e.dst, "kind": e.kind, "weight": e.weight} for e in picture.links],
            "hidden": picture.hidden}


def _titled(row: dict[str, Any]) -> dict[str, Any]:
    """A listed conversation; a title a JSONL line gave as a number or list is shown as text."""
    title = row.get("title")
    return {**row, "title": None if title is None else str(title)}


def _unknown(exc: UnknownConversation) -> NotFound:
    return NotFound(exc.message, exc.hint, exc.fields)
