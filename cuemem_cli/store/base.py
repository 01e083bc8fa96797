"""The store's interfaces, by who asks: `Store`, the engine's (ingest, recall, answering, `Memory`), and beside
it what one other user asks: `KindIndex` (the kinds each turn names), `ExtractionRecords` (the LLM extractor),
`Maintenance` (forget, export, inspect),
`BrowseQueries` (`cuemem browse`), `EvalQueries` (`cuemem eval`); with the records and constants their
methods speak in, and what is derived from them (`conversation_names`, `check_embedder`, ...).

Two backends implement every one: `sqlite.SQLiteStore` (one file, sqlite-vec) and `postgres.PostgresStore`
(PostgreSQL + pgvector), whose shared queries are `sql.SQLStore`; `open.open_store` picks one by the
database target. A third backend implements `Store` first (ingest and ask then work), the others as their
tools are wanted: a tool given a store without its protocol says so (`maintenance(store)`, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, Protocol, overload, runtime_checkable

import numpy as np

from ..errors import ModelMismatch, StoreError
from ..records import Change, Cue, Triple, Turn
from .migrations import EDGE_KINDS

# Edges store their kind as a code (m011, on both backends); callers see names.
KIND_CODE = {name: code for code, name in enumerate(EDGE_KINDS)}
SEMANTIC, TEMPORAL = KIND_CODE["semantic"], KIND_CODE["temporal"]
KIND_NAME = "CASE e.kind " + " ".join(f"WHEN {code} THEN '{name}'" for name, code in KIND_CODE.items()) + " END"

# What a database's turn vectors were embedded from (meta `turn_vectors`, see m005): the turn read with
# the turn before it in its session (ingest.prepare.embed_turns), or (databases written before m005) the turn alone.
TURN_WITH_PREVIOUS = "turn+previous"
TURN_ALONE = "turn"

TURN_COLUMNS = ("t.id, c.name, t.position, t.source_id, t.text, t.session, t.time, t.speaker, t.role, t.stored_at,"
                " c.title")
CUE_COLUMNS = "id, turn_id, subject, relation, object, kind"
CUE_DELETIONS = "cue_deletions"  # meta: how many times cues were deleted (a saved cue graph names the count it saw)
STREAM_ROWS = 10_000  # rows fetched at a time where a result can be large (the memory's vectors)


def now_iso() -> str:
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def turn_from_row(row: Sequence[Any]) -> Turn:
    """A `Turn` from the columns of TURN_COLUMNS, in that order."""
    return Turn(
        id=row[0], conversation=row[1], position=row[2], source_id=row[3], text=row[4],
        session=row[5], time=row[6], speaker=row[7], role=row[8], stored_at=row[9], title=row[10],
    )


@dataclass(frozen=True)
class NewTurn:
    """A turn ready to insert: ingest has assigned its position and identity."""

    conversation_id: int
    position: int
    source_id: str
    text: str
    content_hash: str
    session: str | None
    time: str | None
    speaker: str | None
    role: str | None
    extra: dict[str, Any]
    status: str = "done"


class Version(NamedTuple):
    """What has been committed to a memory, as one connection sees it: `others` changes when another
    connection (another process) commits, `own` when this one writes. A writer compares `others` to know
    whether what it remembers of the memory is stale; caches of what was read key on both."""

    others: int
    own: int


class CueCodes(NamedTuple):
    """Cue vectors as their int8 codes (store/vectors.py), a row per cue in cue id order: what the ingest's
    neighbour index (ingest/graph.py) and the in-memory view (recall/view.py) hold, a quarter of float32's bytes."""

    cue_ids: np.ndarray  # int64
    turn_ids: np.ndarray  # int64
    conversation_ids: np.ndarray  # int64
    codes: np.ndarray  # int8, (cues, dim)


class Store(Protocol):
    """What the engine asks of a memory's database, whichever backend holds it: ingest writes through these,
    a question reads through them. Kept at most 40 methods (tests/test_layout.py), so that a third backend is
    an afternoon's work: what can be derived from these is a function below, and what only one tool asks is
    in that tool's protocol.

    Every method is run on both backends by tests/test_store_contract.py (a test there fails when a
    method of any protocol here has no contract test). Writes happen inside `transaction()`; `snapshot()`
    gives a read-only consistent view."""

    path: str  # what messages and `inspect-graph` show: a file path, or a URL without its password
    # Why this memory cannot be written (a read-only mount or server, …), None when it can: it is then read
    # as usual, `transaction()` raises ReadOnlyStore (or DiskFull) before anything starts.
    read_only: str | None
    max_k: int | None  # the most cues one KNN call returns (the backend's own limit); None: no limit

    # ------------------------------------------------------- opening, transactions
    def close(self) -> None: ...
    def check_writable(self) -> None: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def snapshot(self) -> AbstractContextManager[None]: ...
    def version(self) -> Version: ...

    # ------------------------------------------------------------------ metadata
    @overload
    def get_meta(self, key: str, default: str) -> str: ...
    @overload
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def bind_embedder(self, model_id: str, dim: int, backend: str) -> None: ...

    # ----------------------------------------------------------- conversations
    @overload
    def conversation_id(self, name: str, create: Literal[True]) -> int: ...
    @overload
    def conversation_id(self, name: str, create: bool = False) -> int | None: ...
    def conversations(self) -> list[tuple[int, str, str | None]]: ...
    def set_title(self, conversation_id: int, title: str) -> None: ...

    # --------------------------------------------------------------------- turns
    def stored_texts(self, conversation_id: int, source_ids: Sequence[str]) -> dict[str, tuple[int, int, str]]: ...
    def next_position(self, conversation_id: int) -> int: ...
    def insert_turns(self, turns: Sequence[NewTurn]) -> list[int]: ...
    def turns_by_id(self, turn_ids: Iterable[int]) -> dict[int, Turn]: ...
    def turns_not_held_at(self, when: str, conversation_ids: Sequence[int] | None = None) -> tuple[set[int], int]: ...
    def speakers(self, conversation_ids: Sequence[int] | None = None) -> list[str]: ...
    def conversations_with_speakers(self, names: Iterable[str],
                                    conversation_ids: Sequence[int] | None = None) -> dict[int, str]: ...
    def speaker_sets(self, conversation_ids: Sequence[int] | None = None) -> dict[int, frozenset[str]]: ...
    def turns_at_positions(self, conversation_id: int, low: int, high: int) -> list[tuple[int, int]]: ...
    def mark_retrieved(self, conversation_id: int, source_ids: Sequence[str], when: str) -> None: ...
    def previous_turns(self, turn_ids: Iterable[int]) -> dict[int, int]: ...
    def last_turn(self, conversation_id: int) -> tuple[str | None, str] | None: ...
    def turns_after(self, turn_ids: Iterable[int]) -> list[int]: ...
    def turn_count(self) -> int: ...
    def delete_turns(self, turn_ids: Sequence[int], keep_conversations: bool = False) -> dict[str, Any]: ...

    # ------------------------------------------------------------- cues, vectors
    def insert_cues(self, conversation_id: int, rows: Sequence[tuple[int, str, str, str, str]]) -> list[int]: ...
    def cues_by_id(self, cue_ids: Iterable[int]) -> dict[int, Cue]: ...
    def cue_count(self, conversation_id: int | None = None) -> int: ...
    def insert_vectors(self, conversation_id: int, cue_ids: Sequence[int], vectors: np.ndarray) -> None: ...
    def statement_vectors(self, turn_ids: Iterable[int]) -> dict[int, list[tuple[str, np.ndarray]]]: ...
    def insert_turn_vectors(self, rows: Sequence[tuple[int, np.ndarray]]) -> None: ...
    def turn_vectors(self, turn_ids: Iterable[int]) -> dict[int, np.ndarray]: ...
    def cue_codes(self, dim: int) -> CueCodes: ...
    def turn_codes(self, dim: int) -> tuple[np.ndarray, np.ndarray]: ...

    # -------------------------------------------------------------------- search
    def knn_cues(self, vector: np.ndarray, k: int,
                 conversation_ids: Sequence[int] | None = None) -> list[tuple[Cue, float]]: ...
    def search_turns_fts(self, query: str, limit: int,
                         conversation_ids: Sequence[int] | None = None) -> list[tuple[int, float]]: ...

    # --------------------------------------------------------------------- edges
    def insert_edges(self, rows: Iterable[tuple[int, int, str, float, int]]) -> int: ...
    def neighbours(self, turn_ids: Sequence[int], window: int, sem_k: int) -> list[tuple[int, int, str, float]]: ...
    def edge_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...


@runtime_checkable
class SavedCueGraph(Protocol):
    """Where the ingest keeps the HNSW graph of a large memory's cues between runs (ingest/graph.py, CueGraph):
    derived data, its parts replaced whole in a write transaction."""

    def save_cue_graph(self, parts: dict[str, bytes]) -> None: ...
    def cue_graph(self) -> dict[str, bytes]: ...


@runtime_checkable
class KindIndex(Protocol):
    """The kinds of things each turn names (cues/kinds.py: "basketball" → sport, game), beside the turns: ingest
    writes them, a question that asks for a kind gathers its turns by them (recall/kinds.py), `cuemem reindex`
    builds them for an older memory's turns, inspect-graph and browse show them. The meta key KINDS_BUILT says
    which lexicon tagged every turn (`kinds_built`)."""

    def insert_turn_kinds(self, rows: Sequence[tuple[int, str]]) -> None: ...
    def turn_kinds(self, turn_ids: Iterable[int]) -> dict[int, tuple[str, ...]]: ...
    def turns_of_kinds(self, kinds: Sequence[str], conversation_ids: Sequence[int] | None = None,
                       speakers: Sequence[str] | None = None, limit: int = 1000) -> list[int]: ...
    def delete_turn_kinds(self, conversation_ids: Sequence[int]) -> int: ...
    def kind_counts(self, conversation_id: int | None = None) -> dict[str, int]: ...


@runtime_checkable
class ExtractionRecords(Protocol):
    """What the LLM extractor (cues/llm.py) keeps beside the turns: its results by model, prompt version and
    turn content, so that ingesting the same text again costs no call, and which turns it left pending (a
    failed call), for `Memory.extract_pending`."""

    def cached_triples(self, model: str, prompt_version: str, turn_hash: str) -> list[list[str]] | None: ...
    def cache_triples(self, model: str, prompt_version: str, turn_hash: str, triples: list[list[str]]) -> None: ...
    def pending_turns(self, conversation_id: int | None = None) -> list[tuple[Turn, str]]: ...
    def set_status(self, turn_ids: Sequence[int], status: str) -> None: ...


@runtime_checkable
class ChangeRecords(Protocol):
    """The facts that changed (cues/changes.py): pairs of turns of one conversation where the newer states another
    value for what the older stated. Ingest and `cuemem reindex` write them; a question's evidence, its answer
    line and every view read them."""

    def insert_changes(self, conversation_id: int,
                       rows: Sequence[tuple[int, int, str, str, str, str, str]]) -> int: ...
    def changes_of_turns(self, turn_ids: Iterable[int]) -> list[Change]: ...
    def changes(self, conversation_id: int | None = None) -> list[Change]: ...
    def change_sources(self, conversation_id: int) -> Iterator[tuple[int, str, str | None, str | None,
                                                                     list[Triple]]]: ...
    def clear_changes(self, conversation_id: int | None = None) -> int: ...


@runtime_checkable
class Maintenance(Protocol):
    """What forget, export and inspect ask besides the engine's queries (manage/): the turns forget's policies
    select, what deleting them would take, scrubbing the files after; every turn for an export; the memory's
    statistics, and the turn-by-turn reads that `inspect-graph` (and `cuemem browse`) show."""

    def forget_selection(self, conversation_id: int | None, session: str | None, source_ids: Sequence[str] | None,
                         before: str | None, decay_cutoff: str | None, lru: int | None) -> list[tuple[int, str]]: ...
    def forget_counts(self, turn_ids: Sequence[int]) -> dict[str, int]: ...
    def scrub(self) -> None: ...
    def export_turns(self, conversation_id: int | None) -> Iterator[tuple]: ...
    def conversation_stats(self) -> list[dict[str, Any]]: ...
    def degree_stats(self, conversation_id: int | None) -> dict[str, float]: ...
    def meta(self) -> dict[str, str]: ...
    def schema_version(self) -> int: ...
    def turns(self, conversation_id: int) -> list[Turn]: ...
    def turns_with_source_id(self, source_id: str, conversation_id: int | None = None) -> list[Turn]: ...
    def cues_of_turns(self, turn_ids: Iterable[int]) -> dict[int, list[Cue]]: ...
    def edges_of(self, turn_id: int) -> list[tuple[int, int, str, float, int]]: ...
    def all_edges(self, conversation_id: int | None = None) -> list[tuple[int, int, str, float, int]]: ...


@runtime_checkable
class NameIndex(Protocol):
    """Who is who, kept as turns are stored (m017): each turn's signs of a name (cues/names.signs) and each
    conversation's names learned from them (cues/names.learned_from), so that a question or `inspect-graph`
    reads them instead of learning them again from every turn (ingest/names.py keeps them; `names_indexed`
    says whether a memory's are complete)."""

    def replace_name_signs(self, turn_ids: Sequence[int], rows: Sequence[tuple[int, int, str, int]]) -> None: ...
    def name_signs(self, conversation_id: int) -> list[tuple[int, str | None, str | None, str, int]]: ...
    def texts_holding(self, conversation_id: int, word: str) -> list[str]: ...
    def set_learned_names(self, conversation_id: int, learned: Mapping[str, str]) -> None: ...
    def learned_names(self, names: Sequence[str] | None = None,
                      conversation_ids: Sequence[int] | None = None) -> list[tuple[str, str, str]]: ...


@runtime_checkable
class BrowseQueries(Protocol):
    """What only `cuemem browse` asks (browse/pages.py): a page of the conversation list, and a search of every
    conversation's turns by words. It shows turns, cues and edges through `Maintenance`'s reads."""

    def browse_conversations(self, search: str | None, name: str | None, offset: int,
                             limit: int) -> tuple[int, list[dict[str, Any]]]: ...
    def browse_search_turns(self, words: Sequence[str], limit: int) -> list[tuple[int, float]]: ...


class EvalQueries(Protocol):
    """What only `cuemem eval` asks (evaluate/runner.py): every turn's text, to embed the turns alone in the
    copy of a memory that two ablations read. Its baselines read conversations whole through
    `Maintenance.turns`."""

    def all_turn_texts(self) -> list[tuple[int, str]]: ...


# ------------------------------------------------------ a store as another protocol
def saved_cue_graph(store: Store) -> SavedCueGraph | None:
    """`store` as the keeper of the ingest's saved cue graph; None for a backend without one (the graph is then
    built by each ingest that needs it)."""
    return store if isinstance(store, SavedCueGraph) else None


def extraction_records(store: Store) -> ExtractionRecords:
    """`store` as the LLM extractor's records; a backend without them is refused by name, not by an
    AttributeError deep in an ingest."""
    if isinstance(store, ExtractionRecords):
        return store
    raise _lacks(store, "ExtractionRecords", "retrying the turns an LLM extractor left pending")


def change_records(store: Store) -> ChangeRecords | None:
    """`store` as the facts that changed, or None for a backend without them: a memory still answers, with no
    change found (a third backend can add them later)."""
    return store if isinstance(store, ChangeRecords) else None


def maintenance(store: Store) -> Maintenance:
    """`store` as forget's, export's and inspect's queries (see `extraction_records`)."""
    if isinstance(store, Maintenance):
        return store
    raise _lacks(store, "Maintenance", "forgetting, exporting and inspecting")


def browse_queries(store: Store) -> BrowseQueries:
    """`store` as `cuemem browse`'s queries (see `extraction_records`)."""
    if isinstance(store, BrowseQueries):
        return store
    raise _lacks(store, "BrowseQueries", "browsing")


def name_index(store: Store) -> NameIndex | None:
    """`store` as its name index, or None for a backend without one: ingest then keeps no names, and a
    question learns them from the turns that hold them (recall/people.py), as before m017."""
    return store if isinstance(store, NameIndex) else None


NAMES_INDEXED = "names_indexed"  # meta key: every turn's signs of a name are stored (see `names_indexed`)


def names_indexed(store: Store) -> bool:
    """Whether the memory's name index is complete: m017 found no turn to index, or the memory was
    reindexed since (manage/reindex.py); a memory written before m017 is not until then."""
    return name_index(store) is not None and store.get_meta(NAMES_INDEXED) is not None


def kind_index(store: Store) -> KindIndex | None:
    """`store`'s kinds of things, or None for a backend without them (a question is then answered without)."""
    return store if isinstance(store, KindIndex) else None


KINDS_BUILT = "kinds_lexicon"  # meta: the version of the lexicon (cues/kinds.py) every turn was tagged with


def kinds_built(store: Store) -> str | None:
    """The lexicon version every turn of the memory was tagged with, or None: a memory written before kinds
    were kept (`cuemem reindex` tags its turns), or whose first turns came from another writer."""
    return store.get_meta(KINDS_BUILT)


def kinds_missing(store: Store) -> bool:
    """Whether the memory holds turns no lexicon tagged as a whole (written before kinds were kept): a question
    asking for a kind finds them only by their words until `cuemem reindex` tags them."""
    return kind_index(store) is not None and kinds_built(store) is None and store.turn_count() > 0


def _lacks(store: Store, protocol: str, needed_for: str) -> StoreError:
    return StoreError(f"{store.path}: its backend ({type(store).__name__}) has no {protocol} "
                      f"(store/base.py), which {needed_for} needs",
                      "use a SQLite file or a postgresql:// database, whose backends have every store protocol",
                      fields=("db",))


# ------------------------------------------------- derived from the engine's queries
def conversation_names(store: Store) -> list[str]:
    """Every conversation's name, oldest first."""
    return [name for _, name, _ in store.conversations()]


def has_vectors(store: Store) -> bool:
    """Whether an embedding model was bound (`Store.bind_embedder`): a memory without holds no cue vectors."""
    return store.get_meta("embedding_model") is not None


def check_embedder(store: Store, model_id: str, dim: int) -> None:
    """Refuse an embedding model other than the one the memory was built with: their vectors are not
    comparable. A memory without one yet accepts any."""
    stored = store.get_meta("embedding_model")
    stored_dim = int(store.get_meta("embedding_dim") or 0)
    if stored is not None and (stored != model_id or stored_dim != dim):
        raise ModelMismatch(
            f"{store.path} was built with the embedding model {stored} ({stored_dim}-d); "
            f"this run uses {model_id} ({dim}-d), whose vectors are not comparable",
            f"use an embedder for {stored}, or add to a new database", fields=("embedder", "db"),
        )


def turn_vector_text(store: Store) -> str:
    """What the memory's turn vectors hold: TURN_WITH_PREVIOUS, or TURN_ALONE if written before m005."""
    return store.get_meta("turn_vectors") or TURN_WITH_PREVIOUS
