"""The turn graph: temporal edges within a conversation, semantic edges across the whole memory.

- Temporal: turns i and j of one conversation with 0 < |i − j| ≤ w positions, stored in both directions
  (weight 1, rank |i − j|).
- Semantic: each cue links to its top-k most similar cues among the cues of *earlier* turns of any
  conversation of the memory, mapped to turns; weight is the cosine similarity, rank the neighbour's
  rank (1 = best). "Earlier" is stored earlier: a lower turn id (ids are given in the order turns are
  stored; within a conversation that is the order they were said, except for a turn stored by
  `ingest --replace`, which takes its predecessor's position but a new id). So the same trip discussed
  in three chats is one neighbourhood, not three islands (issue 34). Each cue also links to its top-k
  among the earlier turns of its own conversation (an edge found both ways keeps its better rank): a
  question narrowed to a conversation (`ask -c`) cannot follow edges out of it, and without these its
  graph would be thinner the more the memory holds elsewhere; with them, the edges inside a conversation
  are those it would have alone in a memory, whatever else the memory holds. And where some chats are
  with the same people (the same set of speakers) and others are not, each cue links to its top-k among
  the earlier turns of the chats with its people too: the sessions of one friendship, exported as many
  chats among other people's, stay one neighbourhood (a user/assistant export, where every chat has the
  same two speakers, has no such circles: the memory-wide edges are theirs).

Why earlier turns only, where the paper takes the top-k over all cues: memory is append-only. A new
turn never rewrites the edges of old turns, so ingesting a file in one run, in several runs, or again
after a crash gives the same graph. Expansion then follows semantic edges in both directions, so an
early turn still reaches the later turns that chose it (a pair is linked when either side is in the
other's top-k over the history before the later one). A database written before memory-wide edges
keeps its old edges (within a conversation); turns stored from then on link across conversations.

Up to ANN_FROM stored cues the similarities are exact: a NumPy matmul of the new cues against the memory's
cues in blocks (`NeighbourIndex` holds them as int8 codes, store/vectors.py, decoded a block at a time), a
running top-k per new cue merged block by block, never an all-pairs Python loop. Exact costs each new cue a
comparison with every stored cue, so building a whole history that way is quadratic (issue 58: the 2,550-chat
corpus did not finish). From ANN_FROM cues on, the memory-wide top-k comes from an HNSW graph over the stored
cues (faiss `IndexHNSWFlat` on the decoded codes, `CueGraph`), whose cost per new cue grows with the log of
the memory; measured on real cue vectors it keeps 0.97 of the exact top-5 (bench/RESULTS.md, "Ingest cost
flat as the memory grows"). The top-k among the new cues of the batch stays exact, as does any search where
stored cues are not all of earlier turns (a pending turn's cues, completed late); so do the top-k within a cue's
own conversation and within its circle while they hold fewer than ANN_FROM cues, and from then on they come from
the same graph, searched with the other cues passed over (a user/assistant export where a few chats have one
speaker only makes a circle of almost every chat). Measured on LoCoMo, narrowing the candidates first by turn
similarity lost many of the exact neighbours (bench/design-notes.md, "Measured choices elsewhere in the
code"); a graph made for nearest-neighbour search does not.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.base import CUE_DELETIONS, Store, saved_cue_graph
from ..store.vectors import decode, encode

COLUMNS = 8192  # stored cues decoded at a time: 12.6 MB of float32 at 384 dimensions
MAX_BLOCK_CELLS = 1 << 22  # similarities per block (16 MB of float32): memory flat whatever the history
# From this many stored cues the memory-wide neighbours come from the HNSW graph: below it an exact scan costs
# less than building the graph (~0.3 ms a cue on one idle core against ~50,000 × 384 multiply-adds).
ANN_FROM = 50_000
HNSW_M = 16  # links per node (32 on the base layer): 132 bytes a cue
HNSW_EF_CONSTRUCTION = 100
HNSW_EF_SEARCH = 128  # candidates a search keeps: 0.97 of the exact top-5 on real cues (bench/RESULTS.md)
GRAPH_VERSION = 1  # the saved graph's layout (CueGraph.to_parts)
SAVE_AFTER_NODES = 5_000  # a graph is saved again once this many nodes (or a twentieth of it) were added


class CueGraph:
    """An HNSW graph (faiss) over stored cues: node i is the i-th cue added. Nodes of cues that were deleted
    (a replaced turn's) stay in the graph, marked dead and skipped in results; the ingest builds a new graph
    once they are a fifth of it. Built with one thread, so the same cues added in the same calls give the same
    graph, hence the same edges. Saved in the store (`to_parts`, links only) and read back (`from_parts`);
    bench/design-notes.md says why that stays consistent with the database."""

    def __init__(self, dim: int):
        import faiss

        self._faiss = faiss
        self.index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        self.index.hnsw.efSearch = HNSW_EF_SEARCH
        self.cue_rows = np.zeros(0, dtype=np.int64)  # node → its cue's row in NeighbourIndex (-1: deleted)
        self.dead = 0
        self.saved_nodes = 0  # nodes of the graph as saved in the store (from_parts), or 0

    def worth_saving(self) -> bool:
        """Enough nodes were added since it was saved (or it was built here) that the next ingest would spend
        longer adding them again than this one spends saving (a few seconds per million nodes)."""
        added = len(self.cue_rows) - self.saved_nodes
        return added >= max(SAVE_AFTER_NODES, len(self.cue_rows) // 20)

    def add(self, vectors: np.ndarray, rows: np.ndarray) -> None:
        self._faiss.omp_set_num_threads(1)
        self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self.cue_rows = np.concatenate([self.cue_rows, rows])

    def search(self, queries: np.ndarray, k: int, among: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, NeighbourIndex rows) of each query's k best live nodes, best first; -inf / -1 pad.
        `among`: a boolean per NeighbourIndex row, True for the rows that may be found (a circle's cues); the
        graph is walked as for any search, with the others passed over (faiss's IDSelector)."""
        faiss = self._faiss
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if among is None:
            extra = min(self.dead, 4 * k)  # dead nodes take places in the result: ask for more
            sims, nodes = self.index.search(queries, k + extra)
        else:
            wanted = (self.cue_rows >= 0) & among[np.maximum(self.cue_rows, 0)]
            bits = np.packbits(wanted, bitorder="little")
            params = faiss.SearchParametersHNSW(efSearch=HNSW_EF_SEARCH)
            params.sel = faiss.IDSelectorBitmap(len(wanted), faiss.swig_ptr(bits))
            sims, nodes = self.index.search(queries, k, params=params)
        rows = np.where(nodes >= 0, self.cue_rows[np.maximum(nodes, 0)], -1)
        sims = np.where(rows >= 0, sims, -np.inf).astype(np.float32)
        return sims, rows

    def to_parts(self, cue_ids: np.ndarray, deletions: str) -> dict[str, bytes]:
        """What SavedCueGraph.save_cue_graph keeps: the links and, per node, its cue's id (-1: deleted), never the
        vectors (they are the stored codes); `deletions` is the memory's CUE_DELETIONS count the graph agrees with."""
        hnsw: Any = self.index.hnsw  # faiss's type stubs leave out the graph's arrays
        nodes = np.where(self.cue_rows >= 0, cue_ids[np.maximum(self.cue_rows, 0)], -1).astype(np.int64)
        header = {"version": GRAPH_VERSION, "dim": self.index.d, "m": HNSW_M, "nodes": len(nodes),
                  "entry_point": int(hnsw.entry_point), "max_level": int(hnsw.max_level), "cue_deletions": deletions}
        as_array = self._faiss.vector_to_array
        arrays = {"nodes": nodes, "neighbors": as_array(hnsw.neighbors), "offsets": as_array(hnsw.offsets),
                  "levels": as_array(hnsw.levels)}
        return {"header": json.dumps(header).encode(),
                **{name: zlib.compress(array.tobytes(), 1) for name, array in arrays.items()}}

    @classmethod
    def from_parts(cls, parts: dict[str, bytes], index: NeighbourIndex, deletions: str) -> CueGraph | None:
        """The saved graph over `index`'s cues, or None when it cannot serve: none saved, another layout, or cues
        deleted since it was saved (their ids may have been given to new cues). Nodes are matched to rows by cue
        id; cues stored after the save are not in it (the caller adds them)."""
        if "header" not in parts:
            return None
        header = json.loads(parts["header"])
        if (header.get("version"), header.get("dim"), header.get("m"), header.get("cue_deletions")) != \
                (GRAPH_VERSION, index.codes.shape[1], HNSW_M, deletions):
            return None
        nodes = np.frombuffer(zlib.decompress(parts["nodes"]), dtype=np.int64)
        held = index.cue_ids[:index.size]
        at = np.minimum(np.searchsorted(held, nodes), max(index.size - 1, 0))
        found = (nodes >= 0) & (held[at] == nodes) if index.size else np.zeros(len(nodes), dtype=bool)
        if (found != (nodes >= 0)).any():  # a cue the graph holds is gone without a deletion counted: not ours
            return None
        graph = cls(index.codes.shape[1])
        faiss = graph._faiss
        rows = np.where(found, at, -1)
        for lo in range(0, len(rows), COLUMNS):  # the vectors, node by node, from the held codes (zeros: deleted)
            block = rows[lo:lo + COLUMNS]
            vectors = np.where((block >= 0)[:, None], decode(index.codes[np.maximum(block, 0)]), 0)
            faiss.downcast_index(graph.index.storage).add(vectors.astype(np.float32))
        hnsw: Any = graph.index.hnsw
        faiss.copy_array_to_vector(np.frombuffer(zlib.decompress(parts["neighbors"]), dtype=np.int32),
                                   hnsw.neighbors)
        faiss.copy_array_to_vector(np.frombuffer(zlib.decompress(parts["offsets"]), dtype=np.uint64), hnsw.offsets)
        faiss.copy_array_to_vector(np.frombuffer(zlib.decompress(parts["levels"]), dtype=np.int32), hnsw.levels)
        hnsw.entry_point, hnsw.max_level = header["entry_point"], header["max_level"]
        graph.index.ntotal = len(nodes)
        graph.cue_rows = rows
        graph.dead = int((rows < 0).sum())
        graph.saved_nodes = len(nodes)
        return graph

    def renumber(self, kept: np.ndarray) -> None:
        """Rows were dropped from NeighbourIndex (`kept`: the old rows kept, in order): point nodes at the new rows."""
        new_of_old = np.full(max(len(kept), int(self.cue_rows.max(initial=-1)) + 1), -1, dtype=np.int64)
        new_of_old[kept] = np.arange(len(kept))
        live = self.cue_rows >= 0
        self.cue_rows[live] = new_of_old[self.cue_rows[live]]
        self.dead = int((self.cue_rows < 0).sum())


@dataclass
class NeighbourIndex:
    """The memory's cue vectors as int8 codes with their turn ids, kept in memory while an ingest runs
    (384 bytes a cue: 500,000 cues are 190 MB). Rows are in the order cues were stored. From ANN_FROM rows on,
    also an HNSW graph over them (`graph`, built when first needed and kept up to date by `add`)."""

    turn_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    conversations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    codes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int8))
    cue_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # increasing
    size: int = 0  # rows in use; the arrays grow by doubling, so adding a batch does not copy the memory
    graph: CueGraph | None = None
    exact: bool = False  # searched exactly whatever its size (a conversation's or a circle's cues)

    @classmethod
    def load(cls, store: Store, dim: int) -> NeighbourIndex:
        """The memory's cues; from ANN_FROM of them also the graph the store saved, if it still agrees with them
        (CueGraph.from_parts), with the cues stored since added to it."""
        stored = store.cue_codes(dim)
        index = cls(stored.turn_ids, stored.conversation_ids, stored.codes, stored.cue_ids, len(stored.cue_ids))
        saved = saved_cue_graph(store)
        if index.size >= ANN_FROM and saved is not None:
            graph = CueGraph.from_parts(saved.cue_graph(), index, store.get_meta(CUE_DELETIONS, "0"))
            if graph is not None:
                covered = np.zeros(index.size, dtype=bool)
                covered[graph.cue_rows[graph.cue_rows >= 0]] = True
                missing = np.flatnonzero(~covered)
                for lo in range(0, len(missing), COLUMNS):
                    graph.add(decode(index.codes[missing[lo:lo + COLUMNS]]), missing[lo:lo + COLUMNS])
                index.graph = graph
        return index

    def save(self, store: Store) -> bool:
        """Save the graph (inside the write transaction that found this index current) when it is worth it."""
        saved = saved_cue_graph(store)
        if self.graph is None or saved is None or not self.graph.worth_saving():
            return False
        saved.save_cue_graph(self.graph.to_parts(self.cue_ids[:self.size], store.get_meta(CUE_DELETIONS, "0")))
        self.graph.saved_nodes = len(self.graph.cue_rows)
        return True

    def add(self, turn_ids: np.ndarray, conversations: np.ndarray, vectors: np.ndarray,
            cue_ids: np.ndarray | None = None) -> None:
        """New cues (their turns, conversations and unit vectors, stored as codes, and their ids) after those held."""
        if not len(turn_ids):
            return
        need = self.size + len(turn_ids)
        if need > len(self.turn_ids) or self.codes.shape[1] != vectors.shape[1]:
            capacity = max(need, 2 * len(self.turn_ids), 1024)
            grown_ids = np.zeros(capacity, dtype=np.int64)
            grown_convs = np.zeros(capacity, dtype=np.int64)
            grown_cues = np.zeros(capacity, dtype=np.int64)
            grown = np.zeros((capacity, vectors.shape[1]), dtype=np.int8)
            grown_ids[:self.size], grown[:self.size] = self.turn_ids[:self.size], self.codes[:self.size]
            grown_convs[:self.size] = self.conversations[:self.size]
            grown_cues[:self.size] = self.cue_ids[:self.size]
            self.turn_ids, self.conversations, self.codes, self.cue_ids = grown_ids, grown_convs, grown, grown_cues
        self.turn_ids[self.size:need] = turn_ids
        self.conversations[self.size:need] = conversations
        self.cue_ids[self.size:need] = -1 if cue_ids is None else cue_ids
        self.codes[self.size:need] = encode(vectors)
        if self.graph is not None:
            self.graph.add(decode(self.codes[self.size:need]), np.arange(self.size, need))
        self.size = need

    def remove(self, turn_ids: set[int]) -> None:
        """Drop the cues of turns that were deleted (a replaced turn's)."""
        keep = ~np.isin(self.turn_ids[:self.size], np.fromiter(turn_ids, np.int64, len(turn_ids)))
        self.turn_ids, self.codes = self.turn_ids[:self.size][keep], self.codes[:self.size][keep]
        self.conversations, self.cue_ids = self.conversations[:self.size][keep], self.cue_ids[:self.size][keep]
        self.size = len(self.turn_ids)
        if self.graph is not None:
            self.graph.renumber(np.flatnonzero(keep))
            if self.graph.dead * 5 > len(self.graph.cue_rows):
                self.graph = None  # built anew when next needed

    def search_graph(self) -> CueGraph | None:
        """The HNSW graph over the held cues, built now if the memory has reached ANN_FROM cues; None below."""
        if self.exact or self.size < ANN_FROM:
            return None
        if self.graph is None:
            graph = CueGraph(self.codes.shape[1])
            for lo in range(0, self.size, COLUMNS):
                hi = min(lo + COLUMNS, self.size)
                graph.add(decode(self.codes[lo:hi]), np.arange(lo, hi))
            self.graph = graph
        return self.graph

    def rows_of(self, conversations: tuple[int, ...]) -> np.ndarray:
        """Which held rows are cues of these conversations (a boolean per row)."""
        held = self.conversations[:self.size]
        return held == conversations[0] if len(conversations) == 1 else np.isin(held, conversations)

    def subset(self, among: np.ndarray) -> NeighbourIndex:
        """The held cues of some rows (`among`, a boolean per row), in the same order (searched exactly)."""
        rows = np.flatnonzero(among)
        return NeighbourIndex(self.turn_ids[rows], self.conversations[rows], self.codes[rows], self.cue_ids[rows],
                              len(rows), exact=True)

    def blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(turn ids, unit float32 vectors) of the held cues, COLUMNS at a time."""
        for lo in range(0, self.size, COLUMNS):
            hi = min(lo + COLUMNS, self.size)
            yield self.turn_ids[lo:hi], decode(self.codes[lo:hi])


def temporal_edges(store: Store, conversation_id: int, new: list[tuple[int, int]], window: int) -> list[tuple]:
    """Edges between each new (turn id, position) and the turns within `window` before it."""
    if not new or window <= 0:
        return []
    low = min(p for _, p in new) - window
    high = max(p for _, p in new)
    by_position = dict((p, tid) for tid, p in store.turns_at_positions(conversation_id, low, high))
    edges = []
    for tid, pos in new:
        for back in range(1, window + 1):
            other = by_position.get(pos - back)
            if other is not None:
                edges.append((tid, other, "temporal", 1.0, back))
                edges.append((other, tid, "temporal", 1.0, back))
    return edges


class _TopK:
    """The k best candidates so far of each new cue: similarity, and the candidate's column (its order
    among all candidate cues: held ones first, then the batch's), which breaks ties: of equal cues (same
    text), the earlier cue first."""

    def __init__(self, rows: int, k: int):
        self.k = k
        self.sims = np.full((rows, k), -np.inf, dtype=np.float32)
        self.cols = np.full((rows, k), np.iinfo(np.int64).max, dtype=np.int64)

    def merge(self, lo: int, sims: np.ndarray, columns: np.ndarray) -> None:
        """Fold in a block of similarities: rows lo…, one column per entry of `columns` (increasing; or a row of
        columns per row, from the graph), -inf where the candidate is not an earlier turn's."""
        kk = min(self.k, sims.shape[1])
        if kk < sims.shape[1]:
            top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
            kth = np.take_along_axis(sims, top, axis=1).min(axis=1)
            # a tie across the k-th place: argpartition kept an arbitrary few of it, the earliest are wanted
            for row in np.flatnonzero(((sims >= kth[:, None]).sum(axis=1) > kk) & (kth > -np.inf)):
                tied = np.flatnonzero(sims[row] >= kth[row])
                order = columns[row, tied] if columns.ndim == 2 else tied
                top[row] = tied[np.lexsort((order, -sims[row, tied]))][:kk]
        else:
            top = np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
        rows = slice(lo, lo + len(sims))
        all_sims = np.concatenate([self.sims[rows], np.take_along_axis(sims, top, axis=1)], axis=1)
        picked = np.take_along_axis(columns, top, axis=1) if columns.ndim == 2 else columns[top]
        all_cols = np.concatenate([self.cols[rows], picked], axis=1)
        order = np.lexsort((all_cols, -all_sims))[:, :self.k]
        self.sims[rows] = np.take_along_axis(all_sims, order, axis=1)
        self.cols[rows] = np.take_along_axis(all_cols, order, axis=1)


def semantic_edges(index: NeighbourIndex, turn_ids: np.ndarray, vectors: np.ndarray, k: int,
                   conversations: np.ndarray | None = None,
                   circles: dict[int, tuple[int, ...]] | None = None) -> list[tuple]:
    """Top-k earlier-turn neighbours of each new cue (`turn_ids[i]` is cue i's turn) among the held cues and
    the other new ones; given each cue's conversation, also its top-k within its own conversation, and
    within its conversation's circle (`circles`: conversation → the conversations with the same people, for
    those that have such a circle short of the whole memory). Call before `index.add` of the same cues. An
    edge found more than once keeps its best similarity and rank."""
    if k <= 0 or len(vectors) == 0:
        return []
    pairs = _nearest(index, turn_ids, vectors, k)
    groups: list[tuple[tuple[int, ...], np.ndarray]] = []
    if conversations is not None:
        groups += [((int(c),), conversations == c) for c in np.unique(conversations)]
        for circle in set((circles or {}).values()):
            groups.append((circle, np.isin(conversations, circle)))
    for members, own in groups:
        for key, (sim, rank) in _nearest(index, turn_ids[own], vectors[own], k, index.rows_of(members)).items():
            prev = pairs.get(key)
            pairs[key] = (sim, rank) if prev is None else (max(prev[0], sim), min(prev[1], rank))
    return [(src, dst, "semantic", round(sim, 6), rank) for (src, dst), (sim, rank) in pairs.items()]


def _nearest(index: NeighbourIndex, turn_ids: np.ndarray, vectors: np.ndarray, k: int,
             among: np.ndarray | None = None) -> dict[tuple[int, int], tuple[float, int]]:
    """(new cue's turn, neighbour's turn) → (best similarity, best rank) over each new cue's top-k among the held
    cues (or those of the rows `among` says, a boolean per row) and the other new cues.

    A conversation's or a circle's cues are searched exactly below ANN_FROM of them, through the memory's graph
    (passing over the others) from ANN_FROM on: a user/assistant export where a few chats have one speaker only
    makes a circle of almost every chat, and its exact search compared each new cue with every stored cue again
    (20 chats into a 134K-cue memory: most of the ingest's CPU)."""
    if among is not None and (int(among.sum()) < ANN_FROM or index.search_graph() is None):
        index, among = index.subset(among), None
    n, held = len(vectors), index.size
    best = _TopK(n, k)
    rows_per_block = max(1, min(n, MAX_BLOCK_CELLS // COLUMNS))
    graph = index.search_graph() if held and n and int(index.turn_ids[:held].max()) < int(turn_ids.min()) else None
    if graph is None and among is not None:
        index, among = index.subset(among), None
        held = index.size
    if graph is not None:  # every held cue is of an earlier turn: the graph's k best are the candidates
        found_sims, found_rows = graph.search(vectors, k, among)
        best.merge(0, found_sims, np.where(found_rows >= 0, found_rows, np.iinfo(np.int64).max))
    first = 0
    for block_turns, block in index.blocks() if graph is None else ():
        columns = np.arange(first, first + len(block))
        for lo in range(0, n, rows_per_block):
            _fold(best, lo, vectors[lo:lo + rows_per_block], turn_ids[lo:lo + rows_per_block], block, block_turns,
                  columns)
        first += len(block)
    # The new cues among themselves: only cues of earlier turns, so the cues of one long turn (tens of
    # thousands of sentences) are never compared with each other; rows per block shrink as columns grow.
    lo = 0
    while lo < n:
        cols = np.flatnonzero(turn_ids < turn_ids[lo:lo + rows_per_block].max())
        rows = max(1, min(rows_per_block, MAX_BLOCK_CELLS // max(len(cols), 1)))
        cols = np.flatnonzero(turn_ids < turn_ids[lo:lo + rows].max())
        if len(cols):
            _fold(best, lo, vectors[lo:lo + rows], turn_ids[lo:lo + rows], vectors[cols], turn_ids[cols], held + cols)
        lo += rows
    column_turns = np.concatenate([index.turn_ids[:held], turn_ids])
    pairs: dict[tuple[int, int], tuple[float, int]] = {}
    for row in range(n):
        src = int(turn_ids[row])
        for rank, (sim, column) in enumerate(zip(best.sims[row].tolist(), best.cols[row].tolist(), strict=True),
                                             start=1):
            if sim == -np.inf:
                break
            key = (src, int(column_turns[column]))
            prev = pairs.get(key)
            if prev is None:
                pairs[key] = (sim, rank)
            else:  # a turn reached by several of the cue's neighbours: its best similarity and rank
                pairs[key] = (max(prev[0], sim), min(prev[1], rank))
    return pairs


def _fold(best: _TopK, lo: int, queries: np.ndarray, query_turns: np.ndarray, block: np.ndarray,
          block_turns: np.ndarray, columns: np.ndarray) -> None:
    """Similarities of `queries` (new cues lo…) with `block` (candidate cues, at `columns`), those of a turn
    not earlier than the query's masked, folded into `best`."""
    sims = queries @ block.T
    if block_turns.max() >= query_turns.min():
        sims[block_turns[None, :] >= query_turns[:, None]] = -np.inf
    best.merge(lo, sims, columns)
