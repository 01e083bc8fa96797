"""How vectors are stored: unit vectors as int8 codes, a quarter of float32's bytes.

Every search cuemem makes is by cosine, which ignores a vector's length, so a vector can be stored as
its own integer multiple: each is scaled so that its largest component is ±127 and rounded (`encode`),
and read back as the unit vector of those integers (`decode`). No scale is stored. The rounding moves a
384-d MiniLM vector to cosine > 0.9999 and similarities by < 0.003 (tests/test_vectors.py), and the
measured LoCoMo evidence not at all beyond noise (bench/RESULTS.md, "Ingest at scale"). sqlite-vec
searches the codes in its own `int8` vec0 columns; the candidates it returns are rescored with the float
question against the decoded vectors (Store.knn_cues), so an answer does not depend on whether the
in-memory view or vec0 found it.

Ingest keeps `roundtrip(v)` of what it embeds, so the graph is built from exactly the vectors a later
ingest reads back; `encode(decode(c)) == c`, so vectors can be copied between tables and stores freely.
"""

from __future__ import annotations

import numpy as np

SCALE = 127


def encode(vectors: np.ndarray) -> np.ndarray:
    """Rows of float vectors → int8 codes, each row scaled so its largest |component| is 127."""
    vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    peak = np.abs(vectors).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.rint(vectors * (SCALE / peak)).astype(np.int8)


def decode(codes: np.ndarray) -> np.ndarray:
    """int8 codes → unit float32 rows (a zero row stays zero)."""
    vectors = np.atleast_2d(codes).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    vectors /= norms
    return vectors


def roundtrip(vectors: np.ndarray) -> np.ndarray:
    """What a store gives back for these vectors."""
    return decode(encode(vectors))


def from_blobs(blobs: list[bytes], dim: int) -> np.ndarray:
    """Stored codes (one blob per vector) → unit float32 rows."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    return decode(np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(blobs), dim))


def blob(vector: np.ndarray) -> bytes:
    """One vector as its stored code."""
    return encode(vector)[0].tobytes()


def similarities(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Row · vector without BLAS: OpenBLAS's threads keep spinning after a call, and took the cores from
    the question's embedding that follows, doubling its time; NumPy's own loop costs little at a
    conversation's size (bench/design-notes.md, "Measured choices elsewhere in the code"). One function
    for the in-memory view and vec0's rescoring, so both give a cue the same score to the last bit."""
    return np.einsum("ij,j->i", matrix, vector.astype(np.float32))


# Search over many cues. Up to EXACT_CUES cues in scope every code is scored; above, a sign-bit prefilter:
# each code's signs packed into bits, the Hamming distance to the question's signs ranks every cue in a few
# milliseconds, and the best PREFILTER_CANDIDATES are scored exactly. Their top-100 overlap with the exact
# search grows with their number (bench/bench_memory_scale.py on real chat cues: bench/RESULTS.md, "One
# memory across every conversation"); the Hamming pass costs the same whatever the number, the rescoring
# little more. The in-memory view (recall/view.py) and SQLite's cold search (store/sqlite.py, the `cue_signs`
# table) use the same bits and the same rule, so both find the same candidates.
EXACT_CUES = 100_000
PREFILTER_CANDIDATES = 4_000


def signs(codes: np.ndarray) -> np.ndarray:
    """Each code's sign bits (positive or not), packed into little-endian 64-bit words for `nearest_signs`."""
    packed = np.packbits(np.atleast_2d(codes) > 0, axis=1)
    words = -(-packed.shape[1] // 8)
    padded = np.zeros((len(packed), words * 8), dtype=np.uint8)
    padded[:, :packed.shape[1]] = packed
    return padded.view("<u8")


def hamming(table: np.ndarray, query: np.ndarray, block: int = 16_384) -> np.ndarray:
    """Bits in which each row of `table` differs from `query` (both `signs` words). A block at a time and
    summed a word column at a time: twice as fast at 500,000 rows as one `sum(axis=1)` over the table."""
    out = np.empty(len(table), dtype=np.uint16)
    for lo in range(0, len(table), block):
        counts = np.bitwise_count(table[lo:lo + block] ^ query)
        total = counts[:, 0].astype(np.uint16)
        for word in range(1, counts.shape[1]):
            total += counts[:, word]
        out[lo:lo + block] = total
    return out


def nearest_signs(table: np.ndarray, ids: np.ndarray, vector: np.ndarray, count: int,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """The `count` rows (of `rows`, or of the whole table) whose sign bits differ least from the vector's,
    in row order; a tie at the last place goes to the lowest ids, so the same cues give the same rows
    whichever order they are held in."""
    held, held_ids = (table, ids) if rows is None else (table[rows], ids[rows])
    distance = hamming(held, signs(vector)[0])
    if count >= len(distance):
        chosen = np.arange(len(distance))
    else:
        last = np.partition(distance, count - 1)[count - 1]
        below = np.flatnonzero(distance < last)
        tied = np.flatnonzero(distance == last)
        tied = tied[np.argsort(held_ids[tied], kind="stable")[:count - len(below)]]
        chosen = np.sort(np.concatenate([below, tied]))
    return chosen if rows is None else rows[chosen]


def signs_by_turn(turn_ids: np.ndarray, cue_ids: np.ndarray, codes: np.ndarray) -> list[tuple[int, bytes, bytes]]:
    """Cues' sign bits grouped by turn, as SQLite's `cue_signs` table keeps them: (turn id, the turn's cue
    ids as little-endian int64, their `signs` words), cue ids ascending within a turn."""
    if not len(turn_ids):
        return []
    order = np.lexsort((cue_ids, turn_ids))
    turns, ids, bits = turn_ids[order], cue_ids[order].astype("<i8"), signs(codes[order])
    starts = np.flatnonzero(np.r_[True, turns[1:] != turns[:-1]])
    ends = np.r_[starts[1:], len(turns)]
    return [(int(turns[a]), ids[a:b].tobytes(), bits[a:b].tobytes()) for a, b in zip(starts, ends, strict=True)]
