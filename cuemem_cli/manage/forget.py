"""Forget: remove turns with everything that belongs to them (the paper's DELETE), and scrub the file.

Selectors narrow the set of turns, all of them together (AND):

- `conversation`: one conversation, by its name or by a title naming one (required with `session` or `turns`
  when the memory holds several: their ids are unique within a conversation only);
- `session`: one session id; `turns`: source ids (the JSONL `id`); `before`: turns whose time is earlier.

Two policies then apply *within* that selection, per conversation:

- decay (`decay_days=D`): forget turns older than D days before `as_of` (default now, in UTC like every time
  cuemem stores) that no `ask`
  has used within those D days. A turn's age is its time, or, without one, when its conversation
  was first stored.
- LRU (`lru=N`): keep the N most recently retrieved turns of each conversation and forget the rest.
  Turns never retrieved rank after retrieved ones, newest position first among equals.

A forgotten turn takes its cues, cue vectors, lexical-index entries, its edges in both directions, its
LLM-extraction cache entries and its signs of a name with it, in one transaction, in which its
conversation learns its names again from the turns left (ingest/names.py); a conversation left without
turns goes too. The turn said right after a forgotten one in the same session was read together with it
(ingest.prepare.embed_turns), so its vector is embedded again, in the same transaction, from its own text
and the turn now before it: no forgotten word stays in a vector. Only then is the embedding model
loaded (forgetting whole sessions or conversations never needs it). Positions are not renumbered:
the neighbours of a forgotten turn simply lose their temporal edges to it. Deleted pages are zeroed
(`secure_delete`), and the full-text indexes are merged so no forgotten term lingers in them; with
`vacuum`, the WAL is checkpointed and truncated and the file rebuilt, so not one byte of the forgotten
text is left in the database file or its WAL.

Forgetting does not touch the files a memory was ingested from: ingesting them again brings the
turns back.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..errors import CuememError
from ..ingest.names import relearn
from ..recall.scope import conversation_labels, resolve_one
from ..store.base import TURN_WITH_PREVIOUS, Store, check_embedder, maintenance, now_iso, turn_vector_text
from ..text import plural
from ..timeparse import parse_time


@dataclass(frozen=True)
class Selection:
    conversation: str | None = None
    session: str | None = None
    turns: tuple[str, ...] = ()
    before: str | None = None  # ISO 8601
    decay_days: float | None = None
    lru: int | None = None
    as_of: str | None = None  # ISO 8601; the decay policy's "now"

    def is_empty(self) -> bool:
        return (self.conversation is None and self.session is None and not self.turns and self.before is None
                and self.decay_days is None and self.lru is None)


@dataclass
class ForgetReport:
    """What a forget removed (or, with `dry_run`, would remove)."""

    turns: int = 0
    cues: int = 0
    vectors: int = 0
    edges: int = 0
    turn_vectors_renewed: int = 0  # turns right after a forgotten one, embedded again without it
    extraction_cache: int = 0
    conversations: dict[str, int] = field(default_factory=dict)  # turns forgotten per conversation
    conversations_removed: list[str] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)  # of those conversations that have one
    selection: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    applied: bool = False
    cancelled: bool = False
    vacuumed: bool = False

    def summary(self, done: bool = True) -> str:
        """What is forgotten, as "forgot …" ends (`done`) or as "would forget …", a prompt and a refusal end:
        a conversation left empty is removed, or would be. Conversations are named with their titles."""
        per = ", ".join(f"{self._named(name)}: {n}" for name, n in self.conversations.items())
        text = (f"{plural(self.turns, 'turn')} ({per or 'none'}), {plural(self.cues, 'cue')}, "
                f"{plural(self.vectors, 'cue vector')}, {plural(self.edges, 'edge')}")
        removed = [self._named(name) for name in self.conversations_removed]
        if removed:
            which = f"the conversation {removed[0]}" if len(removed) == 1 else \
                f"the {len(removed)} conversations {', '.join(removed)}"
            text += f"; {which}, {'now empty, removed' if done else 'left empty, would be removed'}"
        if self.turn_vectors_renewed:
            text += (f"; {plural(self.turn_vectors_renewed, 'following turn')} "
                     f"{'embedded' if done else 'would be embedded'} again without the forgotten text")
        return text

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def _named(self, name: str) -> str:
        return f"{name} ({self.titles[name]})" if name in self.titles else name


def stdin_is_terminal() -> bool:
    """Whether a person can answer a confirmation prompt (tests replace this)."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def selection_from(conversation: str | None = None, session: str | None = None, turns: Sequence[str] = (),
                   before: str | None = None, decay_days: float | None = None, lru: int | None = None,
                   as_of: str | None = None) -> Selection:
    """Validate and normalise the user's selectors (times to ISO 8601)."""
    if decay_days is not None and decay_days < 0:
        raise CuememError("decay_days must be a number of days ≥ 0", "give an age in days, e.g. 30",
                          fields=("decay_days",))
    if lru is not None and lru < 0:
        raise CuememError("lru must be ≥ 0 (the number of turns to keep per conversation)", "give 0 or more",
                          fields=("lru",))
    return Selection(conversation, session, tuple(turns), _iso(before, "before") if before else None, decay_days,
                     lru, _iso(as_of, "as_of") if as_of else None)


def _iso(value: str, field: str) -> str:
    try:
        return parse_time(value)
    except ValueError as exc:
        raise CuememError(f"{field}: cannot read time {value!r}: {exc}",
                          "use ISO 8601 (2023-05-08T13:56:00) or e.g. '8 May 2023'", fields=(field,)) from None


def _decay_cutoff(selection: Selection) -> str | None:
    if selection.decay_days is None:
        return None
    now = datetime.fromisoformat(selection.as_of or now_iso())  # UTC, as created_at and last_retrieved_at are
    return (now - timedelta(days=selection.decay_days)).isoformat(timespec="seconds")


def _scope(store: Store, selection: Selection) -> int | None:
    """The conversation id the selection is limited to (by name, or a title naming one), or None for all;
    refuses ambiguous selections."""
    if selection.conversation is None:
        if selection.session is not None or selection.turns:
            labels = conversation_labels(store)
            if len(labels) > 1:
                raise CuememError(
                    f"session and turn ids may be shared by several conversations; this memory holds "
                    f"{len(labels)}: {', '.join(labels[:20])}" + (", …" if len(labels) > 20 else ""),
                    "say which conversation, by its name or title", fields=("conversation",),
                )
        return None
    return resolve_one(store, selection.conversation, starts=False)[0]  # deleting: the whole name or title


def _titles(store: Store, report: ForgetReport) -> dict[str, str]:
    return {name: title for _, name, title in store.conversations() if title and name in report.conversations}


def _select(store: Store, selection: Selection, cid: int | None) -> list[tuple[int, str]]:
    turns = list(selection.turns) if selection.turns else None
    return maintenance(store).forget_selection(cid, selection.session, turns, selection.before,
                                               _decay_cutoff(selection), selection.lru)


def plan(store: Store, selection: Selection) -> tuple[list[int], ForgetReport]:
    """The turn ids a forget would remove, and the counts of what goes with them (nothing is changed)."""
    report = ForgetReport(selection={k: v for k, v in asdict(selection).items() if v not in (None, ())},
                          dry_run=True)
    cid = _scope(store, selection)
    with store.snapshot():
        chosen = _select(store, selection, cid)
        ids = [tid for tid, _ in chosen]
        report.conversations = dict(Counter(name for _, name in chosen))
        report.turns = len(ids)
        if ids:
            counts = maintenance(store).forget_counts(ids)
            report.cues, report.vectors, report.edges, report.extraction_cache = (
                counts["cues"], counts["vectors"], counts["edges"], counts["extraction_cache"])
            totals = {row["conversation"]: row["turns"] for row in maintenance(store).conversation_stats()}
            report.conversations_removed = [name for name, n in report.conversations.items() if totals.get(name) == n]
            report.titles = _titles(store, report)
    return ids, report


def forget(store: Store, selection: Selection, dry_run: bool = False, vacuum: bool = False,
           confirm: Callable[[ForgetReport], bool] | None = None,
           embedder: Callable[[], Any] | None = None) -> ForgetReport:
    """Plan, ask `confirm` (if given), then delete in one transaction; optionally scrub the file.

    Only turns that were both planned (and confirmed) and still match the selection at delete time
    are removed, so a concurrent change can never widen what was agreed to. `embedder()` gives the
    database's embedder when a kept turn's vector must be embedded again (default: the one recorded
    in the database, `models/embedders.spec_for`); it is loaded before the write transaction begins.
    """
    if selection.is_empty() and not vacuum:
        raise CuememError("nothing selected to forget",
                          "say what to forget: a conversation, a session, turns, a time before which, an age or a "
                          "number of turns to keep",
                          fields=("conversation", "session", "turns", "before", "decay_days", "lru"))
    if not dry_run:  # a memory that cannot be written says so before anyone is asked to confirm
        store.check_writable()
    ids: list[int]
    if selection.is_empty():
        ids, report = [], ForgetReport(dry_run=dry_run)
    else:
        ids, report = plan(store, selection)
    report.dry_run = dry_run
    if dry_run:
        return report
    if ids and confirm is not None and not confirm(report):
        report.cancelled = True
        return report
    if ids:
        cid = _scope(store, selection)
        renew = turn_vector_text(store) == TURN_WITH_PREVIOUS
        model = _load(store, embedder) if renew and store.turns_after(ids) else None
        with store.transaction():
            titles = _titles(store, report)
            agreed = set(ids)
            now_selected = [tid for tid, _ in _select(store, selection, cid) if tid in agreed]
            after = store.turns_after(now_selected) if renew else []
            counts = store.delete_turns(now_selected)
            relearn(store, [kept for name in counts["conversations"]
                            if (kept := store.conversation_id(name)) is not None])  # what the rest says of names
            if after:
                from ..ingest.pipeline import renew_turn_vectors

                report.turn_vectors_renewed = renew_turn_vectors(store, after, model or _load(store, embedder))
        report.turns, report.cues, report.vectors, report.edges = (
            counts["turns"], counts["cues"], counts["vectors"], counts["edges"])
        report.extraction_cache = counts["extraction_cache"]
        report.conversations = counts["conversations"]
        report.conversations_removed = counts["conversations_removed"]
        report.titles = {name: title for name, title in titles.items() if name in report.conversations}
        report.applied = True
    if vacuum:
        maintenance(store).scrub()
        report.vacuumed = True
    return report


def _load(store: Store, embedder: Callable[[], Any] | None):
    """The embedder that re-embeds kept turns: `embedder()`, else the one the database records."""
    if embedder is None:
        from ..models.embedders import get_embedder, spec_for

        model = get_embedder(spec_for(store.get_meta("embedding_model")))
    else:
        model = embedder()
    check_embedder(store, model.model_id, model.dim)
    return model

