"""Store messages as turns → cues → vectors → edges in atomic batches.

Input is read twice (input/jsonl.py): a first pass validates every line (so a bad line anywhere rejects the
whole run before anything is written), a second pass feeds this module. Where the input comes from
(files, standard input, gzip, zip, folders, several of them in order) is input/sources.py's business: files
are opened afresh for each pass and standard input is kept in a temporary file, so memory stays flat
whatever the input size.

Each batch commits in one transaction; a crash loses at most the batch in flight, and rerunning the
same command skips what is already stored (turn identity: conversation + `id`, else a hash of time,
speaker and text), so the result is the same as one clean run.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import BUILD_SEM_K, BUILD_WINDOW
from ..cues.changes import ChangeFinder, Said
from ..cues.language import LanguageWatch
from ..cues.statements import cue_text, statement_cues
from ..errors import CuememError, StoreError
from ..records import Message, Triple, Turn, content_hash, source_id_of
from ..registry import bind_extractor
from ..store.base import TURN_ALONE, NewTurn, Store, change_records, extraction_records, turn_vector_text
from ..text import plural
from .graph import NeighbourIndex, semantic_edges, temporal_edges
from .kinds import start_kinds, tag_batch
from .names import keep_names
from .prepare import Pair, Prepared, Workers, cues_of, embed_cues, embed_distinct, embed_turns

BATCH_TURNS = 256
# Turns prepared (parsed and embedded) per task: a batch is prepared a chunk at a time, so progress moves
# within a batch (a chunk of long assistant answers takes a second or two), and stored a batch at a time.
CHUNK_TURNS = 16
PROGRESS_POLL = 0.5  # seconds between progress reports while the writer waits for a batch
@dataclass
class IngestReport:
    lines: int = 0
    turns_added: int = 0
    turns_existing: int = 0  # ids already stored with the same text: skipped
    conflicts: int = 0  # ids already stored with another text: skipped and reported (see `replace`)
    conflict_ids: list[str] = field(default_factory=list)  # the first few, as conversation/id
    turns_replaced: int = 0  # of turns_added: stored turns whose text changed, replaced (`replace`)
    invalid: list[str] = field(default_factory=list)
    cues: int = 0
    texts_embedded: int = 0  # distinct cue and turn texts sent to the embedder (a turn in context counts one)
    temporal_edges: int = 0
    semantic_edges: int = 0
    changes: int = 0  # pairs of turns where a newer one changed what an older one said (cues/changes.py)
    pending: list[str] = field(default_factory=list)
    extraction_failures: list[str] = field(default_factory=list)  # the extractor's errors (LLM calls), as said
    conversations: list[str] = field(default_factory=list)
    empty_conversations: list[str] = field(default_factory=list)  # chats of an export with nothing to store
    exports: dict[str, str] = field(default_factory=dict)  # files read as a chat export → its format
    files_skipped: list[dict[str, str]] = field(default_factory=list)  # {file, why}: in a folder or archive, not read
    other_languages: dict[str, str] = field(default_factory=dict)  # conversation → language, if not English
    embedder: str = ""  # the model id the vectors are in (the language notice suggests a multilingual one)
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def add_time(self, stage: str, seconds: float) -> None:
        self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + seconds


# ------------------------------------------------------------------ reading
# ---------------------------------------------------------------- identity
# ------------------------------------------------------------------ writing
CONFLICT_IDS_SHOWN = 10


@dataclass
class _Conversation:
    id: int
    next_position: int
    titled: bool = False  # its title was offered to the store (the first message carrying one names it)


@dataclass
class _Fresh:
    """A message to store, and what was computed for it before the write lock was taken."""

    message: Message
    source_id: str
    digest: str
    replaces: bool = False  # its id is stored with another text, and `replace` is on
    triples: list[Triple] | None = None
    cue_vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    pair: tuple[str, str | None] = ("", None)  # what its turn vector was embedded from: (text, text before it)
    turn_vector: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))


@dataclass(frozen=True)
class _Written:
    """A turn just written (or given its cues, `complete_pending`), with what linking it into the graph
    takes (`_link`)."""

    conversation_id: int
    turn_id: int
    position: int
    cue_vectors: np.ndarray  # a row per cue of the turn
    cue_ids: Sequence[int]  # the ids its cues were stored with, in the same order
    replaces: bool = False  # it took the place of a stored turn (`replace`): the turns after it look back to it


@dataclass
class _Batch:
    """A batch between its sorting out and its storage: the turns to store, what their turn vectors are read
    with, and the cues and vectors being computed for them (ingest/prepare.py) in a thread or a worker process,
    CHUNK_TURNS turns a task (`chunks`, in order)."""

    fresh: list[_Fresh]
    pairs: list[Pair]
    chunks: list[Future[Prepared]]

    def prepared(self) -> Prepared:
        """The whole batch's cues and vectors, once every chunk is ready (a chunk's failure is raised here)."""
        return merge_prepared([chunk.result() for chunk in self.chunks])

    def ready(self) -> tuple[int, int]:
        """Turns and cues of the chunks prepared so far (for progress)."""
        turns = cues = 0
        for chunk in self.chunks:
            if chunk.done() and not chunk.cancelled() and chunk.exception() is None:
                done = chunk.result()
                turns += len(done.triples)
                cues += sum(len(t or []) for t in done.triples)
        return turns, cues


def merge_prepared(parts: Sequence[Prepared]) -> Prepared:
    """Chunks' preparations as one batch's, in order. A text is embedded alone (one model pass per text), so a
    turn's vectors are the same whichever chunk it was prepared in; only `texts_embedded` counts a text repeated
    in two chunks twice."""
    if len(parts) == 1:
        return parts[0]
    return Prepared([t for p in parts for t in p.triples], [v for p in parts for v in p.cue_vectors],
                    np.concatenate([p.turn_vectors for p in parts]), sum(p.texts_embedded for p in parts),
                    sum(p.extract_seconds for p in parts), sum(p.embed_seconds for p in parts))


def _embed_chunk(embedder, messages: list[Message], pairs: list[Pair], triples: list[list[Triple] | None],
                 extract_seconds: float) -> Prepared:
    """The vectors of a chunk whose cues this process extracted (in the writer's embedding thread)."""
    t1 = time.perf_counter()
    cue_vectors, turn_vectors, passes = embed_cues(embedder, [m.speaker for m in messages], triples, pairs)
    return Prepared(triples, cue_vectors, turn_vectors, passes, extract_seconds, time.perf_counter() - t1)


def renew_turn_vectors(store: Store, turn_ids: Sequence[int], embedder) -> int:
    """Embed these stored turns again from their text and the turn now before them in their session
    (after a forget or a replace changed it); call inside the write transaction."""
    rows = texts_with_previous(store, turn_ids)
    if not rows:
        return 0
    if turn_vector_text(store) == TURN_ALONE:
        rows = [(tid, text, None) for tid, text, _ in rows]
    vectors = embed_turns(embedder, [(text, previous) for _, text, previous in rows])
    store.insert_turn_vectors(list(zip([tid for tid, _, _ in rows], vectors, strict=True)))
    return len(rows)


def texts_with_previous(store: Store, turn_ids: Iterable[int]) -> list[tuple[int, str, str | None]]:
    """(turn id, text, text of the turn before it in its session or None) for each stored turn: what its
    turn vector is embedded from (embed_turns)."""
    ids = list(turn_ids)
    before = store.previous_turns(ids)
    turns = store.turns_by_id([*ids, *before.values()])
    return [(tid, turns[tid].text, turns[before[tid]].text if tid in before else None)
            for tid in ids if tid in turns]


def graph_settings(store: Store, window: int | None, sem_k: int | None) -> tuple[int, int]:
    """The graph's temporal window and semantic k: recorded by the memory's first ingest (the run's, else
    BUILD_WINDOW and BUILD_SEM_K), and fixed for its life: a run asking for others is refused."""
    stored_w = store.get_meta("graph_window")
    if stored_w is None:
        w = BUILD_WINDOW if window is None else window
        k = BUILD_SEM_K if sem_k is None else sem_k
        check_graph_options(w, k)
        with store.transaction():
            stored_w = store.get_meta("graph_window")  # again under the lock: another process may have
            if stored_w is None:
                store.set_meta("graph_window", str(w))
                store.set_meta("graph_sem_k", str(k))
                return w, k
    stored_k = store.get_meta("graph_sem_k", "")  # recorded with graph_window, in one transaction
    w, k = int(stored_w), int(stored_k)
    if (window is not None and window != w) or (sem_k is not None and sem_k != k):
        raise CuememError(
            f"this database's graph was built with window={w}, sem_k={k}; edges of one graph must agree",
            "leave the window and sem_k out (a question may follow fewer edges), or add to a new database",
            fields=("window", "sem_k", "db"),
        )
    return w, k


def check_graph_options(window: int | None, sem_k: int | None) -> None:
    """Refuse a negative window or k (`Memory.writer` asks before it opens the database, so none is created)."""
    if (window is not None and window < 0) or (sem_k is not None and sem_k < 0):
        raise CuememError("window and sem_k must be ≥ 0", "give 0 or more", fields=("window", "sem_k"))


def open_writer(store: Store, extractor, embedder, *, extractor_name: str | None = None,
                extract_model: str | None = None, mix_extractors: bool = False, window: int | None = None,
                sem_k: int | None = None, replace: bool = False, derive_cues: bool = True) -> Ingestor:
    """The one way to build an `Ingestor` on a memory (`Memory.writer` is it for a `Memory`): the run's
    options checked, then the memory's settings recorded, or checked against the run's, in one write
    transaction (all, or none): the extractor `extractor_name` (registry.bind_extractor; None: cues that
    are not this memory's extractor's, an export's recorded ones or a retry's), its model, the graph's
    window and k (`graph_settings`), the embedding model (`Store.bind_embedder`)."""
    check_graph_options(window, sem_k)
    store.check_writable()
    with store.transaction():
        if extractor_name is not None:
            bind_extractor(store, extractor_name, mix_extractors)
        if extract_model:
            store.set_meta("extract_model", extract_model)
        writer = Ingestor(store, extractor, embedder, window, sem_k, replace, derive_cues)
        store.bind_embedder(embedder.model_id, embedder.dim, embedder.name)
        start_kinds(store)
    return writer


def _with_statements(turns, results: list[list[Triple] | None]) -> list[list[Triple] | None]:
    """Extracted triples plus one statement cue per sentence (see cues/statements.py); pending stays None."""
    return [None if triples is None else triples + statement_cues(turn.speaker, turn.text)
            for turn, triples in zip(turns, results, strict=True)]


class _Changes:
    """The facts each conversation's turns stated so far (cues/changes.py), read once per run before its new
    turns are stored, so that each new turn is compared with all that came before it; and the changes found,
    recorded (`see`)."""

    def __init__(self, store: Store):
        self.store = store
        self.finders: dict[str, ChangeFinder] = {}  # conversation name → what its turns said so far

    def read(self, conversations: Iterable[str]) -> None:
        """Each conversation's finder, read from its turns stored before the batch's own are (a conversation new
        to the memory starts empty)."""
        records = change_records(self.store)
        for name in conversations:
            if name in self.finders:
                continue
            finder = self.finders[name] = ChangeFinder()
            cid = self.store.conversation_id(name)
            for turn_id, text, speaker, role, triples in (
                    records.change_sources(cid) if records is not None and cid is not None else ()):
                finder.see(Said(turn_id, text, speaker, role, triples), known=True)

    def see(self, conversation_id: int, said: Said, conversation: str) -> int:
        """Compare a turn just stored with what its conversation said before it (`read` first); record what it
        changed."""
        found = self.finders[conversation].see(said)
        records = change_records(self.store)
        if not found or records is None:
            return 0
        return records.insert_changes(conversation_id, [
            (f.older_turn, f.newer_turn, f.subject, f.relation, f.older_value, f.newer_value, f.kind) for f in found])


class Ingestor:
    """Writes messages into a store: turns, cues (via an extractor), vectors, then graph edges."""

    def __init__(self, store: Store, extractor, embedder, window: int | None = None, sem_k: int | None = None,
                 replace: bool = False, derive_cues: bool = True):
        """`replace`: a message whose id is stored with another text replaces that turn (see `_sort_out`).
        `derive_cues`: add to what the extractor gives the cues ingest derives (prepare.cues_of: a statement
        cue per sentence, none for a padding turn); off, the extractor's cues are stored as they are (an
        export's recorded cues, manage/export.py) and batches are prepared in this process. Build one with
        `open_writer`, which checks the run against the memory first."""
        self.store = store
        self.extractor = extractor
        self.embedder = embedder
        self.replace = replace
        self.derive_cues = derive_cues
        self.window, self.sem_k = graph_settings(store, window, sem_k)
        self._conversations: dict[str, _Conversation] = {}
        self._index: NeighbourIndex | None = None  # the memory's cue vectors; loaded when a batch needs them
        self._people: dict[int, frozenset[str]] | None = None  # conversation → its speakers; loaded with the index
        self._changes = _Changes(store)  # what each conversation's turns said so far, and what changed it
        self._dispatched: dict[str, tuple[str | None, str] | None] = {}  # conversation → its last turn sent on
        self._seen_others: int | None = None  # the commits of other processes (Store.version) as of its last write
        self._committed = 0  # report.turns_added as of the last batch committed

    def _conversation(self, name: str, title: Any = None) -> _Conversation:
        """A conversation's write state (created if new, titled by the first message that carries a
        `title`: input/formats/chatgpt.py and claude.py keep a chat's in each message's extra)."""
        conv = self._conversations.get(name)
        if conv is None:
            cid = self.store.conversation_id(name, create=True)
            conv = _Conversation(cid, self.store.next_position(cid))
            self._conversations[name] = conv
        if not conv.titled and isinstance(title, str) and title.strip():
            self.store.set_title(conv.id, title.strip())
            conv.titled = True
        return conv

    def _neighbours(self) -> NeighbourIndex:
        """The memory's cue vectors, for semantic edges. Called under the write lock before any row of a
        batch is written, so an index (re)loaded here holds exactly the cues stored before the batch;
        kept between batches (and runs of a long-lived writer) until another process writes."""
        if self._index is None:
            self._index = NeighbourIndex.load(self.store, self.embedder.dim)
        return self._index

    def _circles(self, batch: set[int]) -> dict[int, tuple[int, ...]]:
        """Each conversation of the batch that shares its set of speakers with some other conversations but
        not with all of them → those conversations, itself included (graph.semantic_edges)."""
        if self._people is None:
            self._people = self.store.speaker_sets()
        self._people.update(self.store.speaker_sets(list(batch)))  # the batch may have brought a new speaker in
        same: dict[frozenset[str], list[int]] = {}
        for cid, people in self._people.items():
            same.setdefault(people, []).append(cid)
        return {cid: tuple(sorted(same[self._people[cid]])) for cid in batch
                if 1 < len(same[self._people[cid]]) < len(self._people)}

    def run(self, messages: Iterable[Message], report: IngestReport,
            progress: Callable[[int, int, int], None] | None = None, batch_turns: int | None = None,
            workers: Workers | None = None) -> IngestReport:
        """Store `messages` a batch at a time, as a pipeline: while one batch is stored, the next ones are
        prepared (ingest/prepare.py). Without `workers`, the next batch is parsed here (spaCy, one core) while the
        one before it is embedded in a thread (onnxruntime's threads leave the GIL); with them, each batch is
        parsed and embedded in a worker process, as many batches at once as there are workers, and stored
        here in input order: the same rows as one process makes (tests/test_prepare.py)."""
        started = time.perf_counter()
        self.store.bind_embedder(self.embedder.model_id, self.embedder.dim, self.embedder.name)
        background = ThreadPoolExecutor(1, thread_name_prefix="cuemem-embed") if workers is None else None
        ahead = 1 if workers is None else workers.count + 1  # batches prepared while one is stored
        queue: deque[_Batch] = deque()
        self._dispatched.clear()
        languages = LanguageWatch()
        report.embedder = self.embedder.model_id
        batch_turns = batch_turns or BATCH_TURNS
        if progress:  # the bar shows the whole input at once, not after the first batch
            progress(0, 0, report.lines)
        self._committed = before = report.turns_added
        try:
            batch: list[Message] = []
            for message in messages:
                batch.append(message)
                if len(batch) >= batch_turns:
                    self._next_batch(batch, queue, background, workers, report, languages, progress)
                    batch = []
                    while len(queue) > ahead:
                        self._store_next(queue, report, progress)
            if batch:
                self._next_batch(batch, queue, background, workers, report, languages, progress)
            while queue:
                self._store_next(queue, report, progress)
        except StoreError as exc:  # a full disk, a lost server: say what the batches before it stored
            stored = self._committed - before
            if not stored:
                raise
            raise type(exc)(f"{exc.message}; {plural(stored, 'new turn')} of this input had been stored before "
                            "it, in whole batches", f"{exc.hint or 'fix that'}; the same command run again skips "
                            "what is stored", exc.fields) from exc
        finally:
            for pending in queue:
                for chunk in pending.chunks:
                    chunk.cancel()
            if background is not None:
                background.shutdown(wait=True, cancel_futures=True)
            self._dispatched.clear()
        self._save_graph(report)
        self._tick([], report, progress)
        report.extraction_failures = list(getattr(self.extractor, "failures", ()))
        report.other_languages = languages.others()
        report.seconds = time.perf_counter() - started
        return report

    def _save_graph(self, report: IngestReport) -> None:
        """Save the HNSW graph of a large memory's cues (graph.CueGraph) for the next ingest, when enough was
        added to it, and only if no other process wrote since: then it covers exactly the stored cues."""
        index = self._index
        if index is None or index.graph is None or not index.graph.worth_saving():
            return
        t0 = time.perf_counter()
        with self.store.transaction():
            self._sync()
            if self._index is index:
                index.save(self.store)
        report.add_time("save graph", time.perf_counter() - t0)

    def _sort_out(self, items: list[_Fresh], report: IngestReport) -> list[_Fresh]:
        """The messages to store, in input order. An id already stored (or repeated in the batch) with
        the same text is skipped quietly; with another text it is a conflict, skipped and reported, or,
        with `replace`, kept to replace the stored turn.

        Runs before the expensive work (extraction, embedding) and again under the write lock, where
        turns another process stored (or forgot, or replaced) meanwhile are sorted out anew.
        """
        by_conv: dict[str, list[_Fresh]] = {}
        for item in items:
            by_conv.setdefault(item.message.conversation, []).append(item)
        kept: set[int] = set()
        for name, group in by_conv.items():
            cid = self.store.conversation_id(name)
            stored = self.store.stored_texts(cid, [item.source_id for item in group]) if cid else {}
            seen: set[str] = set()
            for item in group:
                if item.source_id in seen:
                    report.turns_existing += 1
                    continue
                seen.add(item.source_id)
                old = stored.get(item.source_id)
                item.replaces = old is not None and old[2] != item.message.text and self.replace
                if old is None or item.replaces:
                    kept.add(id(item))
                elif old[2] == item.message.text:
                    report.turns_existing += 1
                else:
                    report.conflicts += 1
                    if len(report.conflict_ids) < CONFLICT_IDS_SHOWN:
                        report.conflict_ids.append(f"{name}/{item.source_id}")
        return [item for item in items if id(item) in kept]

    def _sync(self) -> None:
        """Under the write lock: if another process committed since this ingestor last wrote, what it
        remembers (conversation ids, next positions, cue indexes) may be stale, so it is read again."""
        others = self.store.version().others
        if others != self._seen_others:
            self._conversations.clear()
            self._index = None
            self._people = None
            self._changes.finders.clear()
            self._seen_others = others

    def _next_batch(self, batch: list[Message], queue: deque[_Batch], background: ThreadPoolExecutor | None,
                    workers: Workers | None, report: IngestReport, languages: LanguageWatch,
                    progress: Callable[[int, int, int], None] | None) -> None:
        """Sort `batch` out and start preparing what is new in it, CHUNK_TURNS turns a task. Preparation runs
        outside the write lock (other processes keep writing meanwhile); under it the turns are sorted out
        again and stored: the same rows as if the processes had run one by one. In this process the parse
        runs here while the chunk before is embedded, and a failed parse still stores the batches before it."""
        fresh = self._sort_out([_Fresh(m, source_id_of(m), content_hash(m)) for m in batch], report)
        if not fresh:
            return
        messages = [item.message for item in fresh]
        for m in messages:
            languages.see(m.conversation, m.role, m.text)
        pairs = self._turn_pairs(fresh)
        current = _Batch(fresh, pairs, [])
        spans = [(lo, min(lo + CHUNK_TURNS, len(messages))) for lo in range(0, len(messages), CHUNK_TURNS)]
        if workers is not None and self.derive_cues:  # a worker makes its own extractor and derives cues
            current.chunks = [workers.submit(messages[lo:hi], pairs[lo:hi]) for lo, hi in spans]
            queue.append(current)
            return
        assert background is not None
        for lo, hi in spans:
            t0 = time.perf_counter()
            try:
                triples = self._cues(messages[lo:hi])
            except BaseException:
                for chunk in current.chunks:
                    chunk.cancel()
                while queue:
                    self._store_next(queue, report, None)
                raise
            current.chunks.append(background.submit(_embed_chunk, self.embedder, messages[lo:hi], pairs[lo:hi],
                                                    triples, time.perf_counter() - t0))
            self._tick([*queue, current], report, progress)
        queue.append(current)

    def _tick(self, queue: Iterable[_Batch], report: IngestReport,
              progress: Callable[[int, int, int], None] | None) -> None:
        """Tell `progress` the turns done so far (stored, skipped, or prepared and waiting to be stored) and
        their cues, of all the input's lines."""
        if progress is None:
            return
        turns = report.turns_added + report.turns_existing + report.conflicts
        cues = report.cues
        for batch in queue:
            ready_turns, ready_cues = batch.ready()
            turns, cues = turns + ready_turns, cues + ready_cues
        progress(min(turns, report.lines), cues, report.lines)

    def _cues(self, turns: Sequence[Any]) -> list[list[Triple] | None]:
        """The cues of these turns: the extractor's, with those ingest derives unless `derive_cues` is off."""
        return cues_of(self.extractor, turns) if self.derive_cues else self.extractor.extract(turns)

    def _store_next(self, queue: deque[_Batch], report: IngestReport,
                    progress: Callable[[int, int, int], None] | None) -> None:
        """Store the oldest batch in flight once its cues and vectors are ready; while waiting, tell `progress`
        every PROGRESS_POLL seconds how far the preparation is."""
        batch = queue[0]
        if progress is not None:
            while wait(batch.chunks, timeout=PROGRESS_POLL).not_done:
                self._tick(queue, report, progress)
        queue.popleft()
        prepared = batch.prepared()
        report.add_time("extract", prepared.extract_seconds)
        report.add_time("embed", prepared.embed_seconds)
        report.texts_embedded += prepared.texts_embedded
        for item, triples, cue_vectors, turn_vector, pair in zip(batch.fresh, prepared.triples, prepared.cue_vectors,
                                                                 prepared.turn_vectors, batch.pairs, strict=True):
            item.triples, item.cue_vectors, item.turn_vector, item.pair = triples, cue_vectors, turn_vector, pair
        t0 = time.perf_counter()
        with self.store.transaction():
            self._sync()
            self._store_batch(self._sort_out(batch.fresh, report), report)
        self._committed = report.turns_added
        report.add_time("store+graph", time.perf_counter() - t0)
        self._tick(queue, report, progress)

    def _turn_pairs(self, items: list[_Fresh]) -> list[Pair]:
        """(text, text of the turn before it in its session or None) for each new turn: the message before
        it in its conversation that this run sent to be prepared, or else the conversation's latest stored
        turn. A replacing turn gets its vector under the write lock (`_store_batch`), as does any turn whose
        predecessor turned out otherwise when it is stored (`_store_turn_vectors`)."""
        if turn_vector_text(self.store) == TURN_ALONE:  # a database from before m005 stays consistent
            return [(item.message.text, None) for item in items]
        last = self._dispatched
        out: list[Pair] = []
        for item in items:
            m = item.message
            if item.replaces:
                out.append((m.text, None))
                continue
            if m.conversation not in last:
                cid = self.store.conversation_id(m.conversation)
                last[m.conversation] = self.store.last_turn(cid) if cid is not None else None
            before = last[m.conversation]
            out.append((m.text, before[1] if before is not None and before[0] == m.session else None))
            last[m.conversation] = (m.session, m.text)
        return out

    def _store_batch(self, fresh: list[_Fresh], report: IngestReport) -> None:
        """Write the sorted-out turns; call under the write lock. A replacing turn takes the position of
        the turn it replaces, which goes first with all that is its (Store.delete_turns)."""
        replaced: dict[int, int] = {}  # id(item) → position of the turn it replaces
        index = self._neighbours()
        if any(item.replaces for item in fresh):
            old_ids = []
            for item in fresh:
                if item.replaces:
                    cid = int(self.store.conversation_id(item.message.conversation) or 0)  # stored: it has this turn
                    old_id, replaced[id(item)], _ = self.store.stored_texts(cid, [item.source_id])[item.source_id]
                    old_ids.append(old_id)
            self.store.delete_turns(old_ids, keep_conversations=True)
            index.remove(set(old_ids))
            self._changes.finders.clear()  # they remember the replaced turns: read again from what is stored now
        self._changes.read(item.message.conversation for item in fresh)  # before this batch's turns are stored
        written = []
        turn_ids = []
        for item in fresh:
            message, triples = item.message, item.triples
            conv = self._conversation(message.conversation, message.extra.get("title"))
            if message.conversation not in report.conversations:
                report.conversations.append(message.conversation)
            if item.replaces:
                position = replaced[id(item)]
                report.turns_replaced += 1
            else:
                position = conv.next_position
                conv.next_position += 1
            [turn_id] = self.store.insert_turns([NewTurn(
                conv.id, position, item.source_id, message.text, item.digest, message.session, message.time,
                message.speaker, message.role, message.extra, "pending" if triples is None else "done")])
            turn_ids.append(turn_id)
            report.turns_added += 1
            if triples is None:
                report.pending.append(f"{message.conversation}/{item.source_id}")
            cue_ids = self._add_cues(conv.id, turn_id, triples or [], item.cue_vectors, report)
            written.append(_Written(conv.id, turn_id, position, item.cue_vectors, cue_ids, item.replaces))
            report.changes += self._changes.see(conv.id, Said(turn_id, message.text, message.speaker, message.role,
                                                              triples or []), message.conversation)
        tag_batch(self.store, turn_ids, [(item.message.text, item.message.speaker) for item in fresh])
        self._link(written, report, temporal=True)
        self._store_turn_vectors(fresh, turn_ids)
        keep_names(self.store, [w.conversation_id for w in written], turn_ids, [f.message.text for f in fresh])

    def _store_turn_vectors(self, fresh: list[_Fresh], turn_ids: list[int]) -> None:
        """Each new turn's vector, as embedded before the lock if the turn before it is still the one it was
        read with; else (another process appended or forgot turns meanwhile, or the turn replaces one)
        embedded again now, as are the turns right after a replaced one."""
        now = dict((tid, (text, previous)) for tid, text, previous in texts_with_previous(self.store, turn_ids))
        alone = turn_vector_text(self.store) == TURN_ALONE
        ready, again = [], []
        for item, tid in zip(fresh, turn_ids, strict=True):
            pair = (now[tid][0], None) if alone else now[tid]
            if pair == item.pair and not item.replaces:
                ready.append((tid, item.turn_vector))
            else:
                again.append(tid)
        self.store.insert_turn_vectors(ready)
        replacing = [tid for item, tid in zip(fresh, turn_ids, strict=True) if item.replaces]
        if replacing and not alone:
            again += [tid for tid in self.store.turns_after(replacing) if tid not in again]
        renew_turn_vectors(self.store, again, self.embedder)

    def complete_pending(self, turns: list[Turn], results: list[list[Triple] | None], report: IngestReport) -> None:
        """Give stored pending turns the cues a retry extracted, and link them semantically.

        Their temporal edges exist already. Their semantic edges point, as always, to earlier turns;
        later turns, ingested while these had no cues, do not link back to them.
        """
        results = _with_statements(turns, results)
        done = [(turn, triples) for turn, triples in zip(turns, results, strict=True) if triples is not None]
        vectors, count = embed_distinct(self.embedder, [cue_text(t, turn.speaker) for turn, triples in done
                                                        for t in triples])
        report.texts_embedded += count
        ends = np.cumsum([len(triples) for _, triples in done], dtype=np.int64)
        with_vectors = [(turn, triples, vectors[end - len(triples) : end])
                        for (turn, triples), end in zip(done, ends, strict=True)]
        with self.store.transaction():
            self._sync()
            records = extraction_records(self.store)
            still = {turn.id for turn, _ in records.pending_turns()}  # another process may have done or forgot some
            with_vectors = [item for item in with_vectors if item[0].id in still]
            self._neighbours()
            written = []
            for turn, triples, cue_vectors in with_vectors:
                conv = self._conversation(turn.conversation)
                cue_ids = self._add_cues(conv.id, turn.id, triples, cue_vectors, report)
                written.append(_Written(conv.id, turn.id, turn.position, cue_vectors, cue_ids))
            records.set_status([turn.id for turn, _, _ in with_vectors], "done")
            self._link(written, report, temporal=False)

    def _add_cues(self, conversation_id: int, turn_id: int, triples: list[Triple], vectors: np.ndarray,
                  report: IngestReport) -> list[int]:
        cue_ids = self.store.insert_cues(conversation_id, [(turn_id, t.subject, t.relation, t.object, t.kind)
                                                           for t in triples])
        self.store.insert_vectors(conversation_id, cue_ids, vectors)
        report.cues += len(cue_ids)
        return cue_ids

    def _link(self, written: list[_Written], report: IngestReport, temporal: bool) -> None:
        """Temporal edges for the turns just written, per conversation, and semantic edges across the memory.

        A turn that replaced one is linked, temporally, with the turns within the window after it too (the
        old turn's edges went with it); its cues link to earlier turns as always, and later turns keep the
        semantic edges they had (the graph is append-only: see ingest/graph.py)."""
        if temporal:
            by_conv: dict[int, list[_Written]] = {}
            for turn in written:
                by_conv.setdefault(turn.conversation_id, []).append(turn)
            for cid, turns in by_conv.items():
                new = [(turn.turn_id, turn.position) for turn in turns]
                ids = {tid for tid, _ in new}
                for turn in turns:
                    if turn.replaces:  # the turns after it look back to it
                        after = self.store.turns_at_positions(cid, turn.position + 1, turn.position + self.window)
                        new += [(t, p) for t, p in after if (t, p) not in new]
                edges = [e for e in temporal_edges(self.store, cid, new, self.window) if e[0] in ids or e[1] in ids]
                self.store.insert_edges(edges)
                report.temporal_edges += len(edges)
        turn_ids = np.array([turn.turn_id for turn in written for _ in range(len(turn.cue_vectors))], dtype=np.int64)
        conversations = np.array([turn.conversation_id for turn in written for _ in range(len(turn.cue_vectors))],
                                 dtype=np.int64)
        vecs = [turn.cue_vectors for turn in written if len(turn.cue_vectors)]
        matrix = (vecs[0] if len(vecs) == 1 else np.vstack(vecs)) if vecs else \
            np.zeros((0, self.embedder.dim), dtype=np.float32)
        index = self._neighbours()
        semantic = semantic_edges(index, turn_ids, matrix, self.sem_k, conversations,
                                  self._circles(set(conversations.tolist())))
        self.store.insert_edges(semantic)
        report.semantic_edges += len(semantic)
        cue_ids = np.array([c for turn in written for c in turn.cue_ids], dtype=np.int64)
        index.add(turn_ids, conversations, matrix, cue_ids)
