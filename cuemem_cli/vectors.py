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
